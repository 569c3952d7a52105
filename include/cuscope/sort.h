/*
 * sort.h - sorting large arrays fast: integers and records ordered by integer fields, by radix
 * (linear in the number of elements, stable), for the arrays of millions of events the analysis
 * sorts. cs_sort() in grow.h remains for small arrays and orders no integer key can express.
 */
#ifndef CUSCOPE_SORT_H
#define CUSCOPE_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sort v[0..n) ascending. */
void cs_sort_i64(int64_t *v, size_t n);
/* Median of v[0..n) (v is sorted in place; of an even count the midpoint of the middle two); 0
 * when n is 0. */
int64_t cs_median_i64(int64_t *v, int64_t n);
/* The same median in linear time, for arrays that are not read in order afterwards: v is left
 * in some order of its values, not sorted. */
int64_t cs_median_select_i64(int64_t *v, int64_t n);
/* The k-th smallest of v[0..n) (0 <= k < n), in linear time: v is reordered, with it at v[k]. */
int64_t cs_select_i64(int64_t *v, int64_t n, int64_t k);
int32_t cs_select_i32(int32_t *v, int64_t n, int64_t k);

/*
 * The first of the n records of base (size bytes each, sorted by their first member, an int64_t:
 * a time, or the value itself) whose first member is t or more; n when none. A binary search.
 */
int64_t cs_lower_bound_i64(const void *base, size_t size, int64_t n, int64_t t);
/*
 * The first of the n records of base (size bytes each, sorted by a uint64_t key, their first
 * member, then by an int64_t time, their second: a thread and a start) whose key is key and time
 * t or more, or whose key is greater; n when none. A binary search.
 */
int64_t cs_lower_bound_key_i64(const void *base, size_t size, int64_t n, uint64_t key, int64_t t);
/*
 * The same answer, searched from *hint (the answer of a previous search, or any index; updated to
 * this one): a galloping search out from the hint, then a binary search in the stretch found, so
 * that queries in or near time order cost a few steps instead of log n reads spread over the
 * array.
 */
int64_t cs_lower_bound_near_i64(const void *base, size_t size, int64_t n, int64_t t, int64_t *hint);

/* Sort v[0..n) ascending (-0.0 before 0.0; NaNs, which the analysis never makes, last or
 * first by their sign). */
void cs_sort_double(double *v, size_t n);

/* The type of a key field of a record. */
enum cs_key_type {
	CS_KEY_I64 = 0,
	CS_KEY_I32,
	CS_KEY_U32,
	CS_KEY_U64,
};

/* A field of a record: its offset in the record (offsetof) and its type. */
typedef struct cs_sort_key {
	size_t offset;
	enum cs_key_type type;
} cs_sort_key;

/*
 * Sort n records of size bytes each by the keys (the first decides, then the second, ...), all
 * ascending; records with equal keys keep their order (stable, as a merge sort). Records under 40
 * bytes are sorted by radix with n * size bytes of scratch memory; larger ones, or when that
 * memory cannot be had, by glibc's merge sort.
 */
void cs_sort_records(void *base, size_t n, size_t size, const cs_sort_key *keys, int nkeys);

#endif
