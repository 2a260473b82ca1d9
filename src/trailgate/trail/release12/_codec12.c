/*
 * trailgate.trail.release12._codec12: the optional C path of the 12c+ record codec.
 *
 * to_seed() lays a 12c+ row record out as the 11.2 record the rest of trailgate decodes
 * (its table named in the header, lengths big-endian, TransInd at byte 24, the LOGCSN as
 * digits); from_seed() does the reverse for the writer.  Both return None for anything they
 * do not take on (metadata, DDL, fragments, a table whose values need converting, a frame
 * that does not add up): the Python code in decoder.py / encoder.py is the reference, gives
 * the result then or raises its detailed error.  So a None is always safe.
 *
 * Memory safety: every read is checked against the end of its area first; lengths read from
 * the data are compared by subtraction, so nothing overflows.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#define H_FIXED 34
#define MAX_RECORD 0xFFFF

/* ---- byte order -------------------------------------------------------------------- */

static inline unsigned
rd16(const unsigned char *p, int little)
{
    return little ? (unsigned)p[0] | ((unsigned)p[1] << 8) : ((unsigned)p[0] << 8) | p[1];
}

static inline uint32_t
rd32(const unsigned char *p, int little)
{
    return little ? (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16)
                        | ((uint32_t)p[3] << 24)
                  : ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8)
                        | p[3];
}

static inline uint64_t
rd64(const unsigned char *p, int little)
{
    uint64_t a = rd32(p, little), b = rd32(p + 4, little);
    return little ? (b << 32) | a : (a << 32) | b;
}

static inline void
wr16(unsigned char *p, unsigned v, int little)
{
    if (little) {
        p[0] = (unsigned char)v;
        p[1] = (unsigned char)(v >> 8);
    } else {
        p[0] = (unsigned char)(v >> 8);
        p[1] = (unsigned char)v;
    }
}

static inline void
wr32(unsigned char *p, uint32_t v, int little)
{
    for (int i = 0; i < 4; i++)
        p[little ? i : 3 - i] = (unsigned char)(v >> (8 * i));
}

static inline void
wr64(unsigned char *p, uint64_t v, int little)
{
    for (int i = 0; i < 8; i++)
        p[little ? i : 7 - i] = (unsigned char)(v >> (8 * i));
}

/* ---- an output buffer ------------------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
} obuf;

static int
ob_reserve(obuf *b, Py_ssize_t n)
{
    if (b->len + n <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    unsigned char *q = PyMem_Realloc(b->p, (size_t)cap);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = q;
    b->cap = cap;
    return 0;
}

static int
ob_put(obuf *b, const void *src, Py_ssize_t n)
{
    if (n == 0) /* an empty area: b->p may still be NULL, and memcpy must not see it */
        return 0;
    if (ob_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

enum { OK = 0, UNHANDLED = 1, FAILED = -1 };

/* ---- the record's frame -------------------------------------------------------------------- */

typedef struct {
    Py_ssize_t start, end; /* value bytes of a sub-record, or -1 */
} area;

typedef struct {
    int little;
    Py_ssize_t length;
    unsigned flag;
    const unsigned char *h; /* the H area's content */
    Py_ssize_t hlen;
    area d, t, u;
    int n_other;
    area other[4];
    unsigned char other_type[4], other_flag[4];
} frame;

/* The G record at b[pos] in byte order `little`: OK, or UNHANDLED when its frame does not add
 * up in that order. */
static int
frame_in(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end, int little, frame *f)
{
    if (end - pos < 8 || b[pos] != 'G')
        return UNHANDLED;
    Py_ssize_t len = rd16(b + pos + 2, little);
    if (len < 8 + 4 + H_FIXED || len > end - pos)
        return UNHANDLED;
    const unsigned char *z = b + pos + len - 4;
    if (z[0] != 'Z' || z[1] != b[pos + 1] || (Py_ssize_t)rd16(z + 2, little) != len)
        return UNHANDLED;
    f->little = little;
    f->length = len;
    f->flag = b[pos + 1];
    f->d.start = f->t.start = f->u.start = -1;
    f->n_other = 0;
    Py_ssize_t p = pos + 4, body_end = pos + len - 4;
    int first = 1;
    while (p < body_end) {
        if (body_end - p < 4)
            return UNHANDLED;
        unsigned char type = b[p];
        Py_ssize_t n = rd16(b + p + 2, little);
        if (n > body_end - p - 4)
            return UNHANDLED;
        Py_ssize_t s = p + 4;
        if (first) {
            if (type != 'H' || n < H_FIXED)
                return UNHANDLED;
            f->h = b + s;
            f->hlen = n;
            first = 0;
        } else {
            area *a = type == 'D' ? &f->d : type == 'T' ? &f->t : type == 'U' ? &f->u : NULL;
            if (a != NULL && a->start >= 0)
                return UNHANDLED; /* an area twice: Python decides which counts */
            if (type == 'H')
                return UNHANDLED;
            if (a != NULL) {
                a->start = s;
                a->end = s + n;
            } else {
                if (f->n_other == 4)
                    return UNHANDLED;
                f->other[f->n_other].start = s;
                f->other[f->n_other].end = s + n;
                f->other_type[f->n_other] = type;
                f->other_flag[f->n_other] = b[p + 1];
                f->n_other++;
            }
        }
        p = s + n;
    }
    return first ? UNHANDLED : OK;
}

static int
is_row_op(unsigned io)
{
    return io == 3 || io == 5 || io == 10 || io == 15 || io == 115;
}

/* ---- columns ---------------------------------------------------------------------------- */

/* fixed[i]: 0 variable, 1 fixed width, anything else (or beyond the map): judged by shape.
 * Writes the columns of d[start, end) with their lengths in `to_little`. */
static int
columns(obuf *out, const unsigned char *d, Py_ssize_t start, Py_ssize_t end, int from_little,
        int to_little, const unsigned char *fixed, Py_ssize_t nfixed)
{
    Py_ssize_t p = start;
    while (p < end) {
        if (end - p < 4)
            return UNHANDLED;
        unsigned idx = rd16(d + p, from_little), n = rd16(d + p + 2, from_little);
        if ((Py_ssize_t)n > end - p - 4)
            return UNHANDLED;
        const unsigned char *v = d + p + 4;
        if (ob_reserve(out, 4 + (Py_ssize_t)n) < 0)
            return FAILED;
        unsigned char *w = out->p + out->len;
        wr16(w, idx, to_little);
        wr16(w + 2, n, to_little);
        memcpy(w + 4, v, n);
        if (n < 2)
            return UNHANDLED;
        int null = v[0] == 0xFF && v[1] == 0xFF;
        if (!null && (v[0] | v[1]))
            return UNHANDLED; /* a bad null indicator: Python says so */
        int kind = idx < nfixed ? fixed[idx] : 2;
        if (kind == 2) /* no definition: variable when the inner length fits, as Python */
            kind = !(n >= 4 && rd16(v + 2, from_little) == n - 4);
        if (kind == 0) {
            if (n < 4)
                return UNHANDLED; /* Python rewrites a short NULL, or raises */
            unsigned inner = rd16(v + 2, from_little);
            if (!null && inner != n - 4)
                return UNHANDLED;
            wr16(w + 6, inner, to_little);
        }
        out->len += 4 + n;
        p += 4 + n;
    }
    return OK;
}

static int
data_area(obuf *out, unsigned io, const unsigned char *d, Py_ssize_t n, int from_little,
          int to_little, const unsigned char *fixed, Py_ssize_t nfixed)
{
    if (io == 116) { /* a LOB piece: five u32 then bytes */
        if (n < 20 || ob_reserve(out, n) < 0)
            return n < 20 ? UNHANDLED : FAILED;
        for (int i = 0; i < 5; i++)
            wr32(out->p + out->len + 4 * i, rd32(d + 4 * i, from_little), to_little);
        memcpy(out->p + out->len + 20, d + 20, (size_t)(n - 20));
        out->len += n;
        return OK;
    }
    if (!is_row_op(io) || from_little == to_little)
        return ob_put(out, d, n) < 0 ? FAILED : OK; /* text, or framing already in order */
    if (io == 115) {
        if (n < 2)
            return UNHANDLED;
        Py_ssize_t klen = rd16(d, from_little);
        if (klen > n - 2 || ob_reserve(out, 2) < 0)
            return klen > n - 2 ? UNHANDLED : FAILED;
        wr16(out->p + out->len, (unsigned)klen, to_little);
        out->len += 2;
        int rc = columns(out, d, 2, 2 + klen, from_little, to_little, fixed, nfixed);
        if (rc != OK)
            return rc;
        return columns(out, d, 2 + klen, n, from_little, to_little, fixed, nfixed);
    }
    return columns(out, d, 0, n, from_little, to_little, fixed, nfixed);
}

/* ---- tokens ------------------------------------------------------------------------------ */

/* A LOGCSN's text as the digits an 11.2 record carries (decimal); UNHANDLED for a form only
 * Python reads (a big binlog index). */
static int
csn_digits(const unsigned char *s, Py_ssize_t n, char *out, Py_ssize_t *outn)
{
    Py_ssize_t i, slash = -1, colon = -1, digits = 1;
    for (i = 0; i < n; i++) {
        if (s[i] == '/' && slash < 0)
            slash = i;
        else if (s[i] == ':' && colon < 0)
            colon = i;
        else if (s[i] < '0' || s[i] > '9')
            digits = 0;
    }
    if (n == 0)
        return UNHANDLED;
    if (digits && slash < 0 && colon < 0) {
        if (n > 40)
            return UNHANDLED;
        memcpy(out, s, (size_t)n);
        *outn = n;
        return OK;
    }
    uint64_t value = 0;
    if (slash > 0 && colon < 0 && slash <= 8 && n - slash - 1 >= 1 && n - slash - 1 <= 8) {
        uint64_t hi = 0, lo = 0;
        for (i = 0; i < n; i++) {
            if (i == slash)
                continue;
            unsigned c = s[i], v;
            if (c >= '0' && c <= '9')
                v = c - '0';
            else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
                v = (c | 0x20) - 'a' + 10;
            else
                return UNHANDLED;
            if (i < slash)
                hi = hi * 16 + v;
            else
                lo = lo * 16 + v;
        }
        value = (hi << 32) | lo;
    } else if (digits && colon > 0 && slash < 0 && n - colon - 1 == 15) {
        uint64_t index = 0, offset = 0;
        for (i = 0; i < colon; i++) {
            index = index * 10 + (s[i] - '0');
            if (index > 9000)
                return UNHANDLED; /* index * 10^15 + offset would leave 64 bits */
        }
        for (i = colon + 1; i < n; i++)
            offset = offset * 10 + (s[i] - '0');
        value = index * 1000000000000000ULL + offset;
    } else {
        return UNHANDLED;
    }
    *outn = (Py_ssize_t)snprintf(out, 41, "%llu", (unsigned long long)value);
    return OK;
}

/* The T area with its token lengths in `to_little` (to_seed: the LOGCSN as digits). */
static int
token_area(obuf *out, const unsigned char *t, Py_ssize_t n, int from_little, int to_little,
           int csn_to_digits, int csn_to_lsn)
{
    Py_ssize_t p = 0;
    while (p < n) {
        if (n - p < 4)
            return UNHANDLED;
        unsigned char type = t[p], info = t[p + 1];
        Py_ssize_t len = rd16(t + p + 2, from_little);
        if (len > n - p - 4)
            return UNHANDLED;
        const unsigned char *v = t + p + 4;
        char text[48];
        Py_ssize_t tn = len;
        const unsigned char *val = v;
        if (type == 'L' && csn_to_digits) {
            if (csn_digits(v, len, text, &tn) != OK)
                return UNHANDLED;
            val = (const unsigned char *)text;
        } else if (type == 'L' && csn_to_lsn) {
            uint64_t csn = 0;
            if (len == 0 || len > 20)
                return UNHANDLED;
            for (Py_ssize_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9' || csn > (UINT64_MAX - 9) / 10)
                    return UNHANDLED;
                csn = csn * 10 + (v[i] - '0');
            }
            tn = (Py_ssize_t)snprintf(text, sizeof text, "%08X/%08X", (unsigned)(csn >> 32),
                                      (unsigned)(csn & 0xFFFFFFFFu));
            val = (const unsigned char *)text;
        }
        unsigned char head[4] = {type, info, 0, 0};
        wr16(head + 2, (unsigned)tn, to_little);
        if (ob_put(out, head, 4) < 0 || ob_put(out, val, tn) < 0)
            return FAILED;
        p += 4 + len;
    }
    return OK;
}

static int
user_tokens(obuf *out, const unsigned char *u, Py_ssize_t n, int from_little, int to_little)
{
    Py_ssize_t p = 0;
    while (p < n) {
        for (int part = 0; part < 2; part++) {
            if (n - p < 2)
                return UNHANDLED;
            Py_ssize_t len = rd16(u + p, from_little);
            if (len > n - p - 2)
                return UNHANDLED;
            unsigned char l[2];
            wr16(l, (unsigned)len, to_little);
            if (ob_put(out, l, 2) < 0 || ob_put(out, u + p + 2, len) < 0)
                return FAILED;
            p += 2 + len;
        }
    }
    return OK;
}

/* ---- assembling a record ------------------------------------------------------------------ */

/* A sub-record: its header (type, flag, length in `little`) and `content` already in out2. */
static int
put_sub(obuf *rec, unsigned char type, unsigned char flag, const obuf *content, int little)
{
    if (content->len > 0xFFFF)
        return UNHANDLED;
    unsigned char head[4] = {type, flag, 0, 0};
    wr16(head + 2, (unsigned)content->len, little);
    if (ob_put(rec, head, 4) < 0 || ob_put(rec, content->p, content->len) < 0)
        return FAILED;
    return OK;
}

/* The record's D, T and U areas after its H area (which starts at rec->p + 8): the column
 * framing and token lengths from `from` order to `to` order, RecLength set; `digits` turns a
 * LOGCSN into digits (to_seed), `lsn` digits into an LSN's text (from_seed, PostgreSQL). */
static int
put_areas(obuf *rec, obuf *part, const unsigned char *b, const frame *f, unsigned io,
          int from, int to, const unsigned char *fixed, Py_ssize_t nfixed, int digits, int lsn)
{
    int rc;
    if (f->d.start >= 0) {
        part->len = 0;
        rc = data_area(part, io, b + f->d.start, f->d.end - f->d.start, from, to, fixed,
                       nfixed);
        if (rc != OK)
            return rc;
        wr16(rec->p + 8 + 4, (unsigned)part->len, to); /* RecLength */
        if ((rc = put_sub(rec, 'D', 0, part, to)) != OK)
            return rc;
    } else {
        wr16(rec->p + 8 + 4, 0, to);
    }
    if (f->t.start >= 0) {
        part->len = 0;
        rc = token_area(part, b + f->t.start, f->t.end - f->t.start, from, to, digits, lsn);
        if (rc != OK || (rc = put_sub(rec, 'T', 0, part, to)) != OK)
            return rc;
    }
    if (f->u.start >= 0) {
        part->len = 0;
        rc = user_tokens(part, b + f->u.start, f->u.end - f->u.start, from, to);
        if (rc != OK || (rc = put_sub(rec, 'U', 0, part, to)) != OK)
            return rc;
    }
    return OK;
}

static PyObject *
finish(obuf *rec, unsigned flag, int little)
{
    Py_ssize_t total = rec->len + 4;
    if (total > MAX_RECORD)
        return NULL;
    unsigned char z[4] = {'Z', (unsigned char)flag, 0, 0};
    wr16(z + 2, (unsigned)total, little);
    if (ob_put(rec, z, 4) < 0)
        return NULL;
    rec->p[0] = 'G';
    rec->p[1] = (unsigned char)flag;
    wr16(rec->p + 2, (unsigned)total, little);
    return PyBytes_FromStringAndSize((const char *)rec->p, rec->len);
}

/* The fixed-width map of a table: a bytes object, or NULL for "judge by shape". */
static int
fixed_map(PyObject *o, const unsigned char **map, Py_ssize_t *n)
{
    if (o == Py_None) {
        *map = NULL;
        *n = 0;
        return OK;
    }
    if (!PyBytes_Check(o))
        return UNHANDLED;
    *map = (const unsigned char *)PyBytes_AS_STRING(o);
    *n = PyBytes_GET_SIZE(o);
    return OK;
}

/* to_seed(buf, pos, end, prefer_little, tables, names) -> (bytes, length, little) | None
 *
 * tables: list by TDR index of (name: bytes, fixed: bytes) or None; names: dict of a table
 * name (bytes) in the 12.1 layout's header to its fixed map (bytes) or None. */
static PyObject *
c_to_seed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "to_seed(buf, pos, end, prefer_little, tables, names)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    int prefer = PyObject_IsTrue(args[3]);
    if ((pos == -1 || end == -1 || prefer < 0) && PyErr_Occurred())
        return NULL;
    PyObject *tables = args[4], *names = args[5];
    if (!PyList_Check(tables) || !PyDict_Check(names))
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    /* Buffers kept between calls (the GIL is held throughout: nothing here lets it go). */
    static obuf rec, part;
    rec.len = part.len = 0;
    const unsigned char *b = view.buf;
    frame f;
    int rc;
    if (pos < 0 || end > view.len || pos > end)
        goto none;
    if (frame_in(b, pos, end, prefer, &f) != OK && frame_in(b, pos, end, !prefer, &f) != OK)
        goto none;
    const unsigned char *h = f.h;
    int lt = f.little;
    Py_ssize_t dlen = f.d.start >= 0 ? f.d.end - f.d.start : 0;
    unsigned io = h[6], partition = h[1];
    if (rd16(h + 4, lt) != dlen || h[32] != 0 || !(is_row_op(io) || io == 100 || io == 116))
        goto none; /* mixed byte orders, a fragment, metadata, DDL: Python's */
    const unsigned char *tail = h + H_FIXED, *name = NULL, *fixed = NULL;
    Py_ssize_t tail_len = f.hlen - H_FIXED, name_len = 0, nfixed = 0;
    PyObject *fixed_obj = Py_None;
    if (tail_len == 2 || (tail_len == 4 && (partition & 0x80))) {
        Py_ssize_t index = rd16(tail, lt);
        if (index >= PyList_GET_SIZE(tables))
            goto none;
        PyObject *entry = PyList_GET_ITEM(tables, index);
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 2
            || !PyBytes_Check(PyTuple_GET_ITEM(entry, 0)))
            goto none;
        name = (const unsigned char *)PyBytes_AS_STRING(PyTuple_GET_ITEM(entry, 0));
        name_len = PyBytes_GET_SIZE(PyTuple_GET_ITEM(entry, 0));
        fixed_obj = PyTuple_GET_ITEM(entry, 1);
    } else if (tail_len > 1 && tail[tail_len - 1] == 0
               && memchr(tail, 0, (size_t)(tail_len - 1)) == NULL) {
        name = tail;
        name_len = tail_len - 1;
        PyObject *key = PyBytes_FromStringAndSize((const char *)name, name_len);
        if (key == NULL)
            goto fail;
        PyObject *found = PyDict_GetItemWithError(names, key); /* borrowed */
        Py_DECREF(key);
        if (found == NULL && PyErr_Occurred())
            goto fail;
        if (found == NULL && lt)
            goto none; /* no definition, little-endian: Python judges the shapes */
        fixed_obj = found ? found : Py_None;
    } else {
        goto none;
    }
    if (fixed_map(fixed_obj, &fixed, &nfixed) != OK)
        goto none;
    if (fixed == NULL && lt)
        goto none;
    /* H: the 11.2 layout, big-endian */
    if (ob_reserve(&rec, 8 + H_FIXED + name_len + 1) < 0)
        goto fail;
    rec.len = 8; /* G header (filled in by finish) and the H header */
    unsigned char *w = rec.p + 4;
    w[0] = 'H';
    w[1] = 0;
    wr16(w + 2, (unsigned)(H_FIXED + name_len + 1), 0);
    Py_ssize_t hpos = rec.len;
    if (ob_reserve(&rec, H_FIXED + name_len + 1) < 0)
        goto fail;
    w = rec.p + hpos;
    memcpy(w, h, 4); /* Hdr-Ind, Partition, UndoFlag, BeforeAfter */
    w[6] = h[6];
    w[7] = h[7];
    wr64(w + 8, rd64(h + 8, lt), 0);
    wr64(w + 16, rd64(h + 16, lt), 0);
    w[24] = h[28]; /* TransInd */
    wr32(w + 25, rd32(h + 24, lt), 0);
    memcpy(w + 29, h + 29, 5); /* FormatType .. RecCount */
    memcpy(w + H_FIXED, name, (size_t)name_len);
    w[H_FIXED + name_len] = 0;
    rec.len = hpos + H_FIXED + name_len + 1;
    if ((rc = put_areas(&rec, &part, b, &f, io, lt, 0, fixed, nfixed, 1, 0)) != OK)
        goto rc_out;
    for (int i = 0; i < f.n_other; i++) { /* areas a newer writer may add: kept as they are */
        part.len = 0;
        if (ob_put(&part, b + f.other[i].start, f.other[i].end - f.other[i].start) < 0)
            goto fail;
        if ((rc = put_sub(&rec, f.other_type[i], f.other_flag[i], &part, 0)) != OK)
            goto rc_out;
    }
    PyObject *seed = finish(&rec, f.flag, 0);
    if (seed == NULL && !PyErr_Occurred())
        goto none;
    if (seed == NULL)
        goto fail;
    result = Py_BuildValue("(NnO)", seed, f.length, lt ? Py_True : Py_False);
    goto done;
rc_out:
    if (rc == FAILED)
        goto fail;
none:
    result = Py_NewRef(Py_None);
    goto done;
fail:
    result = NULL;
done:
    if (rec.cap > (1 << 20)) { /* keep a small buffer, not the largest ever seen */
        PyMem_Free(rec.p);
        rec.p = NULL;
        rec.cap = 0;
    }
    if (part.cap > (1 << 20)) {
        PyMem_Free(part.p);
        part.p = NULL;
        part.cap = 0;
    }
    PyBuffer_Release(&view);
    return result;
}

/* from_seed(record, little, tail, fixed, csn_to_lsn) -> bytes | None
 *
 * An 11.2 row record (as records.encode_change_records writes it) as a 12c+ one: the 12c
 * header in `little` order with `tail` after its 34 bytes (a TDR index, the 12.1 layout's
 * name, or one NUL), partition 0x0C and OrigNode 0xFF for rows, 0 and 0 for DDL and
 * comments; `fixed`: the table's fixed-width map (bytes) or None. */
static PyObject *
c_from_seed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "from_seed(record, little, tail, fixed, csn_to_lsn)");
        return NULL;
    }
    int lt = PyObject_IsTrue(args[1]), lsn = PyObject_IsTrue(args[4]);
    if (lt < 0 || lsn < 0)
        return NULL;
    if (!PyBytes_Check(args[0]) || !PyBytes_Check(args[2]))
        Py_RETURN_NONE;
    const unsigned char *fixed;
    Py_ssize_t nfixed;
    if (fixed_map(args[3], &fixed, &nfixed) != OK)
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    const unsigned char *tail = (const unsigned char *)PyBytes_AS_STRING(args[2]);
    Py_ssize_t tail_len = PyBytes_GET_SIZE(args[2]);
    frame f;
    if (frame_in(b, 0, n, 0, &f) != OK || f.hlen < H_FIXED + 1)
        Py_RETURN_NONE;
    const unsigned char *h = f.h;
    unsigned io = h[6];
    int row = is_row_op(io) || io == 100 || io == 116;
    if (h[32] != 0 || !(row || io == 160 || io == 205))
        Py_RETURN_NONE; /* fragments and metadata: Python's */
    if (lt && is_row_op(io) && fixed == NULL)
        Py_RETURN_NONE;
    PyObject *result = NULL;
    obuf rec = {0}, part = {0};
    int rc;
    if (ob_reserve(&rec, 8 + H_FIXED + tail_len) < 0)
        goto fail;
    unsigned char *w = rec.p + 4;
    w[0] = 'H';
    w[1] = 0;
    wr16(w + 2, (unsigned)(H_FIXED + tail_len), lt);
    w += 4;
    w[0] = 0x45;
    w[1] = row ? 0x0C : 0x00;
    w[2] = 0;
    w[3] = h[3];
    w[6] = (unsigned char)io;
    w[7] = row ? 0xFF : 0x00;
    wr64(w + 8, rd64(h + 8, 0), lt);
    wr64(w + 16, rd64(h + 16, 0), lt);
    wr32(w + 24, rd32(h + 25, 0), lt); /* AuditRBA */
    w[28] = h[24];                       /* TransInd */
    w[29] = 0x52;
    w[30] = w[31] = 0;
    w[32] = h[32];
    w[33] = 1;
    memcpy(w + H_FIXED, tail, (size_t)tail_len);
    rec.len = 8 + H_FIXED + tail_len;
    if ((rc = put_areas(&rec, &part, b, &f, io, 0, lt, fixed, nfixed, 0, lsn)) != OK)
        goto rc_out;
    if (f.n_other)
        goto none;
    result = finish(&rec, f.flag, lt);
    if (result == NULL && !PyErr_Occurred())
        goto none;
    goto done;
rc_out:
    if (rc == FAILED)
        goto fail;
none:
    result = Py_NewRef(Py_None);
    goto done;
fail:
    result = NULL;
done:
    PyMem_Free(rec.p);
    PyMem_Free(part.p);
    return result;
}

static PyMethodDef methods[] = {
    {"to_seed", (PyCFunction)(void (*)(void))c_to_seed, METH_FASTCALL,
     "A 12c+ row record as the equivalent 11.2 record, or None (Python decides)."},
    {"from_seed", (PyCFunction)(void (*)(void))c_from_seed, METH_FASTCALL,
     "An 11.2 row record laid out as a 12c+ one, or None (Python encodes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_codec12",
    "Optional C path of trailgate's 12c+ record codec (the Python code is the reference).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__codec12(void)
{
    return PyModule_Create(&module_def);
}
