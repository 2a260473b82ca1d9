/*
 * trailgate.capture.oracle._dumpscan: one redo record of dump text to its RedoRecord, in C.
 *
 * dumpparser.py reads a record with compiled regexes (fastpath.py) and falls back to the
 * token parser in changes.py, which is the reference.  Here the common record and change
 * layouts are read in one pass over the characters and the very objects the Python code
 * builds (RedoRecord, RBA, the ChangeVector classes, Kdo, SupplementalData) are made by
 * filling their slots.
 *
 * The rule is the fast path's: parse_record() gives exactly the object the Python code
 * gives, or None when anything is unusual (a character outside printable ASCII and newline,
 * a number too long for 64 bits, array operations, direct loads, a wrapped or
 * misspelt token, any slip), and the caller then parses the record in Python, which gives
 * the object or the located error.  Each reader below mirrors one regex of dumpparser.py,
 * fastpath.py or supplemental.py (named in its comment) and may be narrower, never wider.
 * It never raises for bad input; an exception means memory ran out.
 *
 * row_values() then turns a parsed row piece into its trail-form values under the same
 * rule: the dict rowchanges.py builds, or None and the Python code decides.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <datetime.h>
#include <string.h>

#define NO ((Py_ssize_t)-1)
#define MAX_DIGITS 18     /* decimal digits that surely fit a long long */
#define MAX_HEX_DIGITS 15 /* hex digits likewise */
#define MAX_COLUMNS 4096  /* more columns than Oracle allows: the Python code decides */

enum { OK = 0, BAIL = 1, ERR = -1 };

/* ----------------------------------------------------------------------------------------
 * Characters.  A record holding anything but printable ASCII and newline is left to Python,
 * so whitespace here is what the regexes' \s and str.split() see, and the reference's own
 * rules about spaces (a change header ends at the line with " RBL:") hold too.
 */
static inline int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n'; }
static inline int is_hws(unsigned char c) { return c == ' ' || c == '\t'; }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static inline int is_lhex(unsigned char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }
static inline int is_hex(unsigned char c)
{
    return is_lhex(c) || (c >= 'A' && c <= 'F');
}
static inline int hexval(unsigned char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* The text being read and the end of the part a reader may look at (a change, a body):
 * every reader takes a position, returns the position after what it read or NO, and passes
 * NO on, so a sequence of reads is a chain of calls. */
typedef struct {
    const unsigned char *s;
    Py_ssize_t end;
} Text;

/* \s+ */
static Py_ssize_t ws1(const Text *t, Py_ssize_t p)
{
    if (p < 0 || p >= t->end || !is_ws(t->s[p]))
        return NO;
    while (p < t->end && is_ws(t->s[p]))
        p++;
    return p;
}

/* \s* */
static Py_ssize_t ws0(const Text *t, Py_ssize_t p)
{
    if (p < 0)
        return NO;
    while (p < t->end && is_ws(t->s[p]))
        p++;
    return p;
}

/* [^\S\n]* */
static Py_ssize_t hws0(const Text *t, Py_ssize_t p)
{
    if (p < 0)
        return NO;
    while (p < t->end && is_hws(t->s[p]))
        p++;
    return p;
}

/* (?!\S): at the end or before whitespace */
static Py_ssize_t tok_end(const Text *t, Py_ssize_t p)
{
    if (p < 0 || (p < t->end && !is_ws(t->s[p])))
        return NO;
    return p;
}

/* A literal. */
static Py_ssize_t lit(const Text *t, Py_ssize_t p, const char *w)
{
    if (p < 0 || p > t->end)
        return NO;
    size_t n = strlen(w);
    if ((size_t)(t->end - p) < n || memcmp(t->s + p, w, n) != 0)
        return NO;
    return p + (Py_ssize_t)n;
}

/* Words separated by \s+ ("KDO Op code:" is KDO\s+Op\s+code:). */
static Py_ssize_t words(const Text *t, Py_ssize_t p, const char *w)
{
    while (p >= 0 && p <= t->end) {
        const char *sp = strchr(w, ' ');
        size_t n = sp ? (size_t)(sp - w) : strlen(w);
        if ((size_t)(t->end - p) < n || memcmp(t->s + p, w, n) != 0)
            return NO;
        p += (Py_ssize_t)n;
        if (sp == NULL)
            return p;
        p = ws1(t, p);
        w = sp + 1;
    }
    return NO;
}

/* \d+ (all digits: in every pattern here a non-digit follows).  *v is the value; more than
 * MAX_DIGITS digits is NO (the caller then leaves the record to Python), unless v is NULL. */
static Py_ssize_t dec(const Text *t, Py_ssize_t p, long long *v)
{
    if (p < 0 || p >= t->end || !is_digit(t->s[p]))
        return NO;
    Py_ssize_t a = p;
    long long x = 0;
    while (p < t->end && is_digit(t->s[p])) {
        if (p - a < MAX_DIGITS)
            x = x * 10 + (t->s[p] - '0');
        p++;
    }
    if (v != NULL) {
        if (p - a > MAX_DIGITS)
            return NO;
        *v = x;
    }
    return p;
}

/* -?\d+ */
static Py_ssize_t sdec(const Text *t, Py_ssize_t p, long long *v)
{
    if (p < 0)
        return NO;
    int neg = p < t->end && t->s[p] == '-';
    p = dec(t, p + neg, v);
    if (p >= 0 && v != NULL && neg)
        *v = -*v;
    return p;
}

/* [0-9a-f]{n}: exactly n lower-case digits here (what follows is the caller's). */
static Py_ssize_t hexn(const Text *t, Py_ssize_t p, int n, unsigned long long *v)
{
    if (p < 0 || t->end - p < n)
        return NO;
    unsigned long long x = 0;
    for (int k = 0; k < n; k++) {
        unsigned char c = t->s[p + k];
        if (!is_lhex(c))
            return NO;
        x = x << 4 | (unsigned)hexval(c);
    }
    if (v != NULL)
        *v = x;
    return p + n;
}

/* [0-9a-f]+; with v, more than MAX_HEX_DIGITS digits is NO. */
static Py_ssize_t hexrun(const Text *t, Py_ssize_t p, unsigned long long *v)
{
    if (p < 0 || p >= t->end || !is_lhex(t->s[p]))
        return NO;
    Py_ssize_t a = p;
    unsigned long long x = 0;
    while (p < t->end && is_lhex(t->s[p])) {
        if (p - a < MAX_HEX_DIGITS)
            x = x << 4 | (unsigned)hexval(t->s[p]);
        p++;
    }
    if (v != NULL) {
        if (p - a > MAX_HEX_DIGITS)
            return NO;
        *v = x;
    }
    return p;
}

/* \S+ */
static Py_ssize_t nonws(const Text *t, Py_ssize_t p)
{
    if (p < 0 || p >= t->end || is_ws(t->s[p]))
        return NO;
    while (p < t->end && !is_ws(t->s[p]))
        p++;
    return p;
}

/* Start of `w` wholly inside [from, to), or -1 (str.find(w, from, to)). */
static Py_ssize_t find(const unsigned char *s, Py_ssize_t from, Py_ssize_t to, const char *w)
{
    size_t n = strlen(w);
    if (from < 0 || to - from < (Py_ssize_t)n)
        return -1;
    const unsigned char *p = s + from, *last = s + to - n;
    while (p <= last) {
        p = memchr(p, w[0], (size_t)(last - p + 1));
        if (p == NULL)
            return -1;
        if (memcmp(p, w, n) == 0)
            return p - s;
        p++;
    }
    return -1;
}

/* Newlines in [a, b) (str.count("\n", a, b)). */
static Py_ssize_t count_nl(const unsigned char *s, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t n = 0;
    while (a < b) {
        const unsigned char *q = memchr(s + a, '\n', (size_t)(b - a));
        if (q == NULL)
            break;
        n++;
        a = q - s + 1;
    }
    return n;
}

/* ----------------------------------------------------------------------------------------
 * The Python classes, set up once by setup(): each dataclass is made by allocating it and
 * filling its slots (the generated __init__ only assigns them), RBA as the tuple it is.
 */
enum {
    C_RECORD, C_UNDO_HEADER, C_UNDO_RECORD, C_COMMIT, C_ROW_CHANGE, C_OTHER, C_MARKER, C_KDO,
    C_SUPPLEMENTAL, N_CLASSES
};

#define BASE_FIELDS "number", "layer", "code", "line", "typ", "cls", "afn", "dba", "obj", \
                    "scn", "seq"
#define N_BASE 11
#define MAX_FIELDS 18

static const char *const class_fields[N_CLASSES][MAX_FIELDS + 1] = {
    [C_RECORD] = {"path", "line", "thread", "rba", "length", "vld", "scn", "subscn",
                  "timestamp", "changes", NULL},
    [C_UNDO_HEADER] = {BASE_FIELDS, "xid", "sqn", NULL},
    [C_UNDO_RECORD] = {BASE_FIELDS, "xid", "begin", "objn", "objd", "opc", "kdo",
                       "supplemental", NULL},
    [C_COMMIT] = {BASE_FIELDS, "xid", "flg", NULL},
    [C_ROW_CHANGE] = {BASE_FIELDS, "ktb_op", "xid", "kdo", NULL},
    [C_OTHER] = {BASE_FIELDS, NULL},
    [C_MARKER] = {BASE_FIELDS, NULL},
    [C_KDO] = {"op", "bdba", "tabn", "slot", "fb", "flag", "ncol", "columns", "rows", "slots",
               "line", NULL},
    [C_SUPPLEMENTAL] = {"header", "first_modified", "columns", "head_dba", "head_tabn",
                        "head_slot", "line", NULL},
};

typedef struct {
    PyTypeObject *type;
    int nfields;
    Py_ssize_t offsets[MAX_FIELDS];
} Class;

static Class classes[N_CLASSES];
static PyTypeObject *rba_type;
static int ready;

/* Operation kinds (the registry of changes.py, given to setup). */
enum { K_OTHER, K_UNDO_HEADER, K_UNDO_RECORD, K_COMMIT, K_ROW_CHANGE, K_PYTHON };
#define MAX_OPS 32
#define MAX_DATA_LAYERS 8
static struct {
    long long layer, code;
    int kind;
} ops[MAX_OPS];
static int n_ops;
static long long data_layers[MAX_DATA_LAYERS];
static int n_data_layers;
static const char *row_kdo[16]; /* RowChange.EXPECTED: KDO operation by code */

/* Interned values the parser hands out again and again. */
static PyObject *s_empty, *s_irp, *s_urp, *s_drp, *s_lkr, *s_opc_11_1, *s_whole_row;
static PyObject *last_stamp_key, *last_stamp; /* records share timestamps */
static char last_xid_raw[19];
static PyObject *last_xid;

/* A new `ci` object whose fields (in class_fields order) are v[0..]: the references in v
 * are stolen, also on failure (a NULL in v is a failed allocation: NULL is returned). */
static PyObject *make(int ci, PyObject **v)
{
    Class *c = &classes[ci];
    PyObject *obj = NULL;
    int missing = 0;
    for (int k = 0; k < c->nfields; k++)
        missing |= v[k] == NULL;
    if (!missing)
        obj = c->type->tp_alloc(c->type, 0);
    if (obj == NULL) {
        for (int k = 0; k < c->nfields; k++)
            Py_XDECREF(v[k]);
        return NULL;
    }
    for (int k = 0; k < c->nfields; k++)
        *(PyObject **)((char *)obj + c->offsets[k]) = v[k];
    return obj;
}

static PyObject *num(long long x) { return PyLong_FromLongLong(x); }

/* Whether `type` is a slots dataclass with exactly `names` as its positional fields, each
 * a writable object slot; fills `c`.  1 yes, 0 no, -1 error. */
static int check_class(PyObject *type, const char *const *names, Class *c)
{
    if (!PyType_Check(type))
        return 0;
    PyTypeObject *tp = (PyTypeObject *)type;
    if (tp->tp_new != PyBaseObject_Type.tp_new || tp->tp_itemsize != 0
        || tp->tp_init == NULL || tp->tp_dictoffset != 0)
        return 0;
    PyObject *post = PyObject_GetAttrString(type, "__post_init__");
    if (post != NULL) {
        Py_DECREF(post);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    PyObject *fields = PyObject_GetAttrString(type, "__dataclass_fields__");
    if (fields == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    int ok = PyDict_Check(fields);
    Py_ssize_t it = 0;
    int n = 0;
    PyObject *name, *field;
    while (ok && PyDict_Next(fields, &it, &name, &field)) {
        /* ClassVar and InitVar pseudo-fields are not slots: passed over */
        PyObject *ftype = PyObject_GetAttrString(field, "_field_type");
        PyObject *fname = ftype == NULL ? NULL : PyObject_Str(ftype);
        Py_XDECREF(ftype);
        if (fname == NULL) {
            Py_DECREF(fields);
            return -1;
        }
        int plain = PyUnicode_CompareWithASCIIString(fname, "_FIELD") == 0;
        Py_DECREF(fname);
        if (!plain)
            continue;
        ok = n < MAX_FIELDS && names[n] != NULL
             && PyUnicode_CompareWithASCIIString(name, names[n]) == 0;
        PyObject *descr = ok ? _PyType_Lookup(tp, name) : NULL;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            ok = 0;
            break;
        }
        PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)
            || m->offset < (Py_ssize_t)sizeof(PyObject)
            || m->offset + (Py_ssize_t)sizeof(PyObject *) > tp->tp_basicsize) {
            ok = 0;
            break;
        }
        c->offsets[n++] = m->offset;
    }
    Py_DECREF(fields);
    if (PyErr_Occurred())
        return -1;
    if (!ok || names[n] != NULL)
        return 0;
    c->type = tp;
    c->nfields = n;
    return 1;
}

/* ----------------------------------------------------------------------------------------
 * Values.
 */

/* usn.slot.sqn from "0x" XXXX "." XXX "." XXXXXXXX at p (19 characters, checked). */
static PyObject *xid_at(const unsigned char *s, Py_ssize_t p)
{
    if (last_xid != NULL && memcmp(last_xid_raw, s + p, 19) == 0)
        return Py_NewRef(last_xid);
    unsigned long long usn = 0, slot = 0, sqn = 0;
    for (int k = 2; k < 6; k++)
        usn = usn << 4 | (unsigned)hexval(s[p + k]);
    for (int k = 7; k < 10; k++)
        slot = slot << 4 | (unsigned)hexval(s[p + k]);
    for (int k = 11; k < 19; k++)
        sqn = sqn << 4 | (unsigned)hexval(s[p + k]);
    PyObject *x = PyUnicode_FromFormat("%llu.%llu.%llu", usn, slot, sqn);
    if (x == NULL)
        return NULL;
    Py_XSETREF(last_xid, Py_NewRef(x));
    memcpy(last_xid_raw, s + p, 19);
    return x;
}

static PyObject *str_at(const unsigned char *s, Py_ssize_t a, Py_ssize_t b)
{
    return PyUnicode_FromStringAndSize((const char *)s + a, b - a);
}

/* The KDO operation name as a str (the four common ones shared). */
static PyObject *op_name(const unsigned char *s, Py_ssize_t a, Py_ssize_t b)
{
    if (b - a == 3) {
        PyObject *known = memcmp(s + a, "IRP", 3) == 0   ? s_irp
                          : memcmp(s + a, "URP", 3) == 0 ? s_urp
                          : memcmp(s + a, "DRP", 3) == 0 ? s_drp
                          : memcmp(s + a, "LKR", 3) == 0 ? s_lkr
                                                         : NULL;
        if (known != NULL)
            return Py_NewRef(known);
    }
    return str_at(s, a, b);
}

/* ----------------------------------------------------------------------------------------
 * Change bodies (fastpath.py).
 */

/* fastpath._find_tokens over the body [floor, t->end): (start, end) of the first token
 * `first` at or after pos that `rest` continues; *start = -1 when absent or when a "[ " on
 * the lines passed over means the reference tokenizer might split them differently. */
typedef Py_ssize_t (*Rest)(const Text *, Py_ssize_t);

static Py_ssize_t find_tokens(const Text *t, Py_ssize_t floor, Py_ssize_t pos,
                              const char *first, Rest rest, Py_ssize_t *start)
{
    *start = -1;
    if (pos < 0)
        return NO;
    Py_ssize_t n = (Py_ssize_t)strlen(first);
    Py_ssize_t i = find(t->s, pos, t->end, first);
    while (i >= 0) {
        Py_ssize_t j = i + n;
        if ((i == floor || is_ws(t->s[i - 1])) && (j == t->end || is_ws(t->s[j]))) {
            Py_ssize_t e = rest != NULL ? rest(t, j) : j;
            if (e >= 0) {
                Py_ssize_t ls = pos;
                while (ls > floor && t->s[ls - 1] != '\n')
                    ls--;
                if (find(t->s, ls, i, "[ ") >= 0)
                    return NO;
                *start = i;
                return e;
            }
        }
        i = find(t->s, i + 1, t->end, first);
    }
    return NO;
}

/* _UNDO_REC_REST: \s+undo\s+record:(?!\S) */
static Py_ssize_t undo_rec_rest(const Text *t, Py_ssize_t p)
{
    return tok_end(t, words(t, ws1(t, p), "undo record:"));
}

/* _OP_CODE_REST: \s+Op\s+code:(?!\S) */
static Py_ssize_t op_code_rest(const Text *t, Py_ssize_t p)
{
    return tok_end(t, words(t, ws1(t, p), "Op code:"));
}

/* _COL, `count` times (fastpath._columns_exact): col n: *NULL* | col n: [len] xx xx …
 * with ascending column numbers (0, 1, 2… when sequential).  *list gets the
 * (colno, bytes | None) tuples.  OK, BAIL or ERR. */
static int columns(const Text *t, Py_ssize_t *pos, long long count, int sequential,
                   PyObject **list)
{
    *list = NULL;
    if (count < 0 || count > MAX_COLUMNS)
        return BAIL;
    PyObject *cols = PyList_New((Py_ssize_t)count);
    if (cols == NULL)
        return ERR;
    Py_ssize_t p = *pos;
    long long last = -1;
    for (long long k = 0; k < count; k++) {
        long long colno = 0, len = 0;
        p = lit(t, ws1(t, p), "col");
        p = dec(t, ws1(t, p), &colno);
        p = ws1(t, lit(t, p, ":"));
        if (p < 0 || colno <= last || (sequential && colno != k))
            goto bail;
        last = colno;
        PyObject *value;
        Py_ssize_t q = tok_end(t, lit(t, p, "*NULL*"));
        if (q >= 0) {
            p = q;
            value = Py_NewRef(Py_None);
        } else {
            p = lit(t, dec(t, hws0(t, lit(t, p, "[")), &len), "]");
            if (p < 0)
                goto bail;
            /* (?:\s+[0-9a-f]{2}(?!\S))*+ then (?!\S): every such byte, then the length */
            Py_ssize_t a = p, nbytes = 0;
            for (;;) {
                Py_ssize_t b = tok_end(t, hexn(t, ws1(t, p), 2, NULL));
                if (b < 0)
                    break;
                p = b;
                nbytes++;
            }
            if (tok_end(t, p) < 0 || nbytes != len)
                goto bail;
            value = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
            if (value == NULL)
                goto error;
            char *out = PyBytes_AS_STRING(value);
            for (Py_ssize_t b = 0; b < nbytes; b++) {
                a = ws1(t, a);
                out[b] = (char)(hexval(t->s[a]) << 4 | hexval(t->s[a + 1]));
                a += 2;
            }
        }
        PyObject *no = PyLong_FromLongLong(colno);
        PyObject *pair = no == NULL ? NULL : PyTuple_Pack(2, no, value);
        Py_XDECREF(no);
        Py_DECREF(value);
        if (pair == NULL)
            goto error;
        PyList_SET_ITEM(cols, (Py_ssize_t)k, pair);
    }
    *pos = p;
    *list = cols;
    return OK;
bail:
    Py_DECREF(cols);
    return BAIL;
error:
    Py_DECREF(cols);
    return ERR;
}

/* _KDO_COMMON at k, then the operation's tail (fastpath._kdo).  *kdo gets the Kdo, *pos
 * the end of what was read.  `line0` is the line the body starts on, at `floor`. */
static int kdo(const Text *t, Py_ssize_t floor, Py_ssize_t k, long long line0,
               PyObject **out, Py_ssize_t *pos)
{
    *out = NULL;
    unsigned long long bdba = 0, flag = 0;
    long long tabn = 0, slot = -1, cc = 0, ncol = 0, nnew = 0;
    Py_ssize_t p = ws1(t, words(t, k, "KDO Op code:"));
    Py_ssize_t op_a = p;
    p = nonws(t, p);
    Py_ssize_t op_b = p;
    p = words(t, ws1(t, p), "row dependencies");
    p = nonws(t, ws1(t, p));
    p = nonws(t, ws1(t, lit(t, ws1(t, p), "xtype:")));
    p = hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p), "flags:")), "0x"), NULL);
    p = tok_end(t, hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "bdba:")), "0x"), 8, &bdba));
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "hdba:")), "0x"), 8, NULL);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "itli:")), NULL);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "ispac:")), NULL);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "maxfr:")), NULL);
    p = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, p), "tabn:")), &tabn));
    if (p < 0)
        return BAIL;
    const unsigned char *op = t->s + op_a;
    Py_ssize_t oplen = op_b - op_a;
    int is = oplen == 3;
    int irp = is && memcmp(op, "IRP", 3) == 0, urp = is && memcmp(op, "URP", 3) == 0;
    int drp = is && memcmp(op, "DRP", 3) == 0, lkr = is && memcmp(op, "LKR", 3) == 0;
    if (is && (memcmp(op, "QMI", 3) == 0 || memcmp(op, "QMD", 3) == 0))
        return BAIL; /* arrays: the reference parser */
    PyObject *fb = NULL, *cols = NULL;
    if (irp || urp || drp) { /* _SLOT: \s+slot:\s+(\d+)\(0x([0-9a-f]+)\)(?!\S) */
        unsigned long long hex;
        p = dec(t, ws1(t, lit(t, ws1(t, p), "slot:")), &slot);
        p = tok_end(t, lit(t, hexrun(t, lit(t, p, "(0x"), &hex), ")"));
        if (p < 0 || hex != (unsigned long long)slot)
            return BAIL;
    }
    if (lkr) {
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "slot:")), &slot);
        p = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, p), "to:")), NULL));
        if (p < 0)
            return BAIL;
    } else if (irp) {
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "size/delt:")), NULL);
        p = ws1(t, lit(t, ws1(t, p), "fb:"));
        Py_ssize_t fb_at = p;
        if (p < 0 || t->end - p < 8)
            return BAIL;
        static const char letters[] = "KCHDFLPN";
        for (int i = 0; i < 8; i++)
            if (t->s[p + i] != '-' && t->s[p + i] != (unsigned char)letters[i])
                return BAIL;
        p = hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p + 8), "lb:")), "0x"), NULL);
        p = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, p), "cc:")), &cc));
        if (p < 0)
            return BAIL;
        /* (?:\s+null:\s+\S+)? */
        Py_ssize_t q = nonws(t, ws1(t, lit(t, ws1(t, p), "null:")));
        if (q >= 0)
            p = q;
        int rc = columns(t, &p, cc, 1, &cols);
        if (rc != OK)
            return rc;
        fb = memcmp(t->s + fb_at, "--H-FL--", 8) == 0 ? Py_NewRef(s_whole_row)
                                                      : str_at(t->s, fb_at, fb_at + 8);
    } else if (urp) {
        p = hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p), "flag:")), "0x"), &flag);
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "lock:")), NULL);
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "ckix:")), NULL);
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "ncol:")), &ncol);
        p = sdec(t, ws1(t, lit(t, ws1(t, p), "nnew:")), &nnew);
        p = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, p), "size:")), NULL));
        if (p < 0)
            return BAIL;
        /* (?:\s+Vector\s+content:(?!\S))? */
        Py_ssize_t q = tok_end(t, words(t, ws1(t, p), "Vector content:"));
        if (q >= 0)
            p = q;
        int rc = columns(t, &p, nnew, 0, &cols);
        if (rc != OK)
            return rc;
    }
    if (cols == NULL && (cols = PyList_New(0)) == NULL)
        return ERR;
    if (fb == NULL)
        fb = Py_NewRef(s_empty);
    PyObject *v[] = {
        op_name(t->s, op_a, op_b), num((long long)bdba), num(tabn), num(slot), fb,
        num((long long)flag), num(ncol), cols, PyList_New(0), PyList_New(0),
        num(line0 + count_nl(t->s, floor, op_a)),
    };
    *out = make(C_KDO, v);
    if (*out == NULL)
        return ERR;
    *pos = p;
    return OK;
}

/* What a change header gave: the common fields. */
typedef struct {
    long long number, layer, code, line, typ, cls, afn, dba, obj, scn, seq;
} Header;

static void base_values(const Header *h, PyObject **v)
{
    const long long f[N_BASE] = {h->number, h->layer, h->code, h->line, h->typ, h->cls,
                                 h->afn, h->dba, h->obj, h->scn, h->seq};
    for (int k = 0; k < N_BASE; k++)
        v[k] = num(f[k]);
}

/* 5.2: fastpath._undo_header (_KTUDH). */
static int undo_header(const Text *t, Py_ssize_t p, const Header *h, PyObject **out)
{
    unsigned long long slot = 0, sqn = 0;
    p = words(t, ws0(t, p), "ktudh redo:");
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "slt:")), "0x"), 4, &slot);
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "sqn:")), "0x"), 8, &sqn);
    p = tok_end(t, hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p), "flg:")), "0x"), NULL));
    if (p < 0 || h->cls < 17)
        return BAIL;
    PyObject *v[N_BASE + 2];
    base_values(h, v);
    v[N_BASE] = PyUnicode_FromFormat("%lld.%llu.%llu", (h->cls - 15) / 2, slot, sqn);
    v[N_BASE + 1] = num((long long)sqn);
    return (*out = make(C_UNDO_HEADER, v)) != NULL ? OK : ERR;
}

/* 5.4: fastpath._commit (_KTUCM, to the end of the body). */
static int commit(const Text *t, Py_ssize_t p, const Header *h, PyObject **out)
{
    unsigned long long slot = 0, sqn = 0, flg = 0;
    p = words(t, ws0(t, p), "ktucm redo:");
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "slt:")), "0x"), 4, &slot);
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "sqn:")), "0x"), 8, &sqn);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "srt:")), NULL);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "sta:")), NULL);
    p = tok_end(t, hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p), "flg:")), "0x"), &flg));
    if (p < 0)
        return BAIL;
    /* (\s+ktucf\s+redo:\s+uba:\s+0x[0-9a-f]{8}\.[0-9a-f]{4}\.[0-9a-f]{2}\s+ext:…fbi:…)? */
    Py_ssize_t q = hexn(t, lit(t, ws1(t, words(t, ws1(t, p), "ktucf redo: uba:")), "0x"), 8,
                        NULL);
    q = hexn(t, lit(t, hexn(t, lit(t, q, "."), 4, NULL), "."), 2, NULL);
    q = sdec(t, ws1(t, lit(t, ws1(t, q), "ext:")), NULL);
    q = sdec(t, ws1(t, lit(t, ws1(t, q), "spc:")), NULL);
    q = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, q), "fbi:")), NULL));
    int ktucf = q >= 0;
    if (ktucf)
        p = q;
    q = tok_end(t, words(t, ws1(t, p), "rolled back transaction"));
    int rolled = q >= 0;
    if (rolled)
        p = q;
    if (ws0(t, p) != t->end || h->cls < 17 || ((flg & 0x02) != 0) != ktucf
        || (rolled && !(flg & 0x04)))
        return BAIL;
    PyObject *v[N_BASE + 2];
    base_values(h, v);
    v[N_BASE] = PyUnicode_FromFormat("%lld.%llu.%llu", (h->cls - 15) / 2, slot, sqn);
    v[N_BASE + 1] = num((long long)flg);
    return (*out = make(C_COMMIT, v)) != NULL ? OK : ERR;
}

/* 5.1: fastpath._undo_record over the body [p, t->end) (supplemental data cut off). */
static int undo_record(const Text *t, Py_ssize_t p, const Header *h, long long line0,
                       PyObject **out)
{
    Py_ssize_t floor = p, x_at, opc_a, opc_b;
    long long objn = 0, objd = 0;
    p = tok_end(t, words(t, ws0(t, p), "ktudb redo:"));
    p = find_tokens(t, floor, p, "xid:", NULL, &x_at);
    /* _UNDO_FIELDS */
    p = lit(t, ws1(t, p), "0x");
    Py_ssize_t xid_at_ = p - 2;
    p = tok_end(t, hexn(t, lit(t, hexn(t, lit(t, hexn(t, p, 4, NULL), "."), 3, NULL), "."), 8,
                        NULL));
    p = lit(t, ws1(t, p), "ktub");
    if (p < 0 || p >= t->end || (t->s[p] != 'l' && t->s[p] != 'u'))
        return BAIL;
    int begin = t->s[p] == 'l';
    p = words(t, ws1(t, p + 1), "redo: slt:");
    p = sdec(t, ws1(t, p), NULL);
    p = sdec(t, ws1(t, lit(t, ws1(t, p), "rci:")), NULL);
    p = ws1(t, lit(t, ws1(t, p), "opc:"));
    opc_a = p;
    p = nonws(t, p);
    opc_b = p;
    p = ws1(t, p);
    int bracket = p >= 0 && p < t->end && t->s[p] == '[';
    p = sdec(t, ws1(t, lit(t, p + bracket, "objn:")), &objn);
    p = tok_end(t, sdec(t, ws1(t, lit(t, ws1(t, p), "objd:")), &objd));
    if (p < 0 || begin != bracket)
        return BAIL;
    int row_undo = opc_b - opc_a == 4 && memcmp(t->s + opc_a, "11.1", 4) == 0;
    PyObject *k = NULL;
    if (row_undo) {
        Py_ssize_t u_at, k_at;
        Py_ssize_t u = find_tokens(t, floor, p, "KDO", undo_rec_rest, &u_at);
        if (u < 0)
            return BAIL;
        find_tokens(t, floor, u, "KDO", op_code_rest, &k_at);
        if (k_at < 0)
            return BAIL;
        Py_ssize_t end;
        int rc = kdo(t, floor, k_at, line0, &k, &end);
        if (rc != OK)
            return rc;
        if (ws0(t, end) != t->end) {
            Py_DECREF(k);
            return BAIL;
        }
    }
    PyObject *v[N_BASE + 7];
    base_values(h, v);
    v[N_BASE] = xid_at(t->s, xid_at_);
    v[N_BASE + 1] = Py_NewRef(begin ? Py_True : Py_False);
    v[N_BASE + 2] = num(objn);
    v[N_BASE + 3] = num(objd);
    v[N_BASE + 4] = row_undo ? Py_NewRef(s_opc_11_1) : str_at(t->s, opc_a, opc_b);
    v[N_BASE + 5] = k != NULL ? k : Py_NewRef(Py_None);
    v[N_BASE + 6] = Py_NewRef(Py_None);
    return (*out = make(C_UNDO_RECORD, v)) != NULL ? OK : ERR;
}

/* 11.2/3/4/5: fastpath._row_change. */
static int row_change(const Text *t, Py_ssize_t p, const Header *h, long long line0,
                      PyObject **out)
{
    Py_ssize_t floor = p, o_at, k_at, end;
    p = hexrun(t, lit(t, ws1(t, words(t, ws0(t, p), "KTB Redo op:")), "0x"), NULL);
    p = tok_end(t, hexrun(t, lit(t, ws1(t, lit(t, ws1(t, p), "ver:")), "0x"), NULL));
    p = find_tokens(t, floor, p, "op:", NULL, &o_at);
    /* _KTB_OP: \s+([A-Z])(?!\S)(?:\s+xid:\s+XID(?!\S))? */
    p = ws1(t, p);
    if (p < 0 || p >= t->end || t->s[p] < 'A' || t->s[p] > 'Z')
        return BAIL;
    unsigned char letter = t->s[p];
    p = tok_end(t, p + 1);
    Py_ssize_t x = lit(t, ws1(t, lit(t, ws1(t, p), "xid:")), "0x");
    Py_ssize_t xid_from = x - 2;
    x = tok_end(t, hexn(t, lit(t, hexn(t, lit(t, hexn(t, x, 4, NULL), "."), 3, NULL), "."), 8,
                        NULL));
    if (x >= 0)
        p = x;
    if (p < 0 || (letter == 'F') != (x >= 0))
        return BAIL;
    find_tokens(t, floor, p, "KDO", op_code_rest, &k_at);
    if (k_at < 0)
        return BAIL;
    PyObject *k;
    int rc = kdo(t, floor, k_at, line0, &k, &end);
    if (rc != OK)
        return rc;
    const char *want = h->code >= 0 && h->code < 16 ? row_kdo[h->code] : NULL;
    PyObject *op = ((PyObject **)((char *)k + classes[C_KDO].offsets[0]))[0];
    PyObject *bdba = ((PyObject **)((char *)k + classes[C_KDO].offsets[1]))[0];
    if (ws0(t, end) != t->end || want == NULL
        || PyUnicode_CompareWithASCIIString(op, want) != 0
        || PyLong_AsLongLong(bdba) != h->dba) {
        Py_DECREF(k);
        return PyErr_Occurred() ? ERR : BAIL;
    }
    PyObject *v[N_BASE + 3];
    base_values(h, v);
    v[N_BASE] = PyUnicode_FromOrdinal(letter);
    v[N_BASE + 1] = x >= 0 ? xid_at(t->s, xid_from) : Py_NewRef(s_empty);
    v[N_BASE + 2] = k;
    return (*out = make(C_ROW_CHANGE, v)) != NULL ? OK : ERR;
}

/* ----------------------------------------------------------------------------------------
 * Supplemental data (supplemental.fast_supplemental and its _FAST regex).
 */

/* _groups(w): one or more lines "\n[^\S\n]*H{w}(?:[^\S\n]+H{w})*[^\S\n]*" (any-case hex).
 * *nbytes counts the bytes; returns the end, or NO for no line at all. */
static Py_ssize_t groups(const Text *t, Py_ssize_t p, int w, Py_ssize_t *nbytes)
{
    Py_ssize_t lines = 0;
    *nbytes = 0;
    for (;;) {
        Py_ssize_t q = lit(t, p, "\n"), got = 0;
        q = hws0(t, q);
        for (;;) { /* H{w} then ([^\S\n]+H{w})* */
            Py_ssize_t r = q;
            if (got > 0) {
                if (r >= t->end || !is_hws(t->s[r]))
                    break;
                r = hws0(t, r);
            }
            if (r < 0 || t->end - r < w)
                break;
            int k = 0;
            while (k < w && is_hex(t->s[r + k]))
                k++;
            if (k < w)
                break;
            q = r + w;
            got++;
        }
        if (q < 0 || got == 0)
            break;
        q = hws0(t, q);
        if (q < t->end && t->s[q] != '\n')
            break; /* the line holds something else: it is not one of these lines */
        p = q;
        *nbytes += got * w / 2;
        lines++;
    }
    return lines ? p : NO;
}

/* The bytes of the hex groups in [a, b) (bytes.fromhex, whitespace skipped). */
static void unhex(const unsigned char *s, Py_ssize_t a, Py_ssize_t b, unsigned char *out)
{
    Py_ssize_t n = 0;
    while (a < b) {
        if (is_ws(s[a])) {
            a++;
            continue;
        }
        out[n++] = (unsigned char)(hexval(s[a]) << 4 | hexval(s[a + 1]));
        a += 2;
    }
}

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }

/* (\d+) bytes?\)[^\S\n]* (the end of a label) */
static Py_ssize_t size_label(const Text *t, Py_ssize_t p, long long *n)
{
    p = lit(t, dec(t, p, n), " byte");
    if (p >= 0 && p < t->end && t->s[p] == 's')
        p++;
    return hws0(t, lit(t, p, ")"));
}

/* \n[^\S\n]*NAME (\d+) bytes?\)[^\S\n]* ("Column List Header (", "Column Size List (") */
static Py_ssize_t label(const Text *t, Py_ssize_t p, const char *name, long long *n)
{
    return size_label(t, lit(t, hws0(t, lit(t, p, "\n")), name), n);
}

/* \n[^\S\n]*Column (\d+) Value \((\d+) bytes?\)[^\S\n]* */
static Py_ssize_t value_label(const Text *t, Py_ssize_t p, long long *number, long long *size)
{
    p = dec(t, lit(t, hws0(t, lit(t, p, "\n")), "Column "), number);
    return size_label(t, lit(t, p, " Value ("), size);
}

/* The block at [p, t->end) in its usual shape as a SupplementalData; BAIL otherwise. */
static int supplemental(const Text *t, Py_ssize_t p, long long line, PyObject **out)
{
    *out = NULL;
    long long hsize = 0, nlist = 0, nsizes = 0;
    Py_ssize_t hn, ln, sn;
    p = lit(t, hws0(t, p), "Header (");
    Py_ssize_t digits = p;
    p = dec(t, p, &hsize);
    if (p - digits != 2) /* (20|28): the digits exactly */
        return BAIL;
    p = hws0(t, lit(t, p, " bytes)"));
    if (p < 0 || (hsize != 20 && hsize != 28))
        return BAIL;
    Py_ssize_t h_a = p;
    p = groups(t, p, 8, &hn);
    Py_ssize_t h_b = p;
    if (p < 0 || hn != hsize)
        return BAIL;
    unsigned char header[28];
    unhex(t->s, h_a, h_b, header);
    unsigned ncols = be16(header);
    /* the optional column sections */
    Py_ssize_t q = label(t, p, "Column List Header (", &nlist);
    Py_ssize_t l_a = q;
    q = groups(t, q, 4, &ln);
    Py_ssize_t l_b = q;
    q = label(t, q, "Column Size List (", &nsizes);
    Py_ssize_t s_a = q;
    q = groups(t, q, 4, &sn);
    Py_ssize_t s_b = q;
    Py_ssize_t v_a = q, nvalues = 0;
    for (;;) { /* (?:\n[^\S\n]*Column \d+ Value \(\d+ bytes?\)[^\S\n]*(?:G2)?)+ */
        long long number, size;
        Py_ssize_t r = value_label(t, q, &number, &size);
        if (r < 0)
            break;
        Py_ssize_t vn;
        Py_ssize_t g = groups(t, r, 2, &vn);
        q = g >= 0 ? g : r;
        nvalues++;
    }
    int sections = q >= 0 && nvalues > 0;
    if (sections)
        p = q;
    if (ws0(t, p) != t->end)
        return BAIL;
    PyObject *cols = PyList_New(0);
    if (cols == NULL)
        return ERR;
    if (!sections) {
        if (ncols != 0)
            goto bail;
    } else {
        if (ncols == 0 || nvalues != ncols || nlist != 2 * (long long)ncols
            || nsizes != 2 * (long long)ncols || ln != 2 * (Py_ssize_t)ncols
            || sn != 2 * (Py_ssize_t)ncols)
            goto bail;
        unsigned char *lists = PyMem_Malloc(4 * (size_t)ncols);
        if (lists == NULL) {
            Py_DECREF(cols);
            PyErr_NoMemory();
            return ERR;
        }
        unhex(t->s, l_a, l_b, lists);
        unhex(t->s, s_a, s_b, lists + 2 * ncols);
        Py_ssize_t r = v_a;
        int status = OK;
        for (unsigned k = 0; k < ncols && status == OK; k++) {
            long long number, size;
            r = value_label(t, r, &number, &size);
            Py_ssize_t vn = 0, g = groups(t, r, 2, &vn);
            unsigned want = be16(lists + 2 * ncols + 2 * k);
            if (r < 0 || number != (long long)k + 1 || size != (long long)want
                || vn != (Py_ssize_t)want) {
                status = BAIL;
                break;
            }
            PyObject *value = Py_NewRef(Py_None);
            if (want) {
                Py_DECREF(value);
                value = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)want);
                if (value != NULL)
                    unhex(t->s, r, g, (unsigned char *)PyBytes_AS_STRING(value));
            }
            PyObject *no = value == NULL ? NULL : PyLong_FromLong((long)be16(lists + 2 * k));
            PyObject *pair = no == NULL ? NULL : PyTuple_Pack(2, no, value);
            Py_XDECREF(no);
            Py_XDECREF(value);
            if (pair == NULL || PyList_Append(cols, pair) < 0)
                status = ERR;
            Py_XDECREF(pair);
            r = g >= 0 ? g : r;
        }
        PyMem_Free(lists);
        if (status != OK) {
            Py_DECREF(cols);
            return status;
        }
    }
    int wide = hsize == 28;
    PyObject *v[] = {
        PyBytes_FromStringAndSize((const char *)header, (Py_ssize_t)hsize),
        num(be16(header + 4)),
        cols,
        wide ? num((long long)be16(header + 20) << 16 | be16(header + 22)) : Py_NewRef(Py_None),
        wide ? num(be16(header + 24)) : Py_NewRef(Py_None),
        wide ? num(be16(header + 26)) : Py_NewRef(Py_None),
        num(line),
    };
    return (*out = make(C_SUPPLEMENTAL, v)) != NULL ? OK : ERR;
bail:
    Py_DECREF(cols);
    return BAIL;
}

/* dumpparser._sup_line: the first "Header (N bytes)" line of the body [a, t->end)
 * (_SUP_LINE at a line start), or -1. */
static Py_ssize_t sup_line(const Text *t, Py_ssize_t a)
{
    Py_ssize_t i = find(t->s, a, t->end, "Header (");
    while (i >= 0) {
        Py_ssize_t ls = i;
        while (ls > a && is_hws(t->s[ls - 1]))
            ls--;
        if (ls == a || t->s[ls - 1] == '\n') {
            Py_ssize_t p = lit(t, dec(t, lit(t, i, "Header ("), NULL), " bytes)");
            p = hws0(t, p);
            if (p >= 0 && (p == t->end || t->s[p] == '\n'))
                return ls;
        }
        i = find(t->s, i + 8, t->end, "Header (");
    }
    return -1;
}

/* ----------------------------------------------------------------------------------------
 * Records and change headers (dumpparser.py).
 */

static int op_kind(long long layer, long long code)
{
    for (int i = 0; i < n_ops; i++)
        if (ops[i].layer == layer && ops[i].code == code)
            return ops[i].kind;
    for (int i = 0; i < n_data_layers; i++)
        if (data_layers[i] == layer)
            return K_PYTHON; /* an unknown data operation: the reference's error */
    return K_OTHER;
}

/* (?:CON_ID:\d+\s+)? */
static Py_ssize_t con_id(const Text *t, Py_ssize_t p)
{
    Py_ssize_t q = ws1(t, dec(t, lit(t, p, "CON_ID:"), NULL));
    return q >= 0 ? q : p;
}

/* (?:[^\S\n]+FLG:0x[0-9a-f]{4})?[^\S\n]*(?=\n|\Z) */
static Py_ssize_t flg_eol(const Text *t, Py_ssize_t p)
{
    if (p < 0)
        return NO;
    Py_ssize_t q = hws0(t, p);
    if (q > p) {
        Py_ssize_t f = hexn(t, lit(t, q, "FLG:0x"), 4, NULL);
        if (f >= 0)
            q = hws0(t, f);
    }
    return q == t->end || t->s[q] == '\n' ? q : NO;
}

/* One change [a, t->end): *out the change object; OK, BAIL or ERR. */
static int change(const Text *t, Py_ssize_t a, long long number, long long line0,
                  PyObject **out)
{
    *out = NULL;
    Header h = {.number = number, .line = line0};
    unsigned long long dba = 0, hi = 0, lo = 0;
    Py_ssize_t p = lit(t, hws0(t, a), "CHANGE #"), n_at = p;
    long long no = 0;
    p = dec(t, p, &no);
    Py_ssize_t n_end = p;
    p = ws1(t, p);
    Py_ssize_t marker = words(t, p, "MEDIA RECOVERY MARKER");
    if (marker >= 0) { /* _MARKER_FAST */
        p = con_id(t, ws1(t, marker));
        p = hexn(t, lit(t, hexn(t, lit(t, p, "SCN:0x"), 4, &hi), "."), 8, &lo);
        p = dec(t, lit(t, ws1(t, p), "SEQ:"), &h.seq);
        p = dec(t, lit(t, dec(t, lit(t, ws1(t, p), "OP:"), &h.layer), "."), &h.code);
        p = flg_eol(t, dec(t, lit(t, ws1(t, p), "ENC:"), NULL));
        if (p < 0 || no != number || find(t->s, p, t->end, "Header (") >= 0)
            return BAIL;
        h.scn = (long long)(hi << 32 | lo);
        PyObject *v[N_BASE];
        base_values(&h, v);
        return (*out = make(C_MARKER, v)) != NULL ? OK : ERR;
    }
    /* _CHANGE_FAST; the number as str(number) */
    p = con_id(t, p);
    p = dec(t, lit(t, p, "TYP:"), &h.typ);
    p = dec(t, lit(t, ws1(t, p), "CLS:"), &h.cls);
    p = dec(t, lit(t, ws1(t, p), "AFN:"), &h.afn);
    p = hexn(t, lit(t, ws1(t, p), "DBA:0x"), 8, &dba);
    p = dec(t, lit(t, ws1(t, p), "OBJ:"), &h.obj);
    p = hexn(t, lit(t, hexn(t, lit(t, ws1(t, p), "SCN:0x"), 4, &hi), "."), 8, &lo);
    p = dec(t, lit(t, ws1(t, p), "SEQ:"), &h.seq);
    p = dec(t, lit(t, dec(t, lit(t, ws1(t, p), "OP:"), &h.layer), "."), &h.code);
    p = dec(t, lit(t, ws1(t, p), "ENC:"), NULL);
    p = flg_eol(t, dec(t, lit(t, ws1(t, p), "RBL:"), NULL));
    if (p < 0 || no != number || t->s[n_at] == '0')
        return BAIL;
    (void)n_end;
    h.dba = (long long)dba;
    h.scn = (long long)(hi << 32 | lo);
    int kind = op_kind(h.layer, h.code);
    Py_ssize_t body = p;
    long long body_line = line0 + count_nl(t->s, a, body);
    if (kind == K_PYTHON)
        return BAIL;
    if (kind == K_OTHER) {
        if (find(t->s, body, t->end, "Header (") >= 0)
            return BAIL;
        PyObject *v[N_BASE];
        base_values(&h, v);
        return (*out = make(C_OTHER, v)) != NULL ? OK : ERR;
    }
    Py_ssize_t sup = kind == K_UNDO_RECORD ? sup_line(t, body) : -1;
    Text main = {t->s, sup >= 0 ? sup : t->end};
    if (find(t->s, body, main.end, "Header (") >= 0)
        return BAIL;
    switch (kind) {
    case K_UNDO_HEADER:
        return undo_header(&main, body, &h, out);
    case K_COMMIT:
        return commit(&main, body, &h, out);
    case K_ROW_CHANGE:
        return row_change(&main, body, &h, body_line, out);
    default:
        break;
    }
    int rc = undo_record(&main, body, &h, body_line, out);
    if (rc != OK || sup < 0)
        return rc;
    PyObject *s;
    rc = supplemental(t, sup, body_line + count_nl(t->s, body, sup), &s);
    if (rc != OK) {
        Py_CLEAR(*out);
        return rc;
    }
    PyObject **slot = (PyObject **)((char *)*out + classes[C_UNDO_RECORD].offsets[N_BASE + 6]);
    Py_SETREF(*slot, s);
    return OK;
}

/* _RECORD_FAST over [0, t->end).  OK (fields set), BAIL. */
typedef struct {
    long long thread, subscn, date[6];
    unsigned long long seq, block, offset, len, vld, hi, lo;
    Py_ssize_t stamp_at, stamp_end;
} RecordHeader;

static int record_header(const Text *t, RecordHeader *r)
{
    Py_ssize_t p = ws0(t, 0);
    p = dec(t, words(t, p, "REDO RECORD - Thread:"), &r->thread);
    p = lit(t, ws1(t, words(t, ws1(t, p), "RBA:")), "0x");
    p = hexn(t, lit(t, hexn(t, lit(t, hexn(t, p, 6, &r->seq), "."), 8, &r->block), "."), 4,
             &r->offset);
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "LEN:")), "0x"), 4, &r->len);
    p = hexn(t, lit(t, ws1(t, lit(t, ws1(t, p), "VLD:")), "0x"), 2, &r->vld);
    Py_ssize_t q = dec(t, ws1(t, lit(t, ws1(t, p), "CON_UID:")), NULL);
    if (q >= 0)
        p = q;
    p = lit(t, ws1(t, lit(t, ws1(t, p), "SCN:")), "0x");
    p = hexn(t, lit(t, hexn(t, p, 4, &r->hi), "."), 8, &r->lo);
    p = dec(t, ws1(t, lit(t, ws1(t, p), "SUBSCN:")), &r->subscn);
    p = ws1(t, p);
    r->stamp_at = p;
    static const char shape[] = "dd/dd/dddd";
    for (int k = 0; k < 10 && p >= 0; k++, p++)
        if (p >= t->end || (shape[k] == 'd' ? !is_digit(t->s[p]) : t->s[p] != '/'))
            p = NO - 1;
    p = ws1(t, p);
    static const char clock[] = "dd:dd:dd";
    for (int k = 0; k < 8 && p >= 0; k++, p++)
        if (p >= t->end || (clock[k] == 'd' ? !is_digit(t->s[p]) : t->s[p] != ':'))
            p = NO - 1;
    if (p < 0)
        return BAIL;
    r->stamp_end = p;
    const unsigned char *d = t->s + r->stamp_at, *c = t->s + p - 8;
    r->date[0] = (d[6] - '0') * 1000 + (d[7] - '0') * 100 + (d[8] - '0') * 10 + (d[9] - '0');
    r->date[1] = (d[0] - '0') * 10 + (d[1] - '0');
    r->date[2] = (d[3] - '0') * 10 + (d[4] - '0');
    for (int k = 0; k < 3; k++)
        r->date[3 + k] = (c[3 * k] - '0') * 10 + (c[3 * k + 1] - '0');
    /* (?:\s+\(LWN\s+RBA:\s+0x…\s+LEN:\s+[0-9a-f]{4}\s+NST:\s+[0-9a-f]{4}\s+SCN:\s+0x…\))? */
    q = lit(t, ws1(t, words(t, ws1(t, p), "(LWN RBA:")), "0x");
    q = hexn(t, lit(t, hexn(t, lit(t, hexn(t, q, 6, NULL), "."), 8, NULL), "."), 4, NULL);
    q = hexn(t, ws1(t, lit(t, ws1(t, q), "LEN:")), 4, NULL);
    q = hexn(t, ws1(t, lit(t, ws1(t, q), "NST:")), 4, NULL);
    q = lit(t, ws1(t, lit(t, ws1(t, q), "SCN:")), "0x");
    q = lit(t, hexn(t, lit(t, hexn(t, q, 4, NULL), "."), 8, NULL), ")");
    if (q >= 0)
        p = q;
    return ws0(t, p) == t->end ? OK : BAIL;
}

static PyObject *stamp(const unsigned char *s, const RecordHeader *r)
{
    Py_ssize_t n = r->stamp_end - r->stamp_at;
    if (last_stamp != NULL && PyBytes_GET_SIZE(last_stamp_key) == n
        && memcmp(PyBytes_AS_STRING(last_stamp_key), s + r->stamp_at, (size_t)n) == 0)
        return Py_NewRef(last_stamp);
    PyObject *dt = PyDateTime_FromDateAndTime((int)r->date[0], (int)r->date[1],
                                              (int)r->date[2], (int)r->date[3],
                                              (int)r->date[4], (int)r->date[5], 0);
    if (dt == NULL)
        return NULL;
    PyObject *key = PyBytes_FromStringAndSize((const char *)s + r->stamp_at, n);
    if (key == NULL) {
        Py_DECREF(dt);
        return NULL;
    }
    Py_XSETREF(last_stamp_key, key);
    Py_XSETREF(last_stamp, Py_NewRef(dt));
    return dt;
}

/* parse_record(text, path, first_line, start) -> RedoRecord | None */
static PyObject *ds_parse_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !ready || !PyUnicode_Check(args[0]) || PyUnicode_READY(args[0]) < 0
        || !PyUnicode_IS_ASCII(args[0])
        || !PyLong_Check(args[2]))
        Py_RETURN_NONE;
    PyObject *text = args[0], *path = args[1], *start = args[3];
    const unsigned char *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < 0x20 ? s[i] != '\n' : s[i] == 0x7f)
            Py_RETURN_NONE;
    long long first_line = PyLong_AsLongLong(args[2]);
    if (first_line == -1 && PyErr_Occurred())
        PyErr_Clear();
    if (first_line < 0 || first_line > (1LL << 62)) /* line arithmetic must not overflow */
        Py_RETURN_NONE;
    long long from[3] = {-1, -1, -1};
    if (start != Py_None) {
        if (!PyTuple_Check(start) || PyTuple_GET_SIZE(start) != 3)
            Py_RETURN_NONE;
        for (int k = 0; k < 3; k++) {
            PyObject *item = PyTuple_GET_ITEM(start, k);
            from[k] = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
            if (from[k] < 0) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
        }
    }
    /* dumpparser._change_starts */
    Py_ssize_t *starts = NULL, nstarts = 0, cap = 0;
    for (Py_ssize_t i = find(s, 0, n, "CHANGE #"); i >= 0; i = find(s, i + 8, n, "CHANGE #")) {
        Py_ssize_t ls = i;
        while (ls > 0 && is_hws(s[ls - 1]))
            ls--;
        if (ls > 0 && s[ls - 1] != '\n')
            continue;
        if (nstarts == cap) {
            cap = cap ? 2 * cap : 8;
            Py_ssize_t *grown = PyMem_Realloc(starts, (size_t)cap * sizeof(Py_ssize_t));
            if (grown == NULL) {
                PyMem_Free(starts);
                return PyErr_NoMemory();
            }
            starts = grown;
        }
        starts[nstarts++] = ls;
    }
    PyObject *result = NULL, *changes = NULL, *stamp_obj = NULL;
    RecordHeader r;
    Text head = {s, nstarts ? starts[0] : n};
    if (nstarts == 0 || record_header(&head, &r) != OK)
        goto bail;
    stamp_obj = stamp(s, &r);
    if (stamp_obj == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)
            && !PyErr_ExceptionMatches(PyExc_OverflowError))
            goto error;
        PyErr_Clear();
        goto bail; /* not a valid date: the Python code says so */
    }
    changes = PyList_New(0);
    if (changes == NULL)
        goto error;
    int skip = start != Py_None
               && ((long long)r.seq != from[0]
                       ? (long long)r.seq < from[0]
                       : (long long)r.block != from[1] ? (long long)r.block < from[1]
                                                       : (long long)r.offset < from[2]);
    if (!skip) {
        long long line = first_line + count_nl(s, 0, starts[0]);
        for (Py_ssize_t k = 0; k < nstarts; k++) {
            Py_ssize_t a = starts[k], b = k + 1 < nstarts ? starts[k + 1] : n;
            Text chunk = {s, b};
            PyObject *c;
            int rc = change(&chunk, a, (long long)k + 1, line, &c);
            if (rc == ERR)
                goto error;
            if (rc == BAIL)
                goto bail;
            int added = PyList_Append(changes, c);
            Py_DECREF(c);
            if (added < 0)
                goto error;
            line += count_nl(s, a, b);
        }
    }
    PyObject **rba = NULL;
    PyObject *rba_obj = rba_type->tp_alloc(rba_type, 3);
    if (rba_obj == NULL)
        goto error;
    rba = ((PyTupleObject *)rba_obj)->ob_item;
    rba[0] = num((long long)r.seq);
    rba[1] = num((long long)r.block);
    rba[2] = num((long long)r.offset);
    if (rba[0] == NULL || rba[1] == NULL || rba[2] == NULL) {
        Py_DECREF(rba_obj);
        goto error;
    }
    PyObject *v[] = {
        Py_NewRef(path), num(first_line), num(r.thread), rba_obj, num((long long)r.len),
        num((long long)r.vld), num((long long)(r.hi << 32 | r.lo)), num(r.subscn), stamp_obj,
        changes,
    };
    stamp_obj = changes = NULL;
    result = make(C_RECORD, v);
    PyMem_Free(starts);
    return result;
bail:
    Py_XDECREF(changes);
    Py_XDECREF(stamp_obj);
    PyMem_Free(starts);
    Py_RETURN_NONE;
error:
    Py_XDECREF(changes);
    Py_XDECREF(stamp_obj);
    PyMem_Free(starts);
    return NULL;
}

/* setup(classes, rba, registry, data_layers, expected) -> bool
 *   classes: (RedoRecord, UndoHeader, UndoRecord, Commit, RowChange, OtherChange,
 *             MediaRecoveryMarker, Kdo, SupplementalData)
 *   registry: {(layer, code): class}; data_layers: iterable of ints;
 *   expected: RowChange.EXPECTED ({code: KDO operation}). */
static PyObject *ds_setup(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != N_CLASSES
        || !PyType_Check(args[1]) || !PyDict_Check(args[2]) || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "setup(classes, rba, registry, data_layers, expected)");
        return NULL;
    }
    ready = 0;
    for (int ci = 0; ci < N_CLASSES; ci++) {
        int ok = check_class(PyTuple_GET_ITEM(args[0], ci), class_fields[ci], &classes[ci]);
        if (ok <= 0)
            return ok < 0 ? NULL : Py_NewRef(Py_False);
    }
    PyTypeObject *rt = (PyTypeObject *)args[1];
    if (!PyType_IsSubtype(rt, &PyTuple_Type) || rt->tp_basicsize != PyTuple_Type.tp_basicsize
        || rt->tp_itemsize != PyTuple_Type.tp_itemsize || rt->tp_dictoffset != 0)
        Py_RETURN_FALSE;
    n_ops = 0;
    Py_ssize_t it = 0;
    PyObject *key, *cls;
    while (PyDict_Next(args[2], &it, &key, &cls)) {
        long long layer, code;
        if (n_ops == MAX_OPS || !PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 2
            || (layer = PyLong_AsLongLong(PyTuple_GET_ITEM(key, 0))) < 0
            || (code = PyLong_AsLongLong(PyTuple_GET_ITEM(key, 1))) < 0) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        int kind = K_PYTHON;
        const int map[][2] = {{C_UNDO_HEADER, K_UNDO_HEADER}, {C_UNDO_RECORD, K_UNDO_RECORD},
                              {C_COMMIT, K_COMMIT}, {C_ROW_CHANGE, K_ROW_CHANGE}};
        for (int k = 0; k < 4; k++)
            if (cls == (PyObject *)classes[map[k][0]].type)
                kind = map[k][1];
        ops[n_ops].layer = layer;
        ops[n_ops].code = code;
        ops[n_ops++].kind = kind;
    }
    PyObject *layers = PySequence_Fast(args[3], "data_layers");
    if (layers == NULL)
        return NULL;
    n_data_layers = 0;
    int ok = PySequence_Fast_GET_SIZE(layers) <= MAX_DATA_LAYERS;
    for (Py_ssize_t i = 0; ok && i < PySequence_Fast_GET_SIZE(layers); i++) {
        long long layer = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(layers, i));
        ok = layer >= 0;
        data_layers[n_data_layers++] = layer;
    }
    Py_DECREF(layers);
    memset(row_kdo, 0, sizeof row_kdo);
    it = 0;
    PyObject *name;
    while (ok && PyDict_Next(args[4], &it, &key, &name)) {
        long long code = PyLong_AsLongLong(key);
        const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
        ok = code >= 0 && code < 16 && text != NULL;
        if (ok) {
            static const char *const known[] = {"IRP", "DRP", "LKR", "URP", "QMI"};
            const char *interned = NULL;
            for (int k = 0; k < 5; k++)
                if (strcmp(text, known[k]) == 0)
                    interned = known[k];
            ok = interned != NULL;
            row_kdo[code] = interned;
        }
    }
    if (!ok) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    for (int ci = 0; ci < N_CLASSES; ci++)
        Py_INCREF(classes[ci].type); /* held for the life of the process */
    Py_INCREF(rt);
    rba_type = rt;
    ready = 1;
    Py_RETURN_TRUE;
}

/* ----------------------------------------------------------------------------------------
 * Row values: a row piece's columns to trail form (datatypes.py's decoders, in C), keyed as
 * rowchanges.py keys them, so Python makes one dict per image rather than an object per
 * column.  The rule is the reader's: the very dict the Python code builds, or None when
 * anything is off (a column the layout lacks, bytes a decoder refuses, an odd argument),
 * and the caller then runs the Python code, which gives the dict or the located error.
 */
enum { V_NUMBER, V_UTF8, V_DATE, V_TIMESTAMP, V_RAW, V_PYTHON };

/* datatypes._decode_number: NUMBER bytes to plain decimal ASCII; BAIL on what it refuses. */
static int number_text(const unsigned char *raw, Py_ssize_t n, char *out, Py_ssize_t *len)
{
    if (n == 0)
        return BAIL;
    if (n == 1 && raw[0] == 0x80) {
        out[0] = '0';
        *len = 1;
        return OK;
    }
    unsigned head = raw[0];
    const unsigned char *body = raw + 1;
    Py_ssize_t nb = n - 1;
    int digits[21], negative = (head & 0x80) == 0, exp;
    if (!negative) {
        exp = (int)(head & 0x7F) - 65;
        if (head == 0xFF && nb == 1 && body[0] == 0x65)
            return BAIL;
        if (nb == 0 || nb > 20)
            return BAIL;
        for (Py_ssize_t k = 0; k < nb; k++) {
            if (body[k] < 1 || body[k] > 100)
                return BAIL;
            digits[k] = body[k] - 1;
        }
    } else {
        if (n == 1 && head == 0x00)
            return BAIL;
        exp = (int)(~head & 0x7F) - 65;
        if (nb > 0 && body[nb - 1] == 102)
            nb--;
        else if (nb != 20)
            return BAIL;
        if (nb == 0 || nb > 20)
            return BAIL;
        for (Py_ssize_t k = 0; k < nb; k++) {
            if (body[k] < 2 || body[k] > 101)
                return BAIL;
            digits[k] = 101 - body[k];
        }
    }
    if (digits[0] == 0 || digits[nb - 1] == 0)
        return BAIL;
    char text[40];
    Py_ssize_t tl = 2 * nb, o = 0;
    for (Py_ssize_t k = 0; k < nb; k++) {
        text[2 * k] = (char)('0' + digits[k] / 10);
        text[2 * k + 1] = (char)('0' + digits[k] % 10);
    }
    if (negative)
        out[o++] = '-';
    Py_ssize_t int_len = 2 * ((Py_ssize_t)exp + 1), end = tl;
    if (int_len <= 0) {
        while (end > 0 && text[end - 1] == '0')
            end--;
        out[o++] = '0';
        out[o++] = '.';
        for (Py_ssize_t k = 0; k < -int_len; k++)
            out[o++] = '0';
        memcpy(out + o, text, (size_t)end);
        o += end;
    } else if (int_len >= tl) {
        Py_ssize_t a = 0;
        while (a < tl && text[a] == '0')
            a++;
        memcpy(out + o, text + a, (size_t)(tl - a));
        o += tl - a;
        for (Py_ssize_t k = 0; k < int_len - tl; k++)
            out[o++] = '0';
    } else {
        Py_ssize_t a = 0;
        while (a < int_len && text[a] == '0')
            a++;
        if (a == int_len)
            out[o++] = '0';
        memcpy(out + o, text + a, (size_t)(int_len - a));
        o += int_len - a;
        while (end > int_len && text[end - 1] == '0')
            end--;
        if (end > int_len) {
            out[o++] = '.';
            memcpy(out + o, text + int_len, (size_t)(end - int_len));
            o += end - int_len;
        }
    }
    *len = o;
    return OK;
}

/* datatypes._datetime_fields: OK with the six fields, or BAIL. */
static int datetime_fields(const unsigned char *raw, int *f)
{
    int century = raw[0] - 100, year = raw[1] - 100;
    if (century < 0 || year < 0)
        return BAIL;
    f[0] = century * 100 + year;
    f[1] = raw[2];
    f[2] = raw[3];
    f[3] = raw[4] - 1;
    f[4] = raw[5] - 1;
    f[5] = raw[6] - 1;
    if (!(1 <= f[0] && f[0] <= 9999 && 1 <= f[1] && f[1] <= 12 && 1 <= f[2] && f[2] <= 31
          && 0 <= f[3] && f[3] < 24 && 0 <= f[4] && f[4] < 60 && 0 <= f[5] && f[5] < 60))
        return BAIL;
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (f[0] % 4 == 0 && f[0] % 100 != 0) || f[0] % 400 == 0;
    int most = days[f[1] - 1] + (f[1] == 2 && leap);
    return f[2] <= most ? OK : BAIL;
}

/* One non-NULL value in trail form (a new reference), NULL with no exception set for BAIL,
 * NULL with one set for an error.  `decode` is the Python decoder for V_PYTHON. */
static PyObject *trail_value(int code, PyObject *raw, PyObject *decode)
{
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t n = PyBytes_GET_SIZE(raw);
    char out[200];
    Py_ssize_t len;
    int f[6];
    switch (code) {
    case V_NUMBER:
        if (number_text(s, n, out, &len) != OK)
            return NULL;
        return PyBytes_FromStringAndSize(out, len);
    case V_UTF8: {
        Py_ssize_t k = 0;
        while (k < n && s[k] < 0x80)
            k++;
        if (k < n) { /* not all ASCII: Python's own UTF-8 check decides */
            PyObject *text = PyUnicode_DecodeUTF8((const char *)s, n, NULL);
            if (text == NULL) {
                PyErr_Clear();
                return NULL;
            }
            Py_DECREF(text);
        }
        return Py_NewRef(raw);
    }
    case V_DATE:
        if (n != 7 || datetime_fields(s, f) != OK)
            return NULL;
        len = snprintf(out, sizeof out, "%04d-%02d-%02d:%02d:%02d:%02d", f[0], f[1], f[2],
                       f[3], f[4], f[5]);
        return PyBytes_FromStringAndSize(out, len);
    case V_TIMESTAMP: {
        if ((n != 7 && n != 11) || datetime_fields(s, f) != OK)
            return NULL;
        unsigned long nanos = 0;
        if (n == 11)
            nanos = (unsigned long)s[7] << 24 | (unsigned long)s[8] << 16
                    | (unsigned long)s[9] << 8 | s[10];
        if (nanos >= 1000000000UL)
            return NULL;
        len = snprintf(out, sizeof out, "%04d-%02d-%02d:%02d:%02d:%02d.%09lu", f[0], f[1],
                       f[2], f[3], f[4], f[5], nanos);
        return PyBytes_FromStringAndSize(out, len);
    }
    case V_RAW:
        return Py_NewRef(raw);
    default: {
        PyObject *value = PyObject_CallOneArg(decode, raw);
        if (value == NULL || !PyBytes_CheckExact(value)) {
            Py_XDECREF(value);
            PyErr_Clear(); /* the Python code calls it again and reports it, located */
            return NULL;
        }
        return value;
    }
    }
}

/* row_values(layout, cols, offset, template) -> dict | None
 *   layout: tuple indexed by segment column number; each entry None or
 *           (key, code, decoder): the dict key, a V_* code and the Python decoder;
 *   cols: list of (colno, bytes | None) as the KDO holds them;
 *   offset: added to colno to give the segment column number;
 *   template: None, or a dict the result starts as a copy of (keys in image order).
 * The dict {key: value} in column order (on template's keys first), or None: use Python. */
static PyObject *ds_row_values(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyTuple_CheckExact(args[0]) || !PyList_CheckExact(args[1])
        || !PyLong_CheckExact(args[2]) || (args[3] != Py_None && !PyDict_CheckExact(args[3])))
        Py_RETURN_NONE;
    PyObject *layout = args[0], *cols = args[1];
    long offset = PyLong_AsLong(args[2]);
    if (offset == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    PyObject *out = args[3] == Py_None ? PyDict_New() : PyDict_Copy(args[3]);
    if (out == NULL)
        return NULL;
    Py_ssize_t width = PyTuple_GET_SIZE(layout);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cols); i++) {
        PyObject *col = PyList_GET_ITEM(cols, i);
        if (!PyTuple_CheckExact(col) || PyTuple_GET_SIZE(col) != 2
            || !PyLong_CheckExact(PyTuple_GET_ITEM(col, 0)))
            goto bail;
        PyObject *raw = PyTuple_GET_ITEM(col, 1);
        if (raw != Py_None && !PyBytes_CheckExact(raw))
            goto bail;
        long colno = PyLong_AsLong(PyTuple_GET_ITEM(col, 0));
        if (colno == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto bail;
        }
        if (colno > PY_SSIZE_T_MAX / 4 || colno < -(PY_SSIZE_T_MAX / 4)
            || offset > PY_SSIZE_T_MAX / 4 || offset < -(PY_SSIZE_T_MAX / 4))
            goto bail;
        Py_ssize_t segcol = (Py_ssize_t)colno + (Py_ssize_t)offset;
        if (segcol < 0 || segcol >= width)
            goto bail;
        PyObject *entry = PyTuple_GET_ITEM(layout, segcol);
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3
            || !PyLong_CheckExact(PyTuple_GET_ITEM(entry, 1)))
            goto bail;
        PyObject *value;
        if (raw == Py_None) {
            value = Py_NewRef(Py_None);
        } else {
            long code = PyLong_AsLong(PyTuple_GET_ITEM(entry, 1));
            if (code == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                goto bail;
            }
            value = trail_value(code < V_NUMBER || code > V_PYTHON ? V_PYTHON : (int)code, raw,
                                PyTuple_GET_ITEM(entry, 2));
            if (value == NULL) {
                if (PyErr_Occurred())
                    goto error;
                goto bail;
            }
        }
        int bad = PyDict_SetItem(out, PyTuple_GET_ITEM(entry, 0), value);
        Py_DECREF(value);
        if (bad < 0) { /* an unhashable key: not a layout rowchanges.py builds */
            if (PyErr_ExceptionMatches(PyExc_MemoryError))
                goto error;
            PyErr_Clear();
            goto bail;
        }
    }
    return out;
bail:
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"row_values", (PyCFunction)(void (*)(void))ds_row_values, METH_FASTCALL,
     "row_values(layout, cols, offset, template) -> dict | None: a row piece's values in "
     "trail form, keyed by the layout (None: use Python)"},
    {"parse_record", (PyCFunction)(void (*)(void))ds_parse_record, METH_FASTCALL,
     "parse_record(text, path, first_line, start) -> RedoRecord | None (None: use Python)"},
    {"setup", (PyCFunction)(void (*)(void))ds_setup, METH_FASTCALL,
     "setup(classes, rba, registry, data_layers, expected) -> bool: whether the classes "
     "are the ones this module was written for"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "trailgate.capture.oracle._dumpscan",
    "One redo record of dump text to its RedoRecord; None means 'use the Python parser'.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dumpscan(void)
{
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL)
        return NULL;
    struct {
        PyObject **slot;
        const char *text;
    } interned[] = {
        {&s_empty, ""}, {&s_irp, "IRP"}, {&s_urp, "URP"}, {&s_drp, "DRP"}, {&s_lkr, "LKR"},
        {&s_opc_11_1, "11.1"}, {&s_whole_row, "--H-FL--"},
    };
    for (size_t k = 0; k < sizeof interned / sizeof interned[0]; k++)
        if ((*interned[k].slot = PyUnicode_InternFromString(interned[k].text)) == NULL)
            return NULL;
    return PyModule_Create(&module_def);
}
