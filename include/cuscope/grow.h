/* grow.h - growing arrays. */
#ifndef CUSCOPE_GROW_H
#define CUSCOPE_GROW_H

#include <stddef.h>

/*
 * Make the array *p, which has room for *cap elements of size bytes, hold at least need elements:
 * the room doubles, from 64. Returns 0, or CS_ERR_NOMEM with *p and *cap as they were.
 */
int cs_grow(void **p, size_t *cap, size_t need, size_t size);

#endif
