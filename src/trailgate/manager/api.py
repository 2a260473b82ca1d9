"""The Manager's HTTP service: the REST API, ``/metrics`` and the web console, in FastAPI.

FastAPI (on Starlette, served by uvicorn) was chosen because it writes the OpenAPI
description (``/openapi.json``) from the same typed functions that answer the calls, so
the description cannot drift from the API.  Its Swagger pages are off: they load their
scripts from a CDN, and nothing the Manager serves may.  Every ``/api`` call needs a token
or a credential-store user (:mod:`trailgate.manager.auth`); the console's files and
``/metrics`` are open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.security import HTTPBasic, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict

from trailgate import __version__
from trailgate.errors import TrailgateError
from trailgate.home import validate_group_name
from trailgate.manager.auth import check_authorization
from trailgate.manager.metrics import CONTENT_TYPE, render_metrics
from trailgate.manager.state import ManagerState, read_events
from trailgate.manager.status import group_status
from trailgate.process import lifecycle

__all__ = ["CONSOLE_DIR", "create_app"]

CONSOLE_DIR = Path(__file__).with_name("console")
_BEARER = HTTPBearer(auto_error=False, description="The token in dircrd/mgr.token")
_BASIC = HTTPBasic(auto_error=False, description="A credential-store user, domain Manager")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Group(_Open):
    """A group as INFO, STATS and LAG see it (plus what the Manager saw)."""

    name: str
    kind: str
    status: str
    pid: int | None = None
    lag_seconds: float | None = None
    checkpoint_age_seconds: float | None = None
    read_position_text: str | None = None
    restarts: int = 0
    abends: int = 0


class GroupLag(_Open):
    """``LAG``: checkpoint lag, and the heartbeat rows (GG_LAG) of the group's paths."""

    name: str
    kind: str
    lag_seconds: float | None = None
    checkpoint_age_seconds: float | None = None
    heartbeat: list[dict[str, Any]]


class Action(BaseModel):
    """What a START or STOP did."""

    group: str
    kind: str
    action: str
    message: str
    pid: int | None = None


class Event(BaseModel):
    """One line of ``ggserr.log``."""

    time: str
    level: str
    code: str
    message: str


class LagHistory(BaseModel):
    """Lag samples ``[epoch seconds, lag seconds]``: checkpoint lag per group, heartbeat lag
    per path."""

    checkpoint: dict[str, list[tuple[float, float]]]
    heartbeat: dict[str, list[tuple[float, float]]]


class _Utf8Query:
    """Refuses (400) a request whose query string is not UTF-8: the framework's redirect of
    a path with a trailing slash decodes it and failed with a server error (500)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            try:
                scope.get("query_string", b"").decode("utf-8")
            except UnicodeDecodeError:
                body = b"the query string is not UTF-8: percent-encode it\n"
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def create_app(state: ManagerState) -> FastAPI:
    """The ASGI application of a running Manager."""
    app = FastAPI(title="trailgate Manager", version=__version__, docs_url=None,
                  redoc_url=None, openapi_url="/openapi.json",
                  description="GGSCI's group commands over HTTP (docs/manager.md). Every "
                  "/api call needs `Authorization: Bearer <dircrd/mgr.token>` or HTTP Basic "
                  "with a credential-store user of domain Manager.")

    def caller(request: Request, _b: Annotated[Any, Depends(_BEARER)],
               _u: Annotated[Any, Depends(_BASIC)]) -> str:
        who = check_authorization(state.home, state.token,
                                  request.headers.get("authorization"))
        if who is None:
            raise HTTPException(401, "credentials required: a Bearer token (dircrd/mgr.token)"
                                " or a credential-store user of domain Manager",
                                headers={"WWW-Authenticate": 'Bearer realm="trailgate"'})
        return who

    auth = [Depends(caller)]

    def find(name: str) -> Any:
        try:
            info = state.home.group(validate_group_name(name))
        except TrailgateError as exc:
            raise HTTPException(400, str(exc)) from None
        if info is None:
            raise HTTPException(404, f"no group {name.upper()}; GET /api/groups lists them")
        return info

    def status_of(name: str) -> dict[str, Any]:
        info = find(name)
        return group_status(state.home, info, state.supervisor.watch.get(info.name))

    @app.get("/metrics", tags=["metrics"], response_class=PlainTextResponse,
             summary="Prometheus metrics (text format)")
    def metrics() -> Response:
        return Response(render_metrics(state.snapshot), media_type=CONTENT_TYPE)

    @app.get("/collector", tags=["collector"],
             summary="where this Manager's collector listens (RMTHOST …, MGRPORT)")
    def collector() -> dict[str, Any]:
        if state.collector is None:
            raise HTTPException(404, "this Manager runs no collector: add COLLECTOR PORT n, "
                                "TOKENALIAS alias to its mgr.prm")
        return dict(state.collector)

    @app.get("/api/manager", tags=["manager"], dependencies=auth, summary="INFO MANAGER")
    def manager() -> dict[str, Any]:
        return state.manager_info()

    @app.get("/api/groups", tags=["groups"], dependencies=auth, response_model=list[Group],
             summary="INFO ALL: every group")
    def groups() -> list[dict[str, Any]]:
        return state.statuses()

    @app.get("/api/groups/{name}", tags=["groups"], dependencies=auth, response_model=Group,
             summary="INFO group, SHOWCH: status, positions, checkpoint")
    def info(name: str) -> dict[str, Any]:
        return status_of(name)

    @app.get("/api/groups/{name}/stats", tags=["groups"], dependencies=auth,
             summary="STATS group: operations per table since the statistics began")
    def stats(name: str) -> dict[str, Any]:
        s = status_of(name)
        return {"name": s["name"], "kind": s["kind"], "since": s["stats_since"],
                "tables": s["stats"]}

    @app.get("/api/groups/{name}/lag", tags=["groups"], dependencies=auth,
             response_model=GroupLag, summary="LAG group: checkpoint and heartbeat lag")
    def lag(name: str) -> dict[str, Any]:
        s = status_of(name)
        return {"name": s["name"], "kind": s["kind"], "lag_seconds": s["lag_seconds"],
                "checkpoint_age_seconds": s["checkpoint_age_seconds"],
                "heartbeat": state.lag.heartbeat_for(s["kind"], s["name"])}

    @app.get("/api/groups/{name}/report", tags=["groups"], dependencies=auth,
             response_class=PlainTextResponse, summary="VIEW REPORT group (its last lines)")
    def report(name: str, lines: Annotated[int, Query(ge=1, le=100_000)] = 500) -> str:
        info = find(name)
        try:
            text = state.home.report_file(info.name).read_text("utf-8", errors="replace")
        except FileNotFoundError:
            raise HTTPException(404, f"{info.kind} {info.name} has no report yet") from None
        return "\n".join(text.splitlines()[-lines:]) + "\n"

    @app.post("/api/groups/{name}/start", tags=["groups"], dependencies=auth,
              response_model=Action, summary="START group")
    def start(name: str) -> Action:
        info = find(name)
        try:
            result = lifecycle.start_group(state.home, info.kind, info.name,
                                           wait=state.start_wait)
        except TrailgateError as exc:
            raise HTTPException(409, str(exc)) from None
        return Action(group=info.name, kind=info.kind, action="start", pid=result.pid,
                      message=f"{info.kind} {info.name} starting")

    @app.post("/api/groups/{name}/stop", tags=["groups"], dependencies=auth,
              response_model=Action, status_code=202,
              summary="STOP group (it finishes its batch, then stops)")
    def stop(name: str) -> Action:
        info = find(name)
        try:
            pid = lifecycle.stop_group(state.home, info.kind, info.name, wait=False)
        except TrailgateError as exc:
            raise HTTPException(409, str(exc)) from None
        return Action(group=info.name, kind=info.kind, action="stop", pid=pid,
                      message=f"Sending STOP request to {info.kind} {info.name}")

    @app.get("/api/lag", tags=["lag"], dependencies=auth, response_model=LagHistory,
             summary="Lag over time: checkpoint lag per group, heartbeat lag per path")
    def lag_history() -> LagHistory:
        return LagHistory(
            checkpoint={k: list(v) for k, v in list(state.lag.checkpoint.items())},
            heartbeat={k: list(v) for k, v in list(state.lag.heartbeat.items())})

    @app.get("/api/events", tags=["events"], dependencies=auth, response_model=list[Event],
             summary="VIEW GGSEVT: the last events of ggserr.log")
    def events(lines: Annotated[int, Query(ge=1, le=10_000)] = 200) -> list[dict[str, str]]:
        return read_events(state.home.ggserr_log, lines)

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/console/")

    @app.get("/console/", include_in_schema=False)
    def console() -> FileResponse:
        return FileResponse(CONSOLE_DIR / "index.html")

    app.mount("/console", StaticFiles(directory=CONSOLE_DIR), name="console")
    app.add_middleware(_Utf8Query)
    return app
