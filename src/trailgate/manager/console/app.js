// trailgate Manager console: plain JavaScript over the Manager's REST API, uPlot for the
// lag plot (vendored: nothing is loaded from outside the Manager). See docs/manager.md.
"use strict";

const state = { auth: sessionStorage.getItem("tg-auth"), plot: null, timer: null,
                statsGroup: null };
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(c ?? ""));
  return node;
}

async function api(path, options = {}) {
  const res = await fetch(path, { ...options,
    headers: { ...(options.headers || {}), Authorization: state.auth } });
  if (res.status === 401) { signOut("Your credentials were refused."); throw new Error("401"); }
  const type = res.headers.get("content-type") || "";
  const body = type.includes("json") ? await res.json() : await res.text();
  if (!res.ok) throw new Error(body.detail || body || res.statusText);
  return body;
}

function hms(seconds) {
  if (seconds === null || seconds === undefined) return "";
  const t = Math.max(0, Math.floor(seconds));
  const p = (n) => String(n).padStart(2, "0");
  return `${p(Math.floor(t / 3600))}:${p(Math.floor(t % 3600 / 60))}:${p(t % 60)}`;
}

function secs(value) {
  return value === null || value === undefined ? "" : `${Number(value).toFixed(3)} s`;
}

// -- sign in ---------------------------------------------------------------------------
function signOut(message) {
  state.auth = null;
  sessionStorage.removeItem("tg-auth");
  clearInterval(state.timer);
  $("#tabs").hidden = true;
  $("#who").textContent = "";
  show("login");
  $("#login-error").textContent = message || "";
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = $("#token").value.trim();
  const user = $("#user").value;
  state.auth = token ? `Bearer ${token}`
                     : `Basic ${btoa(unescape(encodeURIComponent(`${user}:${$("#password").value}`)))}`;
  try {
    const info = await api("/api/manager");
    sessionStorage.setItem("tg-auth", state.auth);
    start(info);
  } catch (err) {
    if (err.message !== "401") $("#login-error").textContent = err.message;
  }
});

function start(info) {
  $("#tabs").hidden = false;
  $("#who").textContent = `home ${info.home} · port ${info.port}`;
  route();
  refresh();
  clearInterval(state.timer);
  state.timer = setInterval(refresh, 2000);
}

// -- pages -----------------------------------------------------------------------------
function show(page) {
  for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== page;
  for (const a of document.querySelectorAll("#tabs a")) a.classList.toggle("active", a.dataset.tab === page);
}

function route() {
  if (!state.auth) return show("login");
  const page = (location.hash || "#groups").slice(1);
  show(["groups", "stats", "events"].includes(page) ? page : "groups");
  refresh();
}
window.addEventListener("hashchange", route);

async function refresh() {
  if (!state.auth) return;
  try {
    const page = (location.hash || "#groups").slice(1);
    const [groups, lag] = await Promise.all([api("/api/groups"), api("/api/lag")]);
    renderGroups(groups, lag);
    if (page === "stats") await renderStats(groups);
    if (page === "events") renderEvents(await api("/api/events?lines=200"));
    if (page === "groups" || page === "") renderPlot(lag);
  } catch (err) {
    if (err.message !== "401") $("#action-message").textContent = `Refresh failed: ${err.message}`;
  }
}

function latestHeartbeat(lag, name) {
  let best = null;
  for (const [path, points] of Object.entries(lag.heartbeat)) {
    if (!path.split("==>").map((p) => p.trim()).includes(name) || !points.length) continue;
    const last = points[points.length - 1];
    if (!best || last[0] > best[0]) best = last;
  }
  return best ? best[1] : null;
}

function renderGroups(groups, lag) {
  const body = $("#group-table tbody");
  body.replaceChildren(...groups.map((g) => {
    const running = g.status === "RUNNING" || g.status === "STARTING";
    const button = el("button", { "data-action": running ? "stop" : "start", "data-group": g.name },
                      running ? "Stop" : "Start");
    button.addEventListener("click", () => act(button, g));
    return el("tr", { "data-group": g.name },
      el("td", {}, g.kind), el("td", {}, el("span", { class: `status ${g.status}` }, g.status)),
      el("td", {}, g.name), el("td", { class: "num" }, hms(g.lag_seconds)),
      el("td", { class: "num" }, hms(g.checkpoint_age_seconds)),
      el("td", { class: "num" }, secs(latestHeartbeat(lag, g.name))),
      el("td", {}, g.read_position_text || ""), el("td", { class: "num" }, String(g.restarts)),
      el("td", {}, button));
  }));
  const select = $("#stats-group");
  const names = groups.map((g) => g.name);
  if ([...select.options].map((o) => o.value).join() !== names.join()) {
    select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
    if (state.statsGroup && names.includes(state.statsGroup)) select.value = state.statsGroup;
  }
}

async function act(button, group) {
  const action = button.dataset.action;
  button.disabled = true;
  try {
    const result = await api(`/api/groups/${group.name}/${action}`, { method: "POST" });
    $("#action-message").textContent = result.message;
  } catch (err) {
    if (err.message !== "401") $("#action-message").textContent = err.message;
  }
  setTimeout(refresh, 300);
}

function renderPlot(lag) {
  const series = [
    ...Object.entries(lag.checkpoint).map(([k, v]) => [`${k} (checkpoint)`, v]),
    ...Object.entries(lag.heartbeat).map(([k, v]) => [`${k} (heartbeat)`, v]),
  ];
  const xs = [...new Set(series.flatMap(([, pts]) => pts.map((p) => p[0])))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const data = [xs, ...series.map(([, pts]) => {
    const ys = new Array(xs.length).fill(null);
    for (const [x, y] of pts) ys[index.get(x)] = y;
    return ys;
  })];
  const labels = series.map(([name]) => name).join("|");
  if (!state.plot || state.plot.labels !== labels) {
    if (state.plot) state.plot.destroy();
    const colors = ["#1b5e9e", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#117a65", "#6c3483"];
    state.plot = new uPlot({
      width: Math.min(1000, window.innerWidth - 60), height: 280,
      scales: { x: { time: true } }, axes: [{}, { label: "seconds" }],
      series: [{}, ...series.map(([name], i) => ({ label: name, stroke: colors[i % colors.length],
                                                  spanGaps: true, width: 1.5 }))],
    }, data, $("#lag-plot"));
    state.plot.labels = labels;
  } else {
    state.plot.setData(data);
  }
}

async function renderStats(groups) {
  const select = $("#stats-group");
  const name = select.value || (groups[0] && groups[0].name);
  if (!name) return;
  state.statsGroup = name;
  const [stats, report] = await Promise.all([api(`/api/groups/${name}/stats`),
                                             api(`/api/groups/${name}/report?lines=200`).catch(() => "")]);
  $("#stats-since").textContent = stats.since ? `Since ${stats.since}` : "No statistics yet.";
  const cols = ["inserts", "updates", "deletes", "truncates", "ddl", "discards", "total"];
  $("#stats-table tbody").replaceChildren(...Object.entries(stats.tables).map(([table, c]) =>
    el("tr", {}, el("td", {}, table), ...cols.map((k) => el("td", { class: "num" }, String(c[k] ?? 0))))));
  $("#report").textContent = report;
}
$("#stats-group").addEventListener("change", () => { state.statsGroup = $("#stats-group").value; refresh(); });

function renderEvents(events) {
  $("#event-table tbody").replaceChildren(...events.slice().reverse().map((e) =>
    el("tr", { class: e.level }, el("td", {}, e.time), el("td", {}, e.level),
       el("td", {}, e.code), el("td", {}, e.message))));
}

if (state.auth) api("/api/manager").then(start).catch(() => {}); else show("login");
