/*
 * trailgate.trail._speedups: optional C versions of the trail codec's hot functions.
 *
 * The pure-Python functions in values.py and records.py are the reference.  Every function
 * here either returns exactly what its Python counterpart returns, or returns None to say
 * "not handled here": the input is inconsistent, or of a type or size this code does not
 * take on.  The Python caller then runs the reference code, which produces the result or
 * raises its detailed error.  So a None is always safe, and this module never has to
 * reproduce an error message.
 *
 * Real failures (MemoryError, an exception raised by the record class) do propagate.
 *
 * Memory safety: every read is preceded by a check that the bytes lie before `end`, and
 * `end` is checked against the buffer's size on entry.  Lengths read from the data are
 * compared by subtraction from the end (`len > end - pos`) so nothing can overflow.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <structmember.h> /* T_OBJECT_EX, READONLY: the slots of a slots dataclass */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_frame.h" /* the record frame: be16/be32/be64, frame_at, next_sub, H_FIXED */

/* Record layout constants (docs/trail-format.md). */
#define MAX_RECORD 0xFFFF
#define TYPE_D 'D' 
#define TYPE_T 'T'
#define TYPE_U 'U'
#define TYPE_ROWID 'R'
#define TYPE_CSN 'L'
#define TYPE_XID '6'

/* Outcome of a helper: carry on, give the input back to Python, or a real error. */
enum { OK = 0, INCONSISTENT = 1, FAILED = -1 };

static inline void
put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* An int argument as Py_ssize_t; -1 (no exception set) when it is not an int or too big. */
static int
as_ssize(PyObject *o, Py_ssize_t *out)
{
    if (!PyLong_Check(o))
        return -1;
    *out = PyLong_AsSsize_t(o);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

/* An int argument within [0, max]; -1 (no exception set) otherwise.  Python's struct.pack
 * accepts IntEnum members (int subclasses), so subclasses are accepted here too. */
static int
as_uint(PyObject *o, unsigned long long max, unsigned long long *out)
{
    if (!PyLong_Check(o))
        return -1;
    *out = PyLong_AsUnsignedLongLong(o);
    if (*out == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* negative or wider than 64 bits: struct.pack refuses it */
        return -1;
    }
    return *out <= max ? 0 : -1;
}

/* After a failed decode: a ValueError (UnicodeDecodeError, int digit limit) means the data
 * is inconsistent and Python should report it; anything else is a real error. */
static int
value_error_is_inconsistent(void)
{
    if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return INCONSISTENT;
    }
    return FAILED;
}

static PyObject *
bytes_from(const unsigned char *p, Py_ssize_t n)
{
    return PyBytes_FromStringAndSize((const char *)p, n);
}

/* ---------------------------------------------------------------------------------------
 * Building result objects.
 *
 * RawRecord and Change are slots dataclasses.  Calling one runs its generated Python
 * __init__, which only stores each argument in its slot, yet costs as much as the whole C
 * decode.  A class registered with register_dataclass (and checked there) is instead
 * allocated and its slots filled directly: the same object, built without the call.  Any
 * other class, including a subclass of a registered one, is simply called.
 */

#define MAX_FAST_CLASSES 4
#define MAX_FAST_FIELDS 32

typedef struct {
    PyTypeObject *type; /* strong reference */
    Py_ssize_t nfields;
    Py_ssize_t offsets[MAX_FAST_FIELDS];
} fast_class_t;

static fast_class_t fast_classes[MAX_FAST_CLASSES];
static int n_fast_classes = 0;

/* Attribute `name` of `obj`, or NULL without an exception when it is missing. */
static PyObject *
optional_attr(PyObject *obj, const char *name)
{
    PyObject *value = PyObject_GetAttrString(obj, name);
    if (value == NULL && PyErr_ExceptionMatches(PyExc_AttributeError))
        PyErr_Clear();
    return value;
}

/* Whether `cls` qualifies; fills `fc` if so.  1 yes, 0 no, -1 error. */
static int
check_dataclass(PyObject *cls, fast_class_t *fc)
{
    if (!PyType_Check(cls))
        return 0;
    PyTypeObject *tp = (PyTypeObject *)cls;
    /* Plain object allocation, no variable part, and nothing run after __init__. */
    if (tp->tp_new != PyBaseObject_Type.tp_new || tp->tp_itemsize != 0)
        return 0;
    PyObject *post_init = optional_attr(cls, "__post_init__");
    if (post_init != NULL) {
        Py_DECREF(post_init);
        return 0;
    }
    if (PyErr_Occurred())
        return -1;
    /* The generated __init__, defined on the class itself (dataclass(init=True)). */
    PyObject *params = optional_attr(cls, "__dataclass_params__");
    if (params == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *init = PyObject_GetAttrString(params, "init");
    Py_DECREF(params);
    if (init == NULL)
        return -1;
    int generated = PyObject_IsTrue(init);
    Py_DECREF(init);
    if (generated <= 0 || PyDict_GetItemString(tp->tp_dict, "__init__") == NULL)
        return generated < 0 ? -1 : 0;

    PyObject *fields = optional_attr(cls, "__dataclass_fields__");
    if (fields == NULL)
        return PyErr_Occurred() ? -1 : 0;
    int ok = PyDict_Check(fields) && PyDict_GET_SIZE(fields) <= MAX_FAST_FIELDS;
    Py_ssize_t it = 0, i = 0;
    PyObject *name, *field;
    while (ok && PyDict_Next(fields, &it, &name, &field)) {
        /* Only ordinary fields (not ClassVar or InitVar pseudo-fields), each stored in a
         * writable object slot of this very class. */
        PyObject *ftype = PyObject_GetAttrString(field, "_field_type");
        PyObject *fname = ftype == NULL ? NULL : PyObject_Str(ftype);
        Py_XDECREF(ftype);
        if (fname == NULL) {
            Py_DECREF(fields);
            return -1;
        }
        ok = PyUnicode_CompareWithASCIIString(fname, "_FIELD") == 0;
        Py_DECREF(fname);
        /* A positional __init__ parameter, in field order (not init=False or kw_only). */
        for (int a = 0; ok && a < 2; a++) {
            PyObject *flag = PyObject_GetAttrString(field, a == 0 ? "init" : "kw_only");
            if (flag == NULL) {
                Py_DECREF(fields);
                return -1;
            }
            ok = a == 0 ? flag == Py_True : flag == Py_False;
            Py_DECREF(flag);
        }
        PyObject *descr = ok ? PyDict_GetItemWithError(tp->tp_dict, name) : NULL;
        if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            ok = 0;
            break;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type != T_OBJECT_EX || (member->flags & READONLY)
            || member->offset < (Py_ssize_t)sizeof(PyObject)
            || member->offset + (Py_ssize_t)sizeof(PyObject *) > tp->tp_basicsize) {
            ok = 0;
            break;
        }
        fc->offsets[i++] = member->offset;
    }
    Py_DECREF(fields);
    if (PyErr_Occurred())
        return -1;
    fc->nfields = i;
    return ok;
}

static PyObject *
sp_register_dataclass(PyObject *module, PyObject *cls)
{
    (void)module;
    for (int i = 0; i < n_fast_classes; i++)
        if ((PyObject *)fast_classes[i].type == cls)
            Py_RETURN_TRUE;
    if (n_fast_classes == MAX_FAST_CLASSES)
        Py_RETURN_FALSE;
    fast_class_t fc;
    int ok = check_dataclass(cls, &fc);
    if (ok < 0)
        return NULL;
    if (!ok)
        Py_RETURN_FALSE;
    fc.type = (PyTypeObject *)Py_NewRef(cls);
    fast_classes[n_fast_classes++] = fc;
    Py_RETURN_TRUE;
}

/* cls(*argv): a new reference, or NULL with an exception. */
static PyObject *
build(PyObject *cls, PyObject *const *argv, Py_ssize_t n)
{
    for (int i = 0; i < n_fast_classes; i++) {
        fast_class_t *fc = &fast_classes[i];
        if ((PyObject *)fc->type != cls || fc->nfields != n)
            continue;
        PyObject *obj = fc->type->tp_alloc(fc->type, 0); /* slots zeroed */
        if (obj == NULL)
            return NULL;
        for (Py_ssize_t k = 0; k < n; k++)
            *(PyObject **)((char *)obj + fc->offsets[k]) = Py_NewRef(argv[k]);
        return obj;
    }
    return PyObject_Vectorcall(cls, argv, (size_t)n, NULL);
}

/* ---------------------------------------------------------------------------------------
 * decode_columns(data, fixed, start, end) -> dict | None
 *
 * values._decode_columns_slow's result, for the whole column list data[start:end]:
 * index -> value bytes (None for SQL NULL).  `fixed` is the set of fixed-width column
 * indexes, or None when the table is unknown and each frame is judged by its shape.
 */

/* The column list buf[start:end] (the caller checked 0 <= start <= end <= size) into a new
 * dict in *out.  OK, INCONSISTENT or FAILED. */
static int
decode_columns_core(const unsigned char *buf, Py_ssize_t start, Py_ssize_t end,
                    PyObject *fixed, PyObject **out)
{
    PyObject *values = PyDict_New();
    if (values == NULL)
        return FAILED;
    int status = OK;
    Py_ssize_t pos = start;
    while (pos < end) {
        if (end - pos < 4) {
            status = INCONSISTENT; /* column header cut short */
            break;
        }
        unsigned index = be16(buf + pos);
        Py_ssize_t length = be16(buf + pos + 2);
        const unsigned char *v = buf + pos + 4;
        if (length > end - pos - 4 || length < 2) {
            status = INCONSISTENT; /* runs past the list, or too short for its null flag */
            break;
        }
        unsigned indicator = be16(v);
        if (indicator != 0 && indicator != 0xFFFF) {
            status = INCONSISTENT; /* bad null indicator */
            break;
        }
        PyObject *key = PyLong_FromLong((long)index);
        if (key == NULL) {
            status = FAILED;
            break;
        }
        PyObject *value;
        if (indicator == 0xFFFF) {
            value = Py_NewRef(Py_None);
        }
        else {
            int variable;
            if (fixed == Py_None) {
                /* Unknown kind: a frame whose inner length matches is a variable kind. */
                variable = length >= 4 && (Py_ssize_t)be16(v + 2) == length - 4;
            }
            else {
                int found = PySet_Contains(fixed, key);
                if (found < 0) {
                    Py_DECREF(key);
                    status = FAILED;
                    break;
                }
                variable = !found;
                if (variable && (length < 4 || (Py_ssize_t)be16(v + 2) != length - 4)) {
                    Py_DECREF(key);
                    status = INCONSISTENT; /* missing or disagreeing inner length */
                    break;
                }
            }
            value = variable ? bytes_from(v + 4, length - 4) : bytes_from(v + 2, length - 2);
            if (value == NULL) {
                Py_DECREF(key);
                status = FAILED;
                break;
            }
        }
        int rc = PyDict_SetItem(values, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0) {
            status = FAILED;
            break;
        }
        pos += 4 + length;
    }
    if (status != OK) {
        Py_DECREF(values);
        return status;
    }
    *out = values;
    return OK;
}

static PyObject *
sp_decode_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_columns(data, fixed, start, end)");
        return NULL;
    }
    PyObject *data = args[0], *fixed = args[1];
    Py_ssize_t start, end;
    if (!PyBytes_Check(data) || (fixed != Py_None && !PyAnySet_Check(fixed))
        || as_ssize(args[2], &start) < 0 || as_ssize(args[3], &end) < 0)
        Py_RETURN_NONE;
    if (start < 0 || start > end || end > PyBytes_GET_SIZE(data))
        Py_RETURN_NONE;
    PyObject *values = NULL;
    int status = decode_columns_core((const unsigned char *)PyBytes_AS_STRING(data), start,
                                     end, fixed, &values);
    if (status == FAILED)
        return NULL;
    if (status == INCONSISTENT)
        Py_RETURN_NONE;
    return values;
}

/* ---------------------------------------------------------------------------------------
 * decode_change(record, fixed, data, change_class, op_types) -> Change | None
 *
 * records.decode_change.  `op_types` maps an IOType to its OpType member (an IOType it
 * lacks goes back to Python, which raises).  The Change is built with positional arguments
 * in its field order: op, table, after, before, io_time, audit_seq, audit_pos, rowid,
 * tokens, text.
 */
#define OP_DELETE 3
#define OP_TRUNCATE 100
#define OP_PK_UPDATE 115
#define OP_DDL 160
#define OP_COMMENT 205
#define CHANGE_FIELDS 10

static PyObject *s_io_type, *s_table, *s_io_time, *s_audit_rba, *s_audit_pos, *s_rowid,
    *s_tokens, *s_data;

static PyObject *
sp_decode_change(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "decode_change(record, fixed, data, change_class, op_types)");
        return NULL;
    }
    PyObject *record = args[0], *fixed = args[1], *change_class = args[3];
    PyObject *op_types = args[4];
    if ((fixed != Py_None && !PyAnySet_Check(fixed)) || !PyDict_Check(op_types))
        Py_RETURN_NONE;

    PyObject *argv[CHANGE_FIELDS] = {NULL};
    PyObject *data = NULL, *io_type = NULL, *result = NULL;
    int status = OK;
    long op;

    data = args[2] == Py_None ? PyObject_GetAttr(record, s_data) : Py_NewRef(args[2]);
    io_type = PyObject_GetAttr(record, s_io_type);
    if (data == NULL || io_type == NULL) {
        status = FAILED;
        goto done;
    }
    if (!PyBytes_Check(data) || !PyLong_CheckExact(io_type)) {
        status = INCONSISTENT;
        goto done;
    }
    PyObject *op_member = PyDict_GetItemWithError(op_types, io_type); /* borrowed */
    if (op_member == NULL) {
        status = PyErr_Occurred() ? FAILED : INCONSISTENT; /* not an OpType: Python raises */
        goto done;
    }
    op = PyLong_AsLong(io_type);
    if (op == -1 && PyErr_Occurred()) {
        status = FAILED;
        goto done;
    }
    argv[0] = Py_NewRef(op_member);
    if ((argv[1] = PyObject_GetAttr(record, s_table)) == NULL
        || (argv[4] = PyObject_GetAttr(record, s_io_time)) == NULL
        || (argv[5] = PyObject_GetAttr(record, s_audit_rba)) == NULL
        || (argv[6] = PyObject_GetAttr(record, s_audit_pos)) == NULL
        || (argv[7] = PyObject_GetAttr(record, s_rowid)) == NULL
        || (argv[8] = PyObject_GetAttr(record, s_tokens)) == NULL) {
        status = FAILED;
        goto done;
    }

    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data);
    if (op == OP_DDL || op == OP_COMMENT) {
        argv[9] = PyUnicode_DecodeUTF8((const char *)b, size, NULL);
        if (argv[9] == NULL)
            status = value_error_is_inconsistent();
    }
    else if (op == OP_PK_UPDATE) {
        /* Two-byte before-key length, the before key, then the after image. */
        if (size < 2 || (Py_ssize_t)be16(b) > size - 2) {
            status = INCONSISTENT;
            goto done;
        }
        Py_ssize_t key_end = 2 + (Py_ssize_t)be16(b);
        status = decode_columns_core(b, 2, key_end, fixed, &argv[3]);
        if (status == OK)
            status = decode_columns_core(b, key_end, size, fixed, &argv[2]);
    }
    else if (op == OP_DELETE) {
        status = decode_columns_core(b, 0, size, fixed, &argv[3]);
    }
    else if (op != OP_TRUNCATE) {
        status = decode_columns_core(b, 0, size, fixed, &argv[2]);
    }
    if (status != OK)
        goto done;
    for (int i = 0; i < CHANGE_FIELDS; i++)
        if (argv[i] == NULL)
            argv[i] = Py_NewRef(Py_None);
    result = build(change_class, argv, CHANGE_FIELDS);
    if (result == NULL)
        status = FAILED;

done:
    for (int i = 0; i < CHANGE_FIELDS; i++)
        Py_XDECREF(argv[i]);
    Py_XDECREF(data);
    Py_XDECREF(io_type);
    if (status == FAILED)
        return NULL;
    if (status == INCONSISTENT)
        Py_RETURN_NONE;
    return result;
}

/* ---------------------------------------------------------------------------------------
 * decode_record(buf, pos, end, record_class) -> RawRecord | None
 */

/* T area (records._decode_t): R (ROWID), L (commit CSN), 6 (XID).  New references (or NULL
 * for "absent") in *rowid, *csn, *xid; the caller owns them whatever the outcome. */
static int
decode_t(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject **rowid,
         PyObject **csn, PyObject **xid)
{
    while (p < end) {
        unsigned char stype;
        const unsigned char *v;
        Py_ssize_t slen;
        if (next_sub(b, &p, end, &stype, &v, &slen) < 0)
            return INCONSISTENT;
        PyObject *obj = NULL;
        if (stype == TYPE_ROWID) {
            /* 18 characters then 00 01; a value without the suffix is taken whole. */
            Py_ssize_t n = (slen >= 2 && v[slen - 2] == 0 && v[slen - 1] == 1) ? slen - 2 : slen;
            obj = PyUnicode_DecodeASCII((const char *)v, n, NULL);
            if (obj == NULL)
                return value_error_is_inconsistent();
            Py_XSETREF(*rowid, obj);
        }
        else if (stype == TYPE_CSN) {
            /* bytes.isdigit(): non-empty, ASCII digits only. */
            if (slen == 0)
                return INCONSISTENT;
            for (Py_ssize_t i = 0; i < slen; i++)
                if (v[i] < '0' || v[i] > '9')
                    return INCONSISTENT;
            if (slen <= 19) {
                uint64_t n = 0; /* 19 digits always fit in 64 bits unsigned */
                for (Py_ssize_t i = 0; i < slen; i++)
                    n = n * 10 + (uint64_t)(v[i] - '0');
                obj = PyLong_FromUnsignedLongLong(n);
                if (obj == NULL)
                    return FAILED;
            }
            else {
                /* A bytes object is NUL-terminated, as PyLong_FromString needs. */
                PyObject *digits = bytes_from(v, slen);
                if (digits == NULL)
                    return FAILED;
                obj = PyLong_FromString(PyBytes_AS_STRING(digits), NULL, 10);
                Py_DECREF(digits);
                if (obj == NULL)
                    return value_error_is_inconsistent(); /* int's digit limit */
            }
            Py_XSETREF(*csn, obj);
        }
        else if (stype == TYPE_XID) {
            obj = PyUnicode_DecodeASCII((const char *)v, slen, NULL);
            if (obj == NULL)
                return value_error_is_inconsistent();
            Py_XSETREF(*xid, obj);
        }
    }
    return OK;
}

/* U area (records._decode_tokens): name length (2), name, value length (2), value. */
static int
decode_tokens(const unsigned char *b, Py_ssize_t p, Py_ssize_t end, PyObject **out)
{
    PyObject *tokens = PyDict_New();
    if (tokens == NULL)
        return FAILED;
    while (p < end) {
        if (end - p < 2)
            goto inconsistent;
        Py_ssize_t n = be16(b + p);
        const unsigned char *name = b + p + 2;
        if (n > end - p - 2 - 2)
            goto inconsistent; /* the name, or the value length after it, is cut short */
        p += 2 + n;
        Py_ssize_t vlen = be16(b + p);
        const unsigned char *value = b + p + 2;
        if (vlen > end - p - 2)
            goto inconsistent;
        p += 2 + vlen;
        PyObject *key = PyUnicode_DecodeUTF8((const char *)name, n, NULL);
        if (key == NULL)
            goto decode_failed;
        PyObject *val = PyUnicode_DecodeUTF8((const char *)value, vlen, NULL);
        if (val == NULL) {
            Py_DECREF(key);
            goto decode_failed;
        }
        int rc = PyDict_SetItem(tokens, key, val);
        Py_DECREF(key);
        Py_DECREF(val);
        if (rc < 0) {
            Py_DECREF(tokens);
            return FAILED;
        }
    }
    Py_XSETREF(*out, tokens);
    return OK;

decode_failed:
    Py_DECREF(tokens);
    return value_error_is_inconsistent();
inconsistent:
    Py_DECREF(tokens);
    return INCONSISTENT;
}

#define RAW_RECORD_FIELDS 25

static PyObject *
sp_decode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_record(buf, pos, end, record_class)");
        return NULL;
    }
    PyObject *buf = args[0], *record_class = args[3];
    Py_ssize_t pos, end;
    if (!PyBytes_Check(buf) || as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &end) < 0)
        Py_RETURN_NONE;
    if (pos < 0 || end > PyBytes_GET_SIZE(buf) || pos > end || end - pos < 4)
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);

    /* G header, the Z trailer its length points to, the H area and its table name. */
    Frame f;
    if (frame_at(b, pos, end, &f) != FRAME_OK)
        Py_RETURN_NONE;
    unsigned flag = f.flag;
    Py_ssize_t length = f.length, body_end = f.body_end;
    const unsigned char *h = f.h;

    PyObject *table = NULL, *data = NULL, *rowid = NULL, *csn = NULL, *xid = NULL;
    PyObject *tokens = NULL, *result = NULL;
    PyObject *argv[RAW_RECORD_FIELDS] = {NULL};
    int status = OK;

    table = PyUnicode_DecodeUTF8((const char *)f.name, f.name_len, NULL);
    if (table == NULL) {
        status = value_error_is_inconsistent();
        goto done;
    }
    unsigned rec_length = be16(h + 4);

    /* Sub-records D, T and U in any order; unknown types are skipped (seed 002). */
    Py_ssize_t p = f.body;
    while (p < body_end) {
        unsigned char stype;
        const unsigned char *sv;
        Py_ssize_t slen;
        if (next_sub(b, &p, body_end, &stype, &sv, &slen) < 0) {
            status = INCONSISTENT;
            goto done;
        }
        Py_ssize_t sstart = sv - b;
        if (stype == TYPE_D) {
            if ((unsigned)slen != rec_length) {
                status = INCONSISTENT;
                goto done;
            }
            PyObject *d = bytes_from(b + sstart, slen);
            if (d == NULL) {
                status = FAILED;
                goto done;
            }
            Py_XSETREF(data, d);
        }
        else if (stype == TYPE_T) {
            /* Each T area replaces all three values, as the Python decoder's assignment does. */
            Py_CLEAR(rowid);
            Py_CLEAR(csn);
            Py_CLEAR(xid);
            status = decode_t(b, sstart, p, &rowid, &csn, &xid);
            if (status != OK)
                goto done;
        }
        else if (stype == TYPE_U) {
            status = decode_tokens(b, sstart, p, &tokens);
            if (status != OK)
                goto done;
        }
        else if (stype == 'E') {
            /* an encrypted record (trail/sealing.py): Python refuses it or reads its header */
            status = INCONSISTENT;
            goto done;
        }
    }
    if (data == NULL && (data = PyBytes_FromStringAndSize(NULL, 0)) == NULL) {
        status = FAILED;
        goto done;
    }

    /* RawRecord's fields, in order (records._HFIXED: >BBBBHBBQQBIBBBBB). */
    argv[0] = PyLong_FromSsize_t(pos);
    argv[1] = PyLong_FromSsize_t(length);
    argv[2] = PyLong_FromLong((long)flag);
    argv[3] = PyLong_FromLong(h[0]);  /* hdr_ind */
    argv[4] = PyLong_FromLong(h[1]);  /* partition */
    argv[5] = PyLong_FromLong(h[2]);  /* undo_flag */
    argv[6] = PyLong_FromLong(h[3]);  /* before_after */
    argv[7] = PyLong_FromLong((long)rec_length);
    argv[8] = PyLong_FromLong(h[6]);  /* io_type */
    argv[9] = PyLong_FromLong(h[7]);  /* orig_node */
    argv[10] = PyLong_FromUnsignedLongLong(be64(h + 8));   /* io_time */
    argv[11] = PyLong_FromUnsignedLongLong(be64(h + 16));  /* audit_pos */
    argv[12] = PyLong_FromLong(h[24]);  /* trans_ind */
    argv[13] = PyLong_FromUnsignedLongLong(be32(h + 25));  /* audit_rba */
    argv[14] = PyLong_FromLong(h[29]);  /* format_type */
    argv[15] = PyLong_FromLong(h[30]);  /* syskey_len */
    argv[16] = PyLong_FromLong(h[31]);  /* incomplete */
    argv[17] = PyLong_FromLong(h[32]);  /* continued */
    argv[18] = PyLong_FromLong(h[33]);  /* rec_count */
    argv[19] = Py_NewRef(table);
    argv[20] = Py_NewRef(data);
    argv[21] = Py_NewRef(rowid ? rowid : Py_None);
    argv[22] = Py_NewRef(csn ? csn : Py_None);
    argv[23] = Py_NewRef(xid ? xid : Py_None);
    argv[24] = Py_NewRef(tokens ? tokens : Py_None);
    for (int i = 0; i < RAW_RECORD_FIELDS; i++) {
        if (argv[i] == NULL) {
            status = FAILED;
            goto done;
        }
    }
    result = build(record_class, argv, RAW_RECORD_FIELDS);
    if (result == NULL)
        status = FAILED;

done:
    for (int i = 0; i < RAW_RECORD_FIELDS; i++)
        Py_XDECREF(argv[i]);
    Py_XDECREF(table);
    Py_XDECREF(data);
    Py_XDECREF(rowid);
    Py_XDECREF(csn);
    Py_XDECREF(xid);
    Py_XDECREF(tokens);
    if (status == FAILED)
        return NULL;
    if (status == INCONSISTENT)
        Py_RETURN_NONE;
    return result;
}

/* ---------------------------------------------------------------------------------------
 * Column kinds.  values.py hands over the ColumnKind members once at import
 * (set_column_kinds); a kind is recognised by identity, and anything else (a plain string,
 * a kind added later) goes back to Python.
 */

enum { KIND_UNKNOWN = 0, KIND_VARIABLE, KIND_CHAR, KIND_DATE, KIND_TIMESTAMP };

#define MAX_VARIABLE_KINDS 16
static PyObject *variable_kinds[MAX_VARIABLE_KINDS];
static Py_ssize_t n_variable_kinds = 0;
static PyObject *kind_char = NULL, *kind_date = NULL, *kind_timestamp = NULL;

static PyObject *
sp_set_column_kinds(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "set_column_kinds(variable_kinds, char, date, timestamp)");
        return NULL;
    }
    PyObject *seq = PySequence_Tuple(args[0]);
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n > MAX_VARIABLE_KINDS) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many variable kinds");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n_variable_kinds; i++)
        Py_CLEAR(variable_kinds[i]);
    for (Py_ssize_t i = 0; i < n; i++)
        variable_kinds[i] = Py_NewRef(PyTuple_GET_ITEM(seq, i));
    n_variable_kinds = n;
    Py_DECREF(seq);
    Py_XSETREF(kind_char, Py_NewRef(args[1]));
    Py_XSETREF(kind_date, Py_NewRef(args[2]));
    Py_XSETREF(kind_timestamp, Py_NewRef(args[3]));
    Py_RETURN_NONE;
}

static int
classify_kind(PyObject *kind)
{
    for (Py_ssize_t i = 0; i < n_variable_kinds; i++)
        if (kind == variable_kinds[i])
            return KIND_VARIABLE;
    if (kind_char != NULL) {
        if (kind == kind_char)
            return KIND_CHAR;
        if (kind == kind_date)
            return KIND_DATE;
        if (kind == kind_timestamp)
            return KIND_TIMESTAMP;
    }
    return KIND_UNKNOWN;
}

/* ---------------------------------------------------------------------------------------
 * encode_columns(values, kinds, widths) -> bytes | None
 *
 * values.encode_columns: index -> value (bytes or None), framed by kind, in index order.
 */

static const char NULL_DATE[] = "\xff\xff" "1900-01-01:00:00:00";
static const char NULL_TIMESTAMP[] = "\xff\xff" "1900-01-01:00:00:00.000000000";
#define NULL_DATE_LEN ((Py_ssize_t)sizeof(NULL_DATE) - 1)
#define NULL_TIMESTAMP_LEN ((Py_ssize_t)sizeof(NULL_TIMESTAMP) - 1)

typedef struct {
    unsigned index;
    int kind;
    PyObject *value;   /* borrowed from the dict: bytes or None */
    Py_ssize_t width;  /* CHAR only: the blank-padded width, 0 for none */
    Py_ssize_t framed; /* bytes of the framed value */
} column_t;

static int
compare_columns(const void *a, const void *b)
{
    unsigned x = ((const column_t *)a)->index, y = ((const column_t *)b)->index;
    return (x > y) - (x < y);
}

/* Sequence item `index` of a list/tuple, or NULL when out of range (borrowed). */
static PyObject *
seq_item(PyObject *seq, unsigned index)
{
    if (PyList_CheckExact(seq))
        return (Py_ssize_t)index < PyList_GET_SIZE(seq) ? PyList_GET_ITEM(seq, index) : NULL;
    return (Py_ssize_t)index < PyTuple_GET_SIZE(seq) ? PyTuple_GET_ITEM(seq, index) : NULL;
}

static PyObject *
sp_encode_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "encode_columns(values, kinds, widths)");
        return NULL;
    }
    PyObject *values = args[0], *kinds = args[1], *widths = args[2];
    if (!PyDict_CheckExact(values)
        || (kinds != Py_None && !PyList_CheckExact(kinds) && !PyTuple_CheckExact(kinds))
        || (widths != Py_None && !PyList_CheckExact(widths) && !PyTuple_CheckExact(widths)))
        Py_RETURN_NONE;

    Py_ssize_t n = PyDict_GET_SIZE(values);
    column_t small[32];
    column_t *cols = small;
    if (n > (Py_ssize_t)(sizeof(small) / sizeof(small[0]))) {
        cols = PyMem_New(column_t, n);
        if (cols == NULL)
            return PyErr_NoMemory();
    }
    PyObject *result = NULL;
    int handled = 0;

    Py_ssize_t i = 0, it = 0;
    PyObject *key, *value;
    while (PyDict_Next(values, &it, &key, &value)) {
        unsigned long long index;
        /* Keys that are not plain ints in 0..65535 make Python raise: let it. */
        if (!PyLong_CheckExact(key) || as_uint(key, 0xFFFF, &index) < 0)
            goto finish;
        if (value != Py_None && !PyBytes_Check(value))
            goto finish;
        cols[i].index = (unsigned)index;
        cols[i].value = value;
        i++;
    }
    if (i != n)
        goto finish; /* cannot happen for a dict, but never trust a count */
    qsort(cols, (size_t)n, sizeof(column_t), compare_columns);

    Py_ssize_t total = 0;
    for (i = 0; i < n; i++) {
        column_t *c = &cols[i];
        PyObject *kind = kinds == Py_None ? NULL : seq_item(kinds, c->index);
        c->kind = kind == NULL ? KIND_VARIABLE : classify_kind(kind); /* default VARCHAR2 */
        Py_ssize_t vlen = c->value == Py_None ? 0 : PyBytes_GET_SIZE(c->value);
        switch (c->kind) {
        case KIND_VARIABLE:
            c->framed = c->value == Py_None ? 4 : 4 + vlen;
            break;
        case KIND_CHAR: {
            PyObject *w = widths == Py_None ? NULL : seq_item(widths, c->index);
            c->width = 0;
            if (w != NULL && w != Py_None) {
                if (as_ssize(w, &c->width) < 0)
                    goto finish;
                if (c->width < 0)
                    c->width = 0; /* Python: b"\0" * negative is empty; no padding either */
                if (c->width > 0xFFFF)
                    goto finish; /* would not fit: Python raises */
            }
            if (c->value == Py_None)
                c->framed = 2 + c->width;
            else
                c->framed = 2 + (vlen < c->width ? c->width : vlen);
            break;
        }
        case KIND_DATE:
            c->framed = c->value == Py_None ? NULL_DATE_LEN : 2 + vlen;
            break;
        case KIND_TIMESTAMP:
            c->framed = c->value == Py_None ? NULL_TIMESTAMP_LEN : 2 + vlen;
            break;
        default:
            goto finish; /* unknown kind: Python raises */
        }
        if (c->framed > 0xFFFF)
            goto finish; /* needs LOB pieces: Python raises */
        total += 4 + c->framed;
    }

    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) {
        handled = 1;
        goto finish;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    for (i = 0; i < n; i++) {
        column_t *c = &cols[i];
        put16(out, c->index);
        put16(out + 2, (unsigned)c->framed);
        out += 4;
        if (c->value == Py_None) {
            switch (c->kind) {
            case KIND_VARIABLE:
                memcpy(out, "\xff\xff\x00\x00", 4);
                break;
            case KIND_CHAR:
                out[0] = out[1] = 0xFF;
                memset(out + 2, 0, (size_t)c->width);
                break;
            case KIND_DATE:
                memcpy(out, NULL_DATE, (size_t)NULL_DATE_LEN);
                break;
            default:
                memcpy(out, NULL_TIMESTAMP, (size_t)NULL_TIMESTAMP_LEN);
                break;
            }
        }
        else {
            Py_ssize_t vlen = PyBytes_GET_SIZE(c->value);
            const char *v = PyBytes_AS_STRING(c->value);
            out[0] = out[1] = 0;
            if (c->kind == KIND_VARIABLE) {
                put16(out + 2, (unsigned)vlen);
                memcpy(out + 4, v, (size_t)vlen);
            }
            else {
                memcpy(out + 2, v, (size_t)vlen);
                if (c->kind == KIND_CHAR && vlen < c->width)
                    memset(out + 2 + vlen, ' ', (size_t)(c->width - vlen));
            }
        }
        out += c->framed;
    }
    handled = 1;

finish:
    if (cols != small)
        PyMem_Free(cols);
    if (!handled)
        Py_RETURN_NONE;
    return result; /* NULL with MemoryError set when the allocation failed */
}

/* ---------------------------------------------------------------------------------------
 * encode_record(io_type, table, data, io_time, audit_pos, audit_rba, trans_ind,
 *               before_after, continued, rowid, csn, xid, tokens) -> bytes | None
 *
 * records.encode_record, arguments in that order.
 */

/* Growable output buffer for the variable parts (T and U areas). */
typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
    unsigned char small[256];
} outbuf;

static void
ob_init(outbuf *b)
{
    b->p = b->small;
    b->len = 0;
    b->cap = (Py_ssize_t)sizeof(b->small);
}

static void
ob_free(outbuf *b)
{
    if (b->p != b->small)
        PyMem_Free(b->p);
}

static int
ob_put(outbuf *b, const void *src, Py_ssize_t n)
{
    if (n > b->cap - b->len) {
        /* No record part exceeds 64 KiB plus change, so this cannot overflow. */
        Py_ssize_t cap = b->cap * 2;
        while (cap - b->len < n)
            cap *= 2;
        unsigned char *q = PyMem_Malloc((size_t)cap);
        if (q == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(q, b->p, (size_t)b->len);
        ob_free(b);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* A sub-record header then `n` bytes; INCONSISTENT if the length does not fit two bytes. */
static int
ob_sub(outbuf *b, unsigned char type, const void *content, Py_ssize_t n)
{
    if (n > 0xFFFF)
        return INCONSISTENT;
    unsigned char head[4] = {type, 0, (unsigned char)(n >> 8), (unsigned char)n};
    if (ob_put(b, head, 4) < 0 || ob_put(b, content, n) < 0)
        return FAILED;
    return OK;
}

/* str -> its bytes in ASCII; NULL with *status INCONSISTENT when it is not ASCII or not a
 * str (Python raises). */
static const char *
ascii_of(PyObject *s, Py_ssize_t *n, int *status)
{
    if (!PyUnicode_Check(s)) {
        *status = INCONSISTENT;
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) { /* only legacy strings from old C APIs are not ready */
        *status = FAILED;
        return NULL;
    }
#endif
    if (!PyUnicode_IS_ASCII(s)) {
        *status = INCONSISTENT; /* .encode("ascii") raises */
        return NULL;
    }
    *n = PyUnicode_GET_LENGTH(s);
    return (const char *)PyUnicode_DATA(s);
}

/* str -> UTF-8 (cached by CPython); NULL with *status INCONSISTENT on lone surrogates or a
 * non-str (Python's .encode raises). */
static const char *
utf8_of(PyObject *s, Py_ssize_t *n, int *status)
{
    if (!PyUnicode_Check(s)) {
        *status = INCONSISTENT;
        return NULL;
    }
    const char *u = PyUnicode_AsUTF8AndSize(s, n);
    if (u == NULL)
        *status = PyErr_ExceptionMatches(PyExc_UnicodeError) ? (PyErr_Clear(), INCONSISTENT)
                                                              : FAILED;
    return u;
}

static int
t_area(outbuf *t, PyObject *rowid, PyObject *csn, PyObject *xid)
{
    int status = OK;
    Py_ssize_t n;
    const char *s;
    if (rowid != Py_None) {
        if ((s = ascii_of(rowid, &n, &status)) == NULL)
            return status;
        if (n > 0xFFFF - 2)
            return INCONSISTENT;
        unsigned char head[4] = {TYPE_ROWID, 0, (unsigned char)((n + 2) >> 8),
                                 (unsigned char)(n + 2)};
        if (ob_put(t, head, 4) < 0 || ob_put(t, s, n) < 0 || ob_put(t, "\x00\x01", 2) < 0)
            return FAILED;
    }
    if (csn != Py_None) {
        /* str(csn): only plain ints (str(True) is "True"; subclasses may differ). */
        if (!PyLong_CheckExact(csn))
            return INCONSISTENT;
        PyObject *text = PyObject_Str(csn);
        if (text == NULL)
            return value_error_is_inconsistent(); /* int's digit limit */
        s = ascii_of(text, &n, &status);
        int rc = s == NULL ? status : ob_sub(t, TYPE_CSN, s, n);
        Py_DECREF(text);
        if (rc != OK)
            return rc;
    }
    if (xid != Py_None) {
        if ((s = ascii_of(xid, &n, &status)) == NULL)
            return status;
        if ((status = ob_sub(t, TYPE_XID, s, n)) != OK)
            return status;
    }
    return OK;
}

static int
tokens_area(outbuf *u, PyObject *tokens)
{
    Py_ssize_t it = 0;
    PyObject *name, *value;
    while (PyDict_Next(tokens, &it, &name, &value)) {
        int status = OK;
        Py_ssize_t nn, vn;
        const char *ns = utf8_of(name, &nn, &status);
        if (ns == NULL)
            return status;
        const char *vs = utf8_of(value, &vn, &status);
        if (vs == NULL)
            return status;
        if (nn > 0xFFFF || vn > 0xFFFF)
            return INCONSISTENT; /* the two-byte lengths overflow: Python raises */
        unsigned char nl[2] = {(unsigned char)(nn >> 8), (unsigned char)nn};
        unsigned char vl[2] = {(unsigned char)(vn >> 8), (unsigned char)vn};
        if (ob_put(u, nl, 2) < 0 || ob_put(u, ns, nn) < 0 || ob_put(u, vl, 2) < 0
            || ob_put(u, vs, vn) < 0)
            return FAILED;
        if (u->len > 0xFFFF)
            return INCONSISTENT; /* too long for the U sub-record: Python raises */
    }
    return OK;
}

static PyObject *
sp_encode_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_record(io_type, table, data, io_time, audit_pos, audit_rba, "
                        "trans_ind, before_after, continued, rowid, csn, xid, tokens)");
        return NULL;
    }
    PyObject *table = args[1], *data = args[2];
    PyObject *rowid = args[9], *csn = args[10], *xid = args[11], *tokens = args[12];
    unsigned long long io_type, io_time, audit_pos, audit_rba, trans_ind, before_after,
        continued;
    /* Out-of-range header fields make struct.pack raise: Python's to report. */
    if (as_uint(args[0], 0xFF, &io_type) < 0 || as_uint(args[3], UINT64_MAX, &io_time) < 0
        || as_uint(args[4], UINT64_MAX, &audit_pos) < 0
        || as_uint(args[5], 0xFFFFFFFFu, &audit_rba) < 0
        || as_uint(args[6], 0xFF, &trans_ind) < 0 || as_uint(args[7], 0xFF, &before_after) < 0
        || as_uint(args[8], 0xFF, &continued) < 0)
        Py_RETURN_NONE;
    if (!PyBytes_Check(data) || PyBytes_GET_SIZE(data) > 0xFFFF)
        Py_RETURN_NONE;
    if (tokens != Py_None && !PyDict_Check(tokens))
        Py_RETURN_NONE;
    int status = OK;
    Py_ssize_t name_len;
    const char *name = utf8_of(table, &name_len, &status);
    if (name == NULL)
        return status == FAILED ? NULL : Py_NewRef(Py_None);
    Py_ssize_t data_len = PyBytes_GET_SIZE(data);
    Py_ssize_t h_len = H_FIXED + name_len + 1;
    if (h_len > 0xFFFF)
        Py_RETURN_NONE;

    outbuf t, u;
    ob_init(&t);
    ob_init(&u);
    PyObject *result = NULL;
    status = t_area(&t, rowid, csn, xid);
    if (status == OK && tokens != Py_None && PyDict_GET_SIZE(tokens) > 0)
        status = tokens_area(&u, tokens);
    if (status != OK)
        goto done;
    if (t.len > 0xFFFF || u.len > 0xFFFF) {
        status = INCONSISTENT;
        goto done;
    }
    /* `if t_area:` / `if tokens:` in Python: an empty area is left out.  (A token always
     * takes at least four bytes, so the U area is empty exactly when there are no tokens.) */
    Py_ssize_t total = 8 + (4 + h_len) + (4 + data_len) + (t.len ? 4 + t.len : 0)
                       + (u.len ? 4 + u.len : 0);
    if (total > MAX_RECORD) {
        status = INCONSISTENT; /* Python raises ValueError; callers split the record */
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL) {
        status = FAILED;
        goto done;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(result);
    o[0] = TYPE_G;
    o[1] = 0x01;
    put16(o + 2, (unsigned)total);
    o += 4;
    o[0] = TYPE_H;
    o[1] = 0;
    put16(o + 2, (unsigned)h_len);
    o += 4;
    /* _HFIXED: >BBBBHBBQQBIBBBBB */
    o[0] = 0x45;
    o[1] = 0x04;
    o[2] = 0x00;
    o[3] = (unsigned char)before_after;
    put16(o + 4, (unsigned)data_len);
    o[6] = (unsigned char)io_type;
    o[7] = 0xFF;
    for (int k = 0; k < 8; k++) {
        o[8 + k] = (unsigned char)(io_time >> (56 - 8 * k));
        o[16 + k] = (unsigned char)(audit_pos >> (56 - 8 * k));
    }
    o[24] = (unsigned char)trans_ind;
    for (int k = 0; k < 4; k++)
        o[25 + k] = (unsigned char)(audit_rba >> (24 - 8 * k));
    o[29] = 0x52;
    o[30] = 0;
    o[31] = 0;
    o[32] = (unsigned char)continued;
    o[33] = 1;
    o += H_FIXED;
    memcpy(o, name, (size_t)name_len);
    o[name_len] = 0;
    o += name_len + 1;
    o[0] = TYPE_D;
    o[1] = 0;
    put16(o + 2, (unsigned)data_len);
    memcpy(o + 4, PyBytes_AS_STRING(data), (size_t)data_len);
    o += 4 + data_len;
    if (t.len) {
        o[0] = TYPE_T;
        o[1] = 0;
        put16(o + 2, (unsigned)t.len);
        memcpy(o + 4, t.p, (size_t)t.len);
        o += 4 + t.len;
    }
    if (u.len) {
        o[0] = TYPE_U;
        o[1] = 0;
        put16(o + 2, (unsigned)u.len);
        memcpy(o + 4, u.p, (size_t)u.len);
        o += 4 + u.len;
    }
    o[0] = TYPE_Z;
    o[1] = 0x01;
    put16(o + 2, (unsigned)total);

done:
    ob_free(&t);
    ob_free(&u);
    if (status == FAILED)
        return NULL;
    if (status == INCONSISTENT)
        Py_RETURN_NONE;
    return result;
}

/* --------------------------------------------------------------------------------------- */


/* ---------------------------------------------------------------------------------------
 * scan_records(buf, pos, end, state, max_records, mark, mark_types)
 *     -> (pos, boundary, covered, pending, in_txn, in_metadata, pending_marked, marked, stop)
 *
 * trail_offsets.scan_boundary's loop over the complete records in buf[pos:end] (one file,
 * past its header), without a RawRecord per record.  `state` is (in_txn, pending,
 * in_metadata, pending_marked, covered, marked); `boundary` is the offset just after the
 * last transaction that ended here (-1: none did).  It stops before a record it cannot
 * judge — cut short by `end`, or inconsistent (`stop` True: Python's reader reads it and
 * says why) — and once `max_records` (-1: no bound) change records are covered.  `mark` is
 * called as mark(io_type, table) for change records whose io_type is in `mark_types`
 * (None: for every change record), as the Python loop calls it.
 */
#define IO_FRAGMENT 161
#define IO_LOB 116
#define IO_METADATA 170

/* The length of the UTF-8 sequence at p (n bytes left) as Python's strict decoder takes
 * it, 0 when none starts there. */
static Py_ssize_t
utf8_at(const unsigned char *p, Py_ssize_t n)
{
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    Py_ssize_t more;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        more = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        more = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    }
    else if (c >= 0xF0 && c <= 0xF4) {
        more = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    }
    else
        return 0;
    if (n <= more || p[1] < lo || p[1] > hi)
        return 0;
    for (Py_ssize_t k = 2; k <= more; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return 0;
    return more + 1;
}

/* Whether n bytes at p are UTF-8 as Python's strict decoder takes it (no overlong forms,
 * no surrogates, nothing above U+10FFFF). */
static int
utf8_valid(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t k = utf8_at(p + i, n - i);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

static int
ascii_only(const unsigned char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i] >= 0x80)
            return 0;
    return 1;
}

/* Whether decode_record would take the framed record `f` (its table name, its D, T and U
 * sub-records), judged without building anything: the boundary scan must stop where the
 * reader would raise.  Conservative: a CSN longer than 19 digits is left to Python. */
static int
record_sound(const unsigned char *b, const Frame *f)
{
    if (!utf8_valid(f->name, f->name_len))
        return 0;
    unsigned rec_length = be16(f->h + 4);
    Py_ssize_t p = f->body;
    while (p < f->body_end) {
        unsigned char stype;
        const unsigned char *v;
        Py_ssize_t n;
        if (next_sub(b, &p, f->body_end, &stype, &v, &n) < 0)
            return 0;
        if (stype == TYPE_D && (unsigned)n != rec_length)
            return 0;
        if (stype == TYPE_T) {
            Py_ssize_t q = v - b, tend = q + n;
            while (q < tend) {
                unsigned char ttype;
                const unsigned char *tv;
                Py_ssize_t tn;
                if (next_sub(b, &q, tend, &ttype, &tv, &tn) < 0)
                    return 0;
                if ((ttype == TYPE_ROWID || ttype == TYPE_XID) && !ascii_only(tv, tn))
                    return 0;
                if (ttype == TYPE_CSN) {
                    if (tn == 0 || tn > 19)
                        return 0;
                    for (Py_ssize_t i = 0; i < tn; i++)
                        if (tv[i] < '0' || tv[i] > '9')
                            return 0;
                }
            }
        }
        else if (stype == TYPE_U) {
            Py_ssize_t q = v - b, uend = q + n;
            while (q < uend) {
                for (int part = 0; part < 2; part++) {
                    if (uend - q < 2)
                        return 0;
                    Py_ssize_t len = be16(b + q);
                    if (len > uend - q - 2 || (part == 0 && len > uend - q - 4)
                        || !utf8_valid(b + q + 2, len))
                        return 0;
                    q += 2 + len;
                }
            }
        }
    }
    return 1;
}

static PyObject *
sp_scan_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "scan_records(buf, pos, end, state, max_records, mark, mark_types)");
        return NULL;
    }
    PyObject *buf = args[0], *state = args[3], *mark = args[5], *mark_types = args[6];
    Py_ssize_t pos, end, max_records;
    if (!PyBytes_Check(buf) || as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &end) < 0
        || as_ssize(args[4], &max_records) < 0 || !PyTuple_Check(state)
        || PyTuple_GET_SIZE(state) != 6 || (mark_types != Py_None && !PyAnySet_Check(mark_types)))
        Py_RETURN_NONE;
    if (pos < 0 || pos > end || end > PyBytes_GET_SIZE(buf))
        Py_RETURN_NONE;
    Py_ssize_t st[6];
    for (int i = 0; i < 6; i++)
        if (as_ssize(PyTuple_GET_ITEM(state, i), &st[i]) < 0)
            Py_RETURN_NONE;
    int in_txn = st[0] != 0, in_metadata = st[2] != 0, pending_marked = st[3] != 0,
        marked = st[5] != 0;
    Py_ssize_t pending = st[1], covered = st[4], boundary = -1;
    int stop = 0;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);

    for (;;) {
        Frame f;
        int found = frame_at(b, pos, end, &f);
        if (found == FRAME_SHORT)
            break; /* cut short: the caller reads on */
        if (found == FRAME_BAD || !record_sound(b, &f)) {
            stop = 1;
            break;
        }
        const unsigned char *h = f.h;
        Py_ssize_t length = f.length, rend = pos + length;
        unsigned io_type = h[6], ind = h[24], continued = h[32];
        pos = rend;
        if (io_type == IO_METADATA || (in_metadata && io_type == IO_FRAGMENT)) {
            in_metadata = continued != 0;
            continue;
        }
        in_metadata = 0;
        if (ind == 0 || ind == 3) {
            in_txn = 1;
            pending = 0;
            pending_marked = 0;
        }
        if (!in_txn)
            continue;
        if (io_type != IO_FRAGMENT && io_type != IO_LOB) {
            pending++;
            if (mark != Py_None && !pending_marked) {
                int wanted = 1;
                if (mark_types != Py_None) {
                    PyObject *key = PyLong_FromLong((long)io_type);
                    if (key == NULL)
                        return NULL;
                    wanted = PySet_Contains(mark_types, key);
                    Py_DECREF(key);
                    if (wanted < 0)
                        return NULL;
                }
                if (wanted) {
                    PyObject *table = PyUnicode_DecodeUTF8((const char *)f.name, f.name_len,
                                                           NULL);
                    if (table == NULL) {
                        if (!PyErr_ExceptionMatches(PyExc_ValueError))
                            return NULL;
                        PyErr_Clear(); /* Python's reader reports the bad name */
                        pos -= length;
                        pending--;
                        stop = 1;
                        break;
                    }
                    PyObject *res = PyObject_CallFunction(mark, "IO", io_type, table);
                    Py_DECREF(table);
                    if (res == NULL)
                        return NULL;
                    int truth = PyObject_IsTrue(res);
                    Py_DECREF(res);
                    if (truth < 0)
                        return NULL;
                    if (truth)
                        pending_marked = 1;
                }
            }
        }
        if (ind == 2 || ind == 3) {
            in_txn = 0;
            boundary = pos;
            covered += pending;
            marked = marked || pending_marked;
            pending = 0;
            pending_marked = 0;
            if (max_records >= 0 && covered >= max_records)
                break;
        }
    }
    return Py_BuildValue("(nnnniiiii)", pos, boundary, covered, pending, in_txn, in_metadata,
                         pending_marked, marked, stop);
}

/* ---------------------------------------------------------------------------------------
 * scan_tables(buf, pos, end, row_types, counts, first) -> (pos, metadata, stop)
 *
 * trail_catalog's pass over the complete records in buf[pos:end] (one 11.2 file, past its
 * header), without a RawRecord per record: each record whose IO type is flagged in
 * `row_types` (256 bytes, one per IO type) and that names a table adds one to
 * counts[table]; a table met for the first time (not yet in `counts`) gets
 * first[table] = the offset of its first record; each metadata record is listed as
 * (offset, length) for Python to decode.  It stops before a record cut short by `end`, and
 * before one it leaves to Python's reader (`stop` True): inconsistent framing, a table
 * name that is not UTF-8, a metadata record continued in fragments.
 */
static int
add_run(PyObject *counts, PyObject *first, PyObject *name, long run, Py_ssize_t at)
{
    if (name == NULL || run == 0)
        return 0;
    PyObject *old = PyDict_GetItemWithError(counts, name); /* borrowed */
    if (old == NULL && PyErr_Occurred())
        return -1;
    long base = 0;
    if (old != NULL) {
        base = PyLong_AsLong(old);
        if (base == -1 && PyErr_Occurred())
            return -1;
    } else {
        PyObject *where = PyLong_FromSsize_t(at);
        if (where == NULL)
            return -1;
        int r = PyDict_SetItem(first, name, where);
        Py_DECREF(where);
        if (r < 0)
            return -1;
    }
    PyObject *value = PyLong_FromLong(base + run);
    if (value == NULL)
        return -1;
    int r = PyDict_SetItem(counts, name, value);
    Py_DECREF(value);
    return r;
}

static PyObject *
sp_scan_tables(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "scan_tables(buf, pos, end, row_types, counts, first)");
        return NULL;
    }
    PyObject *buf = args[0], *types = args[3], *counts = args[4], *first = args[5];
    Py_ssize_t pos, end;
    if (!PyBytes_Check(buf) || as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &end) < 0
        || !PyBytes_Check(types) || PyBytes_GET_SIZE(types) != 256 || !PyDict_Check(counts)
        || !PyDict_Check(first))
        Py_RETURN_NONE;
    if (pos < 0 || pos > end || end > PyBytes_GET_SIZE(buf))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);
    const unsigned char *rows = (const unsigned char *)PyBytes_AS_STRING(types);
    PyObject *metadata = PyList_New(0);
    if (metadata == NULL)
        return NULL;
    PyObject *name = NULL; /* the table of the current run of records */
    const unsigned char *name_at = NULL;
    Py_ssize_t name_len = 0, run_at = 0;
    long run = 0;
    int stop = 0;
    for (;;) {
        Frame f;
        int found = frame_at(b, pos, end, &f);
        if (found == FRAME_SHORT)
            break;
        if (found == FRAME_BAD || !record_sound(b, &f)) {
            stop = 1;
            break;
        }
        unsigned io_type = f.h[6];
        if (io_type == IO_METADATA) {
            if (f.h[32] != 0) { /* continued in fragments: the reader joins them */
                stop = 1;
                break;
            }
            PyObject *item = Py_BuildValue("(nn)", pos, f.length);
            if (item == NULL || PyList_Append(metadata, item) < 0) {
                Py_XDECREF(item);
                goto fail;
            }
            Py_DECREF(item);
        } else if (rows[io_type] && f.name_len > 0) {
            if (name == NULL || name_len != f.name_len
                || memcmp(name_at, f.name, (size_t)f.name_len) != 0) {
                PyObject *next = PyUnicode_DecodeUTF8((const char *)f.name, f.name_len, NULL);
                if (next == NULL) {
                    if (!PyErr_ExceptionMatches(PyExc_ValueError))
                        goto fail;
                    PyErr_Clear(); /* Python's reader reports the bad name */
                    stop = 1;
                    break;
                }
                if (add_run(counts, first, name, run, run_at) < 0) {
                    Py_DECREF(next);
                    goto fail;
                }
                Py_XDECREF(name);
                name = next;
                name_at = f.name;
                name_len = f.name_len;
                run = 0;
                run_at = pos;
            }
            run++;
        }
        pos += f.length;
    }
    if (add_run(counts, first, name, run, run_at) < 0)
        goto fail;
    Py_XDECREF(name);
    return Py_BuildValue("(nNi)", pos, metadata, stop);
fail:
    Py_XDECREF(name);
    Py_DECREF(metadata);
    return NULL;
}

/* ---------------------------------------------------------------------------------------
 * header_rows(buf, pos, end, keep, upper, names) -> (boundary, rows, done, stop, columns)
 *
 * trail_rows.drive's transaction rule over the complete records in buf[pos:end] (one 11.2
 * file, `pos` a transaction boundary), for reads that need only what record headers hold:
 * the records of transactions that start before `upper` (an offset in buf; -1: none),
 * those whose IO type `keep` flags (256 bytes), a transaction that never ends dropped.
 * `columns` holds the rows of the transactions that ended, as packed arrays in native byte
 * order: offset (int64), length (int32), IO type (uint8), flags (uint8: 1 first, 2 last
 * record of its transaction), table (int32, the value `names` maps the name's bytes to; a
 * name met for the first time is added as len(names)), IO time (uint64), audit position
 * (uint64), audit RBA (uint32).  `boundary` is the offset just after the last transaction
 * that ended (pos when none did), `done` that a transaction start at or past `upper` was
 * met.  It stops before what it leaves to Python's reader (`stop` True): inconsistent
 * framing, a record continued in fragments, a fragment or LOB piece.
 */
#define N_HEADER_COLUMNS 8
static const Py_ssize_t header_widths[N_HEADER_COLUMNS] = {8, 4, 1, 1, 4, 8, 8, 4};

static PyObject *
sp_header_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "header_rows(buf, pos, end, keep, upper, names)");
        return NULL;
    }
    PyObject *buf = args[0], *keep_arg = args[3], *names = args[5];
    Py_ssize_t pos, end, upper;
    if (!PyBytes_Check(buf) || as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &end) < 0
        || as_ssize(args[4], &upper) < 0 || !PyBytes_Check(keep_arg)
        || PyBytes_GET_SIZE(keep_arg) != 256 || !PyDict_Check(names))
        Py_RETURN_NONE;
    if (pos < 0 || pos > end || end > PyBytes_GET_SIZE(buf))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);
    const unsigned char *keep = (const unsigned char *)PyBytes_AS_STRING(keep_arg);
    Py_ssize_t most = (end - pos) / MIN_G_LENGTH + 1;
    PyObject *cols[N_HEADER_COLUMNS] = {NULL};
    unsigned char *c[N_HEADER_COLUMNS];
    for (int k = 0; k < N_HEADER_COLUMNS; k++) {
        cols[k] = PyByteArray_FromStringAndSize(NULL, most * header_widths[k]);
        if (cols[k] == NULL)
            goto fail;
        c[k] = (unsigned char *)PyByteArray_AS_STRING(cols[k]);
    }
    Py_ssize_t boundary = pos, rows = 0, committed = 0;
    int in_txn = 0, done = 0, stop = 0;
    const unsigned char *name_at = NULL;
    Py_ssize_t name_len = -1;
    int32_t name_index = 0;
    for (;;) {
        Frame f;
        int found = frame_at(b, pos, end, &f);
        if (found == FRAME_SHORT)
            break;
        if (found == FRAME_BAD || !record_sound(b, &f)) {
            stop = 1;
            break;
        }
        const unsigned char *h = f.h;
        unsigned io_type = h[6], ind = h[24];
        if (h[32] != 0 || io_type == IO_FRAGMENT || io_type == IO_LOB) {
            stop = 1; /* fragments and LOB pieces: the reader joins and folds them */
            break;
        }
        if (io_type == IO_METADATA) {
            pos += f.length;
            continue;
        }
        int starts = ind == 0 || ind == 3, ends = ind >= 2;
        if (starts) {
            if (in_txn)
                rows = committed; /* the one before never ended: its writer stopped */
            if (upper >= 0 && pos >= upper) {
                in_txn = 0;
                done = 1;
                break;
            }
            in_txn = 1;
        } else if (!in_txn) {
            if (upper >= 0 && pos >= upper) {
                done = 1;
                break;
            }
            pos += f.length;
            continue; /* the rest of a transaction that started before this range */
        }
        if (keep[io_type]) {
            if (name_at == NULL || name_len != f.name_len
                || memcmp(name_at, f.name, (size_t)f.name_len) != 0) {
                PyObject *key = PyBytes_FromStringAndSize((const char *)f.name, f.name_len);
                if (key == NULL)
                    goto fail;
                PyObject *known = PyDict_GetItemWithError(names, key); /* borrowed */
                long index;
                if (known != NULL) {
                    index = PyLong_AsLong(known);
                } else if (PyErr_Occurred()) {
                    Py_DECREF(key);
                    goto fail;
                } else {
                    index = (long)PyDict_GET_SIZE(names);
                    PyObject *value = PyLong_FromLong(index);
                    if (value == NULL || PyDict_SetItem(names, key, value) < 0) {
                        Py_XDECREF(value);
                        Py_DECREF(key);
                        goto fail;
                    }
                    Py_DECREF(value);
                }
                Py_DECREF(key);
                if (index == -1 && PyErr_Occurred())
                    goto fail;
                name_at = f.name;
                name_len = f.name_len;
                name_index = (int32_t)index;
            }
            int64_t off = (int64_t)pos;
            int32_t length = (int32_t)f.length;
            uint64_t io_time = be64(h + 8), audit_pos = be64(h + 16);
            uint32_t audit_rba = be32(h + 25);
            unsigned char flags = (unsigned char)((starts ? 1 : 0) | (ends ? 2 : 0));
            memcpy(c[0] + rows * 8, &off, 8);
            memcpy(c[1] + rows * 4, &length, 4);
            c[2][rows] = (unsigned char)io_type;
            c[3][rows] = flags;
            memcpy(c[4] + rows * 4, &name_index, 4);
            memcpy(c[5] + rows * 8, &io_time, 8);
            memcpy(c[6] + rows * 8, &audit_pos, 8);
            memcpy(c[7] + rows * 4, &audit_rba, 4);
            rows++;
        }
        pos += f.length;
        if (ends) {
            in_txn = 0;
            boundary = pos;
            committed = rows;
        }
    }
    for (int k = 0; k < N_HEADER_COLUMNS; k++)
        if (PyByteArray_Resize(cols[k], committed * header_widths[k]) < 0)
            goto fail;
    PyObject *tuple = PyTuple_New(N_HEADER_COLUMNS);
    if (tuple == NULL)
        goto fail;
    for (int k = 0; k < N_HEADER_COLUMNS; k++)
        PyTuple_SET_ITEM(tuple, k, cols[k]); /* steals */
    return Py_BuildValue("(nniiN)", boundary, committed, done, stop, tuple);
fail:
    for (int k = 0; k < N_HEADER_COLUMNS; k++)
        Py_XDECREF(cols[k]);
    return NULL;
}

/* split_records(blob) -> (records: list[bytes], io_types: bytes) | None
 * Whole G records laid end to end (records.split_records) as a list, with each record's IO
 * type (records.IO_TYPE_OFFSET), one byte per record, for tallies.  None when the lengths do
 * not add up: the Python code then says where. */
#define SPLIT_IO_TYPE_OFFSET (4 + 4 + 6)
static PyObject *
sp_split_records(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 1 || !PyBytes_Check(args[0]))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t end = PyBytes_GET_SIZE(args[0]), pos = 0, n = 0;
    while (pos < end) { /* check and count first: no partial result to undo */
        if (end - pos < 8 || b[pos] != 'G')
            Py_RETURN_NONE;
        Py_ssize_t length = ((Py_ssize_t)b[pos + 2] << 8) | b[pos + 3];
        if (length <= SPLIT_IO_TYPE_OFFSET || pos + length > end)
            Py_RETURN_NONE;
        pos += length;
        n++;
    }
    PyObject *records = PyList_New(n);
    PyObject *types = PyBytes_FromStringAndSize(NULL, n);
    if (records == NULL || types == NULL) {
        Py_XDECREF(records);
        Py_XDECREF(types);
        return NULL;
    }
    unsigned char *t = (unsigned char *)PyBytes_AS_STRING(types);
    pos = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t length = ((Py_ssize_t)b[pos + 2] << 8) | b[pos + 3];
        PyObject *record = PyBytes_FromStringAndSize((const char *)b + pos, length);
        if (record == NULL) {
            Py_DECREF(records);
            Py_DECREF(types);
            return NULL;
        }
        PyList_SET_ITEM(records, i, record);
        t[i] = b[pos + SPLIT_IO_TYPE_OFFSET];
        pos += length;
    }
    PyObject *result = PyTuple_Pack(2, records, types);
    Py_DECREF(records);
    Py_DECREF(types);
    return result;
}

/* ---------------------------------------------------------------------------------------
 * change_rows(buf, pos, end, keep, upper, max_rows, names, specs, lookup, define, shape)
 *   -> (boundary, rows, done, stop, stop_at, columns)
 *
 * header_rows with the values: trail_rows.drive's transaction rule over the complete
 * records in buf[pos:end] (one 11.2 file, `pos` a transaction boundary), building the
 * Arrow buffers of whole batches instead of a Python object per value.  It decodes what
 * the reader decodes (every change's column list when values are asked for) and stops
 * where the reader would raise or where trail_rows' Python code does something this code
 * does not (DDL rows, fragments, LOB pieces, a column repeated in one image): `stop` True and `stop_at` the record's offset; the caller reads on from
 * `boundary` with the Python reader.  It also stops after the transaction that brings the
 * rows to `max_rows`.
 *
 * `names` maps a table name's bytes to its index; a name it lacks is handed to `lookup`,
 * which adds it, appends its spec to `specs` and returns the index (None: stop).  A
 * metadata record is handed to `define(offset, length)`, which applies the definition to
 * `specs` and returns 0 (nothing to apply), 1 (applied) or -1 (stop: the reader raises).
 *
 * A spec (bytes, native byte order): flags (uint8: 1 table known, 2 rows kept, 4 stop at
 * its rows), 3 bytes padding, ncols (uint32), then ncols entries of kind (uint8: 0 not in
 * the table, 1 variable, 2 fixed width), hex (uint8: the value as lower-case hex text),
 * name length (uint16) and name offset or typed slot (int32), then the names.
 *
 * `shape` = (typed, build, nslots, after_slots): build bits 1 csn, 2 xid, 4 rowid,
 * 8 tokens, 16 before, 32 after.  The generic form builds map<string,string> columns
 * (before, after, tokens); the typed form a binary column per slot (after: the slots
 * `after_slots` flags; before: every slot, and the struct's validity).
 * `columns` is a list of bytes: the eight header arrays of header_rows, csn (int64) and
 * its validity, then xid and rowid (offsets, data, validity each), then either the maps
 * tokens, before, after (row offsets, row validity, key offsets, key data, item offsets,
 * item data, item validity each) or the typed slots (after slots flagged, then the before
 * slots and the before validity).  A column not built is None.
 */
typedef struct {
    unsigned char *p;
    Py_ssize_t len, cap;
} gbuf;

static int
gb_grow(gbuf *b, Py_ssize_t need)
{
    if (need <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < need)
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

static inline int
gb_put(gbuf *b, const void *src, Py_ssize_t n)
{
    if (b->len + n > b->cap && gb_grow(b, b->len + n) < 0)
        return -1;
    if (n)
        memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* Bit i of the bitmap b set to v (bytes up to it added as zeros). */
static inline int
bit_put(gbuf *b, Py_ssize_t i, int v)
{
    Py_ssize_t need = i / 8 + 1;
    if (need > b->len) {
        if (gb_grow(b, need) < 0)
            return -1;
        memset(b->p + b->len, 0, (size_t)(need - b->len));
        b->len = need;
    }
    if (v)
        b->p[i >> 3] |= (unsigned char)(1u << (i & 7));
    else
        b->p[i >> 3] &= (unsigned char)~(1u << (i & 7));
    return 0;
}

/* A string/binary column: int32 offsets, data, validity. */
typedef struct {
    gbuf off, data, valid;
    Py_ssize_t n;
} strcol;

static int
sc_init(strcol *c)
{
    int32_t zero = 0;
    memset(c, 0, sizeof(*c));
    return gb_put(&c->off, &zero, 4);
}

static void
sc_free(strcol *c)
{
    PyMem_Free(c->off.p);
    PyMem_Free(c->data.p);
    PyMem_Free(c->valid.p);
}

/* OK, INCONSISTENT (the column passed 2 GiB: the Python code takes it) or FAILED. */
static int
sc_end(strcol *c, int valid)
{
    if (c->data.len > INT32_MAX)
        return INCONSISTENT;
    int32_t o = (int32_t)c->data.len;
    if (gb_put(&c->off, &o, 4) < 0 || bit_put(&c->valid, c->n, valid) < 0)
        return FAILED;
    c->n++;
    return OK;
}

static int
sc_add(strcol *c, const unsigned char *p, Py_ssize_t n)
{
    if (gb_put(&c->data, p, n) < 0)
        return FAILED;
    return sc_end(c, 1);
}

static const char HEX_DIGITS[] = "0123456789abcdef";

static int
sc_add_hex(strcol *c, const unsigned char *p, Py_ssize_t n)
{
    if (gb_grow(&c->data, c->data.len + 2 * n) < 0)
        return FAILED;
    unsigned char *o = c->data.p + c->data.len;
    for (Py_ssize_t i = 0; i < n; i++) {
        o[2 * i] = (unsigned char)HEX_DIGITS[p[i] >> 4];
        o[2 * i + 1] = (unsigned char)HEX_DIGITS[p[i] & 15];
    }
    c->data.len += 2 * n;
    return sc_end(c, 1);
}

static void
sc_truncate(strcol *c, Py_ssize_t n)
{
    if (n >= c->n)
        return;
    int32_t o;
    memcpy(&o, c->off.p + n * 4, 4);
    c->off.len = (n + 1) * 4;
    c->data.len = o;
    c->n = n;
}

/* The bytes as text the way the generic rows decode them: UTF-8, each byte of what is not
 * UTF-8 as \xNN (Python's "backslashreplace"). */
static int
sc_add_text(strcol *c, const unsigned char *p, Py_ssize_t n)
{
    if (utf8_valid(p, n))
        return sc_add(c, p, n);
    if (gb_grow(&c->data, c->data.len + 4 * n) < 0)
        return FAILED;
    unsigned char *o = c->data.p + c->data.len;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t k = utf8_at(p + i, n - i);
        if (k > 0) {
            memcpy(o, p + i, (size_t)k);
            o += k;
            i += k;
        }
        else {
            o[0] = '\\';
            o[1] = 'x';
            o[2] = (unsigned char)HEX_DIGITS[p[i] >> 4];
            o[3] = (unsigned char)HEX_DIGITS[p[i] & 15];
            o += 4;
            i++;
        }
    }
    c->data.len = o - c->data.p;
    return sc_end(c, 1);
}

/* A map<string,string> column: row offsets and validity, keys, items. */
typedef struct {
    gbuf off, valid;
    Py_ssize_t rows;
    strcol keys, items;
} mapcol;

static int
mc_init(mapcol *m)
{
    int32_t zero = 0;
    memset(m, 0, sizeof(*m));
    if (sc_init(&m->keys) < 0 || sc_init(&m->items) < 0)
        return -1;
    return gb_put(&m->off, &zero, 4);
}

static void
mc_free(mapcol *m)
{
    PyMem_Free(m->off.p);
    PyMem_Free(m->valid.p);
    sc_free(&m->keys);
    sc_free(&m->items);
}

/* The row's end: its entries are the keys added since the last one. */
static int
mc_end_row(mapcol *m, int valid)
{
    if (m->keys.n > INT32_MAX)
        return INCONSISTENT;
    int32_t o = (int32_t)m->keys.n;
    if (gb_put(&m->off, &o, 4) < 0 || bit_put(&m->valid, m->rows, valid) < 0)
        return FAILED;
    m->rows++;
    return OK;
}

static void
mc_truncate(mapcol *m, Py_ssize_t rows)
{
    if (rows > m->rows)
        return;
    int32_t o;
    memcpy(&o, m->off.p + rows * 4, 4);
    m->off.len = (rows + 1) * 4;
    m->rows = rows;
    sc_truncate(&m->keys, o);
    sc_truncate(&m->items, o);
}

/* A spec's parts (see above). */
#define SPEC_KNOWN 1
#define SPEC_KEEP 2
#define SPEC_STOP 4
typedef struct {
    unsigned flags;
    uint32_t ncols;
    const unsigned char *entries, *names;
    Py_ssize_t names_len;
} spec_t;

static int
spec_of(PyObject *specs, long index, spec_t *s)
{
    if (index < 0 || index >= PyList_GET_SIZE(specs))
        return -1;
    PyObject *o = PyList_GET_ITEM(specs, index);
    if (!PyBytes_Check(o) || PyBytes_GET_SIZE(o) < 8)
        return -1;
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(o);
    Py_ssize_t size = PyBytes_GET_SIZE(o);
    s->flags = p[0];
    memcpy(&s->ncols, p + 4, 4);
    if ((Py_ssize_t)s->ncols > (size - 8) / 8)
        return -1;
    s->entries = p + 8;
    s->names = p + 8 + (Py_ssize_t)s->ncols * 8;
    s->names_len = size - 8 - (Py_ssize_t)s->ncols * 8;
    return 0;
}

/* Entry i of a spec: kind, hex, name length, name offset / slot. */
typedef struct {
    unsigned kind, hex, name_len;
    int32_t ref;
} entry_t;

static inline void
entry_of(const spec_t *s, unsigned i, entry_t *e)
{
    if (i >= s->ncols) {
        e->kind = e->hex = e->name_len = 0;
        e->ref = -1;
        return;
    }
    const unsigned char *p = s->entries + (Py_ssize_t)i * 8;
    uint16_t len;
    e->kind = p[0];
    e->hex = p[1];
    memcpy(&len, p + 2, 2);
    e->name_len = len;
    memcpy(&e->ref, p + 4, 4);
}

/* One decoded column of an image. */
typedef struct {
    unsigned index;
    const unsigned char *v; /* NULL: SQL NULL */
    Py_ssize_t n;
} colval;

typedef struct {
    colval *items;
    Py_ssize_t n, cap;
} colvec;

/* The column list b[start:end] as values.decode_columns reads it (the table's fixed-width
 * columns from the spec; shape when the table is unknown) into *out.  OK, INCONSISTENT or
 * FAILED. */
static int
image_columns(const unsigned char *b, Py_ssize_t start, Py_ssize_t end, const spec_t *s,
              colvec *out)
{
    out->n = 0;
    Py_ssize_t pos = start;
    while (pos < end) {
        if (end - pos < 4)
            return INCONSISTENT;
        unsigned index = be16(b + pos);
        Py_ssize_t length = be16(b + pos + 2);
        const unsigned char *v = b + pos + 4;
        if (length > end - pos - 4 || length < 2)
            return INCONSISTENT;
        unsigned indicator = be16(v);
        if (indicator != 0 && indicator != 0xFFFF)
            return INCONSISTENT;
        if (out->n == out->cap) {
            Py_ssize_t cap = out->cap ? out->cap * 2 : 64;
            colval *q = PyMem_Realloc(out->items, (size_t)cap * sizeof(colval));
            if (q == NULL) {
                PyErr_NoMemory();
                return FAILED;
            }
            out->items = q;
            out->cap = cap;
        }
        colval *c = &out->items[out->n++];
        c->index = index;
        if (indicator == 0xFFFF) {
            c->v = NULL;
            c->n = 0;
        }
        else {
            int variable;
            if (!(s->flags & SPEC_KNOWN)) {
                variable = length >= 4 && (Py_ssize_t)be16(v + 2) == length - 4;
            }
            else {
                entry_t e;
                entry_of(s, index, &e);
                variable = e.kind != 2;
                if (variable && (length < 4 || (Py_ssize_t)be16(v + 2) != length - 4))
                    return INCONSISTENT;
            }
            c->v = variable ? v + 4 : v + 2;
            c->n = variable ? length - 4 : length - 2;
        }
        pos += 4 + length;
    }
    return OK;
}

/* An image as a map row: keys the spec's names (the index in decimal without one), items
 * the values as text (hex for RAW).  INCONSISTENT for what the Python code must do: a
 * column repeated (a dict keeps its first place and last value). */
static int
map_image(mapcol *m, const colvec *cv, const spec_t *s, uint32_t *seen, uint32_t stamp)
{
    for (Py_ssize_t k = 0; k < cv->n; k++) {
        const colval *c = &cv->items[k];
        if (seen[c->index] == stamp)
            return INCONSISTENT;
        seen[c->index] = stamp;
        entry_t e;
        entry_of(s, c->index, &e);
        int rc;
        if (e.kind != 0 && e.name_len > 0) {
            if (e.ref < 0 || (Py_ssize_t)e.ref > s->names_len
                || (Py_ssize_t)e.name_len > s->names_len - e.ref)
                return INCONSISTENT;
            rc = sc_add(&m->keys, s->names + e.ref, e.name_len);
        }
        else {
            char digits[8];
            int n = snprintf(digits, sizeof digits, "%u", c->index);
            rc = sc_add(&m->keys, (const unsigned char *)digits, n);
        }
        if (rc != OK)
            return rc;
        if (c->v == NULL)
            rc = sc_end(&m->items, 0);
        else if (e.kind != 0 && e.hex)
            rc = sc_add_hex(&m->items, c->v, c->n);
        else
            rc = sc_add_text(&m->items, c->v, c->n);
        if (rc != OK)
            return rc;
    }
    return mc_end_row(m, 1);
}

/* An image into the typed slot columns: each slot the value of its definition column
 * (the last one in the list, as a dict has it), null when the image lacks it. */
typedef struct {
    const unsigned char *v;
    Py_ssize_t n;
    int hex;
} slotval;

static int
slot_image(strcol *cols, const unsigned char *wanted, Py_ssize_t nslots, const colvec *cv,
           const spec_t *s, slotval *tmp)
{
    for (Py_ssize_t k = 0; k < nslots; k++)
        tmp[k].v = NULL;
    if (cv != NULL) {
        for (Py_ssize_t k = 0; k < cv->n; k++) {
            const colval *c = &cv->items[k];
            entry_t e;
            entry_of(s, c->index, &e);
            if (e.kind == 0 || e.ref < 0 || e.ref >= nslots)
                continue;
            tmp[e.ref].v = c->v;
            tmp[e.ref].n = c->n;
            tmp[e.ref].hex = (int)e.hex;
        }
    }
    for (Py_ssize_t k = 0; k < nslots; k++) {
        if (wanted != NULL && !wanted[k])
            continue;
        int rc;
        if (tmp[k].v == NULL)
            rc = sc_end(&cols[k], 0);
        else if (tmp[k].hex)
            rc = sc_add_hex(&cols[k], tmp[k].v, tmp[k].n);
        else
            rc = sc_add(&cols[k], tmp[k].v, tmp[k].n);
        if (rc != OK)
            return rc;
    }
    return OK;
}

#define B_CSN 1
#define B_XID 2
#define B_ROWID 4
#define B_TOKENS 8
#define B_BEFORE 16
#define B_AFTER 32
#define IO_DELETE 3
#define IO_TRUNCATE 100
#define IO_PK_UPDATE 115
#define IO_DDL 160
#define IO_COMMENT 205
#define N_FIXED_COLUMNS 9 /* the header arrays and csn */

static const Py_ssize_t fixed_widths[N_FIXED_COLUMNS] = {8, 4, 1, 1, 4, 8, 8, 4, 8};

/* Whether the IO type is one the reader decodes (an OpType other than fragments, LOB
 * pieces and metadata). */
static inline int
decoded_type(unsigned t)
{
    return t == 3 || t == 5 || t == 10 || t == 15 || t == 100 || t == 115 || t == 132
           || t == 160 || t == 205;
}

typedef struct {
    gbuf fixed[N_FIXED_COLUMNS];
    gbuf csn_valid;
    strcol xid, rowid;
    mapcol maps[3]; /* tokens, before, after */
    strcol *after, *before; /* typed: nslots each */
    gbuf before_valid;
    Py_ssize_t nslots;
    colvec before_cv, after_cv;
    uint32_t *seen;
    slotval *tmp;
} rowset;

static void
rs_free(rowset *r)
{
    for (int k = 0; k < N_FIXED_COLUMNS; k++)
        PyMem_Free(r->fixed[k].p);
    PyMem_Free(r->csn_valid.p);
    sc_free(&r->xid);
    sc_free(&r->rowid);
    for (int k = 0; k < 3; k++)
        mc_free(&r->maps[k]);
    if (r->after != NULL)
        for (Py_ssize_t k = 0; k < r->nslots; k++)
            sc_free(&r->after[k]);
    if (r->before != NULL)
        for (Py_ssize_t k = 0; k < r->nslots; k++)
            sc_free(&r->before[k]);
    PyMem_Free(r->after);
    PyMem_Free(r->before);
    PyMem_Free(r->before_valid.p);
    PyMem_Free(r->before_cv.items);
    PyMem_Free(r->after_cv.items);
    PyMem_Free(r->seen);
    PyMem_Free(r->tmp);
}

static void
rs_truncate(rowset *r, Py_ssize_t rows)
{
    for (int k = 0; k < N_FIXED_COLUMNS; k++)
        r->fixed[k].len = rows * fixed_widths[k];
    sc_truncate(&r->xid, rows);
    sc_truncate(&r->rowid, rows);
    for (int k = 0; k < 3; k++)
        mc_truncate(&r->maps[k], rows);
    for (Py_ssize_t k = 0; k < r->nslots; k++) {
        sc_truncate(&r->after[k], rows);
        sc_truncate(&r->before[k], rows);
    }
}

static PyObject *
gb_bytes(const gbuf *b)
{
    return PyBytes_FromStringAndSize((const char *)b->p, b->len);
}

/* Append a column's buffers to the list (None for each when `built` is false). */
static int
put_bufs(PyObject *list, const gbuf *const *bufs, int n, int built)
{
    for (int k = 0; k < n; k++) {
        PyObject *o = built ? gb_bytes(bufs[k]) : Py_NewRef(Py_None);
        if (o == NULL || PyList_Append(list, o) < 0) {
            Py_XDECREF(o);
            return -1;
        }
        Py_DECREF(o);
    }
    return 0;
}

static int
put_str(PyObject *list, const strcol *c, int built)
{
    const gbuf *bufs[3] = {&c->off, &c->data, &c->valid};
    return put_bufs(list, bufs, 3, built);
}

static int
put_map(PyObject *list, const mapcol *m, int built)
{
    const gbuf *bufs[7] = {&m->off, &m->valid, &m->keys.off, &m->keys.data,
                           &m->items.off, &m->items.data, &m->items.valid};
    return put_bufs(list, bufs, 7, built);
}

static PyObject *
sp_change_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError, "change_rows(buf, pos, end, keep, upper, max_rows, "
                                         "names, specs, lookup, define, shape)");
        return NULL;
    }
    PyObject *buf = args[0], *keep_arg = args[3], *names = args[6], *specs = args[7];
    PyObject *lookup = args[8], *define = args[9], *shape = args[10];
    Py_ssize_t pos, end, upper, max_rows, nslots;
    int typed, build;
    PyObject *after_slots;
    if (!PyBytes_Check(buf) || as_ssize(args[1], &pos) < 0 || as_ssize(args[2], &end) < 0
        || as_ssize(args[4], &upper) < 0 || as_ssize(args[5], &max_rows) < 0
        || !PyBytes_Check(keep_arg) || PyBytes_GET_SIZE(keep_arg) != 256
        || !PyDict_Check(names) || !PyList_Check(specs) || !PyTuple_Check(shape)) {
        PyErr_SetString(PyExc_TypeError, "change_rows: an argument of the wrong type");
        return NULL;
    }
    if (!PyArg_ParseTuple(shape, "pinO", &typed, &build, &nslots, &after_slots))
        return NULL;
    if (pos < 0 || pos > end || end > PyBytes_GET_SIZE(buf) || nslots < 0 || nslots > 0xFFFF
        || !PyBytes_Check(after_slots) || PyBytes_GET_SIZE(after_slots) != nslots) {
        PyErr_SetString(PyExc_ValueError, "change_rows: inconsistent arguments");
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(buf);
    const unsigned char *keep = (const unsigned char *)PyBytes_AS_STRING(keep_arg);
    const unsigned char *wanted = (const unsigned char *)PyBytes_AS_STRING(after_slots);
    int values = (build & (B_BEFORE | B_AFTER)) != 0;

    rowset r;
    memset(&r, 0, sizeof r);
    PyObject *result = NULL, *columns = NULL;
    if (sc_init(&r.xid) < 0 || sc_init(&r.rowid) < 0)
        goto fail;
    for (int k = 0; k < 3; k++)
        if (mc_init(&r.maps[k]) < 0)
            goto fail;
    if (typed) {
        r.nslots = nslots;
        r.after = PyMem_Calloc((size_t)(nslots ? nslots : 1), sizeof(strcol));
        r.before = PyMem_Calloc((size_t)(nslots ? nslots : 1), sizeof(strcol));
        r.tmp = PyMem_Calloc((size_t)(nslots ? nslots : 1), sizeof(slotval));
        if (r.after == NULL || r.before == NULL || r.tmp == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        for (Py_ssize_t k = 0; k < nslots; k++)
            if (sc_init(&r.after[k]) < 0 || sc_init(&r.before[k]) < 0)
                goto fail;
    }
    else {
        r.seen = PyMem_Calloc(0x10000, sizeof(uint32_t));
        if (r.seen == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    uint32_t stamp = 0;

    Py_ssize_t boundary = pos, rows = 0, committed = 0, stop_at = -1;
    int in_txn = 0, done = 0, stop = 0;
    const unsigned char *name_at = NULL;
    Py_ssize_t name_len = -1;
    long name_index = 0;
    /* the open transaction's CSN and XID (from its first record's T area) */
    int64_t txn_csn = 0;
    int txn_has_csn = 0;
    const unsigned char *txn_xid = NULL;
    Py_ssize_t txn_xid_len = 0;

    for (;;) {
        Frame f;
        int found = frame_at(b, pos, end, &f);
        if (found == FRAME_SHORT)
            break;
        if (found == FRAME_BAD || !record_sound(b, &f)) {
            stop = 1;
            break;
        }
        const unsigned char *h = f.h;
        unsigned io_type = h[6], ind = h[24];
        if (h[32] != 0 || io_type == IO_FRAGMENT || io_type == IO_LOB) {
            stop = 1;
            break;
        }
        if (io_type == IO_METADATA) {
            PyObject *got = PyObject_CallFunction(define, "nn", pos, f.length);
            if (got == NULL)
                goto fail;
            long applied = PyLong_Check(got) ? PyLong_AsLong(got) : -1;
            Py_DECREF(got);
            if (applied == -1 && PyErr_Occurred())
                goto fail;
            if (applied < 0) {
                stop = 1;
                break;
            }
            name_at = NULL; /* the spec may have changed */
            pos += f.length;
            continue;
        }
        /* the sub-records, as decode_record takes them */
        const unsigned char *d = NULL, *u = NULL, *rowid = NULL, *xid = NULL;
        Py_ssize_t d_len = 0, u_len = 0, rowid_len = 0, xid_len = 0;
        int has_csn = 0, sealed = 0;
        uint64_t csn = 0;
        Py_ssize_t p = f.body;
        while (p < f.body_end) {
            unsigned char stype;
            const unsigned char *v;
            Py_ssize_t n;
            if (next_sub(b, &p, f.body_end, &stype, &v, &n) < 0) {
                sealed = 1; /* record_sound said otherwise: leave it to Python */
                break;
            }
            if (stype == TYPE_D) {
                d = v;
                d_len = n;
            }
            else if (stype == TYPE_U) {
                u = v;
                u_len = n;
            }
            else if (stype == 'E') {
                sealed = 1;
            }
            else if (stype == TYPE_T) {
                rowid = xid = NULL;
                has_csn = 0;
                Py_ssize_t q = v - b, tend = q + n;
                while (q < tend) {
                    unsigned char ttype;
                    const unsigned char *tv;
                    Py_ssize_t tn;
                    if (next_sub(b, &q, tend, &ttype, &tv, &tn) < 0) {
                        sealed = 1;
                        break;
                    }
                    if (ttype == TYPE_ROWID) {
                        rowid = tv;
                        rowid_len = (tn >= 2 && tv[tn - 2] == 0 && tv[tn - 1] == 1) ? tn - 2 : tn;
                    }
                    else if (ttype == TYPE_XID) {
                        xid = tv;
                        xid_len = tn;
                    }
                    else if (ttype == TYPE_CSN) {
                        csn = 0;
                        for (Py_ssize_t i = 0; i < tn; i++)
                            csn = csn * 10 + (uint64_t)(tv[i] - '0');
                        has_csn = 1;
                        if (csn > (uint64_t)INT64_MAX)
                            sealed = 1; /* beyond a long: the Python code says so */
                    }
                }
            }
        }
        if (sealed) {
            stop = 1;
            break;
        }
        if (d == NULL)
            d_len = 0;
        /* the table's spec */
        if (name_at == NULL || name_len != f.name_len
            || memcmp(name_at, f.name, (size_t)f.name_len) != 0) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)f.name, f.name_len);
            if (key == NULL)
                goto fail;
            PyObject *known = PyDict_GetItemWithError(names, key); /* borrowed */
            long index = -1;
            if (known != NULL) {
                index = PyLong_AsLong(known);
            }
            else if (PyErr_Occurred()) {
                Py_DECREF(key);
                goto fail;
            }
            else {
                PyObject *got = PyObject_CallOneArg(lookup, key);
                if (got == NULL) {
                    Py_DECREF(key);
                    goto fail;
                }
                index = got == Py_None ? -2 : PyLong_AsLong(got);
                Py_DECREF(got);
            }
            Py_DECREF(key);
            if (index == -1 && PyErr_Occurred())
                goto fail;
            if (index < 0) {
                stop = 1;
                break;
            }
            name_at = f.name;
            name_len = f.name_len;
            name_index = index;
        }
        spec_t spec;
        if (spec_of(specs, name_index, &spec) < 0) {
            stop = 1;
            break;
        }
        /* the change's images, decoded as the reader decodes them */
        int kept_type = keep[io_type] && (spec.flags & SPEC_KEEP);
        int has_before = 0, has_after = 0;
        if (values && decoded_type(io_type)) {
            int rc = OK;
            if (io_type == IO_DDL || io_type == IO_COMMENT) {
                if (!utf8_valid(d ? d : b, d_len) || (kept_type && !typed))
                    rc = INCONSISTENT; /* DDL rows: their fields are parsed in Python */
            }
            else if (io_type == IO_PK_UPDATE) {
                if (d_len < 2 || (Py_ssize_t)be16(d) > d_len - 2)
                    rc = INCONSISTENT;
                else {
                    Py_ssize_t key_end = 2 + (Py_ssize_t)be16(d);
                    rc = image_columns(d, 2, key_end, &spec, &r.before_cv);
                    if (rc == OK)
                        rc = image_columns(d, key_end, d_len, &spec, &r.after_cv);
                    has_before = has_after = 1;
                }
            }
            else if (io_type == IO_DELETE) {
                rc = image_columns(d ? d : b, 0, d_len, &spec, &r.before_cv);
                has_before = 1;
            }
            else if (io_type != IO_TRUNCATE) {
                rc = image_columns(d ? d : b, 0, d_len, &spec, &r.after_cv);
                has_after = 1;
            }
            if (rc == FAILED)
                goto fail;
            if (rc != OK || (kept_type && (spec.flags & SPEC_STOP))) {
                stop = 1;
                break;
            }
        }
        int starts = ind == 0 || ind == 3, ends = ind >= 2;
        if (starts) {
            if (in_txn) {
                rows = committed; /* the one before never ended: its writer stopped */
                rs_truncate(&r, rows);
            }
            if (upper >= 0 && pos >= upper) {
                in_txn = 0;
                done = 1;
                break;
            }
            in_txn = 1;
            txn_has_csn = has_csn;
            txn_csn = (int64_t)csn;
            txn_xid = xid;
            txn_xid_len = xid_len;
        }
        else if (!in_txn) {
            if (upper >= 0 && pos >= upper) {
                done = 1;
                break;
            }
            pos += f.length;
            continue; /* the rest of a transaction that started before this range */
        }
        if (kept_type && decoded_type(io_type) && io_type != IO_COMMENT) {
            int64_t off = (int64_t)pos;
            int32_t length = (int32_t)f.length;
            uint64_t io_time = be64(h + 8), audit_pos = be64(h + 16);
            uint32_t audit_rba = be32(h + 25);
            unsigned char io8 = (unsigned char)io_type;
            unsigned char flags = (unsigned char)((starts ? 1 : 0) | (ends ? 2 : 0));
            int32_t table = (int32_t)name_index;
            if (gb_put(&r.fixed[0], &off, 8) < 0 || gb_put(&r.fixed[1], &length, 4) < 0
                || gb_put(&r.fixed[2], &io8, 1) < 0 || gb_put(&r.fixed[3], &flags, 1) < 0
                || gb_put(&r.fixed[4], &table, 4) < 0 || gb_put(&r.fixed[5], &io_time, 8) < 0
                || gb_put(&r.fixed[6], &audit_pos, 8) < 0
                || gb_put(&r.fixed[7], &audit_rba, 4) < 0
                || gb_put(&r.fixed[8], &txn_csn, 8) < 0
                || bit_put(&r.csn_valid, rows, txn_has_csn) < 0)
                goto fail;
            int rc = OK;
            if (build & B_XID)
                rc = txn_xid ? sc_add(&r.xid, txn_xid, txn_xid_len) : sc_end(&r.xid, 0);
            if (rc == OK && (build & B_ROWID))
                rc = rowid ? sc_add(&r.rowid, rowid, rowid_len) : sc_end(&r.rowid, 0);
            if (rc == OK && !typed && (build & B_TOKENS)) {
                /* U area: name length, name, value length, value (record_sound checked it);
                 * a name given twice goes to Python (a dict keeps its first place) */
                mapcol *m = &r.maps[0];
                Py_ssize_t q = 0, first = m->keys.n;
                while (rc == OK && u != NULL && q < u_len) {
                    Py_ssize_t n = be16(u + q);
                    const unsigned char *name = u + q + 2;
                    q += 2 + n;
                    Py_ssize_t vn = be16(u + q);
                    const unsigned char *value = u + q + 2;
                    q += 2 + vn;
                    for (Py_ssize_t k = first; k < m->keys.n; k++) {
                        int32_t a, z;
                        memcpy(&a, m->keys.off.p + k * 4, 4);
                        memcpy(&z, m->keys.off.p + k * 4 + 4, 4);
                        if (z - a == n && memcmp(m->keys.data.p + a, name, (size_t)n) == 0)
                            rc = INCONSISTENT;
                    }
                    if (rc == OK)
                        rc = sc_add(&m->keys, name, n);
                    if (rc == OK)
                        rc = sc_add(&m->items, value, vn);
                }
                if (rc == OK)
                    rc = mc_end_row(m, m->keys.n > first);
            }
            if (rc == OK && values && !typed) {
                for (int k = 1; k <= 2 && rc == OK; k++) {
                    int has = k == 1 ? has_before : has_after;
                    if (!(build & (k == 1 ? B_BEFORE : B_AFTER)))
                        continue;
                    if (!has) {
                        rc = mc_end_row(&r.maps[k], 0);
                        continue;
                    }
                    rc = map_image(&r.maps[k], k == 1 ? &r.before_cv : &r.after_cv, &spec,
                                   r.seen, ++stamp);
                    if (stamp == UINT32_MAX) {
                        memset(r.seen, 0, 0x10000 * sizeof(uint32_t));
                        stamp = 0;
                    }
                }
            }
            if (rc == OK && values && typed) {
                if (build & B_AFTER)
                    rc = slot_image(r.after, wanted, nslots, has_after ? &r.after_cv : NULL,
                                    &spec, r.tmp);
                if (rc == OK && (build & B_BEFORE)) {
                    rc = slot_image(r.before, NULL, nslots, has_before ? &r.before_cv : NULL,
                                    &spec, r.tmp);
                    if (rc == OK && bit_put(&r.before_valid, rows, has_before) < 0)
                        rc = FAILED;
                }
            }
            if (rc == FAILED)
                goto fail;
            if (rc != OK) {
                stop = 1;
                break;
            }
            rows++;
        }
        pos += f.length;
        if (ends) {
            in_txn = 0;
            boundary = pos;
            committed = rows;
            if (max_rows > 0 && committed >= max_rows)
                break;
        }
    }
    if (stop)
        stop_at = pos;
    rs_truncate(&r, committed);
    columns = PyList_New(0);
    if (columns == NULL)
        goto fail;
    {
        for (int k = 0; k < N_FIXED_COLUMNS; k++) {
            const gbuf *one[1] = {&r.fixed[k]};
            if (put_bufs(columns, one, 1, 1) < 0)
                goto fail;
        }
        const gbuf *cv[1] = {&r.csn_valid};
        if (put_bufs(columns, cv, 1, 1) < 0 || put_str(columns, &r.xid, build & B_XID) < 0
            || put_str(columns, &r.rowid, build & B_ROWID) < 0)
            goto fail;
        if (!typed) {
            if (put_map(columns, &r.maps[0], build & B_TOKENS) < 0
                || put_map(columns, &r.maps[1], build & B_BEFORE) < 0
                || put_map(columns, &r.maps[2], build & B_AFTER) < 0)
                goto fail;
        }
        else {
            for (Py_ssize_t k = 0; k < nslots; k++)
                if (put_str(columns, &r.after[k], (build & B_AFTER) && wanted[k]) < 0)
                    goto fail;
            for (Py_ssize_t k = 0; k < nslots; k++)
                if (put_str(columns, &r.before[k], build & B_BEFORE) < 0)
                    goto fail;
            const gbuf *bv[1] = {&r.before_valid};
            if (put_bufs(columns, bv, 1, build & B_BEFORE) < 0)
                goto fail;
        }
    }
    result = Py_BuildValue("(nniinN)", boundary, committed, done, stop, stop_at, columns);
    columns = NULL;
fail:
    Py_XDECREF(columns);
    rs_free(&r);
    return result;
}

static PyMethodDef speedups_methods[] = {
    {"decode_columns", (PyCFunction)(void (*)(void))sp_decode_columns, METH_FASTCALL,
     "decode_columns(data, fixed, start, end) -> dict | None"},
    {"decode_record", (PyCFunction)(void (*)(void))sp_decode_record, METH_FASTCALL,
     "decode_record(buf, pos, end, record_class) -> record | None"},
    {"encode_columns", (PyCFunction)(void (*)(void))sp_encode_columns, METH_FASTCALL,
     "encode_columns(values, kinds, widths) -> bytes | None"},
    {"encode_record", (PyCFunction)(void (*)(void))sp_encode_record, METH_FASTCALL,
     "encode_record(io_type, table, data, io_time, audit_pos, audit_rba, trans_ind, "
     "before_after, continued, rowid, csn, xid, tokens) -> bytes | None"},
    {"decode_change", (PyCFunction)(void (*)(void))sp_decode_change, METH_FASTCALL,
     "decode_change(record, fixed, data, change_class, op_types) -> change | None"},
    {"scan_records", (PyCFunction)(void (*)(void))sp_scan_records, METH_FASTCALL,
     "scan_records(buf, pos, end, state, max_records, mark, mark_types) -> tuple | None"},
    {"scan_tables", (PyCFunction)(void (*)(void))sp_scan_tables, METH_FASTCALL,
     "scan_tables(buf, pos, end, row_types, counts, first) -> (pos, metadata, stop)"},
    {"change_rows", (PyCFunction)(void (*)(void))sp_change_rows, METH_FASTCALL,
     "change_rows(buf, pos, end, keep, upper, max_rows, names, specs, lookup, define, "
     "shape) -> (boundary, rows, done, stop, stop_at, columns)"},
    {"header_rows", (PyCFunction)(void (*)(void))sp_header_rows, METH_FASTCALL,
     "header_rows(buf, pos, end, keep, upper, names) -> (boundary, rows, done, stop, "
     "columns)"},
    {"split_records", (PyCFunction)(void (*)(void))sp_split_records, METH_FASTCALL,
     "split_records(blob) -> (records, io_types) | None"},
    {"register_dataclass", sp_register_dataclass, METH_O,
     "register_dataclass(cls) -> bool: build cls by filling its slots, not calling it"},
    {"set_column_kinds", (PyCFunction)(void (*)(void))sp_set_column_kinds, METH_FASTCALL,
     "set_column_kinds(variable_kinds, char, date, timestamp): the ColumnKind members"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    "trailgate.trail._speedups",
    "C versions of the trail codec's hot functions; None means 'use the Python code'.",
    -1,
    speedups_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    /* Attribute names decode_change reads, interned once. */
    struct {
        PyObject **slot;
        const char *name;
    } names[] = {{&s_io_type, "io_type"},     {&s_table, "table"},
                 {&s_io_time, "io_time"},     {&s_audit_rba, "audit_rba"},
                 {&s_audit_pos, "audit_pos"}, {&s_rowid, "rowid"},
                 {&s_tokens, "tokens"},       {&s_data, "data"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].slot == NULL && (*names[i].slot = PyUnicode_InternFromString(names[i].name)) == NULL)
            return NULL;
    }
    return PyModule_Create(&speedups_module);
}
