/*
 * demangle.c - demangled and short kernel names (include/cuscope/demangle.h), with one cache.
 *
 * The Itanium ABI demangler is the C++ runtime's (__cxa_demangle, libstdc++; docs/dependencies.md).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"

/* From the C++ runtime (libstdc++): the Itanium ABI demangler. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define CACHE_MAX (1u << 16)

struct entry {
	char *raw;
	const char *full; /* demangled, or raw */
	const char *shrt; /* short form, or full */
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *slots; /* open addressing, nslots a power of two */
static size_t nslots, nused;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int grow(void)
{
	size_t n = nslots ? nslots * 2 : 256;
	struct entry *v = calloc(n, sizeof(*v));

	if (!v)
		return -1;
	for (size_t i = 0; i < nslots; i++) {
		size_t s;

		if (!slots[i].raw)
			continue;
		s = (size_t)hash_str(slots[i].raw) & (n - 1);
		while (v[s].raw)
			s = (s + 1) & (n - 1);
		v[s] = slots[i];
	}
	free(slots);
	slots = v;
	nslots = n;
	return 0;
}

/* Whether s is "(anonymous namespace)", a parenthesized group that is no parameter list. */
static int is_anon(const char *s)
{
	return !strncmp(s, "(anonymous namespace)", 21);
}

#define BRIEF_NESTED_MAX 20 /* nested template arguments up to this long are kept */
#define BRIEF_ARGS_MAX	 80 /* outer template arguments longer than this are all "..." */

static int opens(char c)
{
	return c == '<' || c == '(' || c == '{' || c == '[';
}

static int closes(char c)
{
	return c == '>' || c == ')' || c == '}' || c == ']';
}

/* The index of the bracket that closes the one at s[i] (s[0..n)), or n. */
static size_t matching(const char *s, size_t n, size_t i)
{
	int depth = 0;

	for (; i < n; i++) {
		if (opens(s[i]))
			depth++;
		else if (closes(s[i]) && --depth == 0)
			return i;
	}
	return n;
}

static char *brief_args(char *w, const char *a, size_t n, size_t max);

/*
 * One template argument a[0..n), briefly, written at w: a lambda as its enclosing function
 * ("masked_fill_kernel::lambda"), a type or value without its namespaces, its own template
 * arguments kept when short and plain, else "<...>". Returns the end of what was written.
 */
static char *brief_arg(char *w, const char *a, size_t n, size_t max)
{
	size_t i, last = 0;

	while (n > 0 && a[0] == ' ')
		a++, n--;
	while (n > 0 && a[n - 1] == ' ')
		n--;
	/* the last component outside brackets */
	for (i = 0; i < n; i++) {
		if (opens(a[i]))
			i = matching(a, n, i);
		else if (a[i] == ':' && i + 1 < n && a[i + 1] == ':')
			last = i + 2;
	}
	if (n - last >= 7 && !strncmp(a + last, "{lambda", 7)) {
		/* the first component of the name that is a function: "f(...)::{lambda()#1}" */
		size_t comp = 0;

		for (i = 0; i < n; i++) {
			if (a[i] == '(' &&
			    !(i == comp && !strncmp(a + i, "(anonymous namespace)", 21))) {
				size_t b = comp;

				while (b < i && a[b] != '<')
					b++;
				if (b > comp) {
					memcpy(w, a + comp, b - comp);
					w += b - comp;
					/* the arguments of a function template say which one
					 * (gpu_kernel_impl<direct_copy_kernel_cuda::lambda>) */
					if (b < i) {
						size_t e = matching(a, i, b);

						*w++ = '<';
						w = brief_args(w, a + b + 1, e - b - 1, max);
						*w++ = '>';
					}
					memcpy(w, "::", 2);
					w += 2;
				}
				break;
			}
			if (opens(a[i])) {
				i = matching(a, n, i);
			} else if (a[i] == ':' && i + 1 < n && a[i + 1] == ':') {
				comp = i + 2;
				i++;
			}
		}
		memcpy(w, "lambda", 6);
		return w + 6;
	}
	for (i = last; i < n; i++) {
		if (a[i] == '<') {
			size_t e = matching(a, n, i);
			int plain = e - i - 1 <= BRIEF_NESTED_MAX && e < n;

			for (size_t k = i + 1; plain && k < e; k++)
				plain = !opens(a[k]);
			if (plain) {
				memcpy(w, a + i, e - i + 1);
				w += e - i + 1;
			} else {
				memcpy(w, "<...>", 5);
				w += 5;
			}
			i = e;
		} else {
			*w++ = a[i];
		}
	}
	return w;
}

/* The outer template arguments a[0..n) (between '<' and '>'), briefly, at w; "..." when that is
 * longer than max. */
static char *brief_args(char *w, const char *a, size_t n, size_t max)
{
	char *begin = w;
	size_t i, arg = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && opens(a[i])) {
			i = matching(a, n, i);
			continue;
		}
		if (i == n || a[i] == ',') {
			if (arg > 0) {
				memcpy(w, ", ", 2);
				w += 2;
			}
			w = brief_arg(w, a + arg, i - arg, max);
			arg = i + 1;
		}
	}
	if ((size_t)(w - begin) > max) {
		memcpy(begin, "...", 3);
		w = begin + 3;
	}
	return w;
}

/* The short form of full (malloc'd), its first template arguments briefly when no longer than
 * max, or NULL when it is full itself or without memory. */
static char *shorten(const char *full, size_t max)
{
	size_t n = strlen(full), start = 0, i;
	int depth = 0, first = 1;
	char *out, *w;

	/* brackets that do not pair (operator<, a name that is no C++): leave the name whole */
	for (i = 0; i < n; i++) {
		if (opens(full[i]))
			depth++;
		else if (closes(full[i]) && --depth < 0)
			return NULL;
	}
	if (depth)
		return NULL;
	/* the parameter list: the parenthesized group that ends the name */
	while (n > 0 && full[n - 1] == ' ')
		n--;
	if (n > 6 && !strncmp(full + n - 6, " const", 6))
		n -= 6;
	if (n > 0 && full[n - 1] == ')') {
		for (i = n; i-- > 0;) {
			if (full[i] == ')')
				depth++;
			else if (full[i] == '(' && --depth == 0)
				break;
		}
		if (depth == 0 && i != (size_t)-1 && i > 0 && !is_anon(full + i))
			n = i;
	}
	/* the return type: up to the last space outside brackets */
	for (i = 0; i < n; i++) {
		if (opens(full[i]))
			i = matching(full, n, i);
		else if (full[i] == ' ' && i + 1 < n)
			start = i + 1;
	}
	if (start > 0 && !strncmp(full + start, "operator", 8))
		start = 0; /* "operator new" and the like: leave the name whole */
	out = malloc(3 * (n - start) + 16);
	if (!out)
		return NULL;
	/* template arguments: the first list briefly, any later one as "<...>" */
	for (w = out, i = start; i < n; i++) {
		if (full[i] == '<') {
			size_t e = matching(full, n, i);

			*w++ = '<';
			if (e > i + 1) {
				if (first) {
					w = brief_args(w, full + i + 1, e - i - 1, max);
				} else {
					memcpy(w, "...", 3);
					w += 3;
				}
			}
			*w++ = '>';
			first = 0;
			i = e;
		} else if (full[i] == '(' && !is_anon(full + i)) {
			i = matching(full, n, i); /* a function a name is nested in: "f()::" */
			memcpy(w, "()", 2);
			w += 2;
		} else {
			*w++ = full[i];
		}
	}
	*w = '\0';
	if (!out[0] || !strcmp(out, full)) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * The demangled (short: the short) form of name from the cache, made on first sight; name itself
 * when the cache is full or out of memory. The strings stay; the table may move, so they are read
 * under the lock.
 */
static const char *lookup(const char *name, int short_form)
{
	const char *res = name;
	size_t s = 0;
	int found = 0;

	pthread_mutex_lock(&cache_lock);
	if (nslots) {
		s = (size_t)hash_str(name) & (nslots - 1);
		while (slots[s].raw && strcmp(slots[s].raw, name))
			s = (s + 1) & (nslots - 1);
		found = slots[s].raw != NULL;
	}
	if (!found) {
		struct entry e = {NULL, NULL, NULL};
		char *dem = NULL, *sh;

		if (nused >= CACHE_MAX || ((nused + 1) * 2 > nslots && grow()))
			goto out;
		s = (size_t)hash_str(name) & (nslots - 1);
		while (slots[s].raw)
			s = (s + 1) & (nslots - 1);
		e.raw = strdup(name);
		if (!e.raw)
			goto out;
		dem = cs_demangle_alloc(name);
		e.full = dem ? dem : e.raw;
		sh = shorten(e.full, BRIEF_ARGS_MAX);
		e.shrt = sh ? sh : e.full;
		slots[s] = e;
		nused++;
	}
	res = short_form ? slots[s].shrt : slots[s].full;
out:
	pthread_mutex_unlock(&cache_lock);
	return res;
}

char *cs_demangle_alloc(const char *name)
{
	char *dem;
	int status = -1;

	if (!name || strncmp(name, "_Z", 2))
		return NULL;
	dem = __cxa_demangle(name, NULL, NULL, &status);
	if (status != 0 || !dem || !dem[0]) {
		free(dem);
		return NULL;
	}
	return dem;
}

const char *cs_demangle(const char *name)
{
	if (!name || strncmp(name, "_Z", 2))
		return name;
	return lookup(name, 0);
}

const char *cs_demangle_short(const char *name)
{
	if (!name || (strncmp(name, "_Z", 2) && !strpbrk(name, "<( ")))
		return name;
	return lookup(name, 1);
}

int cs_demangle_short_distinct(const char *const *names, size_t n, char **out)
{
	char *same = calloc(n ? n : 1, 1);

	if (!same)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *sh = cs_demangle_short(names[i]);

		out[i] = strdup(sh ? sh : "");
		if (!out[i])
			goto nomem;
	}
	/* rows that read the same: their template arguments however long */
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (!strcmp(out[i], out[j]) && names[i] && names[j] &&
			    strcmp(names[i], names[j]))
				same[i] = same[j] = 1;
	for (size_t i = 0; i < n; i++) {
		const char *full;
		char *longer;

		if (!same[i])
			continue;
		full = cs_demangle(names[i]);
		longer = shorten(full, (size_t)-1);
		if (!longer)
			longer = strdup(full);
		if (!longer)
			goto nomem;
		free(out[i]);
		out[i] = longer;
	}
	/* and those that still do: " #1", " #2", ... in the order of the list */
	for (size_t i = 0; i < n; i++) {
		int k = 0, dup = 0;

		for (size_t j = 0; j < n; j++) {
			if (j == i || !names[i] || !names[j] || !strcmp(names[i], names[j]) ||
			    strcmp(out[i], out[j]))
				continue;
			dup = 1;
			k += j < i;
		}
		same[i] = dup ? (char)(k + 1 > 127 ? 127 : k + 1) : 0;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len;
		char *numbered;

		if (!same[i])
			continue;
		len = strlen(out[i]) + 24;
		numbered = malloc(len);
		if (!numbered)
			goto nomem;
		snprintf(numbered, len, "%s #%d", out[i], same[i]);
		free(out[i]);
		out[i] = numbered;
	}
	free(same);
	return 0;
nomem:
	for (size_t i = 0; i < n; i++) {
		free(out[i]);
		out[i] = NULL;
	}
	free(same);
	return -1;
}

const char *cs_api_name_plain(const char *name, char *buf, size_t size)
{
	size_t n, i;

	if (!name)
		return NULL;
	n = strlen(name);
	i = n;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == n || i < 3 || name[i - 1] != 'v' || name[i - 2] != '_' || i - 2 >= size)
		return name;
	memcpy(buf, name, i - 2);
	buf[i - 2] = '\0';
	return buf;
}
