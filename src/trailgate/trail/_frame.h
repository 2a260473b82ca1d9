/*
 * The trail record's frame (docs/trail-format.md), for trailgate's C extensions: the G/Z
 * framing, the H area's fixed part and table name, and the sub-records after it.  Header
 * only (static inline): each extension is a shared object of its own, and each includes
 * this file, so they read records one way.
 *
 * Memory safety: every read is checked against `end`; lengths read from the data are
 * compared by subtraction from the end, so nothing can overflow.
 */
#ifndef TRAILGATE_TRAIL_FRAME_H
#define TRAILGATE_TRAIL_FRAME_H

#include <Python.h>

#include <stdint.h>
#include <string.h>

#define H_FIXED 34
#define MIN_G_LENGTH (8 + 4 + H_FIXED + 1) /* G/Z headers, H header, fixed part, NUL */
#define TYPE_G 'G'
#define TYPE_Z 'Z'
#define TYPE_H 'H'

static inline unsigned
be16(const unsigned char *p)
{
    return ((unsigned)p[0] << 8) | p[1];
}

static inline uint32_t
be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t
be64(const unsigned char *p)
{
    return ((uint64_t)be32(p) << 32) | be32(p + 4);
}

/* What frame_at finds. */
enum { FRAME_OK = 0, FRAME_SHORT = 1, FRAME_BAD = 2 };

typedef struct {
    unsigned flag;             /* the G record's flag byte */
    Py_ssize_t length;         /* the whole record's length */
    const unsigned char *h;    /* the H area's fixed part (H_FIXED bytes) */
    const unsigned char *name; /* the table name, NUL-terminated */
    Py_ssize_t name_len;
    Py_ssize_t body;     /* offset of the first sub-record after the H area */
    Py_ssize_t body_end; /* offset of the Z trailer */
} Frame;

/* The G record at b[pos]: FRAME_SHORT when its bytes do not all lie before `end` (a record
 * still being written, or a buffer's edge), FRAME_BAD when its G/Z framing or H area is
 * inconsistent (Python's reader then says how). */
static inline int
frame_at(const unsigned char *b, Py_ssize_t pos, Py_ssize_t end, Frame *f)
{
    if (end - pos < 4)
        return FRAME_SHORT;
    if (b[pos] != TYPE_G)
        return FRAME_BAD;
    f->flag = b[pos + 1];
    f->length = be16(b + pos + 2);
    if (f->length > end - pos)
        return FRAME_SHORT;
    Py_ssize_t rend = pos + f->length;
    if (f->length < MIN_G_LENGTH || b[rend - 4] != TYPE_Z || b[rend - 3] != f->flag
        || (Py_ssize_t)be16(b + rend - 2) != f->length || b[pos + 4] != TYPE_H)
        return FRAME_BAD;
    /* MIN_G_LENGTH guarantees the H header's four bytes lie inside the body. */
    Py_ssize_t hlen = be16(b + pos + 6), hstart = pos + 8;
    f->body_end = rend - 4;
    if (hlen < H_FIXED + 1 || hlen > f->body_end - hstart)
        return FRAME_BAD;
    f->h = b + hstart;
    f->name = f->h + H_FIXED;
    const unsigned char *nul = memchr(f->name, 0, (size_t)(hlen - H_FIXED));
    if (nul == NULL)
        return FRAME_BAD;
    f->name_len = nul - f->name;
    f->body = hstart + hlen;
    return FRAME_OK;
}

/* The sub-record at b[*p] (type, value, value length), *p moved past it; -1 when it runs
 * past `end`. */
static inline int
next_sub(const unsigned char *b, Py_ssize_t *p, Py_ssize_t end, unsigned char *type,
         const unsigned char **value, Py_ssize_t *n)
{
    if (end - *p < 4)
        return -1;
    *type = b[*p];
    *n = be16(b + *p + 2);
    if (*n > end - *p - 4)
        return -1;
    *value = b + *p + 4;
    *p += 4 + *n;
    return 0;
}

#endif
