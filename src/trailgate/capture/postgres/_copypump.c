/* COPY data moved in C: the server sends one CopyData message per row, and a loop over
 * rows in Python costs more than the rows themselves.
 *
 * libpq's functions are not linked here: psycopg has libpq loaded already, and the caller
 * passes the addresses of PQgetCopyData, PQputCopyData and PQfreemem (found with ctypes)
 * with the PGconn pointers psycopg exposes (pgconn_ptr).  The connections must be in
 * blocking mode.  Both functions stop after about max_bytes so the caller can report
 * progress, and may be called again: the COPY goes on where it stopped.  The pump sends
 * the rows it reads in blocks (PUMP_BLOCK), all of them before it returns.
 *
 *   pump(src, dst, get, put, free, max_bytes) -> (bytes moved, finished)
 *   gather(src, get, free, max_bytes) -> bytes (b"" once the COPY is finished)
 *
 * A negative result from libpq raises RuntimeError; the caller reads the connection's
 * error and the COPY's result as usual.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef int (*get_copy_data_fn)(void *conn, char **buffer, int async);
typedef int (*put_copy_data_fn)(void *conn, const char *buffer, int nbytes);
typedef void (*freemem_fn)(void *ptr);

/* Rows gathered into one CopyData message of about this many bytes before it is sent: the
 * COPY data is a byte stream whose messages need not match rows, and the target server
 * handles one message per 64 kB instead of one per row. */
#define PUMP_BLOCK 65536

static PyObject *
pump(PyObject *self, PyObject *args)
{
    unsigned long long src, dst, get, put, fre;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "KKKKKn", &src, &dst, &get, &put, &fre, &max_bytes))
        return NULL;
    get_copy_data_fn get_data = (get_copy_data_fn)(uintptr_t)get;
    put_copy_data_fn put_data = (put_copy_data_fn)(uintptr_t)put;
    freemem_fn free_mem = (freemem_fn)(uintptr_t)fre;
    char *block = PyMem_RawMalloc(PUMP_BLOCK);
    if (block == NULL)
        return PyErr_NoMemory();
    long long moved = 0;
    size_t held = 0;
    int n = 0, put_ok = 1, finished = 0;
    Py_BEGIN_ALLOW_THREADS
    while (moved < max_bytes) {
        char *buf = NULL;
        n = get_data((void *)(uintptr_t)src, &buf, 0);
        if (n < 0) {
            finished = (n == -1);
            break;
        }
        if (held + (size_t)n > PUMP_BLOCK && held > 0) {
            put_ok = put_data((void *)(uintptr_t)dst, block, (int)held);
            held = 0;
            if (put_ok != 1) {
                free_mem(buf);
                break;
            }
        }
        if ((size_t)n > PUMP_BLOCK) {  /* a row larger than a block goes alone */
            put_ok = put_data((void *)(uintptr_t)dst, buf, n);
        } else {
            memcpy(block + held, buf, (size_t)n);
            held += (size_t)n;
        }
        free_mem(buf);
        if (put_ok != 1)
            break;
        moved += n;
    }
    if (put_ok == 1 && held > 0)  /* what is held goes before the call returns */
        put_ok = put_data((void *)(uintptr_t)dst, block, (int)held);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(block);
    if (n == -2)
        return PyErr_Format(PyExc_RuntimeError, "reading the COPY failed");
    if (put_ok != 1)
        return PyErr_Format(PyExc_RuntimeError, "writing the COPY failed");
    return Py_BuildValue("(LO)", moved, finished ? Py_True : Py_False);
}

static PyObject *
gather(PyObject *self, PyObject *args)
{
    unsigned long long src, get, fre;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "KKKn", &src, &get, &fre, &max_bytes))
        return NULL;
    get_copy_data_fn get_data = (get_copy_data_fn)(uintptr_t)get;
    freemem_fn free_mem = (freemem_fn)(uintptr_t)fre;
    size_t cap = (size_t)max_bytes + 65536, len = 0;
    char *out = PyMem_RawMalloc(cap);
    if (out == NULL)
        return PyErr_NoMemory();
    int n = 0, failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (len < (size_t)max_bytes) {
        char *buf = NULL;
        n = get_data((void *)(uintptr_t)src, &buf, 0);
        if (n < 0)
            break;
        if (len + (size_t)n > cap) {
            size_t more = cap * 2 + (size_t)n;
            char *grown = PyMem_RawRealloc(out, more);
            if (grown == NULL) {
                free_mem(buf);
                failed = 1;
                break;
            }
            out = grown;
            cap = more;
        }
        memcpy(out + len, buf, (size_t)n);
        len += (size_t)n;
        free_mem(buf);
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyMem_RawFree(out);
        return PyErr_NoMemory();
    }
    if (n == -2) {
        PyMem_RawFree(out);
        return PyErr_Format(PyExc_RuntimeError, "reading the COPY failed");
    }
    PyObject *result = PyBytes_FromStringAndSize(out, (Py_ssize_t)len);
    PyMem_RawFree(out);
    return result;
}

static PyMethodDef methods[] = {
    {"pump", pump, METH_VARARGS, "Move COPY data from one connection to another."},
    {"gather", gather, METH_VARARGS, "Read COPY data into one bytes object."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_copypump", "COPY data moved in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__copypump(void)
{
    return PyModule_Create(&module);
}
