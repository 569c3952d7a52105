/* grow.h - growing arrays, and sorting them. */
#ifndef CUSCOPE_GROW_H
#define CUSCOPE_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make the array *p, which has room for *cap elements of size bytes, hold at least need elements:
 * the room doubles, from 64. Returns 0, or CS_ERR_NOMEM with *p and *cap as they were.
 */
int cs_grow(void **p, size_t *cap, size_t need, size_t size);

/* A growing array of int64 values; zeroed, it is empty. */
struct cs_i64s {
	int64_t *v;
	int64_t n;
	size_t cap;
};
/* Append v: 0, or CS_ERR_NOMEM with x as it was. */
int cs_i64s_push(struct cs_i64s *x, int64_t v);
/* Free x's values and empty it. */
void cs_i64s_free(struct cs_i64s *x);

/* Arrays of this many bytes or more are aligned to (transparent) huge pages by cs_big_alloc. */
#define CS_HUGE_PAGE	  ((size_t)2 << 20)
#define CS_HUGE_ARRAY_MIN ((size_t)8 << 20)
/*
 * Allocate bytes (at least one) for a large array filled row by row: from CS_HUGE_ARRAY_MIN on,
 * aligned to huge pages and advised to use them, which saves a page fault every 4 KiB. Freed with
 * free(); NULL without memory.
 */
void *cs_big_alloc(size_t bytes);

/* qsort() for arrays that may be empty, and NULL then (qsort(NULL, 0, ...) is undefined). */
static inline void cs_sort(void *base, size_t n, size_t size,
			   int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

#endif
