/*
 * trailgate.capture.postgres._pgfast: one pgoutput row change straight to a trail D area.
 *
 * The Extract's hot path decodes an Insert/Update/Delete message, turns each value from
 * PostgreSQL's text output into trail form and frames it as the D record stores it.  In
 * Python that is three passes over Python objects per row; here it is one pass over bytes.
 *
 * The Python code (pgoutput.py, capture.py, types.py, trail/values.py) is the reference:
 * encode_change() gives exactly the bytes the Python path gives, or returns None for
 * anything it does not handle (an unusual value, a malformed message, a value that needs
 * LOB pieces), and the caller then takes the Python path, which gives the result or the
 * detailed error.
 *
 * A relation's layout is a bytes object built once per Relation message (capture.py):
 *   u16 ncols, u16 nkey, nkey x u16 key index, ncols x (u8 conv, u8 frame, u16 width)
 * all big-endian.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* conv: how PostgreSQL's text becomes trail form (types.trail_from_pg_text) */
enum { CONV_TEXT = 0, CONV_NUMBER = 1, CONV_BOOL = 2, CONV_CHAR = 3, CONV_DATE = 4,
       CONV_TIMESTAMP = 5, CONV_RAW = 6 };
/* frame: how the D record frames the value (values.frame_value) */
enum { FRAME_VARIABLE = 0, FRAME_CHAR = 1, FRAME_DATE = 2, FRAME_TIMESTAMP = 3 };
/* what encode_change returns as the operation */
enum { OP_INSERT = 0, OP_DELETE = 1, OP_FIELD_COMP = 2, OP_PK_UPDATE = 3 };

#define MAX_VALUE_BYTES (0xFFFF - 4)
#define MAX_COLUMNS 1664
#define SMALL_COLUMNS 64

typedef struct {
    char kind;              /* 'n' null, 'u' unchanged TOAST, 't' text */
    const unsigned char *p;
    Py_ssize_t len;
} Value;

typedef struct {
    unsigned char *buf;
    Py_ssize_t len, cap;
} Out;

typedef struct {
    int ncols, nkey;
    const unsigned char *key;   /* nkey x u16 */
    const unsigned char *cols;  /* ncols x 4 bytes */
} Layout;

static int out_reserve(Out *o, Py_ssize_t more) {
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + more)
        cap *= 2;
    unsigned char *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = b;
    o->cap = cap;
    return 0;
}

static inline void put16(unsigned char *p, unsigned v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static inline unsigned get16(const unsigned char *p) { return ((unsigned)p[0] << 8) | p[1]; }

static inline uint32_t get32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Strict UTF-8 (what Python's decoder accepts: no overlongs, surrogates or > U+10FFFF).
 * pgoutput.py decodes every text value, so a value that is not UTF-8 is its error. */
static int valid_utf8(const unsigned char *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
        } else {
            return 0;
        }
        if (i + len > n || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (int k = 2; k < len; k++)
            if (p[i + k] < 0x80 || p[i + k] > 0xBF)
                return 0;
        i += len;
    }
    return 1;
}

/* Parse TupleData at *pos into vals (exactly ncols values).  0 ok, 1 not handled. */
static int parse_tuple(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pos, int ncols,
                       Value *vals) {
    Py_ssize_t p = *pos;
    if (p + 2 > n)
        return 1;
    int count = (int)(int16_t)get16(d + p);
    p += 2;
    if (count != ncols)
        return 1;
    for (int i = 0; i < count; i++) {
        if (p >= n)
            return 1;
        char kind = (char)d[p++];
        vals[i].kind = kind;
        vals[i].p = NULL;
        vals[i].len = 0;
        if (kind == 't') {
            if (p + 4 > n)
                return 1;
            int32_t len = (int32_t)get32(d + p);
            p += 4;
            if (len < 0 || p + len > n || !valid_utf8(d + p, len))
                return 1;
            vals[i].p = d + p;
            vals[i].len = len;
            p += len;
        } else if (kind != 'n' && kind != 'u') {
            return 1; /* 'b' (binary) and anything else: Python says what is wrong */
        }
    }
    *pos = p;
    return 0;
}

static int values_equal(const Value *a, const Value *b) {
    if (a->kind != b->kind)
        return 0;
    if (a->kind != 't')
        return 1;
    return a->len == b->len && memcmp(a->p, b->p, (size_t)a->len) == 0;
}

static int is_digits(const unsigned char *p, int n) {
    for (int i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return 0;
    return 1;
}

/* Trail-form timestamp of PostgreSQL text (types._trail_timestamp).  Writes up to 29 bytes
 * to dst and returns the length; 0 means "the text itself"; -1 means not handled. */
static int trail_timestamp(const unsigned char *t, Py_ssize_t n, unsigned char *dst) {
    if (n < 19 || !is_digits(t, 4) || t[4] != '-' || !is_digits(t + 5, 2) || t[7] != '-'
        || !is_digits(t + 8, 2) || t[10] != ' ' || !is_digits(t + 11, 2) || t[13] != ':'
        || !is_digits(t + 14, 2) || t[16] != ':' || !is_digits(t + 17, 2))
        return 0;
    Py_ssize_t p = 19;
    const unsigned char *frac = NULL;
    int nfrac = 0;
    if (p < n && t[p] == '.') {
        Py_ssize_t q = p + 1;
        while (q < n && nfrac < 7 && t[q] >= '0' && t[q] <= '9') {
            q++;
            nfrac++;
        }
        if (nfrac == 0 || nfrac > 6)
            return 0;
        frac = t + p + 1;
        p = q;
    }
    if (p < n) { /* an offset: [+-]HH(:?MM)?(:?SS)? */
        if (t[p] != '+' && t[p] != '-')
            return 0;
        p++;
        if (p + 2 > n || !is_digits(t + p, 2))
            return 0;
        int nonzero = t[p] != '0' || t[p + 1] != '0';
        p += 2;
        for (int part = 0; part < 2 && p < n; part++) {
            if (t[p] == ':')
                p++;
            if (p + 2 > n || !is_digits(t + p, 2))
                return 0;
            nonzero |= t[p] != '0' || t[p + 1] != '0';
            p += 2;
        }
        if (p != n)
            return 0;
        if (nonzero)
            return -1; /* a real offset: Python converts it to UTC */
    }
    memcpy(dst, t, 10);
    dst[10] = ':';
    memcpy(dst + 11, t + 11, 8);
    dst[19] = '.';
    for (int i = 0; i < 6; i++)
        dst[20 + i] = i < nfrac ? frac[i] : '0';
    memcpy(dst + 26, "000", 3);
    return 29;
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Append column `index` with value v framed as the layout says.  0 ok, 1 not handled. */
static int put_column(Out *o, const Layout *lay, int index, const Value *v) {
    const unsigned char *c = lay->cols + 4 * index;
    int conv = c[0], frame = c[1];
    unsigned width = get16(c + 2);
    /* worst case: head 4 + null/len 4 + value (CHAR padding, timestamp/date suffixes) */
    Py_ssize_t room = 8 + v->len + (Py_ssize_t)width + 40;
    if (out_reserve(o, room) < 0)
        return -1;
    unsigned char *head = o->buf + o->len;
    put16(head, (unsigned)index);
    unsigned char *f = head + 4; /* the framed value */
    Py_ssize_t flen;
    if (v->kind == 'n') {
        switch (frame) {
        case FRAME_VARIABLE:
            memcpy(f, "\xff\xff\x00\x00", 4);
            flen = 4;
            break;
        case FRAME_CHAR:
            f[0] = f[1] = 0xff;
            memset(f + 2, 0, width);
            flen = 2 + width;
            break;
        case FRAME_DATE:
            memcpy(f, "\xff\xff" "1900-01-01:00:00:00", 21);
            flen = 21;
            break;
        default:
            memcpy(f, "\xff\xff" "1900-01-01:00:00:00.000000000", 31);
            flen = 31;
        }
    } else {
        const unsigned char *t = v->p;
        Py_ssize_t n = v->len;
        unsigned char *val = f + (frame == FRAME_VARIABLE ? 4 : 2);
        Py_ssize_t vlen;
        switch (conv) {
        case CONV_BOOL:
            val[0] = ((n == 1 && t[0] == 't') || (n == 4 && memcmp(t, "true", 4) == 0))
                         ? '1' : '0';
            vlen = 1;
            break;
        case CONV_NUMBER:
            for (Py_ssize_t i = 0; i < n; i++)
                if (t[i] >= 0x80)
                    return 1;
            memcpy(val, t, (size_t)n);
            vlen = n;
            break;
        case CONV_CHAR: {
            Py_ssize_t chars = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                chars += (t[i] & 0xC0) != 0x80;
            memcpy(val, t, (size_t)n);
            vlen = n;
            for (; chars < (Py_ssize_t)width; chars++)
                val[vlen++] = ' ';
            break;
        }
        case CONV_DATE:
            memcpy(val, t, (size_t)n);
            vlen = n;
            if (n == 10 && is_digits(t, 4) && t[4] == '-' && is_digits(t + 5, 2) && t[7] == '-'
                && is_digits(t + 8, 2)) {
                memcpy(val + 10, ":00:00:00", 9);
                vlen = 19;
            }
            break;
        case CONV_TIMESTAMP: {
            int r = trail_timestamp(t, n, val);
            if (r < 0)
                return 1;
            if (r > 0) {
                vlen = r;
            } else {
                memcpy(val, t, (size_t)n);
                vlen = n;
            }
            break;
        }
        case CONV_RAW:
            if (n < 2 || t[0] != '\\' || t[1] != 'x' || (n & 1))
                return 1;
            vlen = (n - 2) / 2;
            for (Py_ssize_t i = 0; i < vlen; i++) {
                int hi = hexval(t[2 + 2 * i]), lo = hexval(t[3 + 2 * i]);
                if (hi < 0 || lo < 0)
                    return 1;
                val[i] = (unsigned char)(hi << 4 | lo);
            }
            break;
        default: /* CONV_TEXT */
            memcpy(val, t, (size_t)n);
            vlen = n;
        }
        if (vlen > MAX_VALUE_BYTES)
            return 1; /* LOB pieces: the Python path */
        f[0] = f[1] = 0;
        if (frame == FRAME_VARIABLE) {
            put16(f + 2, (unsigned)vlen);
            flen = 4 + vlen;
        } else {
            if (frame == FRAME_CHAR)
                while (vlen < (Py_ssize_t)width)
                    val[vlen++] = ' ';
            flen = 2 + vlen;
        }
    }
    if (flen > 0xFFFF)
        return 1;
    put16(head + 2, (unsigned)flen);
    o->len += 4 + flen;
    return 0;
}

/* Append the image of vals at the wanted indexes; 'u' values are left out. */
static int put_image(Out *o, const Layout *lay, const Value *vals, const unsigned char *want,
                     const unsigned char *keep) {
    for (int i = 0; i < lay->ncols; i++) {
        if (!want[i] || vals[i].kind == 'u' || (keep != NULL && !keep[i]))
            continue;
        int r = put_column(o, lay, i, &vals[i]);
        if (r)
            return r;
    }
    return 0;
}

/* The D area of message d (n bytes) appended to o from o->len on; *op gets the operation.
 * 0 ok, 1 not handled, -1 error (exception set). */
static int encode_values(const unsigned char *d, Py_ssize_t n, const Layout *lay,
                         const unsigned char *keep, Value *oldv, Value *newv,
                         unsigned char *want, unsigned char *is_key, Out *o, int *op) {
    int ncols = lay->ncols;
    memset(is_key, 0, (size_t)ncols);
    for (int k = 0; k < lay->nkey; k++) {
        unsigned idx = get16(lay->key + 2 * k);
        if ((int)idx >= ncols)
            return 1;
        is_key[idx] = 1;
    }
    char type = (char)d[0];
    Py_ssize_t pos = 5; /* type byte, relation oid */
    char old_kind = 0;
    if (type == 'U' || type == 'D') {
        if (d[pos] == 'K' || d[pos] == 'O') {
            old_kind = (char)d[pos++];
            if (parse_tuple(d, n, &pos, ncols, oldv))
                return 1;
        } else if (type == 'D') {
            return 1;
        }
    }
    if (type == 'I' || type == 'U') {
        if (pos >= n || d[pos++] != 'N' || parse_tuple(d, n, &pos, ncols, newv))
            return 1;
    } else if (type != 'D') {
        return 1;
    }
    if (pos != n)
        return 1;

    if (type == 'I') {
        *op = OP_INSERT;
        memset(want, 1, (size_t)ncols);
        return put_image(o, lay, newv, want, keep);
    }
    if (type == 'D') {
        *op = OP_DELETE;
        if (old_kind == 'K')
            memcpy(want, is_key, (size_t)ncols);
        else
            memset(want, 1, (size_t)ncols);
        return put_image(o, lay, oldv, want, keep);
    }
    if (old_kind == 0) { /* no old image: every column the log gives */
        *op = OP_FIELD_COMP;
        memset(want, 1, (size_t)ncols);
        return put_image(o, lay, newv, want, keep);
    }
    for (int i = 0; i < ncols; i++) /* an unchanged TOASTed key travels in the old image */
        if (is_key[i] && newv[i].kind == 'u' && oldv[i].kind == 't')
            newv[i] = oldv[i];
    int full = old_kind == 'O', pk_changed = 0;
    for (int i = 0; i < ncols; i++) {
        int changed = newv[i].kind != 'u' && (!full || !values_equal(&newv[i], &oldv[i]));
        want[i] = is_key[i] || changed;
        if (is_key[i] && oldv[i].kind != 'u' && !values_equal(&oldv[i], &newv[i]))
            pk_changed = 1;
    }
    *op = OP_FIELD_COMP;
    if (pk_changed) {
        *op = OP_PK_UPDATE;
        if (out_reserve(o, 2) < 0)
            return -1;
        Py_ssize_t at = o->len;
        o->len += 2;
        int r = put_image(o, lay, oldv, is_key, keep);
        if (r)
            return r;
        if (o->len - at - 2 > 0xFFFF)
            return 1;
        put16(o->buf + at, (unsigned)(o->len - at - 2));
    }
    return put_image(o, lay, newv, want, keep);
}

/* Run encode_values on message msg with layout and keep (None or bytes) into o.
 * 0 ok, 1 not handled, -1 error. */
static int encode_parts(PyObject *msg, PyObject *layout, PyObject *keep_obj, Out *o, int *op) {
    if (!PyBytes_Check(msg) || !PyBytes_Check(layout)
        || (keep_obj != Py_None && !PyBytes_Check(keep_obj)))
        return 1;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(msg);
    Py_ssize_t n = PyBytes_GET_SIZE(msg);
    const unsigned char *lb = (const unsigned char *)PyBytes_AS_STRING(layout);
    Py_ssize_t ln = PyBytes_GET_SIZE(layout);
    Layout lay;
    if (ln < 4 || n < 6)
        return 1;
    lay.ncols = (int)get16(lb);
    lay.nkey = (int)get16(lb + 2);
    lay.key = lb + 4;
    lay.cols = lb + 4 + 2 * lay.nkey;
    if (lay.ncols > MAX_COLUMNS || ln != 4 + 2 * lay.nkey + 4 * lay.ncols)
        return 1;
    const unsigned char *keep = NULL;
    if (keep_obj != Py_None) {
        if (PyBytes_GET_SIZE(keep_obj) != lay.ncols)
            return 1;
        keep = (const unsigned char *)PyBytes_AS_STRING(keep_obj);
    }
    Value small[2 * SMALL_COLUMNS], *oldv = small, *newv = small + SMALL_COLUMNS, *big = NULL;
    unsigned char want[MAX_COLUMNS], is_key[MAX_COLUMNS];
    if (lay.ncols > SMALL_COLUMNS) {
        big = PyMem_Malloc(sizeof(Value) * 2 * (size_t)lay.ncols);
        if (big == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        oldv = big;
        newv = big + lay.ncols;
    }
    int r = encode_values(d, n, &lay, keep, oldv, newv, want, is_key, o, op);
    PyMem_Free(big);
    return r;
}

static int encode_message(PyObject *const *args, Out *o, int *op) {
    return encode_parts(args[0], args[1], args[2], o, op);
}

static PyObject *encode_change(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3)
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0};
    int op = 0;
    int r = encode_message(args, &o, &op);
    if (r) {
        PyMem_Free(o.buf);
        if (r < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *area = PyBytes_FromStringAndSize((const char *)(o.buf ? o.buf : (unsigned char *)""),
                                               o.len);
    PyMem_Free(o.buf);
    if (area == NULL)
        return NULL;
    return Py_BuildValue("(iN)", op, area);
}

/* GoldenGate IOTypes (model.OpType) of encode_change's operations, and TransInd MIDDLE. */
static const unsigned char IO_TYPES[] = {5, 3, 15, 115};
#define TRANS_IND_MIDDLE 1
#define H_FIXED 34

static inline void put64(unsigned char *p, uint64_t v) {
    for (int i = 7; i >= 0; i--) {
        p[i] = (unsigned char)v;
        v >>= 8;
    }
}

/* The whole trail record of one row change, as records.encode_row_record(op, table, d_area,
 * io_time, lsn, lsn >> 24, None, None) makes it; o is the caller's scratch buffer (kept
 * between calls).  Returns a new bytes object, or NULL with *status 1 (not handled: the
 * Python path) or -1 (error set). */
static PyObject *build_record(PyObject *msg, PyObject *layout, PyObject *keep, const char *name,
                              Py_ssize_t name_len, unsigned long long io_time,
                              unsigned long long lsn, Out *o, int *status) {
    *status = 1;
    if ((lsn >> 24) > 0xFFFFFFFFull)
        return NULL;
    Py_ssize_t prefix = 4 + 4 + H_FIXED + name_len + 1 + 4; /* G, H sub, D sub header */
    if (out_reserve(o, prefix + 256) < 0) {
        *status = -1;
        return NULL;
    }
    o->len = prefix;
    int op = 0;
    int r = encode_parts(msg, layout, keep, o, &op);
    Py_ssize_t dlen = o->len - prefix, total = o->len + 4;
    if (!r && (dlen > 0xFFFF || total > 0xFFFF))
        r = 1; /* fragments: the Python path */
    if (!r && out_reserve(o, 4) < 0)
        r = -1;
    if (r) {
        *status = r;
        return NULL;
    }
    unsigned char *b = o->buf;
    b[0] = 'G';
    b[1] = 0x01;
    put16(b + 2, (unsigned)total);
    unsigned char *h = b + 4;
    h[0] = 'H';
    h[1] = 0;
    put16(h + 2, (unsigned)(H_FIXED + name_len + 1));
    unsigned char *f = h + 4;
    f[0] = 0x45;
    f[1] = 0x04;
    f[2] = 0x00;
    f[3] = op == OP_DELETE ? 0x42 : 0x41;
    put16(f + 4, (unsigned)dlen);
    f[6] = IO_TYPES[op];
    f[7] = 0xFF;
    put64(f + 8, io_time);
    put64(f + 16, lsn);
    f[24] = TRANS_IND_MIDDLE;
    uint32_t rba = (uint32_t)(lsn >> 24);
    f[25] = (unsigned char)(rba >> 24);
    f[26] = (unsigned char)(rba >> 16);
    f[27] = (unsigned char)(rba >> 8);
    f[28] = (unsigned char)rba;
    f[29] = 0x52;
    f[30] = 0;
    f[31] = 0;
    f[32] = 0; /* continued */
    f[33] = 1;
    memcpy(f + H_FIXED, name, (size_t)name_len);
    f[H_FIXED + name_len] = 0;
    unsigned char *dsub = f + H_FIXED + name_len + 1;
    dsub[0] = 'D';
    dsub[1] = 0;
    put16(dsub + 2, (unsigned)dlen);
    unsigned char *z = b + o->len;
    z[0] = 'Z';
    z[1] = 0x01;
    put16(z + 2, (unsigned)total);
    PyObject *record = PyBytes_FromStringAndSize((const char *)b, total);
    *status = record == NULL ? -1 : 0;
    return record;
}

/* The table name as UTF-8 without NULs; NULL (no exception) when it cannot be used. */
static const char *table_name(PyObject *table, Py_ssize_t *len) {
    if (!PyUnicode_Check(table))
        return NULL;
    const char *name = PyUnicode_AsUTF8AndSize(table, len);
    if (name == NULL) {
        PyErr_Clear();
        return NULL;
    }
    return (Py_ssize_t)strlen(name) == *len ? name : NULL;
}

/* encode_row(message, layout, keep, table, io_time, lsn) -> bytes | None: the change's
 * whole trail record (build_record). */
static PyObject *encode_row(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6)
        Py_RETURN_NONE;
    Py_ssize_t name_len;
    const char *name = table_name(args[3], &name_len);
    unsigned long long io_time = PyLong_AsUnsignedLongLong(args[4]);
    unsigned long long lsn = PyLong_AsUnsignedLongLong(args[5]);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (name == NULL)
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0};
    int status;
    PyObject *record = build_record(args[0], args[1], args[2], name, name_len, io_time, lsn,
                                    &o, &status);
    PyMem_Free(o.buf);
    if (record == NULL && status > 0)
        Py_RETURN_NONE;
    return record;
}

/* The (lsn, message) pair at chunk[i]: 1 a row message (I, U, D) of relation key with
 * *lsn and *msg set, 0 anything else. */
static int row_item(PyObject *chunk, Py_ssize_t i, const unsigned char *key,
                    unsigned long long *lsn, PyObject **msg) {
    PyObject *item = PyList_GET_ITEM(chunk, i);
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
        return 0;
    PyObject *data = PyTuple_GET_ITEM(item, 1);
    if (!PyBytes_CheckExact(data) || PyBytes_GET_SIZE(data) <= 5)
        return 0;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    if ((d[0] != 'I' && d[0] != 'U' && d[0] != 'D') || memcmp(d + 1, key, 4) != 0)
        return 0;
    PyObject *l = PyTuple_GET_ITEM(item, 0);
    if (!PyLong_CheckExact(l))
        return 0;
    *lsn = PyLong_AsUnsignedLongLong(l);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *msg = data;
    return 1;
}

/* encode_rows(chunk, start, stop, key, layout, keep, table, io_time, out, room, budget)
 *   -> (next, nbytes)
 * The capture loop's run of row changes in C: from chunk[start] on (a list of (lsn,
 * message) pairs), each Insert/Update/Delete of relation key (4 bytes) becomes its trail
 * record (encode_row), appended to out, until stop, a message of another kind or relation,
 * one encode_row leaves to Python, room records or budget bytes.  next is the first item
 * not taken, nbytes the records' total size. */
static PyObject *encode_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 11 || !PyList_CheckExact(args[0]) || !PyBytes_Check(args[3])
        || PyBytes_GET_SIZE(args[3]) != 4 || !PyList_CheckExact(args[8])) {
        PyErr_SetString(PyExc_TypeError, "encode_rows(chunk: list, start, stop, key: bytes[4], "
                        "layout, keep, table, io_time, out: list, room, budget)");
        return NULL;
    }
    PyObject *chunk = args[0], *out = args[8];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    Py_ssize_t room = PyLong_AsSsize_t(args[9]), budget = PyLong_AsSsize_t(args[10]);
    unsigned long long io_time = PyLong_AsUnsignedLongLong(args[7]);
    if (PyErr_Occurred())
        return NULL;
    if (start < 0) /* chunk[start] would be before the list's items */
        return PyErr_Format(PyExc_IndexError, "encode_rows: negative start %zd", start);
    if (stop > PyList_GET_SIZE(chunk))
        stop = PyList_GET_SIZE(chunk);
    const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(args[3]);
    Py_ssize_t name_len;
    const char *name = table_name(args[6], &name_len);
    Py_ssize_t i = start, nbytes = 0, taken = 0;
    Out o = {NULL, 0, 0};
    if (name != NULL) {
        while (i < stop && taken < room && nbytes < budget) {
            unsigned long long lsn;
            PyObject *msg;
            if (!row_item(chunk, i, key, &lsn, &msg))
                break;
            int status;
            PyObject *record = build_record(msg, args[4], args[5], name, name_len, io_time,
                                            lsn, &o, &status);
            if (record == NULL) {
                if (status < 0) {
                    PyMem_Free(o.buf);
                    return NULL;
                }
                break;
            }
            nbytes += PyBytes_GET_SIZE(record);
            int failed = PyList_Append(out, record);
            Py_DECREF(record);
            if (failed) {
                PyMem_Free(o.buf);
                return NULL;
            }
            taken++;
            i++;
        }
    }
    PyMem_Free(o.buf);
    return Py_BuildValue("(nn)", i, nbytes);
}

/* next_mark(chunk, start, stop) -> index: the first item of chunk[start:stop] that is a
 * keepalive (message None) or a Begin or Commit message, or stop: what the stream's
 * batch boundaries look at inside a transaction. */
static PyObject *next_mark(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "next_mark(chunk: list, start, stop)");
        return NULL;
    }
    PyObject *chunk = args[0];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (i < 0) /* chunk[i] would be before the list's items */
        return PyErr_Format(PyExc_IndexError, "next_mark: negative start %zd", i);
    if (stop > PyList_GET_SIZE(chunk))
        stop = PyList_GET_SIZE(chunk);
    for (; i < stop; i++) {
        PyObject *item = PyList_GET_ITEM(chunk, i);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            break;
        PyObject *data = PyTuple_GET_ITEM(item, 1);
        if (!PyBytes_CheckExact(data) || PyBytes_GET_SIZE(data) == 0)
            break;
        char kind = PyBytes_AS_STRING(data)[0];
        if (kind == 'B' || kind == 'C')
            break;
    }
    return PyLong_FromSsize_t(i < stop ? i : stop);
}

static PyMethodDef methods[] = {
    {"encode_change", (PyCFunction)(void (*)(void))encode_change, METH_FASTCALL,
     "encode_change(message, layout, keep) -> (op, d_area) | None: a pgoutput Insert, "
     "Update or Delete as a trail D area; None when the Python path must do it."},
    {"encode_row", (PyCFunction)(void (*)(void))encode_row, METH_FASTCALL,
     "encode_row(message, layout, keep, table, io_time, lsn) -> bytes | None: the same "
     "change as its whole trail record (TransInd MIDDLE, no T area)."},
    {"encode_rows", (PyCFunction)(void (*)(void))encode_rows, METH_FASTCALL,
     "encode_rows(chunk, start, stop, key, layout, keep, table, io_time, out, room, budget) "
     "-> (next, nbytes): encode_row over a run of one relation's row changes in a list of "
     "(lsn, message) pairs, records appended to out."},
    {"next_mark", (PyCFunction)(void (*)(void))next_mark, METH_FASTCALL,
     "next_mark(chunk, start, stop) -> index of the first keepalive, Begin or Commit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pgfast",
    "pgoutput row changes straight to trail records (the Python path is the reference).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pgfast(void) { return PyModule_Create(&module); }
