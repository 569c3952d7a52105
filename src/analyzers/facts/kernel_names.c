/*
 * kernel_names.c - what a kernel's name says, and the kernels of the steady steps by name
 * (kernel_names.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "cuscope/grow.h"
#include "cuscope/sort.h"
#include "cuscope/u64map.h"
#include "kernel_names.h"

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Length of the source name at *p (digits then that many characters), 0 when malformed. */
static size_t source_name(const char **p)
{
	size_t n = 0;

	while (digit(**p))
		n = n * 10 + (size_t)(*(*p)++ - '0');
	if (n == 0 || strnlen(*p, n) < n)
		return 0;
	return n;
}

int fact_kernel_operands(const char *name)
{
	static const char *const forms[] = {"St5arrayIPcLm", "std::array<char*, "};

	for (size_t f = 0; f < sizeof(forms) / sizeof(*forms); f++) {
		const char *p = strstr(name, forms[f]);
		long n = 0;

		if (!p)
			continue;
		for (p += strlen(forms[f]); digit(*p) && n <= 64; p++)
			n = n * 10 + (*p - '0');
		if (n >= 1 && n <= 64)
			return (int)n;
	}
	return 0;
}

void fact_kernel_own_name(const char *name, char *buf, size_t size)
{
	const char *p = name, *last = NULL, *end;
	size_t last_n = 0;

	if (!size)
		return;
	buf[0] = '\0';
	if (!strncmp(p, "_Z", 2)) {
		p += 2;
		if (*p == 'L')
			p++;
		if (*p == 'N') {
			p++;
			while (*p && strchr("rVKRO", *p))
				p++;
			while (*p) {
				if (digit(*p)) {
					size_t n = source_name(&p);

					if (!n)
						break;
					last = p;
					last_n = n;
					p += n;
				} else if (*p == 'S') {
					p++; /* a substitution: St, Sa, ..., or S<seq-id>_ */
					if (*p && (*p >= 'a' && *p <= 'z')) {
						p++;
						continue;
					}
					while (*p && *p != '_')
						p++;
					if (*p)
						p++;
				} else {
					break; /* I (template arguments), E, C/D (ctor/dtor), ... */
				}
			}
		} else if (digit(*p)) {
			last_n = source_name(&p);
			last = last_n ? p : NULL;
		}
		if (last) {
			if (last_n >= size)
				last_n = size - 1;
			memcpy(buf, last, last_n);
			buf[last_n] = '\0';
			return;
		}
	}
	end = name + strcspn(name, "<(");
	for (p = end; p > name; p--)
		if (p[-1] == ':' || p[-1] == ' ')
			break;
	if ((size_t)(end - p) >= size)
		end = p + size - 1;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
}

static int cmp_name_time(const void *pa, const void *pb)
{
	const struct fact_name_time *x = pa, *y = pb;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

int fact_kernel_names(const cs_analysis *a, const cs_steps *s,
		      int (*match)(const cs_a_kernel *k, void *arg), void *arg,
		      struct fact_name_time **out, int32_t *n, int64_t *launches)
{
	struct fact_name_time *v = NULL;
	struct u64map index; /* name id -> index in v */
	int32_t m = 0;
	size_t cap = 0;

	if (launches)
		*launches = 0;
	u64map_init(&index, sizeof(int32_t));
	for (int64_t i = 0; i < a->nkernels; i++) {
		const cs_a_kernel *k = &a->kernels[i];
		int32_t j, *slot;
		int created;

		if (!match(k, arg) || k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
		    k->end < k->start ||
		    cs_steps_find_steady(s, cs_launch_time(k->launch_start, k->start)) < 0)
			continue;
		if (launches)
			(*launches)++;
		slot = u64map_put(&index, (uint64_t)k->name_id, &created);
		if (!slot || (created && cs_grow((void **)&v, &cap, (size_t)m + 1, sizeof(*v)))) {
			u64map_free(&index);
			free(v);
			return CS_ERR_NOMEM;
		}
		if (created) {
			*slot = m;
			memset(&v[m], 0, sizeof(v[m]));
			v[m].name_id = k->name_id;
			v[m].stack_id = CS_ID_NONE;
			m++;
		}
		j = *slot;
		cs_sat_accum(&v[j].ns, k->end - k->start);
		v[j].launches++;
		cs_sat_accum(&v[j].blocks, k->grid_blocks);
		if (v[j].stack_id == CS_ID_NONE)
			v[j].stack_id = k->stack_id;
	}
	u64map_free(&index);
	if (m > 1)
		cs_sort(v, (size_t)m, sizeof(*v), cmp_name_time);
	*out = v;
	*n = m;
	return 0;
}

struct fact_name_memo *fact_name_memo_new(int (*test)(const char *name))
{
	struct fact_name_memo *m = malloc(sizeof(*m));

	if (!m)
		return NULL;
	m->test = test;
	for (size_t i = 0; i < FACT_NAME_MEMO; i++)
		m->id[i] = -1;
	return m;
}

int fact_name_memo_get(struct fact_name_memo *m, const cs_analysis *a, int64_t id)
{
	size_t slot = (size_t)((uint64_t)id % FACT_NAME_MEMO);

	if (m->id[slot] != id) {
		m->id[slot] = id;
		m->answer[slot] = (signed char)m->test(cs_analysis_string(a, id));
	}
	return m->answer[slot];
}

int fact_kernel_name_marks(const cs_analysis *a, uint32_t pid,
			   int (*test)(const char *name, const char *own), int8_t **marks,
			   int64_t *nnames)
{
	int8_t *m;
	int any = 0;

	*nnames = cs_analysis_kernel_names(a); /* bounded by the strings: load.c */
	*marks = m = calloc((size_t)*nnames + 1, 1);
	if (!m)
		return CS_ERR_NOMEM;
	for (int64_t i = 0; i < a->nkernels; i++) {
		int64_t id = a->kernels[i].name_id;
		const char *name;
		char own[256];

		if (id < 0 || a->kernels[i].pid != pid || m[id])
			continue;
		name = cs_analysis_string(a, id);
		fact_kernel_own_name(name, own, sizeof(own));
		m[id] = test(name, own) ? 1 : -1;
		any |= m[id] > 0;
	}
	return any;
}
