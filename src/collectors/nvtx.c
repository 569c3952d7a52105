/*
 * nvtx.c - NVTX ranges and marks, through NVTX's injection interface.
 *
 * `cuscope record` points NVTX_INJECTION64_PATH at this library; every copy of NVTX in the process
 * (libtorch, NCCL, XLA, the program's own) calls InitializeInjectionNvtx2 once, possibly before
 * cuInit, and gets cuscope's functions in its tables. Each call becomes one CS_REC_NVTX with
 * CUPTI's timestamp; the importer pairs push/pop per thread and start/end by range id (which may
 * cross threads).
 */
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <cupti.h>
/* Types only: the library must not carry an NVTX implementation of its own. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "collector.h"
#include "flush.h"
#include "inject.h"
#include "options.h"

static atomic_uint_fast64_t next_range_id = 1;
/* Push returns the nesting depth before the push on this thread, pop the depth after; NVTX's own
 * implementation returns -1 when it has no tool, so programs do not rely on the values. */
static __thread int tls_depth __attribute__((tls_model("initial-exec")));

static uint32_t handle_sid(const void *p);

/* UTF-8 by hand: wcstombs depends on the program's locale. Returns the length written. */
static size_t wide_to_utf8(const wchar_t *w, char *buf, size_t cap)
{
	size_t n = 0;

	for (; w && *w && n + 5 < cap; w++) {
		uint32_t c = (uint32_t)*w;

		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | (c >> 6));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | (c >> 12));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x110000) {
			buf[n++] = (char)(0xf0 | (c >> 18));
			buf[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
			buf[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = '\0';
	return n;
}

static uint32_t intern_wide(const wchar_t *w)
{
	char buf[4096];
	size_t n;

	if (!w)
		return 0;
	n = wide_to_utf8(w, buf, sizeof(buf));
	return cs_intern(buf, n);
}

static uint32_t attr_text(const nvtxEventAttributes_t *a)
{
	if (!a)
		return 0;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return a->message.ascii ? cs_intern(a->message.ascii, (size_t)-1) : 0;
	case NVTX_MESSAGE_TYPE_UNICODE:
		return intern_wide(a->message.unicode);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return handle_sid(a->message.registered);
	default:
		return 0;
	}
}

/* ---- --capture=nvtx:PATTERN ---- */

/* Depth at which this thread opened the capture range with a push; -1 when it did not. */
static __thread int tls_capture_depth __attribute__((tls_model("initial-exec"))) = -1;
static atomic_uint_fast64_t
	capture_range_id; /* start/end range that opened the capture, 0 = none */

static int capture_matches(const char *text)
{
	const char *pat = cs_capture_nvtx_pattern();

	return pat && text && fnmatch(pat, text, 0) == 0;
}

/* The text of an event, for matching: ascii, registered or wide (converted into buf). */
static const char *attr_plain_text(const nvtxEventAttributes_t *a, char *buf, size_t cap)
{
	if (!a)
		return NULL;
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return a->message.ascii;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return handle_sid(a->message.registered) ? (const char *)a->message.registered
							 : NULL;
	case NVTX_MESSAGE_TYPE_UNICODE:
		wide_to_utf8(a->message.unicode, buf, cap);
		return buf;
	default:
		return NULL;
	}
}

/* The text to match against --capture=nvtx:PATTERN and the steps of --dump-on slow-step, only
 * worked out when there is a pattern. */
static const char *capture_text(const nvtxEventAttributes_t *a, char *buf, size_t cap)
{
	return cs_capture_nvtx_pattern() || cs_slow_step_pattern() ? attr_plain_text(a, buf, cap)
								   : NULL;
}

/* --dump-on slow-step: the step range this thread pushed (its depth, -1 when none) and its start;
 * the start/end range of a step (0 when none). */
static __thread int tls_step_depth __attribute__((tls_model("initial-exec"))) = -1;
static __thread uint64_t tls_step_start __attribute__((tls_model("initial-exec")));
static atomic_uint_fast64_t step_range_id, step_range_start;

static int step_matches(const char *text)
{
	const char *pat = cs_slow_step_pattern();

	return pat && text && fnmatch(pat, text, 0) == 0;
}

/* A push of text is about to be recorded at the current depth: open the capture when it matches. */
static void capture_on_push(const char *text)
{
	uint64_t now = 0;

	if (tls_capture_depth >= 0 || !capture_matches(text))
		return;
	now = cs_clock_now();
	cs_capture_begin(now);
	tls_capture_depth = tls_depth;
}

/* A pop was recorded and the depth is back to d: close the capture opened at d. */
static void capture_on_pop(int d)
{
	uint64_t now = 0;

	if (tls_capture_depth < 0 || d != tls_capture_depth)
		return;
	now = cs_clock_now();
	cs_capture_end(now);
	tls_capture_depth = -1;
}

static void capture_on_start(const char *text, uint64_t id)
{
	uint64_t now = 0, none = 0;

	if (!capture_matches(text))
		return;
	if (!atomic_compare_exchange_strong(&capture_range_id, &none, id))
		return;
	now = cs_clock_now();
	cs_capture_begin(now);
}

static void capture_on_end(uint64_t id)
{
	uint64_t now = 0, expected = id;

	if (!id || !atomic_compare_exchange_strong(&capture_range_id, &expected, 0))
		return;
	now = cs_clock_now();
	cs_capture_end(now);
}

static void nvtx_emit(int op, uint32_t domain, uint32_t text, const nvtxEventAttributes_t *a,
		      uint64_t range_id)
{
	struct cs_rec_nvtx r;
	uint64_t now = 0;

	if (!cs_inject_active())
		return;
	now = cs_clock_now();
	if (!cs_capture_keep_host(now))
		return;
	memset(&r, 0, sizeof(r));
	r.timestamp = now;
	r.range_id = range_id;
	r.text_sid = text;
	r.domain_sid = domain;
	if (a && a->colorType == NVTX_COLOR_ARGB)
		r.color = a->color;
	if (a)
		r.category = (int32_t)a->category;
	if (a && a->payloadType != NVTX_PAYLOAD_UNKNOWN)
		r.payload_sid = cs_nvtx_payload_sid(a);
	r.op = (uint8_t)op;
	cs_out_write(&r, sizeof(r), CS_REC_NVTX, cs_tid());
}

static uint32_t domain_sid(nvtxDomainHandle_t d)
{
	return handle_sid(d);
}

/* ---- core (default domain) ---- */

static void mark_ex(const nvtxEventAttributes_t *a)
{
	nvtx_emit(CS_NVTX_OP_MARK, 0, attr_text(a), a, 0);
}

static void mark_a(const char *m)
{
	nvtx_emit(CS_NVTX_OP_MARK, 0, m ? cs_intern(m, (size_t)-1) : 0, NULL, 0);
}

static void mark_w(const wchar_t *m)
{
	nvtx_emit(CS_NVTX_OP_MARK, 0, intern_wide(m), NULL, 0);
}

static nvtxRangeId_t start_common(uint32_t domain, uint32_t text, const nvtxEventAttributes_t *a,
				  const char *plain)
{
	uint64_t id = atomic_fetch_add(&next_range_id, 1);

	if (cs_capture_nvtx_pattern())
		capture_on_start(plain, id);
	if (step_matches(plain)) {
		uint64_t none = 0;

		if (atomic_compare_exchange_strong(&step_range_id, &none, id))
			atomic_store(&step_range_start, cs_clock_now());
	}
	nvtx_emit(CS_NVTX_OP_START, domain, text, a, id);
	return id;
}

static nvtxRangeId_t start_ex(const nvtxEventAttributes_t *a)
{
	char buf[512];

	return start_common(0, attr_text(a), a, capture_text(a, buf, sizeof(buf)));
}

static nvtxRangeId_t start_a(const char *m)
{
	return start_common(0, m ? cs_intern(m, (size_t)-1) : 0, NULL, m);
}

static nvtxRangeId_t start_w(const wchar_t *m)
{
	char buf[4096];
	size_t n = wide_to_utf8(m, buf, sizeof(buf));

	return start_common(0, m ? cs_intern(buf, n) : 0, NULL, buf);
}

static void end_common(uint32_t domain, nvtxRangeId_t id)
{
	uint64_t expected = id;

	nvtx_emit(CS_NVTX_OP_END, domain, 0, NULL, id);
	if (cs_capture_nvtx_pattern())
		capture_on_end(id);
	if (id && cs_slow_step_pattern() &&
	    atomic_compare_exchange_strong(&step_range_id, &expected, 0))
		cs_slow_step_end(atomic_load(&step_range_start), cs_clock_now());
}

static void range_end(nvtxRangeId_t id)
{
	end_common(0, id);
}

static int push_common(uint32_t domain, uint32_t text, const nvtxEventAttributes_t *a,
		       const char *plain)
{
	if (cs_capture_nvtx_pattern())
		capture_on_push(plain);
	if (tls_step_depth < 0 && step_matches(plain)) {
		tls_step_depth = tls_depth;
		tls_step_start = cs_clock_now();
	}
	nvtx_emit(CS_NVTX_OP_PUSH, domain, text, a, 0);
	return tls_depth++;
}

static int pop_common(uint32_t domain)
{
	nvtx_emit(CS_NVTX_OP_POP, domain, 0, NULL, 0);
	if (tls_depth > 0)
		tls_depth--;
	if (cs_capture_nvtx_pattern())
		capture_on_pop(tls_depth);
	if (tls_step_depth >= 0 && tls_depth == tls_step_depth) {
		cs_slow_step_end(tls_step_start, cs_clock_now());
		tls_step_depth = -1;
	}
	return tls_depth;
}

static int push_ex(const nvtxEventAttributes_t *a)
{
	char buf[512];

	return push_common(0, attr_text(a), a, capture_text(a, buf, sizeof(buf)));
}

static int push_a(const char *m)
{
	return push_common(0, m ? cs_intern(m, (size_t)-1) : 0, NULL, m);
}

static int push_w(const wchar_t *m)
{
	char buf[4096];
	size_t n = wide_to_utf8(m, buf, sizeof(buf));

	return push_common(0, m ? cs_intern(buf, n) : 0, NULL, buf);
}

static int range_pop(void)
{
	return pop_common(0);
}

/* ---- core2 (domains) ---- */

static void d_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	nvtx_emit(CS_NVTX_OP_MARK, domain_sid(d), attr_text(a), a, 0);
}

static nvtxRangeId_t d_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char buf[512];

	return start_common(domain_sid(d), attr_text(a), a, capture_text(a, buf, sizeof(buf)));
}

static void d_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	end_common(domain_sid(d), id);
}

static int d_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	char buf[512];

	return push_common(domain_sid(d), attr_text(a), a, capture_text(a, buf, sizeof(buf)));
}

static int d_pop(nvtxDomainHandle_t d)
{
	return pop_common(domain_sid(d));
}

/*
 * Registered strings and domains are handed out as pointers to cuscope's own copy of their text,
 * preceded by a tag and the string id: stable, readable memory, since some programs (XLA) do more
 * with a handle than pass it back. Handles live as long as the process.
 */
#define HANDLE_TAG 0x4e565458u /* "NVTX" */

struct nvtx_handle {
	uint32_t tag;
	uint32_t sid;
	char text[];
};

static pthread_mutex_t handle_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nvtx_handle **handles; /* by string id */
static size_t handles_cap;

static void *handle_for(const char *text, size_t len, uint32_t sid)
{
	struct nvtx_handle *h = NULL;

	if (!sid)
		return NULL;
	pthread_mutex_lock(&handle_lock);
	if (sid >= handles_cap) {
		size_t ncap = handles_cap ? handles_cap : 256;
		struct nvtx_handle **nh;

		while (ncap <= sid)
			ncap *= 2;
		nh = realloc(handles, ncap * sizeof(*nh));
		if (!nh)
			goto out;
		memset(nh + handles_cap, 0, (ncap - handles_cap) * sizeof(*nh));
		handles = nh;
		handles_cap = ncap;
	}
	h = handles[sid];
	if (!h) {
		h = malloc(sizeof(*h) + len + 1);
		if (!h)
			goto out;
		h->tag = HANDLE_TAG;
		h->sid = sid;
		memcpy(h->text, text, len);
		h->text[len] = '\0';
		handles[sid] = h;
	}
out:
	pthread_mutex_unlock(&handle_lock);
	return h ? h->text : NULL;
}

static uint32_t handle_sid(const void *p)
{
	const struct nvtx_handle *h;

	if (!p)
		return 0;
	h = (const struct nvtx_handle *)((const char *)p - offsetof(struct nvtx_handle, text));
	return h->tag == HANDLE_TAG ? h->sid : 0;
}

static void *handle_ascii(const char *s)
{
	size_t len = strlen(s ? s : "");

	return handle_for(s ? s : "", len, cs_intern(s ? s : "", len));
}

static void *handle_wide(const wchar_t *w)
{
	char buf[4096];
	size_t len = wide_to_utf8(w, buf, sizeof(buf));

	return handle_for(buf, len, cs_intern(buf, len));
}

static nvtxStringHandle_t d_register_a(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)handle_ascii(s);
}

static nvtxStringHandle_t d_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	(void)d;
	return (nvtxStringHandle_t)handle_wide(s);
}

static nvtxDomainHandle_t d_create_a(const char *name)
{
	return (nvtxDomainHandle_t)handle_ascii(name);
}

static nvtxDomainHandle_t d_create_w(const wchar_t *name)
{
	return (nvtxDomainHandle_t)handle_wide(name);
}

static void d_destroy(nvtxDomainHandle_t d)
{
	(void)d;
}

static void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int id,
		     NvtxFunctionPointer fn)
{
	if (table && id < size && table[id])
		*table[id] = fn;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
	__attribute__((visibility("default")));

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	const NvtxExportTableCallbacks *cbs;
	NvtxFunctionTable t = NULL;
	unsigned int n = 0;

	if (!get_export_table || cs_inject_setup() || !cs_inject_nvtx_enabled())
		return 0;
	cbs = (const NvtxExportTableCallbacks *)get_export_table(NVTX_ETID_CALLBACKS);
	if (!cbs || !cbs->GetModuleFunctionTable)
		return 0;
	if (cbs->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n)) {
		set_slot(t, n, NVTX_CBID_CORE_MarkEx, (NvtxFunctionPointer)mark_ex);
		set_slot(t, n, NVTX_CBID_CORE_MarkA, (NvtxFunctionPointer)mark_a);
		set_slot(t, n, NVTX_CBID_CORE_MarkW, (NvtxFunctionPointer)mark_w);
		set_slot(t, n, NVTX_CBID_CORE_RangeStartEx, (NvtxFunctionPointer)start_ex);
		set_slot(t, n, NVTX_CBID_CORE_RangeStartA, (NvtxFunctionPointer)start_a);
		set_slot(t, n, NVTX_CBID_CORE_RangeStartW, (NvtxFunctionPointer)start_w);
		set_slot(t, n, NVTX_CBID_CORE_RangeEnd, (NvtxFunctionPointer)range_end);
		set_slot(t, n, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)push_ex);
		set_slot(t, n, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)push_a);
		set_slot(t, n, NVTX_CBID_CORE_RangePushW, (NvtxFunctionPointer)push_w);
		set_slot(t, n, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)range_pop);
	}
	t = NULL;
	n = 0;
	if (getenv("CUSCOPE_DEBUG_NVTX_CORE_ONLY"))
		return 1;
	if (cbs->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n)) {
		set_slot(t, n, NVTX_CBID_CORE2_DomainMarkEx, (NvtxFunctionPointer)d_mark_ex);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, (NvtxFunctionPointer)d_start_ex);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRangeEnd, (NvtxFunctionPointer)d_end);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)d_push_ex);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)d_pop);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringA,
			 (NvtxFunctionPointer)d_register_a);
		set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringW,
			 (NvtxFunctionPointer)d_register_w);
		set_slot(t, n, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)d_create_a);
		set_slot(t, n, NVTX_CBID_CORE2_DomainCreateW, (NvtxFunctionPointer)d_create_w);
		set_slot(t, n, NVTX_CBID_CORE2_DomainDestroy, (NvtxFunctionPointer)d_destroy);
	}
	return 1;
}
