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
#define _GNU_SOURCE
#include <Python.h>
#include <limits.h>
#include <poll.h>
#include <time.h>
#include <stdio.h>
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
            /* ASCII, most values: eight bytes at a time while all eight are (and in n) */
            uint64_t word;
            while (i + 8 <= n) {
                memcpy(&word, p + i, 8);
                if (word & 0x8080808080808080ull)
                    break;
                i += 8;
            }
            while (i < n && p[i] < 0x80)
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

/* Append to o (from o->len on) the whole trail record of one row change, as
 * records.encode_row_record(op, table, d_area, io_time, lsn, lsn >> 24, None, None) makes
 * it; t_area (t_len bytes, may be 0) is a T sub-area put after the D area, where
 * records.with_t_area puts a transaction's CSN and XID.  *at gets the record's offset.
 * 0 ok, 1 not handled (o unchanged: the Python path), -1 error set. */
static int put_record(PyObject *msg, PyObject *layout, PyObject *keep, const char *name,
                      Py_ssize_t name_len, unsigned long long io_time, unsigned long long lsn,
                      const unsigned char *t_area, Py_ssize_t t_len, Out *o, Py_ssize_t *at) {
    if ((lsn >> 24) > 0xFFFFFFFFull)
        return 1;
    Py_ssize_t base = o->len;
    Py_ssize_t prefix = 4 + 4 + H_FIXED + name_len + 1 + 4; /* G, H sub, D sub header */
    if (out_reserve(o, prefix + 256) < 0)
        return -1;
    o->len = base + prefix;
    int op = 0;
    int r = encode_parts(msg, layout, keep, o, &op);
    Py_ssize_t dlen = o->len - base - prefix, total = o->len - base + t_len + 4;
    if (!r && (dlen > 0xFFFF || total > 0xFFFF))
        r = 1; /* fragments: the Python path */
    if (!r && out_reserve(o, t_len + 4) < 0)
        r = -1;
    if (r) {
        o->len = base;
        return r;
    }
    unsigned char *b = o->buf + base;
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
    if (t_len)
        memcpy(o->buf + o->len, t_area, (size_t)t_len);
    o->len += t_len;
    unsigned char *z = o->buf + o->len;
    z[0] = 'Z';
    z[1] = 0x01;
    put16(z + 2, (unsigned)total);
    o->len += 4;
    *at = base;
    return 0;
}

/* The whole trail record of one row change (put_record without a T area) as a new bytes
 * object; o is the caller's scratch buffer (kept between calls).  NULL with *status 1
 * (not handled: the Python path) or -1 (error set). */
static PyObject *build_record(PyObject *msg, PyObject *layout, PyObject *keep, const char *name,
                              Py_ssize_t name_len, unsigned long long io_time,
                              unsigned long long lsn, Out *o, int *status) {
    Py_ssize_t at;
    o->len = 0;
    *status = put_record(msg, layout, keep, name, name_len, io_time, lsn, NULL, 0, o, &at);
    if (*status)
        return NULL;
    PyObject *record = PyBytes_FromStringAndSize((const char *)o->buf, o->len);
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

/* PyLong_AsUnsignedLongLong, quicker for an int below 2**63 (an LSN): CPython 3.11 converts
 * an int of more than one 30-bit digit through a byte array, twice per message here.
 * Anything else (not an int, negative, 2**63 or more) takes PyLong_AsUnsignedLongLong
 * itself, so the result and the error are its own. */
static inline unsigned long long as_lsn(PyObject *o) {
    if (PyLong_CheckExact(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (!overflow && v >= 0)
            return (unsigned long long)v;
        if (v == -1 && !overflow && PyErr_Occurred())
            return (unsigned long long)-1;
    }
    return PyLong_AsUnsignedLongLong(o);
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
    *lsn = as_lsn(l);
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

static inline uint64_t get64(const unsigned char *p) {
    return ((uint64_t)get32(p) << 32) | get32(p + 4);
}

static inline void put32(unsigned char *p, uint32_t v) {
    put16(p, v >> 16);
    put16(p + 2, v & 0xFFFF);
}

/* The (lsn, message) pair at chunk[i]; 0 ok (*msg None for a keepalive), -1 error set. */
static int span_item(PyObject *chunk, Py_ssize_t i, unsigned long long *lsn, PyObject **msg) {
    PyObject *item = PyList_GET_ITEM(chunk, i);
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2
        || (PyTuple_GET_ITEM(item, 1) != Py_None && !PyBytes_CheckExact(PyTuple_GET_ITEM(item, 1)))) {
        PyErr_SetString(PyExc_TypeError, "a span's items are (lsn, bytes | None) pairs");
        return -1;
    }
    *lsn = as_lsn(PyTuple_GET_ITEM(item, 0));
    if (PyErr_Occurred())
        return -1;
    *msg = PyTuple_GET_ITEM(item, 1);
    return 0;
}

/* ValueError "<text> at LSN X/Y", the LSN as PostgreSQL writes it. */
static PyObject *at_lsn(const char *text, unsigned long long lsn) {
    char message[160];
    snprintf(message, sizeof message, "%s at LSN %X/%X", text, (unsigned)(lsn >> 32),
             (unsigned)(lsn & 0xFFFFFFFFu));
    PyErr_SetString(PyExc_ValueError, message);
    return NULL;
}

/* scan_span(chunk, i, stop, end, bound, in_txn) -> (i, bound, in_txn, action): from
 * chunk[i] on, where WalStream.spans's read of the transactions committing before end
 * stops (fastpath._scan_span is the reference).  action 0: chunk[stop] reached; 1: the
 * keepalive at i ends the read (resume after it); 2: the read ends before chunk[i]; 3: the
 * Commit before chunk[i] ends it.  bound: every commit before it has been received. */
static PyObject *scan_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "scan_span(chunk: list, i, stop, end, bound, in_txn)");
        return NULL;
    }
    PyObject *chunk = args[0];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    unsigned long long end = PyLong_AsUnsignedLongLong(args[3]);
    unsigned long long bound = PyLong_AsUnsignedLongLong(args[4]);
    int in_txn = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred() || in_txn < 0)
        return NULL;
    if (stop > PyList_GET_SIZE(chunk))
        stop = PyList_GET_SIZE(chunk);
    if (i < 0)
        i = 0;
    int action = 0;
    while (i < stop) {
        unsigned long long lsn;
        PyObject *data;
        if (span_item(chunk, i, &lsn, &data) < 0)
            return NULL;
        if (data == Py_None) { /* a keepalive: the server has read the log up to lsn */
            if (lsn > bound)
                bound = lsn;
            if (!in_txn && bound >= end) {
                action = 1;
                break;
            }
            i++;
            continue;
        }
        const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        if (n == 0)
            return at_lsn("empty pgoutput message", lsn);
        if (in_txn) {
            i++;
            if (d[0] == 'C') { /* flags, commit LSN, end LSN at offset 10 */
                if (n < 18)
                    return at_lsn("malformed pgoutput Commit message", lsn);
                in_txn = 0;
                unsigned long long commit_end = get64(d + 10);
                if (commit_end > bound)
                    bound = commit_end;
                if (bound >= end) {
                    action = 3;
                    break;
                }
            }
            continue;
        }
        if (d[0] == 'B') { /* its commit LSN at offset 1 */
            if (n < 9)
                return at_lsn("malformed pgoutput Begin message", lsn);
            if (get64(d + 1) >= end) {
                if (end > bound)
                    bound = end;
                action = 2;
                break;
            }
            in_txn = 1;
            i++;
            continue;
        }
        if (lsn >= end) { /* a message outside transactions, after end */
            if (lsn > bound)
                bound = lsn;
            action = 2;
            break;
        }
        if (lsn > bound)
            bound = lsn;
        i++;
    }
    return Py_BuildValue("(nKOi)", i, bound, in_txn ? Py_True : Py_False, action);
}

/* GoldenGate Julian microseconds at PostgreSQL's epoch (2000-01-01 UTC). */
#define JULIAN_PG_EPOCH 211813444800000000LL
#define MAX_BATCH_TABLES 255
#define T_AREA_MAX 64
#define TRANS_IND_AT 32 /* G and H sub-area headers, then 24 bytes of the H area */
#define TXN_ENTRY 26    /* u64 csn, u64 io_time, u32 xid, u32 nbytes, u16 nrec */

typedef struct {
    PyObject *entry; /* (layout, keep, name) from rels (borrowed) */
    const char *name;
    Py_ssize_t name_len;
    uint32_t counts[4];
} BatchTable;

/* v in decimal into dst (room for 20 digits); the number of digits (snprintf's "%llu",
 * without its format parsing: once per transaction, a tenth of a one-row batch's time). */
static int decimal(char *dst, unsigned long long v) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (int i = 0; i < n; i++)
        dst[i] = tmp[n - 1 - i];
    return n;
}

/* A transaction's T area (records.with_t_area): its CSN and XID as decimal text. */
static Py_ssize_t t_area(unsigned char *t, unsigned long long csn, unsigned xid) {
    char c[24], x[12];
    int cl = decimal(c, csn), xl = decimal(x, xid);
    Py_ssize_t len = 8 + cl + xl;
    t[0] = 'T';
    t[1] = 0;
    put16(t + 2, (unsigned)len);
    t[4] = 'L';
    t[5] = 0;
    put16(t + 6, (unsigned)cl);
    memcpy(t + 8, c, (size_t)cl);
    unsigned char *u = t + 8 + cl;
    u[0] = '6';
    u[1] = 0;
    put16(u + 2, (unsigned)xl);
    memcpy(u + 4, x, (size_t)xl);
    return 4 + len;
}

/* The batch's table for relation oid: -1 not in rels (the general path), -2 dropped (the
 * rules capture nothing of it), -3 error set, else its index in tabs. */
static int batch_table(PyObject *rels, uint32_t oid, BatchTable *tabs, int *ntabs) {
    PyObject *key = PyLong_FromUnsignedLong(oid);
    if (key == NULL)
        return -3;
    PyObject *entry = PyDict_GetItemWithError(rels, key);
    Py_DECREF(key);
    if (entry == NULL)
        return PyErr_Occurred() ? -3 : -1;
    if (entry == Py_None)
        return -2;
    for (int t = 0; t < *ntabs; t++)
        if (tabs[t].entry == entry)
            return t;
    if (*ntabs >= MAX_BATCH_TABLES || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3)
        return -1;
    BatchTable *bt = &tabs[*ntabs];
    bt->name = table_name(PyTuple_GET_ITEM(entry, 2), &bt->name_len);
    if (bt->name == NULL || bt->name_len > 0xFFFF)
        return -1;
    bt->entry = entry;
    memset(bt->counts, 0, sizeof bt->counts);
    return (*ntabs)++;
}

/* The batch blob (trail.txn_batch describes it): header, index, table of each record,
 * records. */
static PyObject *batch_blob(BatchTable *tabs, int ntabs, uint32_t ntxn, const Out *index,
                            const Out *rtabs, const Out *recs) {
    Py_ssize_t size = 10 + index->len + rtabs->len + recs->len;
    for (int t = 0; t < ntabs; t++)
        size += 2 + tabs[t].name_len + 16;
    PyObject *blob = PyBytes_FromStringAndSize(NULL, size);
    if (blob == NULL)
        return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(blob);
    put32(p, ntxn);
    put32(p + 4, (uint32_t)rtabs->len);
    put16(p + 8, (unsigned)ntabs);
    p += 10;
    for (int t = 0; t < ntabs; t++) {
        put16(p, (unsigned)tabs[t].name_len);
        memcpy(p + 2, tabs[t].name, (size_t)tabs[t].name_len);
        p += 2 + tabs[t].name_len;
        for (int k = 0; k < 4; k++, p += 4)
            put32(p, tabs[t].counts[k]);
    }
    if (index->len)
        memcpy(p, index->buf, (size_t)index->len);
    p += index->len;
    if (rtabs->len)
        memcpy(p, rtabs->buf, (size_t)rtabs->len);
    p += rtabs->len;
    if (recs->len)
        memcpy(p, recs->buf, (size_t)recs->len);
    return blob;
}

/* Whether the transaction whose Begin (of commit LSN final_lsn) is at chunk[from - 1] can be
 * taken whole from chunk[from:stop] as far as its messages' kinds say: only keepalives and
 * row changes (I, U, D, longer than 5 bytes), at most max_rows of them, then its 26-byte
 * Commit.  Looks at each message's first byte and length only, so encode_txns encodes
 * nothing of a transaction it would give up at its end (too many rows, not whole in the
 * chunk, another kind of message).  1 yes, 0 no (also for an item that is not an
 * (lsn, bytes | None) pair: the Python path then says what is wrong). */
static int txn_fits(PyObject *chunk, Py_ssize_t from, Py_ssize_t stop, long long final_lsn,
                    Py_ssize_t max_rows) {
    Py_ssize_t rows = 0;
    for (Py_ssize_t j = from; j < stop; j++) {
        PyObject *item = PyList_GET_ITEM(chunk, j);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2)
            return 0; /* not a pair: left to the loop that says what is wrong */
        PyObject *data = PyTuple_GET_ITEM(item, 1);
        if (data == Py_None)
            continue;
        if (!PyBytes_CheckExact(data))
            return 0;
        const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
        Py_ssize_t n = PyBytes_GET_SIZE(data);
        if (n > 5 && (d[0] == 'I' || d[0] == 'U' || d[0] == 'D')) {
            if (++rows > max_rows)
                return 0;
            continue;
        }
        return n == 26 && d[0] == 'C' && (long long)get64(d + 2) == final_lsn;
    }
    return 0;
}

/* encode_txns's buffers (records, index, table of each record), kept between calls up to
 * SCRATCH_KEEP bytes each; only touched with the GIL held. */
#define SCRATCH_KEEP (8 << 20)
static Out txns_scratch[3] = {{NULL, 0, 0}, {NULL, 0, 0}, {NULL, 0, 0}};
static int txns_scratch_busy = 0;

/* encode_txns(chunk, start, stop, rels, after, upto, max_txns, max_bytes, max_rows)
 *   -> (next, count, blob | None, last_csn, last_end_lsn, last_commit_time)
 * A run of whole small transactions in one call: from chunk[start] on, each Begin, its row
 * changes and its Commit become the transaction's trail records as the general path writes
 * them (encode_row's records, the T area on the first, TransInd set), until stop, max_txns
 * transactions, max_bytes of records, or a transaction this does not take: one with another
 * message (Relation, Type, Origin, Message, Truncate), a row of a relation not in rels (an
 * int oid -> (layout, keep, table name), or None: rows dropped), more than max_rows row
 * changes (those of dropped relations too), records of more than max_bytes itself, a row
 * encode_row leaves to Python, one committing at or before after or at or after upto, or
 * one not whole in chunk[:stop] (txn_fits looks first, so most of those cost no encoding).  next is the first item not taken (keepalives between
 * transactions are taken), count the transactions taken; blob is None when none of them
 * wrote a record.  last_commit_time is the last Commit's, as a Julian timestamp. */
static PyObject *encode_txns(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 9 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "encode_txns(chunk: list, start, stop, rels: dict, "
                        "after, upto, max_txns, max_bytes, max_rows)");
        return NULL;
    }
    PyObject *chunk = args[0], *rels = args[3];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    long long after = PyLong_AsLongLong(args[4]), upto = PyLong_AsLongLong(args[5]);
    Py_ssize_t max_txns = PyLong_AsSsize_t(args[6]), max_bytes = PyLong_AsSsize_t(args[7]);
    Py_ssize_t max_rows = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (max_rows > 0xFFFF) /* a transaction's record count is 16 bits in the index */
        max_rows = 0xFFFF;
    if (stop > PyList_GET_SIZE(chunk))
        stop = PyList_GET_SIZE(chunk);
    if (start < 0)
        start = 0;
    /* the scratch buffers of the last call, kept: no growing and no fresh pages per call
     * (a one-row read's batch is small, a backlog's about max_bytes); a call made while
     * another is under way (none is: nothing here runs Python code) gets its own */
    Out recs = {NULL, 0, 0}, index = {NULL, 0, 0}, rtabs = {NULL, 0, 0};
#if defined(__SANITIZE_ADDRESS__)
    int kept = 0; /* fresh buffers, so the sanitizer sees a read past what a call wrote */
#else
    int kept = !txns_scratch_busy;
#endif
    if (kept) {
        txns_scratch_busy = 1;
        recs = txns_scratch[0];
        index = txns_scratch[1];
        rtabs = txns_scratch[2];
        recs.len = index.len = rtabs.len = 0;
    }
    BatchTable tabs[MAX_BATCH_TABLES];
    int ntabs = 0;
    uint32_t nwritten = 0;
    Py_ssize_t taken = start, count = 0;
    long long last_csn = 0, last_end = 0, last_commit = 0;
    unsigned char t[T_AREA_MAX];
    PyObject *result = NULL;
    while (taken < stop && count < max_txns && recs.len < max_bytes) {
        unsigned long long lsn;
        PyObject *data;
        if (span_item(chunk, taken, &lsn, &data) < 0)
            goto done;
        if (data == Py_None) { /* a keepalive between transactions */
            taken++;
            continue;
        }
        const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
        if (PyBytes_GET_SIZE(data) != 21 || d[0] != 'B')
            break;
        long long final_lsn = (long long)get64(d + 1), begin_time = (long long)get64(d + 9);
        unsigned xid = get32(d + 17);
        if (final_lsn <= after || final_lsn >= upto || final_lsn <= last_csn || final_lsn < 0
            || begin_time < -JULIAN_PG_EPOCH || begin_time > LLONG_MAX - JULIAN_PG_EPOCH)
            break;
        if (!txn_fits(chunk, taken + 1, stop, final_lsn, max_rows))
            break;
        unsigned long long io_time = (unsigned long long)(begin_time + JULIAN_PG_EPOCH);
        Py_ssize_t t_len = t_area(t, (unsigned long long)final_lsn, xid);
        Py_ssize_t rec_mark = recs.len, tab_mark = rtabs.len, first_at = -1, last_at = -1;
        int tabs_mark = ntabs;
        Py_ssize_t nrec = 0, j = taken + 1;
        int whole = 0, cached_oid_set = 0, cached = -1;
        uint32_t cached_oid = 0;
        while (j < stop) {
            if (span_item(chunk, j, &lsn, &data) < 0)
                goto done;
            if (data == Py_None) {
                j++;
                continue;
            }
            d = (const unsigned char *)PyBytes_AS_STRING(data);
            Py_ssize_t n = PyBytes_GET_SIZE(data);
            if (n > 5 && (d[0] == 'I' || d[0] == 'U' || d[0] == 'D')) {
                uint32_t oid = get32(d + 1);
                int tb = cached;
                if (!cached_oid_set || oid != cached_oid) {
                    tb = batch_table(rels, oid, tabs, &ntabs);
                    if (tb == -3)
                        goto done;
                    cached_oid = oid;
                    cached_oid_set = 1;
                    cached = tb;
                }
                if (tb == -1)
                    break;
                if (tb == -2) { /* a table the rules drop */
                    j++;
                    continue;
                }
                if (nrec >= max_rows)
                    break;
                PyObject *entry = tabs[tb].entry;
                Py_ssize_t at;
                int r = put_record(data, PyTuple_GET_ITEM(entry, 0), PyTuple_GET_ITEM(entry, 1),
                                   tabs[tb].name, tabs[tb].name_len, io_time, lsn,
                                   nrec ? NULL : t, nrec ? 0 : t_len, &recs, &at);
                if (r < 0)
                    goto done;
                if (r > 0 || recs.len - rec_mark > max_bytes)
                    break;
                if (out_reserve(&rtabs, 1) < 0)
                    goto done;
                rtabs.buf[rtabs.len++] = (unsigned char)tb;
                if (first_at < 0)
                    first_at = at;
                last_at = at;
                nrec++;
                j++;
                continue;
            }
            if (n == 26 && d[0] == 'C' && (long long)get64(d + 2) == final_lsn) {
                long long end_lsn = (long long)get64(d + 10), ctime = (long long)get64(d + 18);
                if (ctime < -JULIAN_PG_EPOCH || ctime > LLONG_MAX - JULIAN_PG_EPOCH)
                    break;
                last_csn = final_lsn;
                last_end = end_lsn;
                last_commit = ctime + JULIAN_PG_EPOCH;
                whole = 1;
            }
            break;
        }
        if (!whole) { /* not taken: what it added goes */
            recs.len = rec_mark;
            rtabs.len = tab_mark;
            ntabs = tabs_mark;
            break;
        }
        if (nrec) {
            if (nrec == 1) {
                recs.buf[first_at + TRANS_IND_AT] = 3; /* ONLY */
            } else {
                recs.buf[first_at + TRANS_IND_AT] = 0; /* FIRST */
                recs.buf[last_at + TRANS_IND_AT] = 2;  /* LAST */
            }
            if (out_reserve(&index, TXN_ENTRY) < 0)
                goto done;
            unsigned char *e = index.buf + index.len;
            put64(e, (uint64_t)final_lsn);
            put64(e + 8, io_time);
            put32(e + 16, xid);
            put32(e + 20, (uint32_t)(recs.len - rec_mark));
            put16(e + 24, (unsigned)nrec);
            index.len += TXN_ENTRY;
            nwritten++;
        }
        count++;
        taken = j + 1;
    }
    {
        PyObject *blob = Py_None;
        Py_INCREF(blob);
        if (nwritten) {
            /* each table's records by operation, from each record's IO type */
            Py_ssize_t at = 0;
            for (Py_ssize_t r = 0; r < rtabs.len; r++) {
                unsigned char io = recs.buf[at + 14];
                int k = io == IO_TYPES[0] ? 0 : io == IO_TYPES[1] ? 1 : io == IO_TYPES[2] ? 2 : 3;
                tabs[rtabs.buf[r]].counts[k]++;
                at += get16(recs.buf + at + 2);
            }
            Py_DECREF(blob);
            blob = batch_blob(tabs, ntabs, nwritten, &index, &rtabs, &recs);
            if (blob == NULL)
                goto done;
        }
        result = Py_BuildValue("(nnNLLL)", taken, count, blob, last_csn, last_end, last_commit);
    }
done:
    if (kept) {
        Out *bufs[3] = {&recs, &index, &rtabs};
        for (int k = 0; k < 3; k++) { /* kept unless a rare call made one large */
            if (bufs[k]->cap > SCRATCH_KEEP) {
                PyMem_Free(bufs[k]->buf);
                bufs[k]->buf = NULL;
                bufs[k]->cap = 0;
            }
            bufs[k]->len = 0;
            txns_scratch[k] = *bufs[k];
        }
        txns_scratch_busy = 0;
    } else {
        PyMem_Free(recs.buf);
        PyMem_Free(index.buf);
        PyMem_Free(rtabs.buf);
    }
    return result;
}

/* The replication stream's drain (walstream.py): libpq's PQgetCopyData and PQfreemem, bound
 * once from the library psycopg loaded (stream_drain.py finds it), so the reader thread
 * takes each buffered CopyData message with no Python call per message. */
typedef int (*GetCopyData)(void *conn, char **buffer, int async);
typedef void (*FreeMem)(void *ptr);
typedef int (*ConsumeInput)(void *conn);
static GetCopyData pq_getcopydata = NULL;
static FreeMem pq_freemem = NULL;
static ConsumeInput pq_consumeinput = NULL;

/* bind_libpq(getcopydata_address, freemem_address, consumeinput_address) -> None */
static PyObject *bind_libpq(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "bind_libpq(getcopydata_address, freemem_address, "
                                         "consumeinput_address)");
        return NULL;
    }
    void *fn[3] = {NULL, NULL, NULL};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        fn[i] = PyLong_AsVoidPtr(args[i]);
        if (fn[i] == NULL && PyErr_Occurred())
            return NULL;
        if (fn[i] == NULL) {
            PyErr_SetString(PyExc_ValueError, "bind_libpq: a null function address");
            return NULL;
        }
    }
    pq_getcopydata = (GetCopyData)fn[0];
    pq_freemem = (FreeMem)fn[1];
    pq_consumeinput = (ConsumeInput)fn[2];
    Py_RETURN_NONE;
}

/* Whether sock has data to read within wait_ns nanoseconds (whole milliseconds where
 * there is no ppoll). */
static int sock_readable(int sock, long wait_ns) {
    struct pollfd p = {sock, POLLIN, 0};
#ifdef __linux__
    struct timespec wait = {0, wait_ns};
    int ready = ppoll(&p, 1, &wait, NULL);
#else
    int ready = poll(&p, 1, (int)((wait_ns + 999999) / 1000000));
#endif
    return ready > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
}

/* Reads from a readable socket that give libpq no whole message, one after the other,
 * before the drain hands back what it has (a TLS record split across reads needs more than
 * one; a socket that stays readable and gives nothing must not hold the reader). */
#define READ_ON_IDLE_READS 8
/* The most messages one drain takes. */
#define DRAIN_MAX 1000000

/* drain(pgconn_address, out, max, received, committed, sock, wait_ns)
 *   -> (status, size, received, committed, reply)
 * Up to max messages libpq has buffered, as walstream.WalStream._drain takes them; given
 * the connection's socket (sock >= 0), once libpq's buffer is empty and a message was
 * taken it reads on while the socket has data within wait_ns
 * (below 1 s), as the reader's Python loop does with no wait.  libpq is called with the GIL
 * released: a Unix socket holds a few hundred messages, and the server waits while the
 * reader waits for the GIL.  An
 * XLogData ('w') appends (its start LSN, its message bytes), a keepalive ('k') appends
 * (the server's WAL end, None) and sets reply when the server asks for one; any other kind
 * is skipped.  received is the highest XLogData LSN, committed the highest Commit end LSN
 * (each at least what was passed).  size counts each message's bytes plus overhead, as the
 * Python reader does.  status: 0 when libpq has no more whole message or max were taken,
 * PQgetCopyData's -1 (the COPY ended) or -2 (an error), or -3 a message too short for its
 * kind (what was appended before it stays in out). */
#define DRAIN_OVERHEAD 100 /* walstream.py's _MESSAGE_OVERHEAD */

/* (lsn, value), taking value's reference; NULL (error set) when value is NULL. */
static PyObject *pair(unsigned long long lsn, PyObject *value) {
    if (value == NULL)
        return NULL;
    PyObject *l = PyLong_FromUnsignedLongLong(lsn), *t = l ? PyTuple_New(2) : NULL;
    if (t == NULL) {
        Py_XDECREF(l);
        Py_DECREF(value);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, l);
    PyTuple_SET_ITEM(t, 1, value);
    return t;
}
typedef struct {
    char *buf;
    int n;
} Taken;

static PyObject *drain(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7 || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "drain(pgconn_address, out: list, max, received, "
                                         "committed, sock, wait_ns)");
        return NULL;
    }
    if (pq_getcopydata == NULL || pq_freemem == NULL || pq_consumeinput == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "drain: bind_libpq was not called");
        return NULL;
    }
    void *conn = PyLong_AsVoidPtr(args[0]);
    if (conn == NULL && PyErr_Occurred())
        return NULL;
    Py_ssize_t max = PyLong_AsSsize_t(args[2]);
    if (max == -1 && PyErr_Occurred())
        return NULL;
    unsigned long long received = PyLong_AsUnsignedLongLong(args[3]);
    if (received == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    unsigned long long committed = PyLong_AsUnsignedLongLong(args[4]);
    if (committed == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    long v = PyLong_AsLong(args[5]);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    long wait_ns = PyLong_AsLong(args[6]);
    if (wait_ns == -1 && PyErr_Occurred())
        return NULL;
    if (v > INT_MAX || wait_ns < 0 || wait_ns >= 1000000000L) {
        PyErr_SetString(PyExc_ValueError, "drain: sock or wait_ns out of range");
        return NULL;
    }
    int sock = v < 0 ? -1 : (int)v;
    if (conn == NULL) {
        PyErr_SetString(PyExc_ValueError, "drain: a null connection");
        return NULL;
    }
    if (max <= 0)
        return Py_BuildValue("(iLKKi)", 0, 0LL, received, committed, 0);
    if (max > DRAIN_MAX) {
        PyErr_SetString(PyExc_ValueError, "drain: max out of range");
        return NULL;
    }
    Taken *taken = PyMem_RawMalloc((size_t)max * sizeof(Taken));
    if (taken == NULL)
        return PyErr_NoMemory();
    Py_ssize_t count = 0;
    int status = 0, idle = 0;
    Py_BEGIN_ALLOW_THREADS
    while (count < max) {
        char *buf = NULL;
        int n = pq_getcopydata(conn, &buf, 1);
        if (n == 0) {
            if (sock < 0 || count == 0 || idle >= READ_ON_IDLE_READS ||
                !sock_readable(sock, wait_ns))
                break;
            if (!pq_consumeinput(conn)) { /* the connection failed: the caller reads why */
                status = -2;
                break;
            }
            idle++;
            continue;
        }
        idle = 0;
        if (n < 0) {
            if (buf != NULL)
                pq_freemem(buf);
            status = n < -2 ? -2 : n;
            break;
        }
        taken[count].buf = buf;
        taken[count].n = n;
        count++;
    }
    Py_END_ALLOW_THREADS
    PyObject *out = args[1];
    long long size = 0;
    int reply = 0, failed = 0;
    Py_ssize_t i = 0;
    for (; i < count && !failed; i++) {
        const unsigned char *m = (const unsigned char *)taken[i].buf;
        int n = taken[i].n;
        PyObject *item = NULL;
        if (m[0] == 'w') { /* start LSN, end LSN, send time, message */
            if (n < 26) {
                status = -3;
                break;
            }
            unsigned long long lsn = get64(m + 1);
            const unsigned char *d = m + 25;
            Py_ssize_t len = (Py_ssize_t)n - 25;
            if (d[0] == 'C' && len < 18) { /* flags, commit LSN, end LSN at offset 10 */
                status = -3;
                break;
            }
            item = pair(lsn, PyBytes_FromStringAndSize((const char *)d, len));
            if (item != NULL) {
                size += n + DRAIN_OVERHEAD;
                if (lsn > received)
                    received = lsn;
                if (d[0] == 'C') {
                    unsigned long long end = get64(d + 10);
                    if (end > committed)
                        committed = end;
                }
            }
        } else if (m[0] == 'k') { /* server WAL end, send time, reply requested */
            if (n < 18) {
                status = -3;
                break;
            }
            Py_INCREF(Py_None);
            item = pair(get64(m + 1), Py_None);
            if (item != NULL) {
                size += DRAIN_OVERHEAD;
                if (m[17])
                    reply = 1;
            }
        } else {
            continue;
        }
        if (item == NULL || PyList_Append(out, item) < 0)
            failed = 1;
        Py_XDECREF(item);
    }
    for (Py_ssize_t k = 0; k < count; k++)
        pq_freemem(taken[k].buf);
    PyMem_RawFree(taken);
    if (failed)
        return NULL;
    return Py_BuildValue("(iLKKi)", status, size, received, committed, reply);
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
    {"scan_span", (PyCFunction)(void (*)(void))scan_span, METH_FASTCALL,
     "scan_span(chunk, i, stop, end, bound, in_txn) -> (i, bound, in_txn, action): where a "
     "stream's read of the transactions committing before end stops."},
    {"encode_txns", (PyCFunction)(void (*)(void))encode_txns, METH_FASTCALL,
     "encode_txns(chunk, start, stop, rels, after, upto, max_txns, max_bytes, max_rows) -> "
     "(next, count, blob, last_csn, last_end_lsn, last_commit_time): whole small "
     "transactions as their trail records and an index (trail.txn_batch)."},
    {"bind_libpq", (PyCFunction)(void (*)(void))bind_libpq, METH_FASTCALL,
     "bind_libpq(getcopydata_address, freemem_address, consumeinput_address): the libpq "
     "functions drain calls."},
    {"drain", (PyCFunction)(void (*)(void))drain, METH_FASTCALL,
     "drain(pgconn_address, out, max, received, committed, sock, wait_ns) -> (status, "
     "size, received, committed, reply): a replication stream's CopyData messages appended "
     "to out, read on from sock while it has data within wait_ns."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pgfast",
    "pgoutput row changes straight to trail records (the Python path is the reference).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__pgfast(void) { return PyModule_Create(&module); }
