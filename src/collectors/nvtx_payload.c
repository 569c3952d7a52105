/*
 * nvtx_payload.c - NVTX's payload extension: the schemas a program registers for the binary
 * payloads of its NVTX events (NCCL: each collective's communicator, message size and reduction),
 * and the decoding of such a payload into a JSON object, recorded as a string with the event.
 *
 * NVTX loads an extension from the same library as the core (NVTX_INJECTION64_PATH), through
 * InitializeInjectionNvtxExtension, once per extension module and copy of NVTX in the process.
 * cuscope fills two slots of the payload module (schema and enum registration); its event
 * functions (nvtxRangePushPayload, ...) stay unhandled, so NVTX makes them no-ops. Events of the
 * core API carry a payload as attributes of type NVTX_PAYLOAD_TYPE_EXT: payload.ullValue points to
 * reserved0 nvtxPayloadData_t, each a schema id, a size and a pointer.
 *
 * Only what can be read safely is decoded: integer, floating-point and enum entries at an offset
 * inside the size the event gives. Pointers, arrays, strings and nested schemas are left out. The
 * schema tables are filled under a lock and read without one: a slot is published after it is
 * complete and never changes or goes away.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "collector.h"
#include "inject.h"
#include "options.h"

/* The payload module's id, fixed by NVTX (named NVTX_EXT_MODULEID_PAYLOAD in older headers). */
#ifndef NVTX_EXT_PAYLOAD_MODULEID
#define NVTX_EXT_PAYLOAD_MODULEID 2
#endif

#define PL_SCHEMAS	  128
#define PL_ENTRIES	  16
#define PL_ENUMS	  64
#define PL_ENUM_VALUES	  64
#define PL_NAME		  64
#define PL_DATA_PER_EVENT 4

/* An entry as it is decoded, worked out at registration: an enum's values come from an enum
 * registered before the schema (an entry of an enum not registered yet is left out, so one
 * registered later never changes a schema's text). */
struct pl_entry {
	uint64_t offset;
	size_t size; /* bytes of its value */
	int is_signed, is_float;
	const struct pl_enum *en; /* its enum, NULL when a plain number */
	char name[PL_NAME];
};

struct pl_schema {
	uint64_t id;
	size_t size; /* static size, 0 when not given */
	int n;
	struct pl_entry e[PL_ENTRIES];
};

struct pl_enum {
	uint64_t id;
	size_t size; /* bytes of a value */
	int n;
	uint64_t value[PL_ENUM_VALUES];
	char name[PL_ENUM_VALUES][PL_NAME];
};

static pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pl_schema schemas[PL_SCHEMAS];
static struct pl_enum enums[PL_ENUMS];
static atomic_int nschemas, nenums;
static uint64_t next_dynamic = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START;

/* Bytes and alignment of the predefined entry types decoded here (LP64); 0: not decoded. */
static size_t type_size(uint64_t t, int *is_signed, int *is_float)
{
	*is_signed = 0;
	*is_float = 0;
	switch (t) {
	case NVTX_PAYLOAD_ENTRY_TYPE_CHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT8:
		*is_signed = 1;
		return 1;
	case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
		return 1;
	case NVTX_PAYLOAD_ENTRY_TYPE_SHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT16:
		*is_signed = 1;
		return 2;
	case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
		return 2;
	case NVTX_PAYLOAD_ENTRY_TYPE_INT:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT32:
		*is_signed = 1;
		return 4;
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY:
	case NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB:
	case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32:
	case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32:
		return 4;
	case NVTX_PAYLOAD_ENTRY_TYPE_LONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_INT64:
		*is_signed = 1;
		return 8;
	case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
	case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
	case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
	case NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID:
	case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64:
	case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64:
		return 8;
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT:
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
		*is_float = 1;
		return 4;
	case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE:
	case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
		*is_float = 1;
		return 8;
	default:
		return 0;
	}
}

static void copy_name(char *dst, const char *src)
{
	size_t n = 0;

	/* the program's text, read once here at registration, at most PL_NAME - 1 bytes */
	for (; src && src[n] && n + 1 < PL_NAME; n++)
		dst[n] = src[n];
	dst[n] = '\0';
}

/* An enum registered with that id (NULL when none). */
static const struct pl_enum *find_enum(uint64_t id)
{
	int n = atomic_load_explicit(&nenums, memory_order_acquire);

	for (int i = 0; i < n; i++)
		if (enums[i].id == id)
			return &enums[i];
	return NULL;
}

static const struct pl_schema *find_schema(uint64_t id)
{
	int n = atomic_load_explicit(&nschemas, memory_order_acquire);

	for (int i = 0; i < n; i++)
		if (schemas[i].id == id)
			return &schemas[i];
	return NULL;
}

/* The id a registration gets: the static one asked for, else the next dynamic one. */
static uint64_t take_id(int has_id, uint64_t asked)
{
	return has_id && asked ? asked : next_dynamic++;
}

static uint64_t NVTX_API schema_register(nvtxDomainHandle_t domain,
					 const nvtxPayloadSchemaAttr_t *attr)
{
	struct pl_schema *s;
	uint64_t id = 0, off = 0;
	int n, known = 1;

	(void)domain;
	if (!attr || !(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) || !attr->entries)
		return 0;
	pthread_mutex_lock(&pl_lock);
	id = take_id(!!(attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID),
		     attr->schemaId);
	n = atomic_load_explicit(&nschemas, memory_order_relaxed);
	if (n >= PL_SCHEMAS || find_schema(id))
		goto out;
	s = &schemas[n];
	memset(s, 0, sizeof(*s));
	s->id = id;
	if (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE)
		s->size = attr->payloadStaticSize;
	for (size_t i = 0; (attr->fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) &&
			   i < attr->numEntries && s->n < PL_ENTRIES;
	     i++) {
		const nvtxPayloadSchemaEntry_t *e = &attr->entries[i];
		const struct pl_enum *en = find_enum(e->type);
		int sg = 0, fl = 0,
		    skip = !!(e->flags &
			      (NVTX_PAYLOAD_ENTRY_FLAG_POINTER | NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY |
			       NVTX_PAYLOAD_ENTRY_FLAG_HIDE));
		size_t sz = en ? en->size : type_size(e->type, &sg, &fl);
		/* the bytes the entry takes in the payload: 0 when not known here (an array, a
		 * nested schema, a type this file does not decode) */
		size_t span = e->flags & NVTX_PAYLOAD_ENTRY_FLAG_POINTER    ? sizeof(void *)
			      : e->flags & NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY ? 0
									    : sz;

		/* an offset not given (0 after the first entry) follows natural alignment, which
		 * needs the end of the entry before */
		if (e->offset || i == 0) {
			off = e->offset;
			known = 1;
		} else if (known && span) {
			off = (off + span - 1) / span * span;
		} else {
			known = 0;
		}
		if (known && sz && !skip) {
			struct pl_entry *x = &s->e[s->n++];

			x->offset = off;
			x->size = sz;
			x->is_signed = sg;
			x->is_float = fl;
			x->en = en;
			copy_name(x->name, e->name ? e->name : "");
		}
		if (span)
			off += span;
		else
			known = 0;
	}
	atomic_store_explicit(&nschemas, n + 1, memory_order_release);
out:
	pthread_mutex_unlock(&pl_lock);
	return id;
}

static uint64_t NVTX_API enum_register(nvtxDomainHandle_t domain, const nvtxPayloadEnumAttr_t *attr)
{
	struct pl_enum *en;
	uint64_t id = 0;
	int n;

	(void)domain;
	if (!attr || !(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_ENTRIES) || !attr->entries)
		return 0;
	pthread_mutex_lock(&pl_lock);
	id = take_id(!!(attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID), attr->schemaId);
	n = atomic_load_explicit(&nenums, memory_order_relaxed);
	if (n >= PL_ENUMS || find_enum(id))
		goto out;
	en = &enums[n];
	memset(en, 0, sizeof(*en));
	en->id = id;
	en->size = attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SIZE ? attr->sizeOfEnum : 4;
	if (en->size != 1 && en->size != 2 && en->size != 4 && en->size != 8)
		goto out;
	for (size_t i = 0; (attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_NUM_ENTRIES) &&
			   i < attr->numEntries && en->n < PL_ENUM_VALUES;
	     i++) {
		en->value[en->n] = attr->entries[i].value;
		copy_name(en->name[en->n], attr->entries[i].name ? attr->entries[i].name : "");
		en->n++;
	}
	atomic_store_explicit(&nenums, n + 1, memory_order_release);
out:
	pthread_mutex_unlock(&pl_lock);
	return id;
}

/* ---- decoding ---- */

struct jbuf {
	char *p;
	size_t n, cap;
	int full;
};

static void jput(struct jbuf *b, const char *s, size_t len)
{
	if (b->full || b->n + len + 2 > b->cap) {
		b->full = 1;
		return;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
}

/* A JSON string of name: quotes, backslashes and control characters escaped. */
static void jstring(struct jbuf *b, const char *s)
{
	jput(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			jput(b, esc, 2);
		} else if (c < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			jput(b, esc, 6);
		} else {
			jput(b, (const char *)&c, 1);
		}
	}
	jput(b, "\"", 1);
}

static uint64_t load_uint(const unsigned char *p, size_t sz, int is_signed, int64_t *sv)
{
	uint64_t v = 0;
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;

	switch (sz) {
	case 1:
		memcpy(&u8, p, 1);
		v = u8;
		*sv = is_signed ? (int8_t)u8 : (int64_t)u8;
		break;
	case 2:
		memcpy(&u16, p, 2);
		v = u16;
		*sv = is_signed ? (int16_t)u16 : (int64_t)u16;
		break;
	case 4:
		memcpy(&u32, p, 4);
		v = u32;
		*sv = is_signed ? (int32_t)u32 : (int64_t)u32;
		break;
	default:
		memcpy(&v, p, 8);
		*sv = (int64_t)v;
		break;
	}
	return v;
}

/* One entry's value at p (inside the payload). */
static void put_value(struct jbuf *b, const struct pl_entry *e, const unsigned char *p)
{
	const struct pl_enum *en = e->en;
	size_t sz = e->size;
	char num[64];
	int64_t sv = 0;
	uint64_t v;

	if (e->is_float) {
		double d;
		float f;

		if (sz == 4) {
			memcpy(&f, p, 4);
			d = f;
		} else {
			memcpy(&d, p, 8);
		}
		/* NaN and infinities are not JSON numbers */
		if (d != d || d > 1e308 || d < -1e308)
			snprintf(num, sizeof(num), "null");
		else
			snprintf(num, sizeof(num), "%.17g", d);
		jput(b, num, strlen(num));
		return;
	}
	v = load_uint(p, sz, e->is_signed, &sv);
	for (int i = 0; en && i < en->n; i++)
		if (en->value[i] == v) {
			jstring(b, en->name[i]);
			return;
		}
	if (e->is_signed)
		snprintf(num, sizeof(num), "%lld", (long long)sv);
	else
		snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
	jput(b, num, strlen(num));
}

/* The entries of one payload of schema s (size bytes at data) into b; the number written. */
static int put_payload(struct jbuf *b, const struct pl_schema *s, const unsigned char *data,
		       size_t size, int written)
{
	for (int i = 0; i < s->n; i++) {
		const struct pl_entry *e = &s->e[i];

		if (e->offset > size || e->size > size - e->offset)
			continue; /* outside what the event gave */
		jput(b, written++ ? "," : "{", 1);
		jstring(b, e->name[0] ? e->name : "?");
		jput(b, ":", 1);
		put_value(b, e, data + e->offset);
	}
	return written;
}

/*
 * A thread's last payloads and their strings: NCCL sends a handful of distinct payloads (one per
 * communicator and bucket size) over and over, and one found here costs a compare instead of the
 * decoding and the string's interning. Only events with one payload of at most PL_CACHE_BYTES are
 * kept: a schema's text depends on its bytes alone (struct pl_entry).
 */
#define PL_CACHE       8
#define PL_CACHE_BYTES 64

struct pl_cached {
	uint64_t schema;
	size_t size;
	uint32_t sid; /* 0: empty */
	unsigned char bytes[PL_CACHE_BYTES];
};

struct pl_cache {
	struct pl_cached e[PL_CACHE];
	unsigned next;
};

static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_ok;
/* Heap memory, freed at the thread's exit: static TLS of a library loaded with dlopen is scarce. */
static __thread struct pl_cache *tls_cache __attribute__((tls_model("initial-exec")));

/* At the thread's exit: a range another destructor pushes after this one makes a new cache (and
 * finds none freed under it). */
static void cache_free(void *p)
{
	if (tls_cache == p)
		tls_cache = NULL;
	free(p);
}

static void cache_init(void)
{
	cache_ok = pthread_key_create(&cache_key, cache_free) == 0;
}

static struct pl_cache *my_cache(void)
{
	if (!tls_cache) {
		pthread_once(&cache_once, cache_init);
		if (!cache_ok)
			return NULL;
		tls_cache = calloc(1, sizeof(*tls_cache));
		if (tls_cache && pthread_setspecific(cache_key, tls_cache)) {
			free(tls_cache);
			tls_cache = NULL;
		}
	}
	return tls_cache;
}

static struct pl_cached *cache_find(struct pl_cache *c, uint64_t schema, const void *p, size_t size)
{
	for (int i = 0; c && i < PL_CACHE; i++) {
		struct pl_cached *e = &c->e[i];

		if (e->sid && e->schema == schema && e->size == size && !memcmp(e->bytes, p, size))
			return e;
	}
	return NULL;
}

static void cache_put(struct pl_cache *c, uint64_t schema, const void *p, size_t size, uint32_t sid)
{
	struct pl_cached *e;

	if (!c || !sid)
		return;
	e = &c->e[c->next++ % PL_CACHE];
	e->schema = schema;
	e->size = size;
	memcpy(e->bytes, p, size);
	e->sid = sid;
}

/* The string of an event's extended payload (reserved0 blocks at payload.ullValue). */
static uint32_t ext_payload_sid(const nvtxEventAttributes_t *a)
{
	char text[1024];
	struct jbuf b = {text, 0, sizeof(text), 0};
	const nvtxPayloadData_t *one = (const nvtxPayloadData_t *)(uintptr_t)a->payload.ullValue;
	struct pl_cache *cache = NULL;
	int written = 0;
	uint32_t sid;

	/* one payload of a known size: maybe seen just before on this thread */
	if (a->reserved0 == 1 && one->payload && one->size && one->size <= PL_CACHE_BYTES) {
		struct pl_cached *e;

		cache = my_cache();
		e = cache_find(cache, one->schemaId, one->payload, one->size);
		if (e)
			return e->sid;
	}
	for (int k = 0; k < a->reserved0 && k < PL_DATA_PER_EVENT; k++) {
		const nvtxPayloadData_t *d = one + k;
		const struct pl_schema *s = find_schema(d->schemaId);
		size_t size = d->size;

		if (!s || !d->payload)
			continue;
		/* SIZE_MAX, "figure it out": the schema's static size when it has one */
		if (size == SIZE_MAX)
			size = s->size;
		written = put_payload(&b, s, d->payload, size, written);
	}
	if (!written || b.full)
		return 0;
	jput(&b, "}", 1);
	sid = cs_intern(text, b.n);
	if (cache)
		cache_put(cache, one->schemaId, one->payload, one->size, sid);
	return sid;
}

uint32_t cs_nvtx_payload_sid(const nvtxEventAttributes_t *a)
{
	char text[128];

	if (!a || a->payloadType == NVTX_PAYLOAD_UNKNOWN)
		return 0;
	switch (a->payloadType) {
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
		snprintf(text, sizeof(text), "{\"value\":%llu}",
			 (unsigned long long)a->payload.ullValue);
		return cs_intern(text, (size_t)-1);
	case NVTX_PAYLOAD_TYPE_INT64:
		snprintf(text, sizeof(text), "{\"value\":%lld}", (long long)a->payload.llValue);
		return cs_intern(text, (size_t)-1);
	case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
		snprintf(text, sizeof(text), "{\"value\":%u}", a->payload.uiValue);
		return cs_intern(text, (size_t)-1);
	case NVTX_PAYLOAD_TYPE_INT32:
		snprintf(text, sizeof(text), "{\"value\":%d}", a->payload.iValue);
		return cs_intern(text, (size_t)-1);
	case NVTX_PAYLOAD_TYPE_DOUBLE:
	case NVTX_PAYLOAD_TYPE_FLOAT: {
		double d = a->payloadType == NVTX_PAYLOAD_TYPE_DOUBLE ? a->payload.dValue
								      : a->payload.fValue;

		if (d != d || d > 1e308 || d < -1e308)
			return 0;
		snprintf(text, sizeof(text), "{\"value\":%.17g}", d);
		return cs_intern(text, (size_t)-1);
	}
	case NVTX_PAYLOAD_TYPE_EXT:
		break;
	default:
		return 0;
	}
	if (!atomic_load_explicit(&nschemas, memory_order_acquire) || !a->payload.ullValue ||
	    a->reserved0 < 1)
		return 0;
	return ext_payload_sid(a);
}

int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
	__attribute__((visibility("default")));

int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
	nvtxExtModuleSegment_t *seg;

	if (!info || cs_inject_setup() || !cs_inject_nvtx_enabled())
		return 0;
	/* other modules (memory, counters, ...) and layouts this build does not know: their slots
	 * stay unset, which NVTX turns into no-ops */
	if (info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->segmentsCount < 1 ||
	    !info->segments)
		return 1;
	seg = &info->segments[0];
	if (!seg->functionSlots || seg->slotCount <= NVTX3EXT_CBID_nvtxPayloadEnumRegister)
		return 1;
	seg->functionSlots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister] = (intptr_t)schema_register;
	seg->functionSlots[NVTX3EXT_CBID_nvtxPayloadEnumRegister] = (intptr_t)enum_register;
	return 1;
}
