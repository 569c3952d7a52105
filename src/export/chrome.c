/*
 * chrome.c - the Chrome trace event format (JSON object form), as the PyTorch profiler (Kineto)
 * writes it, so that chrome://tracing, ui.perfetto.dev, Holistic Trace Analysis and TensorBoard's
 * trace view read it: "X" slices, "s"/"f" flows named ac2g, "b"/"e" async ranges, "i" instants,
 * "C" counters and "M" metadata, with "ts"/"dur" in microseconds relative to baseTimeNanoseconds,
 * written with three decimals (ns precision, never an exponent).
 *
 * Events are written one per line as they come; every string is escaped and invalid UTF-8 replaced
 * by U+FFFD.
 */
#include <stdlib.h>
#include <string.h>

#include "export.h"

struct chrome {
	int nevents;	    /* written so far: the next one needs a comma */
	uint64_t next_flow; /* flow and async range ids, unique in the file */
	uint64_t next_range;
};

/* Bytes that go into a JSON string as they are: ASCII from space on, but '"' and '\\'. */
static const unsigned char plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 0x80 and above: UTF-8, checked one sequence at a time */
};

static void put_string(struct ex_out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char *w;

	w = ex_out_space(o, 1);
	*w = '"';
	o->len++;
	for (;;) {
		const unsigned char *q = p;
		unsigned char c;
		size_t n;

		while (plain[*q])
			q++;
		if (q > p)
			ex_out_write(o, p, (size_t)(q - p));
		p = q;
		c = *p;
		if (!c)
			break;
		w = ex_out_space(o, 6);
		if (c == '"' || c == '\\') {
			w[0] = '\\';
			w[1] = (char)c;
			o->len += 2;
			p++;
		} else if (c < 0x20) {
			w[0] = '\\';
			switch (c) {
			case '\n':
				w[1] = 'n';
				break;
			case '\r':
				w[1] = 'r';
				break;
			case '\t':
				w[1] = 't';
				break;
			case '\b':
				w[1] = 'b';
				break;
			case '\f':
				w[1] = 'f';
				break;
			default:
				memcpy(w + 1, "u00", 3);
				w[4] = hex[c >> 4];
				w[5] = hex[c & 15];
				o->len += 4;
				break;
			}
			o->len += 2;
			p++;
		} else if ((n = cs_utf8_seq_len(p)) != 0) {
			memcpy(w, p, n);
			o->len += n;
			p += n;
		} else {
			memcpy(w, CS_UTF8_REPLACEMENT, 3); /* for each invalid byte */
			o->len += 3;
			p++;
		}
	}
	w = ex_out_space(o, 1);
	*w = '"';
	o->len++;
}

/* Start an event: the separator, then {"ph":"<ph>" */
static void begin_event(struct exporter *ex, char ph)
{
	struct chrome *c = ex->priv;
	char *w = ex_out_space(&ex->out, 16);

	memcpy(w, c->nevents ? ",\n{\"ph\":\"" : "\n{\"ph\":\"", c->nevents ? 9 : 8);
	w += c->nevents ? 9 : 8;
	*w++ = ph;
	*w++ = '"';
	ex->out.len = (size_t)(w - ex->out.buf);
	c->nevents++;
	ex->events++;
}

static void put_raw(struct ex_out *o, const char *s, size_t n)
{
	ex_out_write(o, s, n);
}

#define PUT_LIT(o, lit) put_raw((o), (lit), sizeof(lit) - 1)

static void put_i64(struct ex_out *o, int64_t v)
{
	char *w = ex_out_space(o, 24);

	o->len += ex_fmt_i64(w, v);
}

static void put_us(struct ex_out *o, int64_t ns)
{
	char *w = ex_out_space(o, 32);

	o->len += ex_fmt_us(w, ns);
}

/* ,"pid":P,"tid":T,"ts":TS */
static void put_where(struct ex_out *o, int64_t pid, int64_t tid, int64_t ts)
{
	char *w = ex_out_space(o, 96), *s = w;

	memcpy(w, ",\"pid\":", 7);
	w += 7;
	w += ex_fmt_i64(w, pid);
	memcpy(w, ",\"tid\":", 7);
	w += 7;
	w += ex_fmt_i64(w, tid);
	memcpy(w, ",\"ts\":", 6);
	w += 6;
	w += ex_fmt_us(w, ts);
	o->len += (size_t)(w - s);
}

static void put_cat_name(struct ex_out *o, enum ex_cat cat, const char *name)
{
	PUT_LIT(o, ",\"cat\":\"");
	ex_out_puts(o, ex_cat_names[cat]);
	PUT_LIT(o, "\",\"name\":");
	put_string(o, name);
}

static void put_arg_value(struct ex_out *o, const struct ex_arg *a)
{
	char *w, *s;

	switch (a->type) {
	case EX_ARG_INT:
		put_i64(o, a->v.i);
		break;
	case EX_ARG_MILLI:
		put_us(o, a->v.i); /* the same digits: v / 1000 with three decimals */
		break;
	case EX_ARG_STR:
		put_string(o, a->v.s);
		break;
	case EX_ARG_JSON:
		ex_out_puts(o, a->v.s);
		break;
	case EX_ARG_DIM3:
		s = w = ex_out_space(o, 40);
		*w++ = '[';
		w += ex_fmt_i64(w, a->v.dim[0]);
		*w++ = ',';
		w += ex_fmt_i64(w, a->v.dim[1]);
		*w++ = ',';
		w += ex_fmt_i64(w, a->v.dim[2]);
		*w++ = ']';
		o->len += (size_t)(w - s);
		break;
	}
}

static void put_args(struct ex_out *o, const struct ex_event *e)
{
	PUT_LIT(o, ",\"args\":{");
	for (int i = 0; i < e->nargs; i++) {
		const char *key = ex_key_names[e->args[i].key];

		if (i)
			PUT_LIT(o, ",\"");
		else
			PUT_LIT(o, "\"");
		ex_out_puts(o, key);
		PUT_LIT(o, "\":");
		put_arg_value(o, &e->args[i]);
	}
	PUT_LIT(o, "}");
}

/* An "M" event naming or ordering a process (tid < 0) or a thread. */
static void metadata(struct exporter *ex, const char *what, int64_t pid, int64_t tid,
		     const char *key, const char *str, int64_t num)
{
	struct ex_out *o = &ex->out;

	begin_event(ex, 'M');
	PUT_LIT(o, ",\"name\":\"");
	ex_out_puts(o, what);
	PUT_LIT(o, "\",\"pid\":");
	put_i64(o, pid);
	PUT_LIT(o, ",\"tid\":");
	put_i64(o, tid < 0 ? 0 : tid);
	PUT_LIT(o, ",\"args\":{\"");
	ex_out_puts(o, key);
	PUT_LIT(o, "\":");
	if (str)
		put_string(o, str);
	else
		put_i64(o, num);
	PUT_LIT(o, "}}");
}

/* ---- the operations ---- */

/* One entry of deviceProperties, with Kineto's fields (its DeviceProperties.cpp): what the trace
 * stores, and what the compute capability determines (ex_arch_of) when cuscope knows it. */
static void put_device(struct ex_out *o, const struct ex_device *d)
{
	const struct ex_arch *a = ex_arch_of(d->compute_major, d->compute_minor);

	PUT_LIT(o, "{\"id\": ");
	put_i64(o, d->device_id);
	PUT_LIT(o, ", \"name\": ");
	put_string(o, d->name ? d->name : "");
	PUT_LIT(o, ", \"totalGlobalMem\": ");
	put_i64(o, d->total_memory);
	PUT_LIT(o, ",\n \"computeMajor\": ");
	put_i64(o, d->compute_major);
	PUT_LIT(o, ", \"computeMinor\": ");
	put_i64(o, d->compute_minor);
	if (a) {
		PUT_LIT(o, ",\n \"maxThreadsPerBlock\": ");
		put_i64(o, a->max_threads_per_block);
		PUT_LIT(o, ", \"maxThreadsPerMultiprocessor\": ");
		put_i64(o, a->max_threads_per_sm);
		PUT_LIT(o, ",\n \"regsPerBlock\": ");
		put_i64(o, a->regs_per_block);
		PUT_LIT(o, ", \"warpSize\": ");
		put_i64(o, a->warp_size);
		PUT_LIT(o, ",\n \"sharedMemPerBlock\": ");
		put_i64(o, a->shared_per_block);
	}
	PUT_LIT(o, ", \"numSms\": ");
	put_i64(o, d->sm_count);
	if (a) {
		PUT_LIT(o, ",\n \"regsPerMultiprocessor\": ");
		put_i64(o, a->regs_per_sm);
		PUT_LIT(o, ", \"sharedMemPerBlockOptin\": ");
		put_i64(o, a->shared_per_block_optin);
		PUT_LIT(o, ", \"sharedMemPerMultiprocessor\": ");
		put_i64(o, a->shared_per_sm);
	}
	PUT_LIT(o, ",\n \"clockRate\": ");
	put_i64(o, d->core_clock_khz);
	if (d->memory_bandwidth > 0) {
		PUT_LIT(o, ", \"memoryBandwidth\": ");
		put_i64(o, d->memory_bandwidth);
	}
	PUT_LIT(o, "}");
}

/*
 * distributedInfo as Kineto writes it, "rank": N with a space after the colon: Holistic Trace
 * Analysis finds the rank of a file with the pattern "rank":\s+(\d+), so it comes first in the
 * file. A file of several ranks says the lowest and lists them all in "ranks" (HTA reads one rank
 * per file: --per-rank); a file without ranks is rank 0 of 1, what HTA asks of a trace of one
 * process.
 */
static void put_distributed(struct exporter *ex)
{
	struct ex_out *o = &ex->out;
	const struct ex_process *first = NULL;
	int nranked = 0;

	for (int i = 0; i < ex->nprocs; i++) {
		if (ex->procs[i].rank == CS_ID_NONE)
			continue;
		if (!first)
			first = &ex->procs[i]; /* the lowest rank: processes are sorted by rank */
		nranked++;
	}
	if (!first) {
		PUT_LIT(o, "\"distributedInfo\": {\"rank\": 0, \"world_size\": 1},\n");
		return;
	}
	PUT_LIT(o, "\"distributedInfo\": {\"rank\": ");
	put_i64(o, first->rank);
	if (first->local_rank != CS_ID_NONE) {
		PUT_LIT(o, ", \"local_rank\": ");
		put_i64(o, first->local_rank);
	}
	if (first->world_size != CS_ID_NONE) {
		PUT_LIT(o, ", \"world_size\": ");
		put_i64(o, first->world_size);
	}
	if (nranked > 1) {
		int n = 0;

		PUT_LIT(o, ", \"ranks\": [");
		for (int i = 0; i < ex->nprocs; i++) {
			if (ex->procs[i].rank == CS_ID_NONE)
				continue;
			if (n++)
				PUT_LIT(o, ", ");
			put_i64(o, ex->procs[i].rank);
		}
		PUT_LIT(o, "]");
	}
	PUT_LIT(o, "},\n");
}

static int chrome_begin(struct exporter *ex)
{
	struct ex_out *o = &ex->out;

	ex->priv = calloc(1, sizeof(struct chrome));
	if (!ex->priv)
		return cs_error_set(ex->err, CS_ERR_NOMEM, "out of memory");
	PUT_LIT(o, "{\"schemaVersion\": 1,\n");
	put_distributed(ex);
	PUT_LIT(o, "\"deviceProperties\": [");
	for (int i = 0; i < ex->nprops; i++) {
		if (i)
			PUT_LIT(o, ",");
		PUT_LIT(o, "\n");
		put_device(o, &ex->props[i]);
	}
	PUT_LIT(o, "],\n");
	if (ex->base_ns) {
		PUT_LIT(o, "\"baseTimeNanoseconds\":");
		put_i64(o, ex->base_ns);
		PUT_LIT(o, ",\n");
	}
	PUT_LIT(o, "\"displayTimeUnit\":\"ms\",\n\"traceEvents\":[");
	return 0;
}

static int chrome_declare(struct exporter *ex, struct ex_track *t)
{
	switch (t->kind) {
	case EX_TRACK_PROCESS:
	case EX_TRACK_GPU:
		metadata(ex, "process_name", t->pid, -1, "name", t->name, 0);
		metadata(ex, "process_sort_index", t->pid, -1, "sort_index", NULL, t->sort_index);
		if (t->labels)
			metadata(ex, "process_labels", t->pid, -1, "labels", t->labels, 0);
		break;
	case EX_TRACK_THREAD:
	case EX_TRACK_STREAM:
	case EX_TRACK_STEPS:
		metadata(ex, "thread_name", t->pid, t->tid, "name", t->name, 0);
		metadata(ex, "thread_sort_index", t->pid, t->tid, "sort_index", NULL,
			 t->sort_index);
		break;
	default: /* counters and async ranges are named by their events */
		break;
	}
	return 0;
}

static int chrome_slice(struct exporter *ex, const struct ex_event *e)
{
	struct ex_out *o = &ex->out;
	char *w, *s;

	begin_event(ex, 'X');
	put_cat_name(o, e->cat, e->name);
	put_where(o, e->track->pid, e->track->tid, e->ts);
	s = w = ex_out_space(o, 40);
	memcpy(w, ",\"dur\":", 7);
	w += 7;
	w += ex_fmt_us(w, e->dur);
	o->len += (size_t)(w - s);
	if (e->nargs)
		put_args(o, e);
	PUT_LIT(o, "}");
	return 0;
}

static int chrome_flow(struct exporter *ex, const struct ex_track *from, int64_t from_ts,
		       const struct ex_track *to, int64_t to_ts)
{
	struct chrome *c = ex->priv;
	struct ex_out *o = &ex->out;
	uint64_t id = ++c->next_flow;

	/* Kineto: the start binds to the enclosing slice by itself, the end says "bp":"e" */
	begin_event(ex, 's');
	PUT_LIT(o, ",\"id\":");
	put_i64(o, (int64_t)id);
	put_where(o, from->pid, from->tid, from_ts);
	PUT_LIT(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
	begin_event(ex, 'f');
	PUT_LIT(o, ",\"id\":");
	put_i64(o, (int64_t)id);
	put_where(o, to->pid, to->tid, to_ts);
	PUT_LIT(o, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
	return 0;
}

static int chrome_range(struct exporter *ex, const struct ex_event *e)
{
	struct chrome *c = ex->priv;
	struct ex_out *o = &ex->out;
	uint64_t id = ++c->next_range;

	begin_event(ex, 'b');
	put_cat_name(o, e->cat, e->name);
	PUT_LIT(o, ",\"id\":");
	put_i64(o, (int64_t)id);
	put_where(o, e->thread->pid, e->thread->tid, e->ts);
	if (e->nargs)
		put_args(o, e);
	PUT_LIT(o, "}");
	begin_event(ex, 'e');
	put_cat_name(o, e->cat, e->name);
	PUT_LIT(o, ",\"id\":");
	put_i64(o, (int64_t)id);
	put_where(o, e->end_thread->pid, e->end_thread->tid, e->ts + e->dur);
	PUT_LIT(o, "}");
	return 0;
}

static int chrome_instant(struct exporter *ex, const struct ex_event *e)
{
	struct ex_out *o = &ex->out;
	int global = e->track->kind == EX_TRACK_FINDINGS;

	begin_event(ex, 'i');
	if (global)
		PUT_LIT(o, ",\"s\":\"g\"");
	else
		PUT_LIT(o, ",\"s\":\"t\"");
	put_cat_name(o, e->cat, e->name);
	put_where(o, e->track->pid, global ? 0 : e->track->tid, e->ts);
	if (e->nargs)
		put_args(o, e);
	PUT_LIT(o, "}");
	return 0;
}

static int chrome_counter(struct exporter *ex, const struct ex_track *t, int64_t ts, int64_t value)
{
	struct ex_out *o = &ex->out;

	begin_event(ex, 'C');
	PUT_LIT(o, ",\"name\":");
	put_string(o, t->name);
	put_where(o, t->pid, 0, ts);
	PUT_LIT(o, ",\"args\":{\"");
	ex_out_puts(o, ex_key_names[EX_KEY_ALLOCATED]);
	PUT_LIT(o, "\":");
	put_i64(o, value);
	PUT_LIT(o, "}}");
	return 0;
}

/* Kineto's [memory] instant: what PyTorch's profiler writes for each allocation and free. cuscope
 * sees the CUDA allocations (what PyTorch's caching allocator reserves), so both totals are the
 * device memory in use on the GPU after the call. */
static int chrome_memory(struct exporter *ex, const struct ex_track *thread, int64_t ts,
			 int32_t device, uint64_t address, int64_t bytes, int64_t in_use)
{
	struct ex_out *o = &ex->out;

	begin_event(ex, 'i');
	PUT_LIT(o, ",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\"");
	put_where(o, thread->pid, thread->tid, ts);
	PUT_LIT(o, ",\"args\":{\"Total Reserved\":");
	put_i64(o, in_use);
	PUT_LIT(o, ",\"Total Allocated\":");
	put_i64(o, in_use);
	PUT_LIT(o, ",\"Bytes\":");
	put_i64(o, bytes);
	PUT_LIT(o, ",\"Addr\":");
	put_i64(o, (int64_t)(address & ((UINT64_C(1) << 53) - 1))); /* exact in a double */
	PUT_LIT(o, ",\"Device Type\":1,\"Device Id\":");
	put_i64(o, device);
	PUT_LIT(o, "}}");
	return 0;
}

static int chrome_end(struct exporter *ex)
{
	PUT_LIT(&ex->out, "\n]}\n");
	return 0;
}

static void chrome_free(struct exporter *ex)
{
	free(ex->priv);
	ex->priv = NULL;
}

const struct export_ops ex_chrome_ops = {
	.name = "chrome",
	.begin = chrome_begin,
	.declare = chrome_declare,
	.slice = chrome_slice,
	.flow = chrome_flow,
	.range = chrome_range,
	.instant = chrome_instant,
	.counter = chrome_counter,
	.memory = chrome_memory,
	.end = chrome_end,
	.free = chrome_free,
};
