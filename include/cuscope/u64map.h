/*
 * u64map.h - an open-addressing hash map from uint64_t keys to fixed-size values: the spool
 * importer's string, stack and correlation id maps of one process, the trace writer's overview
 * tracks, the analyzers' kernel name ids (steps.c), stream groups (load.c) and allocation sizes by
 * address (facts/release_bursts.c), the gate's kernel name ids and the kernel table of `cuscope
 * stats`.
 *
 * Linear probing with backward-shift deletion, so that deleting keeps probe chains short and needs
 * no tombstones. Values are stored inline; a pointer to a value stays valid until the next
 * u64map_put() (which may grow the table) or deletion. Iterate with `for (i = 0; i < m->cap; i++)
 * if (m->used[i]) ...`; deleting slot i with u64map_del_at() moves a later entry into it, so look
 * at slot i again before going on.
 */
#ifndef CUSCOPE_SPOOL_U64MAP_H
#define CUSCOPE_SPOOL_U64MAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct u64map {
	uint64_t *keys;
	unsigned char *used;
	unsigned char *vals;
	size_t vsize; /* bytes of one value */
	size_t cap;   /* slots, a power of two; 0 before the first put */
	size_t n;     /* entries */
};

static inline void u64map_init(struct u64map *m, size_t vsize)
{
	memset(m, 0, sizeof(*m));
	m->vsize = vsize;
}

static inline void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->used);
	free(m->vals);
	m->keys = NULL;
	m->used = NULL;
	m->vals = NULL;
	m->cap = m->n = 0;
}

static inline size_t u64map_slot(const struct u64map *m, uint64_t key)
{
	/* murmur3's finalizer: ids are often dense and sequential */
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	key *= 0xc4ceb9fe1a85ec53ull;
	key ^= key >> 33;
	return (size_t)key & (m->cap - 1);
}

static inline void *u64map_val(const struct u64map *m, size_t slot)
{
	return m->vals + slot * m->vsize;
}

static inline void *u64map_get(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->n)
		return NULL;
	for (i = u64map_slot(m, key); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return u64map_val(m, i);
	return NULL;
}

static inline int u64map_grow(struct u64map *m)
{
	struct u64map nm;

	nm = *m;
	nm.cap = m->cap ? m->cap * 2 : 64;
	nm.n = m->n;
	nm.keys = malloc(nm.cap * sizeof(*nm.keys));
	nm.used = calloc(nm.cap, 1);
	nm.vals = malloc(nm.cap * m->vsize);
	if (!nm.keys || !nm.used || !nm.vals) {
		free(nm.keys);
		free(nm.used);
		free(nm.vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->used[i])
			continue;
		for (j = u64map_slot(&nm, m->keys[i]); nm.used[j]; j = (j + 1) & (nm.cap - 1))
			;
		nm.used[j] = 1;
		nm.keys[j] = m->keys[i];
		memcpy(u64map_val(&nm, j), u64map_val(m, i), m->vsize);
	}
	u64map_free(m);
	*m = nm;
	return 0;
}

/*
 * The value of key, inserted (zero-filled, *created set to 1) when it was not there. NULL when out
 * of memory.
 */
static inline void *u64map_put(struct u64map *m, uint64_t key, int *created)
{
	size_t i;

	*created = 0;
	if ((m->n + 1) * 2 > m->cap && u64map_grow(m))
		return NULL;
	for (i = u64map_slot(m, key); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return u64map_val(m, i);
	m->used[i] = 1;
	m->keys[i] = key;
	memset(u64map_val(m, i), 0, m->vsize);
	m->n++;
	*created = 1;
	return u64map_val(m, i);
}

/* Remove the entry in slot i, shifting back the entries of its probe chain. */
static inline void u64map_del_at(struct u64map *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	m->used[i] = 0;
	m->n--;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->used[j])
			return;
		home = u64map_slot(m, m->keys[j]);
		/* Entry j may move into the hole i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		m->keys[i] = m->keys[j];
		memcpy(u64map_val(m, i), u64map_val(m, j), m->vsize);
		m->used[i] = 1;
		m->used[j] = 0;
		i = j;
	}
}

static inline void u64map_del(struct u64map *m, uint64_t key)
{
	size_t i;

	if (!m->n)
		return;
	for (i = u64map_slot(m, key); m->used[i]; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			u64map_del_at(m, i);
			return;
		}
	}
}

#endif
