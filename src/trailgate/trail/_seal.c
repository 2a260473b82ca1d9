/* Encrypted 11.2 records in C: trail/sealing.py's seal and open, byte for byte, with
 * OpenSSL's AES-GCM and HMAC-SHA256.  Optional, like the codec's other accelerators: without
 * it (no compiler, no libcrypto) sealing.py does the same through the cryptography package.
 *
 *   seal(record, enc_key, mac_key) -> bytes | None
 *       the sealed record; None when the record is too long or not well formed (Python
 *       then splits it or says what is wrong)
 *   open_run(buf, pos, end, enc_key) -> (bytes, stop, failed)
 *       the records from pos opened (same length), as far as whole records go; stop is
 *       where it stopped, failed is True when the record at stop is not one it can open
 *       (in the clear, changed, wrong key, malformed): Python then says which.
 *
 * Layout (docs/trail-format.md): G head, H area, clear areas (T), E area = nonce (12) |
 * ciphertext of the D and U sub-records | tag (16), Z trailer.  The associated data is
 * every byte outside the nonce, ciphertext and tag; the nonce is the first 12 bytes of
 * HMAC-SHA256(mac_key, associated data || plaintext).  An opened record is H, D, clear
 * areas, U, then an S area holding nonce and tag: the sealed record's length.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <openssl/evp.h>
#include <string.h>

#define NONCE 12
#define TAG 16
#define OVERHEAD (4 + NONCE + TAG)
#define MAX_RECORD 0xFFFF

static unsigned
be16(const unsigned char *p)
{
    return ((unsigned)p[0] << 8) | p[1];
}

static void
put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static const EVP_CIPHER *
gcm_for(Py_ssize_t keylen)
{
    switch (keylen) {
    case 16: return EVP_aes_128_gcm();
    case 24: return EVP_aes_192_gcm();
    case 32: return EVP_aes_256_gcm();
    default: return NULL;
    }
}

/* A context keyed for AES-GCM in direction enc (1 seal, 0 open), or NULL. */
static EVP_CIPHER_CTX *
keyed(const EVP_CIPHER *cipher, const unsigned char *key, int enc)
{
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL)
        return NULL;
    if (EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, enc) != 1
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, NONCE, NULL) != 1
        || EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, enc) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

/* AES-GCM over data (in place) with two pieces of associated data, on a keyed context;
 * enc: 1 seal (tag written), 0 open (tag checked).  Returns 1 on success. */
static int
gcm(EVP_CIPHER_CTX *ctx, int enc, const unsigned char *nonce,
    const unsigned char *aad1, int aad1_len, const unsigned char *aad2, int aad2_len,
    unsigned char *data, int len, unsigned char *tag)
{
    int n = 0;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, NULL, nonce, enc) != 1
        || EVP_CipherUpdate(ctx, NULL, &n, aad1, aad1_len) != 1
        || EVP_CipherUpdate(ctx, NULL, &n, aad2, aad2_len) != 1)
        return 0;
    if (len > 0 && EVP_CipherUpdate(ctx, data, &n, data, len) != 1)
        return 0;
    if (!enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag) != 1)
        return 0;
    if (EVP_CipherFinal_ex(ctx, data + len, &n) != 1)
        return 0;
    if (enc && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, tag) != 1)
        return 0;
    return 1;
}

/* The sealing key of the last seal() call, kept keyed (seal runs with the GIL held, so
 * one set is enough): a writer seals every record of a file with one key. */
static struct {
    EVP_CIPHER_CTX *ctx;
    EVP_MD_CTX *inner, *outer, *work; /* HMAC-SHA256 keyed with the nonce key */
    unsigned char key[32], mac[64];
    Py_ssize_t keylen, maclen;
} sealing;

static int
sealing_for(const EVP_CIPHER *cipher, const Py_buffer *key, const Py_buffer *mac)
{
    if (sealing.ctx != NULL && sealing.keylen == key->len && sealing.maclen == mac->len
        && memcmp(sealing.key, key->buf, (size_t)key->len) == 0
        && memcmp(sealing.mac, mac->buf, (size_t)mac->len) == 0)
        return 1;
    if (key->len > 32 || mac->len > 64)
        return 0;
    EVP_CIPHER_CTX_free(sealing.ctx);
    sealing.ctx = keyed(cipher, key->buf, 1);
    if (sealing.inner == NULL) {
        sealing.inner = EVP_MD_CTX_new();
        sealing.outer = EVP_MD_CTX_new();
        sealing.work = EVP_MD_CTX_new();
    }
    if (sealing.ctx == NULL || sealing.inner == NULL || sealing.outer == NULL
        || sealing.work == NULL)
        return 0;
    unsigned char ipad[64], opad[64];
    memset(ipad, 0x36, sizeof ipad);
    memset(opad, 0x5c, sizeof opad);
    for (Py_ssize_t i = 0; i < mac->len; i++) {
        ipad[i] ^= ((const unsigned char *)mac->buf)[i];
        opad[i] ^= ((const unsigned char *)mac->buf)[i];
    }
    if (EVP_DigestInit_ex(sealing.inner, EVP_sha256(), NULL) != 1
        || EVP_DigestUpdate(sealing.inner, ipad, 64) != 1
        || EVP_DigestInit_ex(sealing.outer, EVP_sha256(), NULL) != 1
        || EVP_DigestUpdate(sealing.outer, opad, 64) != 1) {
        EVP_CIPHER_CTX_free(sealing.ctx);
        sealing.ctx = NULL;
        return 0;
    }
    memcpy(sealing.key, key->buf, (size_t)key->len);
    memcpy(sealing.mac, mac->buf, (size_t)mac->len);
    sealing.keylen = key->len;
    sealing.maclen = mac->len;
    return 1;
}

/* HMAC-SHA256 (the sealing nonce key) of a | b | c into digest (32 bytes). */
static int
nonce_mac(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen,
          const unsigned char *c, size_t clen, unsigned char *digest)
{
    unsigned char inner[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *w = sealing.work;
    return EVP_MD_CTX_copy_ex(w, sealing.inner) == 1 && EVP_DigestUpdate(w, a, alen) == 1
        && EVP_DigestUpdate(w, b, blen) == 1 && EVP_DigestUpdate(w, c, clen) == 1
        && EVP_DigestFinal_ex(w, inner, &n) == 1 && EVP_MD_CTX_copy_ex(w, sealing.outer) == 1
        && EVP_DigestUpdate(w, inner, n) == 1 && EVP_DigestFinal_ex(w, digest, &n) == 1;
}

static PyObject *
seal_seal(PyObject *module, PyObject *args)
{
    Py_buffer rec, key, mac;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*", &rec, &key, &mac))
        return NULL;
    const unsigned char *r = rec.buf;
    Py_ssize_t n = rec.len, total = n + OVERHEAD;
    const EVP_CIPHER *cipher = gcm_for(key.len);
    if (cipher == NULL || n < 12 || total > MAX_RECORD || r[0] != 'G' || r[4] != 'H')
        goto none;
    Py_ssize_t hend = 8 + be16(r + 6), body_end = n - 4;
    if (hend > body_end)
        goto none;
    /* sizes of the clear and secret sub-records */
    Py_ssize_t clear = 0, secret = 0;
    for (Py_ssize_t p = hend; p < body_end;) {
        if (p + 4 > body_end)
            goto none;
        Py_ssize_t len = 4 + be16(r + p + 2);
        if (p + len > body_end)
            goto none;
        if (r[p] == 'D' || r[p] == 'U')
            secret += len;
        else
            clear += len;
        p += len;
    }
    result = PyBytes_FromStringAndSize(NULL, total);
    if (result == NULL)
        goto release;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(result);
    memcpy(o, r, (size_t)hend);
    put16(o + 2, (unsigned)total);
    Py_ssize_t q = hend, ev = hend + clear + 4, s = ev + NONCE;
    for (Py_ssize_t p = hend; p < body_end;) {
        Py_ssize_t len = 4 + be16(r + p + 2);
        if (r[p] == 'D' || r[p] == 'U') {
            memcpy(o + s, r + p, (size_t)len);
            s += len;
        }
        else {
            memcpy(o + q, r + p, (size_t)len);
            q += len;
        }
        p += len;
    }
    o[q] = 'E';
    o[q + 1] = 0;
    put16(o + q + 2, (unsigned)(NONCE + secret + TAG));
    unsigned char *tail = o + total - 4;
    tail[0] = r[n - 4];
    tail[1] = r[n - 3];
    put16(tail + 2, (unsigned)total);
    /* nonce = HMAC(mac, aad || plaintext) */
    unsigned char digest[EVP_MAX_MD_SIZE];
    if (!sealing_for(cipher, &key, &mac)
        || !nonce_mac(o, (size_t)ev, tail, 4, o + ev + NONCE, (size_t)secret, digest)) {
        Py_CLEAR(result);
        goto none;
    }
    memcpy(o + ev, digest, NONCE);
    if (!gcm(sealing.ctx, 1, o + ev, o, (int)ev, tail, 4, o + ev + NONCE, (int)secret,
             o + ev + NONCE + secret)) {
        Py_CLEAR(result);
        goto none;
    }
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
release:
    PyBuffer_Release(&rec);
    PyBuffer_Release(&key);
    PyBuffer_Release(&mac);
    return result;
}

/* Open the sealed record r[0:len] into out (len bytes); 0 on success, -1 when it is not
 * one this can open (in the clear, malformed, fails its tag). */
static int
open_one(EVP_CIPHER_CTX *ctx, const unsigned char *r, Py_ssize_t len, unsigned char *out,
         unsigned char *plain)
{
    if (len < 12 || r[0] != 'G' || r[4] != 'H' || (Py_ssize_t)be16(r + 2) != len)
        return -1;
    Py_ssize_t hend = 8 + be16(r + 6), body_end = len - 4, e = -1, e_end = 0;
    if (hend > body_end)
        return -1;
    for (Py_ssize_t p = hend; p < body_end;) {
        if (p + 4 > body_end)
            return -1;
        Py_ssize_t sl = 4 + be16(r + p + 2);
        if (p + sl > body_end)
            return -1;
        if (r[p] == 'E') {
            e = p;
            e_end = p + sl;
            break;
        }
        p += sl;
    }
    if (e < 0 || e_end - e - 4 < NONCE + TAG)
        return -1;
    const unsigned char *nonce = r + e + 4;
    Py_ssize_t ct = e_end - e - 4 - NONCE - TAG;
    unsigned char tag[TAG];
    memcpy(tag, r + e_end - TAG, TAG);
    memcpy(plain, nonce + NONCE, (size_t)ct);
    if (!gcm(ctx, 0, nonce, r, (int)(e + 4), r + e_end, (int)(len - e_end), plain, (int)ct,
             tag))
        return -1;
    if (ct < 4 || plain[0] != 'D')
        return -1;
    Py_ssize_t d_end = 4 + be16(plain + 2);
    if (d_end > ct)
        return -1;
    unsigned char *o = out;
    memcpy(o, r, (size_t)hend);
    o += hend;
    memcpy(o, plain, (size_t)d_end);
    o += d_end;
    memcpy(o, r + hend, (size_t)(e - hend));
    o += e - hend;
    memcpy(o, r + e_end, (size_t)(body_end - e_end));
    o += body_end - e_end;
    memcpy(o, plain + d_end, (size_t)(ct - d_end));
    o += ct - d_end;
    o[0] = 'S';
    o[1] = 0;
    put16(o + 2, NONCE + TAG);
    memcpy(o + 4, nonce, NONCE);
    memcpy(o + 4 + NONCE, tag, TAG);
    o += 4 + NONCE + TAG;
    memcpy(o, r + body_end, 4);
    return 0;
}

static PyObject *
seal_open_run(PyObject *module, PyObject *args)
{
    Py_buffer buf, key;
    Py_ssize_t pos, end;
    PyObject *out = NULL, *result = NULL;
    unsigned char *plain = NULL;
    EVP_CIPHER_CTX *ctx = NULL;
    if (!PyArg_ParseTuple(args, "y*nny*", &buf, &pos, &end, &key))
        return NULL;
    const EVP_CIPHER *cipher = gcm_for(key.len);
    if (cipher == NULL || pos < 0 || end > buf.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "open_run: bad key length or range");
        goto done;
    }
    const unsigned char *b = buf.buf;
    Py_ssize_t stop = pos;
    while (stop + 4 <= end) {
        Py_ssize_t len = be16(b + stop + 2);
        if (len < 12 || stop + len > end)
            break;
        stop += len;
    }
    out = PyBytes_FromStringAndSize(NULL, stop - pos);
    plain = PyMem_Malloc(MAX_RECORD);
    ctx = keyed(cipher, key.buf, 0);
    if (out == NULL || plain == NULL || ctx == NULL) {
        if (out != NULL)
            PyErr_NoMemory();
        goto done;
    }
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    Py_ssize_t p = pos;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < stop) {
        Py_ssize_t len = be16(b + p + 2);
        if (open_one(ctx, b + p, len, o + (p - pos), plain) < 0) {
            failed = 1;
            break;
        }
        p += len;
    }
    Py_END_ALLOW_THREADS
    if (failed && _PyBytes_Resize(&out, p - pos) < 0)
        goto done;
    result = Py_BuildValue("(Onn)", out, p, (Py_ssize_t)failed);
done:
    Py_XDECREF(out);
    PyMem_Free(plain);
    EVP_CIPHER_CTX_free(ctx);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&key);
    return result;
}

static PyMethodDef methods[] = {
    {"seal", seal_seal, METH_VARARGS, "seal(record, enc_key, mac_key) -> bytes | None"},
    {"open_run", seal_open_run, METH_VARARGS,
     "open_run(buf, pos, end, enc_key) -> (opened bytes, stop, failed)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_seal", "Encrypted trail records in C (trail/sealing.py).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit__seal(void)
{
    return PyModule_Create(&module);
}
