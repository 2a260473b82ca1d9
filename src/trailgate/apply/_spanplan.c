/*
 * trailgate.apply._spanplan: a batch's trail bytes straight to BATCHSQL's set operations.
 *
 * plan_span does in one pass what the Replicat's Python path does with an object per change
 * for a batch applied on the driver: read the records of [start, end) (the reader, TrailRange),
 * map each change to target text (mapping.map_change with the column converters of
 * values.py) and collapse each key's chain into the set plan (setplan.plan_table), writing
 * the rows as PostgreSQL COPY text.  The Python path is the reference: for anything this
 * code does not take on (a fragment, a LOB, a PK update, a key change, a NULL key, a chain
 * that collides, a value a converter would not take as is) it returns None and the caller
 * takes that path, which then applies, reports or raises exactly as it always does.  So a
 * None is always safe, and this module never has to reproduce an error message.
 *
 * Memory safety: every read is checked against `end`, which is checked against the
 * buffer's size on entry; lengths read from the data are compared by subtraction.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../trail/_frame.h" /* the record frame, as the trail codec reads it */

#define MAX_TARGETS 1600
#define MAX_SOURCE 0x10000
#define MAX_GROUPS 256

enum { OK = 0, BAIL = 1, FAILED = -1 };
enum { OP_DELETE = 3, OP_INSERT = 5, OP_UPDATE = 10, OP_FIELD_COMP = 15, OP_METADATA = 170 };
/* Converter codes: spanplan.py's CONVERTERS, in this order. */
enum { CONV_UTF8 = 0, CONV_ASCII, CONV_BOOL, CONV_RAW, CONV_DATE, CONV_TS, CONV_TSTZ, N_CONV };
/* What resolve() said about a table. */
enum { T_SKIP = 0, T_KEPT, T_MAPPED };

/* -- growable byte buffer ----------------------------------------------------------------- */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (extra <= b->cap - b->n)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap - b->n < extra) {
        if (cap > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        cap *= 2;
    }
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const char *s, Py_ssize_t n)
{
    if (n == 0) /* (s may be an empty buffer's NULL) */
        return 0;
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}

static void
buf_free(Buf *b)
{
    PyMem_Free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* COPY text escaping of v (psycopg's: backslash, and the control characters it names). */
static int
put_escaped(Buf *b, const unsigned char *v, Py_ssize_t n)
{
    if (buf_reserve(b, 2 * n) < 0)
        return -1;
    char *o = b->p + b->n;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = v[i];
        switch (c) {
        case '\\': *o++ = '\\'; *o++ = '\\'; break;
        case '\b': *o++ = '\\'; *o++ = 'b'; break;
        case '\t': *o++ = '\\'; *o++ = 't'; break;
        case '\n': *o++ = '\\'; *o++ = 'n'; break;
        case '\v': *o++ = '\\'; *o++ = 'v'; break;
        case '\f': *o++ = '\\'; *o++ = 'f'; break;
        case '\r': *o++ = '\\'; *o++ = 'r'; break;
        default: *o++ = (char)c;
        }
    }
    b->n = o - b->p;
    return 0;
}

/* -- value converters (values.text_converter's, as COPY text) --------------------------- */

/* bytes.decode("utf-8") would succeed, and PostgreSQL takes the text (no NUL). */
static int
utf8_ok(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (c == 0)
                return 0;
            i++;
        }
        else if (c >= 0xC2 && c <= 0xDF) {
            if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            if (n - i < 3)
                return 0;
            unsigned c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F))
                return 0; /* overlong, or a surrogate */
            i += 3;
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            if (n - i < 4)
                return 0;
            unsigned c1 = s[i + 1];
            if ((c1 & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
                return 0; /* overlong, or past U+10FFFF */
            i += 4;
        }
        else
            return 0;
    }
    return 1;
}

static int
ascii_ok(const unsigned char *s, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] == 0 || s[i] >= 0x80)
            return 0;
    return 1;
}

static inline int
digits(const unsigned char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* values._TRAIL_TS without its `$`-before-newline leniency: YYYY-MM-DD:HH:MI:SS[.f{1,9}].
 * The fraction's digit count in *frac, or -1 when the value does not match. */
static int
trail_ts(const unsigned char *v, Py_ssize_t n)
{
    if (n < 19 || !digits(v, 4) || v[4] != '-' || !digits(v + 5, 2) || v[7] != '-'
        || !digits(v + 8, 2) || v[10] != ':' || !digits(v + 11, 2) || v[13] != ':'
        || !digits(v + 14, 2) || v[16] != ':' || !digits(v + 17, 2))
        return -1;
    if (n == 19)
        return 0;
    Py_ssize_t f = n - 20;
    if (v[19] != '.' || f < 1 || f > 9 || !digits(v + 20, (int)f))
        return -1;
    return (int)f;
}

/* Append the COPY text of a non-NULL value; BAIL when Python should convert it. */
static int
convert(int conv, const unsigned char *v, Py_ssize_t n, Buf *out)
{
    static const char hex[] = "0123456789abcdef";
    switch (conv) {
    case CONV_UTF8:
        if (!utf8_ok(v, n))
            return BAIL;
        return put_escaped(out, v, n) < 0 ? FAILED : OK;
    case CONV_ASCII:
        if (!ascii_ok(v, n))
            return BAIL;
        return put_escaped(out, v, n) < 0 ? FAILED : OK;
    case CONV_BOOL:
        if (!ascii_ok(v, n))
            return BAIL;
        if (n == 1 && v[0] == '1')
            return buf_put(out, "true", 4) < 0 ? FAILED : OK;
        return buf_put(out, "false", 5) < 0 ? FAILED : OK;
    case CONV_RAW: {
        /* "\x" + hex, its backslash escaped for COPY */
        if (n > (PY_SSIZE_T_MAX - 3) / 2 || buf_reserve(out, 3 + 2 * n) < 0)
            return FAILED;
        char *o = out->p + out->n;
        *o++ = '\\';
        *o++ = '\\';
        *o++ = 'x';
        for (Py_ssize_t i = 0; i < n; i++) {
            *o++ = hex[v[i] >> 4];
            *o++ = hex[v[i] & 15];
        }
        out->n = o - out->p;
        return OK;
    }
    case CONV_DATE:
    case CONV_TS:
    case CONV_TSTZ: {
        int f = trail_ts(v, n);
        if (f < 0)
            return BAIL; /* infinity, BC, a wide year: Python's text path */
        if (conv == CONV_DATE)
            return buf_put(out, (const char *)v, 10) < 0 ? FAILED : OK;
        char t[32];
        memcpy(t, v, 10);
        t[10] = ' ';
        memcpy(t + 11, v + 11, 8);
        t[19] = '.';
        for (int i = 0; i < 6; i++)
            t[20 + i] = i < f ? (char)v[20 + i] : '0';
        int len = 26;
        if (conv == CONV_TSTZ) {
            memcpy(t + 26, "+00", 3);
            len = 29;
        }
        return buf_put(out, t, len) < 0 ? FAILED : OK;
    }
    }
    return BAIL;
}

/* -- tables ------------------------------------------------------------------------------- */

/* A converted value in a table's arena: len -2 absent, -1 NULL, else the COPY text. */
typedef struct {
    Py_ssize_t off;
    Py_ssize_t len;
} Val;
#define ABSENT (-2)
#define SQLNULL (-1)

/* One key's chain, folded as setplan._fold_chain folds it. */
typedef struct {
    Py_ssize_t key_off, key_len; /* COPY text of the key columns, tab-separated, in keys */
    Py_hash_t hash;              /* of that text (the index's) */
    unsigned char existed, present, deleted_existing;
    Val *row;          /* the row since the chain's last insert (NULL: none) */
    Val *first_insert; /* the first insert's row (may be `row` itself) */
    Val *updated;      /* updates of the row that existed, while it still does */
} Slot;

typedef struct {
    unsigned char *mask; /* n_targets flags */
    Buf data;
    Py_ssize_t rows;
} Group;

typedef struct {
    int kind; /* T_SKIP, T_KEPT, T_MAPPED */
    long spec_id;
    int n_source, n_targets, n_fields, n_key;
    int *f_src, *f_slot, *f_conv;
    int *k_src, *k_conv, *k_slot;
    unsigned char *fixed;     /* n_source flags */
    unsigned char *key_slot;  /* n_targets flags */
    /* the record being decoded: per source index */
    const unsigned char **cur_v;
    Py_ssize_t *cur_n; /* -2 absent, -1 NULL */
    Val *vals;         /* this change's converted values, by target slot */
    Buf arena;
    Buf keys;          /* every slot's key text */
    Py_ssize_t *index; /* key -> slot number + 1 (0: empty), open addressing */
    Py_ssize_t index_cap; /* a power of two, at least twice the slots (0: none yet) */
    Slot *slots;
    Py_ssize_t n_slots, cap_slots;
    long inserts, updates, deletes;
    Group groups[2][MAX_GROUPS]; /* inserts, updates */
    int n_groups[2];
    Buf del_first, del_last;
    Py_ssize_t n_del_first, n_del_last;
} Table;

static void
table_free(Table *t)
{
    if (t == NULL)
        return;
    PyMem_Free(t->f_src);
    PyMem_Free(t->k_src);
    PyMem_Free(t->fixed);
    PyMem_Free(t->key_slot);
    PyMem_Free(t->cur_v);
    PyMem_Free(t->cur_n);
    PyMem_Free(t->vals);
    buf_free(&t->arena);
    buf_free(&t->keys);
    PyMem_Free(t->index);
    for (Py_ssize_t i = 0; i < t->n_slots; i++) {
        Slot *s = &t->slots[i];
        if (s->first_insert != s->row)
            PyMem_Free(s->first_insert);
        PyMem_Free(s->row);
        PyMem_Free(s->updated);
    }
    PyMem_Free(t->slots);
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < t->n_groups[g]; i++) {
            PyMem_Free(t->groups[g][i].mask);
            buf_free(&t->groups[g][i].data);
        }
    buf_free(&t->del_first);
    buf_free(&t->del_last);
    PyMem_Free(t);
}

static int
int_item(PyObject *seq, Py_ssize_t i, long lo, long hi, int *out)
{
    PyObject *o = PyTuple_GET_ITEM(seq, i);
    if (!PyLong_Check(o))
        return -1;
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    if (v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* A table from resolve()'s spec: (spec_id, n_source, fixed, n_targets, fields, key) with
 * fields ((source index, target slot, converter), …) and key ((source index, converter,
 * target slot), …).  NULL with no exception: the spec is not usable (BAIL). */
static Table *
table_from_spec(PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 6)
        return NULL;
    Table *t = PyMem_Calloc(1, sizeof(Table));
    if (t == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    t->kind = T_MAPPED;
    PyObject *fixed = PyTuple_GET_ITEM(spec, 2), *fields = PyTuple_GET_ITEM(spec, 4);
    PyObject *key = PyTuple_GET_ITEM(spec, 5);
    t->spec_id = PyLong_AsLong(PyTuple_GET_ITEM(spec, 0));
    if (t->spec_id == -1 && PyErr_Occurred())
        goto bad;
    if (int_item(spec, 1, 0, MAX_SOURCE, &t->n_source) < 0
        || int_item(spec, 3, 1, MAX_TARGETS, &t->n_targets) < 0 || !PyAnySet_Check(fixed)
        || !PyTuple_Check(fields) || !PyTuple_Check(key))
        goto bad;
    t->n_fields = (int)PyTuple_GET_SIZE(fields);
    t->n_key = (int)PyTuple_GET_SIZE(key);
    if (t->n_fields > MAX_TARGETS || t->n_key < 1 || t->n_key > t->n_targets)
        goto bad;
    int ns = t->n_source > 0 ? t->n_source : 1;
    t->f_src = PyMem_Calloc((size_t)(3 * t->n_fields + 1), sizeof(int));
    t->k_src = PyMem_Calloc((size_t)(3 * t->n_key), sizeof(int));
    t->fixed = PyMem_Calloc((size_t)ns, 1);
    t->key_slot = PyMem_Calloc((size_t)t->n_targets, 1);
    t->cur_v = PyMem_Calloc((size_t)ns, sizeof(*t->cur_v));
    t->cur_n = PyMem_Calloc((size_t)ns, sizeof(*t->cur_n));
    t->vals = PyMem_Calloc((size_t)t->n_targets, sizeof(Val));
    if (!t->f_src || !t->k_src || !t->fixed || !t->key_slot || !t->cur_v || !t->cur_n
        || !t->vals) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto bad;
    }
    t->f_slot = t->f_src + t->n_fields;
    t->f_conv = t->f_slot + t->n_fields;
    t->k_conv = t->k_src + t->n_key;
    t->k_slot = t->k_conv + t->n_key;
    for (int i = 0; i < t->n_fields; i++) {
        PyObject *f = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 3
            || int_item(f, 0, 0, t->n_source - 1, &t->f_src[i]) < 0
            || int_item(f, 1, 0, t->n_targets - 1, &t->f_slot[i]) < 0
            || int_item(f, 2, 0, N_CONV - 1, &t->f_conv[i]) < 0)
            goto bad;
    }
    for (int i = 0; i < t->n_key; i++) {
        PyObject *k = PyTuple_GET_ITEM(key, i);
        if (!PyTuple_Check(k) || PyTuple_GET_SIZE(k) != 3
            || int_item(k, 0, 0, t->n_source - 1, &t->k_src[i]) < 0
            || int_item(k, 1, 0, N_CONV - 1, &t->k_conv[i]) < 0
            || int_item(k, 2, 0, t->n_targets - 1, &t->k_slot[i]) < 0)
            goto bad;
        t->key_slot[t->k_slot[i]] = 1;
    }
    PyObject *it = PyObject_GetIter(fixed), *o;
    if (it == NULL)
        goto bad;
    while ((o = PyIter_Next(it)) != NULL) {
        long v = PyLong_Check(o) ? PyLong_AsLong(o) : -1;
        Py_DECREF(o);
        if (v >= 0 && v < t->n_source)
            t->fixed[v] = 1;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto bad;
    return t;
bad:
    table_free(t);
    return NULL;
}

/* The D area's column list into t->cur_v/cur_n (records.decode_change, values
 * _decode_columns); BAIL on anything the Python decoder would reject or judge otherwise. */
static int
decode_columns(Table *t, const unsigned char *b, Py_ssize_t pos, Py_ssize_t end)
{
    for (int i = 0; i < t->n_source; i++)
        t->cur_n[i] = ABSENT;
    while (pos < end) {
        if (end - pos < 4)
            return BAIL;
        unsigned index = be16(b + pos);
        Py_ssize_t length = be16(b + pos + 2);
        const unsigned char *v = b + pos + 4;
        if (length > end - pos - 4 || length < 2)
            return BAIL;
        unsigned indicator = be16(v);
        if (indicator != 0 && indicator != 0xFFFF)
            return BAIL;
        pos += 4 + length;
        int fixed = (int)index < t->n_source && t->fixed[index];
        if (indicator == 0xFFFF) {
            if ((int)index < t->n_source)
                t->cur_n[index] = SQLNULL;
            continue;
        }
        if (!fixed && (length < 4 || (Py_ssize_t)be16(v + 2) != length - 4))
            return BAIL;
        if ((int)index < t->n_source) {
            t->cur_v[index] = fixed ? v + 2 : v + 4;
            t->cur_n[index] = fixed ? length - 2 : length - 4;
        }
    }
    return OK;
}

static Val *
val_copy(const Val *src, int n)
{
    Val *v = PyMem_Malloc((size_t)n * sizeof(Val));
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(v, src, (size_t)n * sizeof(Val));
    return v;
}

static Val *
val_absent(int n)
{
    Val *v = PyMem_Malloc((size_t)n * sizeof(Val));
    if (v == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (int i = 0; i < n; i++)
        v[i].len = ABSENT;
    return v;
}

/* The index: open addressing with linear probing, at most half full, keyed by Python's
 * own bytes hash (randomized per process, so no trail's keys can be chosen to collide).
 * Grown before an insertion would pass half. */
static int
index_grow(Table *t)
{
    if (t->n_slots < t->index_cap / 2)
        return 0;
    Py_ssize_t cap = t->index_cap ? 2 * t->index_cap : 256;
    if (cap > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(Py_ssize_t)) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t *index = PyMem_Calloc((size_t)cap, sizeof(Py_ssize_t));
    if (index == NULL || buf_reserve(&t->keys, 1024) < 0) { /* (keys.p is never NULL) */
        PyMem_Free(index);
        PyErr_NoMemory();
        return -1;
    }
    size_t mask = (size_t)cap - 1;
    for (Py_ssize_t n = 0; n < t->n_slots; n++) {
        size_t i = (size_t)t->slots[n].hash & mask;
        while (index[i] != 0)
            i = (i + 1) & mask;
        index[i] = n + 1;
    }
    PyMem_Free(t->index);
    t->index = index;
    t->index_cap = cap;
    return 0;
}

/* The slot of key k[0, n), made (zeroed, `made` set) if new; NULL on a memory error. */
static Slot *
index_slot(Table *t, const char *k, Py_ssize_t n, int *made)
{
    if (index_grow(t) < 0)
        return NULL;
    Py_hash_t hash = _Py_HashBytes(k, n);
    size_t mask = (size_t)t->index_cap - 1, i = (size_t)hash & mask;
    for (; t->index[i] != 0; i = (i + 1) & mask) {
        Slot *s = &t->slots[t->index[i] - 1];
        if (s->hash == hash && s->key_len == n
            && (n == 0 || memcmp(t->keys.p + s->key_off, k, (size_t)n) == 0)) {
            *made = 0;
            return s;
        }
    }
    if (t->n_slots == t->cap_slots) {
        Py_ssize_t cap = t->cap_slots ? 2 * t->cap_slots : 1024;
        Slot *slots = PyMem_Realloc(t->slots, (size_t)cap * sizeof(Slot));
        if (slots == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        t->slots = slots;
        t->cap_slots = cap;
    }
    Py_ssize_t off = t->keys.n;
    if (buf_put(&t->keys, k, n) < 0)
        return NULL;
    Slot *s = &t->slots[t->n_slots++];
    memset(s, 0, sizeof(Slot));
    s->key_off = off;
    s->key_len = n;
    s->hash = hash;
    t->index[i] = t->n_slots;
    *made = 1;
    return s;
}

/* One change of a mapped table (its D area in b[d, dend)). */
static int
add_change(Table *t, int op, const unsigned char *b, Py_ssize_t d, Py_ssize_t dend, Buf *keybuf)
{
    int rc = decode_columns(t, b, d, dend);
    if (rc != OK)
        return rc;
    /* The key: mapping._key_values.  Every op's key image is the D area here (an insert's
     * or update's after image, a delete's before image). */
    Py_ssize_t koff[MAX_TARGETS], klen[MAX_TARGETS];
    keybuf->n = 0;
    for (int i = 0; i < t->n_key; i++) {
        int src = t->k_src[i];
        if (t->cur_n[src] < 0)
            return BAIL; /* absent (MappingError) or NULL (a linked key): Python's path */
        if (i && buf_put(keybuf, "\t", 1) < 0)
            return FAILED;
        koff[i] = keybuf->n;
        rc = convert(t->k_conv[i], t->cur_v[src], t->cur_n[src], keybuf);
        if (rc != OK)
            return rc;
        klen[i] = keybuf->n - koff[i];
    }
    /* The values (mapping.plain's comprehension), into the arena. */
    if (op != OP_DELETE) {
        for (int s = 0; s < t->n_targets; s++)
            t->vals[s].len = ABSENT;
        for (int i = 0; i < t->n_fields; i++) {
            int src = t->f_src[i];
            Val *out = &t->vals[t->f_slot[i]];
            if (t->cur_n[src] == ABSENT)
                continue;
            if (t->cur_n[src] == SQLNULL) {
                out->len = SQLNULL;
                continue;
            }
            Py_ssize_t off = t->arena.n;
            rc = convert(t->f_conv[i], t->cur_v[src], t->cur_n[src], &t->arena);
            if (rc != OK)
                return rc;
            out->off = off;
            out->len = t->arena.n - off;
        }
        if (op != OP_INSERT) {
            /* setplan._moves_key: an update setting a key column to another value links
             * two keys; Python applies those in trail order. */
            for (int i = 0; i < t->n_key; i++) {
                Val *v = &t->vals[t->k_slot[i]];
                if (v->len == ABSENT)
                    continue;
                if (v->len != klen[i]
                    || (klen[i] > 0 /* (an empty key's buffers may be NULL) */
                        && memcmp(t->arena.p + v->off, keybuf->p + koff[i],
                                  (size_t)klen[i]) != 0))
                    return BAIL;
            }
        }
    }
    int made;
    Slot *s = index_slot(t, keybuf->p, keybuf->n, &made);
    if (s == NULL)
        return FAILED;
    if (made)
        s->existed = s->present = op != OP_INSERT;
    /* setplan._fold_chain, one change at a time; a collision inside the chain makes Python
     * apply the table one change at a time. */
    if (op == OP_INSERT) {
        if (s->present)
            return BAIL;
        s->present = 1;
        if ((s->row = val_copy(t->vals, t->n_targets)) == NULL)
            return FAILED;
        if (s->first_insert == NULL)
            s->first_insert = s->row;
        t->inserts++;
    }
    else if (op == OP_DELETE) {
        if (!s->present)
            return BAIL;
        s->present = 0;
        if (s->row == NULL)
            s->deleted_existing = 1;
        else if (s->row != s->first_insert)
            PyMem_Free(s->row);
        s->row = NULL;
        t->deletes++;
    }
    else {
        if (!s->present)
            return BAIL;
        Val *target = s->row;
        if (target == NULL) {
            if (s->updated == NULL && (s->updated = val_absent(t->n_targets)) == NULL)
                return FAILED;
            target = s->updated;
        }
        for (int i = 0; i < t->n_targets; i++)
            if (t->vals[i].len != ABSENT)
                target[i] = t->vals[i];
        t->updates++;
    }
    return OK;
}

/* The group (inserts 0, updates 1) for the columns `mask` says, made if new. */
static Group *
group_for(Table *t, int which, const unsigned char *mask)
{
    for (int i = 0; i < t->n_groups[which]; i++)
        if (memcmp(t->groups[which][i].mask, mask, (size_t)t->n_targets) == 0)
            return &t->groups[which][i];
    if (t->n_groups[which] == MAX_GROUPS)
        return NULL;
    Group *g = &t->groups[which][t->n_groups[which]];
    memset(g, 0, sizeof(Group));
    if ((g->mask = PyMem_Malloc((size_t)t->n_targets)) == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(g->mask, mask, (size_t)t->n_targets);
    t->n_groups[which]++;
    return g;
}

static int
put_val(Buf *b, const Table *t, const Val *v)
{
    if (v->len == SQLNULL)
        return buf_put(b, "\\N", 2);
    return buf_put(b, t->arena.p + v->off, v->len);
}

static int
emit_insert(Table *t, const Val *row, unsigned char *mask)
{
    for (int i = 0; i < t->n_targets; i++)
        mask[i] = row[i].len != ABSENT;
    Group *g = group_for(t, 0, mask);
    if (g == NULL)
        return PyErr_Occurred() ? FAILED : BAIL;
    int first = 1;
    for (int i = 0; i < t->n_targets; i++) {
        if (row[i].len == ABSENT)
            continue;
        if ((!first && buf_put(&g->data, "\t", 1) < 0) || put_val(&g->data, t, &row[i]) < 0)
            return FAILED;
        first = 0;
    }
    if (buf_put(&g->data, "\n", 1) < 0)
        return FAILED;
    g->rows++;
    return OK;
}

static int
emit_update(Table *t, const Slot *s, unsigned char *mask)
{
    const Val *updated = s->updated;
    for (int i = 0; i < t->n_targets; i++)
        mask[i] = updated[i].len != ABSENT && !t->key_slot[i];
    Group *g = group_for(t, 1, mask);
    if (g == NULL)
        return PyErr_Occurred() ? FAILED : BAIL;
    if (buf_put(&g->data, t->keys.p + s->key_off, s->key_len) < 0)
        return FAILED;
    for (int i = 0; i < t->n_targets; i++) {
        if (!mask[i])
            continue;
        if (buf_put(&g->data, "\t", 1) < 0 || put_val(&g->data, t, &updated[i]) < 0)
            return FAILED;
    }
    if (buf_put(&g->data, "\n", 1) < 0)
        return FAILED;
    g->rows++;
    return OK;
}

static int
emit_key(Buf *b, const Table *t, const Slot *s)
{
    if (buf_put(b, t->keys.p + s->key_off, s->key_len) < 0
        || buf_put(b, "\n", 1) < 0)
        return FAILED;
    return OK;
}

/* Each chain's end state into the four phases (setplan._fold_chain's tail), in key order. */
static int
emit_table(Table *t)
{
    unsigned char mask[MAX_TARGETS];
    for (Py_ssize_t i = 0; i < t->n_slots; i++) {
        Slot *s = &t->slots[i];
        int rc;
        if (s->existed && !s->deleted_existing) {
            rc = emit_update(t, s, mask);
            if (rc != OK)
                return rc;
            continue;
        }
        if (s->deleted_existing) {
            if (emit_key(&t->del_first, t, s) != OK)
                return FAILED;
            t->n_del_first++;
        }
        if (s->row != NULL) {
            if ((rc = emit_insert(t, s->row, mask)) != OK)
                return rc;
        }
        else if (!s->existed) { /* inserted, deleted again: the insert proves the key free */
            if ((rc = emit_insert(t, s->first_insert, mask)) != OK)
                return rc;
            if (emit_key(&t->del_last, t, s) != OK)
                return FAILED;
            t->n_del_last++;
        }
    }
    return OK;
}

static PyObject *
keys_result(Buf *b, Py_ssize_t rows)
{
    if (rows == 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(y#n)", b->p, b->n, rows);
}

static PyObject *
groups_result(Table *t, int which)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < t->n_groups[which]; i++) {
        Group *g = &t->groups[which][i];
        PyObject *item = Py_BuildValue("(y#y#n)", g->mask, (Py_ssize_t)t->n_targets,
                                       g->data.p ? g->data.p : "", g->data.n, g->rows);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

static PyObject *
table_result(Table *t)
{
    PyObject *df = keys_result(&t->del_first, t->n_del_first);
    PyObject *ins = df ? groups_result(t, 0) : NULL;
    PyObject *upd = ins ? groups_result(t, 1) : NULL;
    PyObject *dl = upd ? keys_result(&t->del_last, t->n_del_last) : NULL;
    PyObject *out = NULL;
    if (dl != NULL)
        out = Py_BuildValue("(llllOOOO)", t->spec_id, t->inserts, t->updates, t->deletes,
                            df, ins, upd, dl);
    Py_XDECREF(df);
    Py_XDECREF(ins);
    Py_XDECREF(upd);
    Py_XDECREF(dl);
    return out;
}

/* -- the span ----------------------------------------------------------------------------- */

/* The T area's CSN (L) and XID (6) into *csn / *xid (new references replacing the old). */
static int
t_area(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject **csn, PyObject **xid)
{
    while (p < end) {
        unsigned char type;
        const unsigned char *v;
        Py_ssize_t n;
        if (next_sub(b, &p, end, &type, &v, &n) < 0)
            return BAIL;
        if (type == 'L') {
            if (n == 0 || n > 19 || !digits(v, (int)n))
                return BAIL;
            uint64_t value = 0;
            for (Py_ssize_t i = 0; i < n; i++)
                value = value * 10 + (uint64_t)(v[i] - '0');
            PyObject *o = PyLong_FromUnsignedLongLong(value);
            if (o == NULL)
                return FAILED;
            Py_XSETREF(*csn, o);
        }
        else if (type == '6') {
            if (!ascii_ok(v, n))
                return BAIL;
            PyObject *o = PyUnicode_DecodeASCII((const char *)v, n, NULL);
            if (o == NULL)
                return FAILED;
            Py_XSETREF(*xid, o);
        }
    }
    return OK;
}

typedef struct {
    Table **tables; /* by table number, in first-change order */
    int n, cap;
    PyObject *numbers; /* table name (bytes) -> table number, or a T_SKIP/T_KEPT marker */
} Tables;

static PyObject *
plan_span(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "plan_span(buf, start, end, resolve, on_metadata)");
        return NULL;
    }
    PyObject *buf = args[0], *resolve = args[3], *on_metadata = args[4];
    if (!PyBytes_Check(buf) || !PyLong_Check(args[1]) || !PyLong_Check(args[2]))
        Py_RETURN_NONE;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    if (pos < 0 || pos > end || end > PyBytes_GET_SIZE(buf))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);

    int status = OK;
    Tables tabs = {NULL, 0, 0, PyDict_New()};
    Buf keybuf = {NULL, 0, 0};
    PyObject *csn = NULL, *xid = NULL, *last = NULL, *result = NULL;
    PyObject *skip = PyLong_FromLong(-1), *kept = PyLong_FromLong(-2);
    int txn = 0;
    uint64_t commit = 0;
    Py_ssize_t last_kept = -1, n_kept = 0, n_mapped = 0;
    /* the last record's table, to skip the dict lookup in a run of one table */
    const unsigned char *prev_name = NULL;
    Py_ssize_t prev_len = -1;
    PyObject *prev_number = NULL;
    if (tabs.numbers == NULL || skip == NULL || kept == NULL) {
        status = FAILED;
        goto done;
    }

    while (pos < end) {
        Frame f;
        if (frame_at(b, pos, end, &f) != FRAME_OK) {
            status = BAIL; /* cut short or broken: the Python reader says which */
            break;
        }
        const unsigned char *h = f.h, *name = f.name;
        Py_ssize_t rend = pos + f.length, name_len = f.name_len;
        if (h[32] != 0) { /* a record continued in fragments */
            status = BAIL;
            break;
        }
        unsigned rec_length = be16(h + 4), io_type = h[6], ind = h[24];
        /* sub-records: the D area, and the T area of a transaction's first record */
        Py_ssize_t d = -1, dlen = 0, tpos = -1, tend = 0;
        for (Py_ssize_t p = f.body; p < f.body_end;) {
            unsigned char type;
            const unsigned char *v;
            Py_ssize_t n;
            if (next_sub(b, &p, f.body_end, &type, &v, &n) < 0) {
                status = BAIL;
                break;
            }
            if (type == 'D') {
                d = v - b;
                dlen = n;
            }
            else if (type == 'T') {
                tpos = v - b;
                tend = p;
            }
            else if (type == 'E') {
                status = BAIL; /* an encrypted record: the Python reader opens it */
                break;
            }
        }
        if (status != OK)
            break;
        if (d >= 0 && (unsigned)dlen != rec_length) {
            status = BAIL;
            break;
        }
        if (io_type == OP_METADATA) {
            PyObject *data = PyBytes_FromStringAndSize(d >= 0 ? (const char *)b + d : "", d >= 0 ? dlen : 0);
            PyObject *ok = data ? PyObject_CallOneArg(on_metadata, data) : NULL;
            Py_XDECREF(data);
            if (ok == NULL) {
                status = FAILED;
                break;
            }
            int truth = PyObject_IsTrue(ok);
            Py_DECREF(ok);
            if (truth < 0) {
                status = FAILED;
                break;
            }
            if (!truth) {
                status = BAIL;
                break;
            }
            pos = rend;
            continue;
        }
        if (io_type != OP_INSERT && io_type != OP_DELETE && io_type != OP_UPDATE
            && io_type != OP_FIELD_COMP) {
            status = BAIL;
            break;
        }
        if (ind == 0 || ind == 3) {
            if (txn) { /* a transaction without its end: Python's reader decides */
                status = BAIL;
                break;
            }
            txn = 1;
            commit = 0;
            Py_XSETREF(csn, PyLong_FromLong(0));
            Py_XSETREF(xid, PyUnicode_FromStringAndSize("", 0));
            if (csn == NULL || xid == NULL) {
                status = FAILED;
                break;
            }
            if (tpos >= 0 && (status = t_area(b, tpos, tend, &csn, &xid)) != OK)
                break;
        }
        else if (!txn) {
            status = BAIL;
            break;
        }
        uint64_t io_time = be64(h + 8);
        if (io_time)
            commit = io_time;

        PyObject *number;
        if (prev_number != NULL && name_len == prev_len && memcmp(name, prev_name, (size_t)name_len) == 0) {
            number = prev_number;
        }
        else {
            PyObject *nb = PyBytes_FromStringAndSize((const char *)name, name_len);
            if (nb == NULL) {
                status = FAILED;
                break;
            }
            number = PyDict_GetItemWithError(tabs.numbers, nb);
            if (number == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(nb);
                    status = FAILED;
                    break;
                }
                /* resolve(name): None (not kept), True (kept, no MAP), False (Python's
                 * path), or the table's spec */
                PyObject *text = PyUnicode_DecodeUTF8((const char *)name, name_len, NULL);
                PyObject *spec = text ? PyObject_CallOneArg(resolve, text) : NULL;
                Py_XDECREF(text);
                if (spec == NULL) {
                    Py_DECREF(nb);
                    status = PyErr_ExceptionMatches(PyExc_UnicodeDecodeError) ? BAIL : FAILED;
                    if (status == BAIL)
                        PyErr_Clear();
                    break;
                }
                if (spec == Py_None)
                    number = skip;
                else if (spec == Py_True)
                    number = kept;
                else if (spec == Py_False)
                    number = NULL;
                else {
                    Table *t = table_from_spec(spec);
                    if (t == NULL) {
                        status = PyErr_Occurred() ? FAILED : BAIL;
                    }
                    else {
                        if (tabs.n == tabs.cap) {
                            int cap = tabs.cap ? 2 * tabs.cap : 8;
                            Table **more = PyMem_Realloc(tabs.tables, (size_t)cap * sizeof(Table *));
                            if (more == NULL) {
                                table_free(t);
                                Py_DECREF(spec);
                                Py_DECREF(nb);
                                PyErr_NoMemory();
                                status = FAILED;
                                break;
                            }
                            tabs.tables = more;
                            tabs.cap = cap;
                        }
                        tabs.tables[tabs.n] = t;
                        number = PyLong_FromLong(tabs.n++);
                        if (number != NULL) {
                            int rc = PyDict_SetItem(tabs.numbers, nb, number);
                            Py_DECREF(number); /* the dict holds it */
                            if (rc < 0)
                                number = NULL;
                        }
                        if (number == NULL)
                            status = FAILED;
                    }
                }
                Py_DECREF(spec);
                if (number == NULL) {
                    Py_DECREF(nb);
                    if (status == OK)
                        status = BAIL;
                    break;
                }
                if ((number == skip || number == kept)
                    && PyDict_SetItem(tabs.numbers, nb, number) < 0) {
                    Py_DECREF(nb);
                    status = FAILED;
                    break;
                }
            }
            Py_DECREF(nb);
            prev_number = number; /* borrowed from the dict, which lives to the end */
            prev_name = name;
            prev_len = name_len;
        }
        if (number != skip) {
            last_kept = pos;
            n_kept++;
            if (number != kept) {
                Table *t = tabs.tables[PyLong_AsLong(number)];
                if (d < 0) {
                    status = BAIL;
                    break;
                }
                int op = io_type == OP_FIELD_COMP ? OP_UPDATE : (int)io_type;
                status = add_change(t, op, b, d, d + dlen, &keybuf);
                if (status != OK)
                    break;
                n_mapped++;
            }
        }
        if (ind >= 2) {
            Py_XSETREF(last, Py_BuildValue("(KOO)", (unsigned long long)commit, csn, xid));
            if (last == NULL) {
                status = FAILED;
                break;
            }
            txn = 0;
        }
        pos = rend;
    }
    if (status == OK && txn)
        status = BAIL; /* the span ends inside a transaction */
    if (status == OK) {
        PyObject *list = PyList_New(0);
        if (list == NULL)
            status = FAILED;
        for (int i = 0; status == OK && i < tabs.n; i++) {
            status = emit_table(tabs.tables[i]);
            if (status != OK)
                break;
            PyObject *item = table_result(tabs.tables[i]);
            if (item == NULL || PyList_Append(list, item) < 0)
                status = FAILED;
            Py_XDECREF(item);
        }
        if (status == OK)
            result = Py_BuildValue("(NnnnO)", list, last_kept, n_kept, n_mapped,
                                   last ? last : Py_None);
        else
            Py_XDECREF(list);
        if (status == OK && result == NULL)
            status = FAILED;
    }

done:
    for (int i = 0; i < tabs.n; i++)
        table_free(tabs.tables[i]);
    PyMem_Free(tabs.tables);
    Py_XDECREF(tabs.numbers);
    buf_free(&keybuf);
    Py_XDECREF(csn);
    Py_XDECREF(xid);
    Py_XDECREF(last);
    Py_XDECREF(skip);
    Py_XDECREF(kept);
    if (status == FAILED) {
        Py_XDECREF(result);
        return NULL;
    }
    if (status == BAIL) {
        Py_XDECREF(result);
        Py_RETURN_NONE;
    }
    return result;
}

/* -- COPY text to binary text[] arrays ---------------------------------------------------- */

#define ARRAY_HEADER 20 /* ndim, has-null flag, element type, length, lower bound */
#define TEXT_OID 25

static void
put_be32(char *o, uint32_t v)
{
    o[0] = (char)(v >> 24);
    o[1] = (char)(v >> 16);
    o[2] = (char)(v >> 8);
    o[3] = (char)v;
}

/* One COPY text field, s[0, n), unescaped into b as a binary array element (its length,
 * then its bytes; "\N" is NULL). Returns 1 for NULL, 0 for a value, -1 on bad input (a
 * ValueError set) or no memory. */
static int
put_element(Buf *b, const unsigned char *s, Py_ssize_t n)
{
    if (n == 2 && s[0] == '\\' && s[1] == 'N') {
        if (buf_reserve(b, 4) < 0)
            return -1;
        put_be32(b->p + b->n, 0xFFFFFFFFu);
        b->n += 4;
        return 1;
    }
    if (buf_reserve(b, 4 + n) < 0)
        return -1;
    Py_ssize_t at = b->n;
    char *o = b->p + at + 4;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\\') {
            if (++i == n) {
                PyErr_SetString(PyExc_ValueError, "COPY text: a field ends in a backslash");
                return -1;
            }
            switch (s[i]) {
            case 'b': c = '\b'; break;
            case 't': c = '\t'; break;
            case 'n': c = '\n'; break;
            case 'v': c = '\v'; break;
            case 'f': c = '\f'; break;
            case 'r': c = '\r'; break;
            case 'N': case 'x': case '0': case '1': case '2': case '3': case '4': case '5':
            case '6': case '7':
                PyErr_SetString(PyExc_ValueError,
                                "COPY text: an escape this module never writes");
                return -1;
            default: c = s[i];
            }
        }
        *o++ = (char)c;
    }
    Py_ssize_t len = o - (b->p + at + 4);
    if (len > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "COPY text: a field longer than 2 GB");
        return -1;
    }
    put_be32(b->p + at, (uint32_t)len);
    b->n = at + 4 + len;
    return 0;
}

/* copy_columns(data, columns, rows): the COPY text rows of `data` (each line `columns`
 * tab-separated fields, `rows` lines) as one binary text[] array per column — the form
 * PostgreSQL's array_recv reads — so a set statement can take them as parameters and
 * unnest them. Anything else in `data` is a ValueError. */
static PyObject *
copy_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    Py_buffer view;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "copy_columns(data, columns, rows)");
        return NULL;
    }
    Py_ssize_t columns = PyLong_AsSsize_t(args[1]);
    Py_ssize_t rows = PyLong_AsSsize_t(args[2]);
    if ((columns == -1 || rows == -1) && PyErr_Occurred())
        return NULL;
    if (columns < 1 || columns > MAX_TARGETS || rows < 0 || rows > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "copy_columns: columns or rows out of range");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = view.buf;
    Py_ssize_t end = view.len;
    PyObject *result = NULL;
    Buf *bufs = PyMem_Calloc((size_t)columns, sizeof(Buf));
    char *nulls = PyMem_Calloc((size_t)columns, 1);
    if (bufs == NULL || nulls == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < columns; c++) {
        if (buf_reserve(&bufs[c], ARRAY_HEADER + 8 * (rows < 65536 ? rows : 65536)) < 0)
            goto done;
        bufs[c].n = ARRAY_HEADER;
    }
    Py_ssize_t pos = 0, line = 0;
    while (pos < end) {
        if (line == rows) {
            PyErr_SetString(PyExc_ValueError, "COPY text: more lines than rows");
            goto done;
        }
        for (Py_ssize_t c = 0; c < columns; c++) {
            Py_ssize_t start = pos;
            while (pos < end && p[pos] != '\t' && p[pos] != '\n')
                pos++;
            if (pos == end || (p[pos] == '\t') != (c + 1 < columns)) {
                PyErr_Format(PyExc_ValueError,
                             "COPY text: line %zd does not hold %zd fields", line + 1, columns);
                goto done;
            }
            int rc = put_element(&bufs[c], p + start, pos - start);
            if (rc < 0)
                goto done;
            nulls[c] |= (char)rc;
            pos++; /* the tab, or the line's newline */
        }
        line++;
    }
    if (line != rows) {
        PyErr_SetString(PyExc_ValueError, "COPY text: fewer lines than rows");
        goto done;
    }
    result = PyTuple_New(columns);
    if (result == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < columns; c++) {
        char *h = bufs[c].p;
        put_be32(h, 1);
        put_be32(h + 4, (uint32_t)nulls[c]);
        put_be32(h + 8, TEXT_OID);
        put_be32(h + 12, (uint32_t)rows);
        put_be32(h + 16, 1);
        PyObject *item = PyBytes_FromStringAndSize(h, bufs[c].n);
        if (item == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, c, item);
    }
done:
    if (bufs != NULL)
        for (Py_ssize_t c = 0; c < columns; c++)
            buf_free(&bufs[c]);
    PyMem_Free(bufs);
    PyMem_Free(nulls);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"plan_span", (PyCFunction)(void (*)(void))plan_span, METH_FASTCALL,
     "plan_span(buf, start, end, resolve, on_metadata) -> (tables, last_kept_rba, kept, "
     "mapped, last_commit) | None"},
    {"copy_columns", (PyCFunction)(void (*)(void))copy_columns, METH_FASTCALL,
     "copy_columns(data, columns, rows) -> tuple of binary text[] arrays, one per column"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "trailgate.apply._spanplan",
    "A batch's trail bytes to BATCHSQL set operations (see spanplan.py).", -1, methods,
};

PyMODINIT_FUNC
PyInit__spanplan(void)
{
    return PyModule_Create(&module_def);
}
