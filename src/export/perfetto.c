/*
 * perfetto.c - Perfetto's protobuf trace format, encoded by hand: a Trace is a sequence of
 * TracePacket messages (field 1), each one written as soon as it is built.
 *
 *   host process      TrackDescriptor with a ProcessDescriptor (pid, name)
 *   host thread       TrackDescriptor with a ThreadDescriptor (pid, tid, name), child of its
 * process GPU               a custom TrackDescriptor ("GPU 0 (NVIDIA H200)") whose children, in
 * explicit order, are its streams (one track per overlap lane) and its memory counter NVTX
 * start/end    custom tracks "NVTX ranges" under the process, one per overlapping lane slices
 * TrackEvent TYPE_SLICE_BEGIN / TYPE_SLICE_END pairs launch -> kernel  flow_ids on both slices
 * (Perfetto draws the arrow) memory            TYPE_COUNTER events on a counter track (bytes) Event
 * names, categories and argument names are interned: sent once in InternedData on the one packet
 * sequence, referred to by iid after (SEQ_NEEDS_INCREMENTAL_STATE). Timestamps are wall-clock ns
 * (the trace's realtime base plus the event's time).
 *
 * Field numbers are those of protos/perfetto/trace/trace_packet.proto,
 * track_event/track_event.proto, track_descriptor.proto, process_descriptor.proto,
 * thread_descriptor.proto, counter_descriptor.proto, debug_annotation.proto and
 * interned_data/interned_data.proto in the Perfetto repository.
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/checked.h"
#include "export.h"

/* Trace */
#define F_TRACE_PACKET 1
/* TracePacket */
#define F_PKT_TIMESTAMP		      8
#define F_PKT_SEQ_ID		      10 /* trusted_packet_sequence_id */
#define F_PKT_TRACK_EVENT	      11
#define F_PKT_INTERNED_DATA	      12
#define F_PKT_SEQ_FLAGS		      13
#define F_PKT_TRACK_DESCR	      60
#define F_PKT_FIRST_ON_SEQ	      87
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2
/* TrackDescriptor */
#define F_TD_UUID		1
#define F_TD_NAME		2
#define F_TD_PROCESS		3
#define F_TD_THREAD		4
#define F_TD_PARENT_UUID	5
#define F_TD_COUNTER		8
#define F_TD_CHILD_ORDERING	11
#define F_TD_SIBLING_RANK	12
#define CHILD_ORDERING_EXPLICIT 3
/* ProcessDescriptor */
#define F_PD_PID  1
#define F_PD_NAME 6
/* ThreadDescriptor */
#define F_THD_PID  1
#define F_THD_TID  2
#define F_THD_NAME 5
/* CounterDescriptor */
#define F_CD_UNIT	3
#define UNIT_SIZE_BYTES 3
/* TrackEvent */
#define F_TE_CATEGORY_IIDS 3
#define F_TE_DEBUG_ANNOT   4
#define F_TE_TYPE	   9
#define F_TE_NAME_IID	   10
#define F_TE_TRACK_UUID	   11
#define F_TE_NAME	   23
#define F_TE_COUNTER_VALUE 30
#define F_TE_FLOW_IDS	   47 /* fixed64 */
#define TYPE_SLICE_BEGIN   1
#define TYPE_SLICE_END	   2
#define TYPE_INSTANT	   3
#define TYPE_COUNTER	   4
/* DebugAnnotation */
#define F_DA_NAME_IID	 1
#define F_DA_UINT	 3
#define F_DA_INT	 4
#define F_DA_DOUBLE	 5
#define F_DA_STRING	 6
#define F_DA_LEGACY_JSON 9
/* InternedData; EventCategory, EventName and DebugAnnotationName are {iid = 1, name = 2} */
#define F_ID_EVENT_CATEGORIES 1
#define F_ID_EVENT_NAMES      2
#define F_ID_DEBUG_NAMES      3
#define F_INTERNED_IID	      1
#define F_INTERNED_NAME	      2

#define WT_VARINT  0
#define WT_FIXED64 1
#define WT_LEN	   2

#define SEQ_ID 1 /* every packet goes on one sequence */

/* A growable buffer holding one packet while it is built. */
struct pb {
	unsigned char *p;
	size_t len, cap;
	int oom;
};

/* Names already sent (interned) on the sequence. */
struct interned {
	unsigned char statics[EX_IID_STRINGS / 8]; /* iids below EX_IID_STRINGS */
	unsigned char *strings;			   /* iids from EX_IID_STRINGS on */
	size_t nstrings;			   /* bytes in strings */
	unsigned char cats[EX_CAT_COUNT];
	unsigned char keys[EX_KEY_COUNT];
};

struct perfetto {
	struct pb pkt; /* the packet being built */
	struct pb tmp; /* scratch for a repaired string */
	struct interned in;
	/* entries to intern with the packet being built */
	uint64_t new_name_iid;
	const char *new_name;
	uint32_t new_cats, new_keys;
	uint64_t new_keys_hi;
};

static int pb_grow_slow(struct pb *b, size_t n)
{
	size_t ncap;
	unsigned char *np;

	if (b->oom)
		return -1;
	ncap = b->cap ? b->cap : 4096;
	while (ncap - b->len < n)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np) {
		b->oom = 1;
		return -1;
	}
	b->p = np;
	b->cap = ncap;
	return 0;
}

/* Room for n more bytes; -1 without memory (the packet is then dropped with an error). */
static inline int pb_grow(struct pb *b, size_t n)
{
	return b->cap - b->len >= n ? 0 : pb_grow_slow(b, n);
}

/* The varint of v at w; returns its length (at most 10). */
static inline size_t varint_at(unsigned char *w, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		w[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	w[n++] = (unsigned char)v;
	return n;
}

static inline void pb_varint(struct pb *b, uint64_t v)
{
	if (pb_grow(b, 10))
		return;
	b->len += varint_at(b->p + b->len, v);
}

static inline void pb_tag(struct pb *b, uint32_t field, int wt)
{
	pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}

static inline void pb_uint(struct pb *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, WT_VARINT);
	pb_varint(b, v);
}

/* int32 and int64 fields: negative values as ten-byte two's complement varints. */
static void pb_int(struct pb *b, uint32_t field, int64_t v)
{
	pb_uint(b, field, (uint64_t)v);
}

static void pb_fixed64(struct pb *b, uint32_t field, uint64_t v)
{
	pb_tag(b, field, WT_FIXED64);
	if (pb_grow(b, 8))
		return;
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (unsigned char)(v >> (8 * i));
}

static void pb_double(struct pb *b, uint32_t field, double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	pb_fixed64(b, field, v);
}

static void pb_bytes(struct pb *b, uint32_t field, const void *p, size_t n)
{
	pb_tag(b, field, WT_LEN);
	pb_varint(b, n);
	if (pb_grow(b, n))
		return;
	if (n) /* p may be NULL then */
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* A string field; invalid UTF-8 becomes U+FFFD (tmp is scratch space for the repaired copy). */
static void pb_string(struct pb *b, struct pb *tmp, uint32_t field, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n = 0;

	while (p[i]) {
		n = p[i] < 0x80 ? 1 : cs_utf8_seq_len(p + i);
		if (!n)
			break;
		i += n;
	}
	if (!p[i]) {
		pb_bytes(b, field, s, i);
		return;
	}
	tmp->len = 0;
	if (pb_grow(tmp, strlen(s) * 3 + 1))
		return;
	tmp->len = cs_utf8_repair_into((char *)tmp->p, s);
	pb_bytes(b, field, tmp->p, tmp->len);
}

/*
 * Start a length-delimited submessage: its tag and four bytes for its length, filled in by
 * pb_end() as a padded varint (which every protobuf reader accepts, as protozero writes them).
 */
static size_t pb_begin(struct pb *b, uint32_t field)
{
	pb_tag(b, field, WT_LEN);
	if (pb_grow(b, 4))
		return 0;
	b->len += 4;
	return b->len;
}

static void pb_end(struct pb *b, size_t start)
{
	size_t n = b->len - start;
	unsigned char *w;

	if (b->oom)
		return;
	w = b->p + start - 4;
	w[0] = (unsigned char)(0x80 | (n & 0x7f));
	w[1] = (unsigned char)(0x80 | ((n >> 7) & 0x7f));
	w[2] = (unsigned char)(0x80 | ((n >> 14) & 0x7f));
	w[3] = (unsigned char)((n >> 21) & 0x7f);
}

/* Start a packet on the sequence. */
static void packet_begin(struct perfetto *p)
{
	p->pkt.len = 0;
	p->new_name = NULL;
	p->new_name_iid = 0;
	p->new_cats = 0;
	p->new_keys = 0;
	p->new_keys_hi = 0;
}

/* Append the pending interned entries and hand the packet to the output as Trace.packet. */
static int packet_end(struct exporter *ex)
{
	struct perfetto *p = ex->priv;
	struct pb *b = &p->pkt;
	char *w;

	if (p->new_name || p->new_cats || p->new_keys || p->new_keys_hi) {
		size_t id = pb_begin(b, F_PKT_INTERNED_DATA), e;

		for (int c = 0; c < EX_CAT_COUNT; c++) {
			if (!(p->new_cats & (1u << c)))
				continue;
			e = pb_begin(b, F_ID_EVENT_CATEGORIES);
			pb_uint(b, F_INTERNED_IID, (uint64_t)c + 1);
			pb_string(b, &p->tmp, F_INTERNED_NAME, ex_cat_names[c]);
			pb_end(b, e);
		}
		if (p->new_name) {
			e = pb_begin(b, F_ID_EVENT_NAMES);
			pb_uint(b, F_INTERNED_IID, p->new_name_iid);
			pb_string(b, &p->tmp, F_INTERNED_NAME, p->new_name);
			pb_end(b, e);
		}
		for (int k = 0; k < EX_KEY_COUNT; k++) {
			if (!(k < 32 ? p->new_keys & (1u << k)
				     : p->new_keys_hi & (1ull << (k - 32))))
				continue;
			e = pb_begin(b, F_ID_DEBUG_NAMES);
			pb_uint(b, F_INTERNED_IID, (uint64_t)k + 1);
			pb_string(b, &p->tmp, F_INTERNED_NAME, ex_key_names[k]);
			pb_end(b, e);
		}
		pb_end(b, id);
	}
	if (b->oom || p->tmp.oom)
		return cs_error_set(ex->err, CS_ERR_NOMEM, "out of memory");
	w = ex_out_space(&ex->out, 11);
	*w = (F_TRACE_PACKET << 3) | WT_LEN;
	ex->out.len += 1 + varint_at((unsigned char *)w + 1, b->len);
	ex_out_write(&ex->out, b->p, b->len);
	ex->events++;
	return 0;
}

/* Whether iid was sent already (1, or -1 without memory to remember); marks it sent. */
static int name_sent(struct interned *in, uint64_t iid)
{
	unsigned char *bits;
	uint64_t i;

	if (iid < EX_IID_STRINGS) {
		bits = in->statics;
		i = iid;
	} else {
		i = iid - EX_IID_STRINGS;
		if (i / 8 >= in->nstrings) {
			size_t n = in->nstrings ? in->nstrings : 1024;
			unsigned char *ns;

			while (n <= i / 8)
				n *= 2;
			ns = realloc(in->strings, n);
			if (!ns)
				return -1;
			memset(ns + in->nstrings, 0, n - in->nstrings);
			in->strings = ns;
			in->nstrings = n;
		}
		bits = in->strings;
	}
	if (bits[i / 8] & (1u << (i % 8)))
		return 1;
	bits[i / 8] |= (unsigned char)(1u << (i % 8));
	return 0;
}

static void put_name(struct perfetto *p, const struct ex_event *e)
{
	int sent = e->name_iid ? name_sent(&p->in, e->name_iid) : -1;

	if (sent < 0) { /* not interned */
		pb_string(&p->pkt, &p->tmp, F_TE_NAME, e->name);
		return;
	}
	if (!sent) {
		p->new_name = e->name;
		p->new_name_iid = e->name_iid;
	}
	pb_uint(&p->pkt, F_TE_NAME_IID, e->name_iid);
}

static void put_category(struct perfetto *p, enum ex_cat cat)
{
	if (!p->in.cats[cat]) {
		p->in.cats[cat] = 1;
		p->new_cats |= 1u << cat;
	}
	pb_uint(&p->pkt, F_TE_CATEGORY_IIDS, (uint64_t)cat + 1);
}

static void put_args(struct perfetto *p, const struct ex_event *e)
{
	char dims[40];

	for (int i = 0; i < e->nargs; i++) {
		const struct ex_arg *a = &e->args[i];
		struct pb *b = &p->pkt;
		size_t m;

		if (!p->in.keys[a->key]) {
			p->in.keys[a->key] = 1;
			if (a->key < 32)
				p->new_keys |= 1u << a->key;
			else
				p->new_keys_hi |= 1ull << (a->key - 32);
		}
		m = pb_begin(b, F_TE_DEBUG_ANNOT);
		pb_uint(b, F_DA_NAME_IID, (uint64_t)a->key + 1);
		switch (a->type) {
		case EX_ARG_INT:
			pb_int(b, F_DA_INT, a->v.i);
			break;
		case EX_ARG_MILLI:
			pb_double(b, F_DA_DOUBLE, (double)a->v.i / 1000.0);
			break;
		case EX_ARG_STR:
			pb_string(b, &p->tmp, F_DA_STRING, a->v.s);
			break;
		case EX_ARG_JSON:
			pb_string(b, &p->tmp, F_DA_LEGACY_JSON, a->v.s);
			break;
		case EX_ARG_DIM3: {
			size_t n = 0;

			dims[n++] = '[';
			n += ex_fmt_i64(dims + n, a->v.dim[0]);
			dims[n++] = ',';
			n += ex_fmt_i64(dims + n, a->v.dim[1]);
			dims[n++] = ',';
			n += ex_fmt_i64(dims + n, a->v.dim[2]);
			dims[n++] = ']';
			pb_bytes(b, F_DA_STRING, dims, n);
			break;
		}
		}
		pb_end(b, m);
	}
}

static uint64_t timestamp(const struct exporter *ex, int64_t ts)
{
	int64_t v = cs_sat_add(ex->base_ns, ts); /* ts: any time of the trace */

	return v > 0 ? (uint64_t)v : 0;
}

/* A TrackEvent packet: the common head; returns the offset to close with pb_end(). */
static size_t event_begin(struct exporter *ex, int64_t ts, int type, const struct ex_track *t)
{
	struct perfetto *p = ex->priv;
	size_t m;

	packet_begin(p);
	pb_uint(&p->pkt, F_PKT_TIMESTAMP, timestamp(ex, ts));
	pb_uint(&p->pkt, F_PKT_SEQ_ID, SEQ_ID);
	pb_uint(&p->pkt, F_PKT_SEQ_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
	m = pb_begin(&p->pkt, F_PKT_TRACK_EVENT);
	pb_uint(&p->pkt, F_TE_TYPE, (uint64_t)type);
	pb_uint(&p->pkt, F_TE_TRACK_UUID, t->uuid);
	return m;
}

/* The BEGIN (or INSTANT) packet of an event on track t. */
static int event_packet(struct exporter *ex, const struct ex_event *e, const struct ex_track *t,
			int type)
{
	struct perfetto *p = ex->priv;
	size_t m = event_begin(ex, e->ts, type, t);

	put_category(p, e->cat);
	put_name(p, e);
	put_args(p, e);
	if (e->flow_id)
		pb_fixed64(&p->pkt, F_TE_FLOW_IDS, e->flow_id);
	pb_end(&p->pkt, m);
	return packet_end(ex);
}

static int end_packet(struct exporter *ex, int64_t ts, const struct ex_track *t)
{
	struct perfetto *p = ex->priv;
	size_t m = event_begin(ex, ts, TYPE_SLICE_END, t);

	pb_end(&p->pkt, m);
	return packet_end(ex);
}

/* ---- the operations ---- */

static int perfetto_begin(struct exporter *ex)
{
	struct perfetto *p = calloc(1, sizeof(*p));

	if (!p)
		return cs_error_set(ex->err, CS_ERR_NOMEM, "out of memory");
	ex->priv = p;
	/* the start of the sequence: no incremental state before this packet */
	packet_begin(p);
	pb_uint(&p->pkt, F_PKT_SEQ_ID, SEQ_ID);
	pb_uint(&p->pkt, F_PKT_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
	pb_uint(&p->pkt, F_PKT_FIRST_ON_SEQ, 1);
	return packet_end(ex);
}

static int perfetto_declare(struct exporter *ex, struct ex_track *t)
{
	struct perfetto *p = ex->priv;
	struct pb *b = &p->pkt;
	size_t td, sub;
	int64_t rank = t->sort_index;

	packet_begin(p);
	pb_uint(b, F_PKT_SEQ_ID, SEQ_ID);
	td = pb_begin(b, F_PKT_TRACK_DESCR);
	pb_uint(b, F_TD_UUID, t->uuid);
	if (t->parent)
		pb_uint(b, F_TD_PARENT_UUID, t->parent->uuid);
	switch (t->kind) {
	case EX_TRACK_PROCESS:
		sub = pb_begin(b, F_TD_PROCESS);
		pb_int(b, F_PD_PID, t->os_pid);
		pb_string(b, &p->tmp, F_PD_NAME, t->name);
		pb_end(b, sub);
		break;
	case EX_TRACK_THREAD:
		if (!t->os_tid) { /* tid 0 is the idle task to Perfetto: a plain track instead */
			pb_string(b, &p->tmp, F_TD_NAME, t->name);
			break;
		}
		sub = pb_begin(b, F_TD_THREAD);
		pb_int(b, F_THD_PID, t->os_pid);
		pb_int(b, F_THD_TID, t->os_tid);
		pb_string(b, &p->tmp, F_THD_NAME, t->name);
		pb_end(b, sub);
		break;
	case EX_TRACK_GPU:
		pb_string(b, &p->tmp, F_TD_NAME, t->name);
		pb_uint(b, F_TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
		break;
	case EX_TRACK_COUNTER:
		pb_string(b, &p->tmp, F_TD_NAME, t->name);
		sub = pb_begin(b, F_TD_COUNTER);
		pb_uint(b, F_CD_UNIT, UNIT_SIZE_BYTES);
		pb_end(b, sub);
		break;
	default:
		pb_string(b, &p->tmp, F_TD_NAME, t->name);
		break;
	}
	if (rank > INT32_MAX)
		rank = INT32_MAX;
	pb_int(b, F_TD_SIBLING_RANK, rank);
	pb_end(b, td);
	return packet_end(ex);
}

static int perfetto_slice(struct exporter *ex, const struct ex_event *e)
{
	int rc = event_packet(ex, e, e->track, TYPE_SLICE_BEGIN);

	return rc ? rc : end_packet(ex, e->ts + e->dur, e->track);
}

static int perfetto_range(struct exporter *ex, const struct ex_event *e)
{
	return perfetto_slice(ex, e); /* on its lane, a child of the process */
}

static int perfetto_instant(struct exporter *ex, const struct ex_event *e)
{
	return event_packet(ex, e, e->track, TYPE_INSTANT);
}

static int perfetto_counter(struct exporter *ex, const struct ex_track *t, int64_t ts,
			    int64_t value)
{
	struct perfetto *p = ex->priv;
	size_t m = event_begin(ex, ts, TYPE_COUNTER, t);

	pb_int(&p->pkt, F_TE_COUNTER_VALUE, value);
	pb_end(&p->pkt, m);
	return packet_end(ex);
}

static int perfetto_end(struct exporter *ex)
{
	(void)ex;
	return 0;
}

static void perfetto_free(struct exporter *ex)
{
	struct perfetto *p = ex->priv;

	if (!p)
		return;
	free(p->pkt.p);
	free(p->tmp.p);
	free(p->in.strings);
	free(p);
	ex->priv = NULL;
}

const struct export_ops ex_perfetto_ops = {
	.name = "perfetto",
	.begin = perfetto_begin,
	.declare = perfetto_declare,
	.slice = perfetto_slice,
	.flow = NULL, /* flow_ids on the slices */
	.range = perfetto_range,
	.instant = perfetto_instant,
	.counter = perfetto_counter,
	.end = perfetto_end,
	.free = perfetto_free,
};
