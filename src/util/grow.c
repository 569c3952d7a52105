/* grow.c - growing arrays (include/cuscope/grow.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cuscope/error.h"
#include "cuscope/grow.h"

int cs_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (size && n > SIZE_MAX / size)
		return CS_ERR_NOMEM;
	q = realloc(*p, n * size);
	if (!q)
		return CS_ERR_NOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int cs_i64s_push(struct cs_i64s *x, int64_t v)
{
	if (cs_grow((void **)&x->v, &x->cap, (size_t)x->n + 1, sizeof(*x->v)))
		return CS_ERR_NOMEM;
	x->v[x->n++] = v;
	return 0;
}

void cs_i64s_free(struct cs_i64s *x)
{
	free(x->v);
	memset(x, 0, sizeof(*x));
}

void *cs_big_alloc(size_t bytes)
{
	void *p;

	if (bytes < CS_HUGE_ARRAY_MIN)
		return malloc(bytes ? bytes : 1);
	if (posix_memalign(&p, CS_HUGE_PAGE, bytes))
		return NULL;
	madvise(p, bytes & ~(CS_HUGE_PAGE - 1), MADV_HUGEPAGE);
	return p;
}
