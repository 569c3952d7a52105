/*
 * decode.c - the records of one spool file into rows: process-local ids (strings, stacks)
 * remapped to the trace's, times made relative to the time base, values bounded, NVTX ranges
 * paired, VMM handles followed, stacks symbolized; GPU records, API calls, waits and allocations
 * go through the correlation join (correlate.c).
 *
 * - unknown_timestamps counts each raw timestamp that was expected but zero (event starts and
 *   ends, memory and NVTX times, API call times; not the optional queued/submitted), each end
 *   before its start, each queued/submitted after the start, each launch time dropped because the
 *   launch call started after its GPU work, each NVTX range still open at the end of its file, and
 *   each implausible timestamp.
 * - Plausibility (include/cuscope/trace.h): a timestamp farther than CS_TS_MAX from the time base,
 *   an end farther than CS_TS_MAX from its start, a size above CS_BYTES_MAX or a count above
 *   INT64_MAX is stored as unknown (NULL, or 0 for sizes and counts) and counted in "implausible".
 * - A known record shorter than its fixed part, or whose text runs past its size, is skipped
 *   ("bad_records"); unknown record types are skipped by their size ("unknown_records").
 * - Stacks: a STACK record becomes its native frames (innermost first), then its Python frames
 *   (innermost first). Native pcs are symbolized as the record is read, against the mappings the
 *   MODULE records of the file gave so far and the module files on this host (symbolize.c); the
 *   string map keeps each string's text for the module paths and Python names. When the Python
 *   frames were borrowed from the thread waiting in backward() (CS_STACK_PY_BORROWED), a note
 *   frame (kind 3) stands between the two parts.
 * - Rings (`record --ring`): the events of a ring's segments that started before its window (the
 *   last CS_REC_RING's window_start, before which the deleted segments may have held events), and
 *   those whose call did (correlation id not after its last_corr, or a call left out here) are
 *   left out and counted (proc_info.ring_cut): the trace starts where nothing is missing. Every
 *   event record begins with its start (or its only timestamp) right after the record header.
 * - Each row starts with every column missing (cs_event_clear); a new column of an event table
 *   (include/cuscope/columns.def) gets its value in the rec_*() function of its record here.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/grow.h"
#include "spool_internal.h"
#include "cuscope/checked.h"

static int bad_record(struct proc_file *pf)
{
	pf->im->bad_records++;
	return 0;
}

/* ---- time ---- */

/* A value stored as unknown because it is outside the bounds (counted). */
static void implausible(struct importer *im, int is_timestamp)
{
	im->st->implausible++;
	if (is_timestamp)
		im->st->unknown_timestamps++;
}

/*
 * A raw CUPTI timestamp (not 0) as ns since the trace start; one farther than CS_TS_MAX from the
 * time base is unknown (counted).
 */
static int64_t ts_from(struct importer *im, uint64_t raw)
{
	uint64_t d = raw >= im->base_cupti ? raw - im->base_cupti : im->base_cupti - raw;

	if (d > (uint64_t)CS_TS_MAX) {
		implausible(im, 1);
		return CS_TS_UNKNOWN;
	}
	return raw >= im->base_cupti ? (int64_t)d : -(int64_t)d;
}

/* A raw CUPTI timestamp as ns since the trace start; 0 is unknown (counted). */
static int64_t ts_rel(struct importer *im, uint64_t raw)
{
	if (!raw) {
		im->st->unknown_timestamps++;
		return CS_TS_UNKNOWN;
	}
	return ts_from(im, raw);
}

/* A raw timestamp that may be absent without anything being wrong. */
static int64_t ts_opt(struct importer *im, uint64_t raw)
{
	return raw ? ts_from(im, raw) : CS_TS_UNKNOWN;
}

/*
 * A start/end pair: an end before its start is unknown (counted), and so is one more than
 * CS_TS_MAX after it (counted as implausible).
 */
static void ts_span(struct importer *im, uint64_t rs, uint64_t re, int64_t *s, int64_t *e)
{
	*s = ts_rel(im, rs);
	*e = ts_rel(im, re);
	if (*s == CS_TS_UNKNOWN || *e == CS_TS_UNKNOWN)
		return;
	if (*e < *s) {
		im->st->unknown_timestamps++;
		*e = CS_TS_UNKNOWN;
	} else if (*e - *s > CS_TS_MAX) {
		implausible(im, 1);
		*e = CS_TS_UNKNOWN;
	}
}

/* A size from a record: above CS_BYTES_MAX it is unknown, 0 (counted). */
static int64_t size_val(struct importer *im, uint64_t raw)
{
	if (raw > (uint64_t)CS_BYTES_MAX) {
		implausible(im, 0);
		return 0;
	}
	return (int64_t)raw;
}

/* A count from a record: above INT64_MAX it is unknown, 0 (counted). */
static int64_t count_val(struct importer *im, uint64_t raw)
{
	if (raw > (uint64_t)INT64_MAX) {
		implausible(im, 0);
		return 0;
	}
	return (int64_t)raw;
}

/* ---- ids ---- */

static int64_t string_default(struct importer *im, enum string_default d)
{
	static const char *const text[] = {"", "<unknown>"};
	int64_t id;

	if (d == STR_NONE)
		return CS_ID_NONE;
	if (im->default_ids[d] < 0) {
		/* interned on first use, so that a trace without them does not list them */
		id = cs_writer_intern(im->w, text[d]);
		if (id < 0) {
			if (!im->sticky_rc)
				im->sticky_rc = import_writer_error(im, id);
			return CS_ID_NONE;
		}
		im->default_ids[d] = id;
	}
	return im->default_ids[d];
}

/* The trace string of a process-local string id; dflt for 0 or an id never defined (counted). */
static int64_t string_ref(struct proc_file *pf, uint32_t sid, enum string_default dflt)
{
	const int64_t *id;

	if (sid) {
		id = u64map_get(&pf->strings, sid);
		if (id)
			return *id;
		pf->im->bad_refs++;
	}
	return string_default(pf->im, dflt);
}

/*
 * The text of a process-local string id, or NULL for 0 or an id never defined (counted): the
 * writer's copy, valid until the trace is finished.
 */
static const char *string_text(struct proc_file *pf, uint32_t sid)
{
	const int64_t *id;

	if (!sid)
		return NULL;
	id = u64map_get(&pf->strings, sid);
	if (id)
		return cs_writer_string(pf->im->w, *id);
	pf->im->bad_refs++;
	return NULL;
}

static int64_t stack_ref(struct proc_file *pf, uint32_t sid)
{
	const int64_t *id;

	if (!sid)
		return CS_ID_NONE;
	id = u64map_get(&pf->stacks, sid);
	if (id)
		return *id;
	pf->im->bad_refs++;
	return CS_ID_NONE;
}

/* ---- processes, devices, streams ---- */

struct proc_info *import_proc_get(struct importer *im, const struct cs_spool_header *h)
{
	struct proc_info *p, **np;

	for (size_t i = 0; i < im->nprocs; i++) {
		if (im->procs[i]->pid == h->pid) {
			p = im->procs[i];
			if (h->cupti_ns) {
				int64_t start = ts_opt(im, h->cupti_ns);

				if (p->start == CS_TS_UNKNOWN || start < p->start)
					p->start = start;
			}
			return p;
		}
	}
	np = realloc(im->procs, (im->nprocs + 1) * sizeof(*np));
	if (!np)
		return NULL;
	im->procs = np;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = h->pid;
	p->ppid = h->ppid;
	p->rank = p->local_rank = p->world_size = CS_ID_NONE;
	p->exit_code = CS_ID_NONE;
	p->start = ts_opt(im, h->cupti_ns);
	p->end = CS_TS_UNKNOWN;
	u64map_init(&p->devices, 1);
	u64map_init(&p->streams, 1);
	u64map_init(&p->contexts, sizeof(int32_t));
	im->procs[im->nprocs++] = p;
	return p;
}

void import_proc_free(struct proc_info *p)
{
	free(p->cmdline);
	u64map_free(&p->devices);
	u64map_free(&p->streams);
	u64map_free(&p->contexts);
	free(p);
}

/*
 * Remember a GPU record's context and stream when it is read (a sync row written before the GPU
 * row, which may wait for its launch, takes its device from the context); the first sighting of a
 * stream writes its row.
 */
static int note_gpu_record(struct proc_file *pf, int32_t device, uint32_t context, uint32_t stream)
{
	struct proc_info *p = pf->proc;
	int32_t *dev;
	int created;

	p->used_cuda = 1;
	dev = u64map_put(&p->contexts, context, &created);
	if (!dev)
		return import_nomem(pf->im);
	*dev = device;
	if (!u64map_put(&p->streams, (uint64_t)context << 32 | stream, &created))
		return import_nomem(pf->im);
	if (created) {
		cs_stream s = {.pid = p->pid,
			       .device_id = device,
			       .context_id = context,
			       .stream_id = stream};
		int rc = cs_writer_add_stream(pf->im->w, &s);

		if (rc < 0)
			return import_writer_error(pf->im, rc);
	}
	return 0;
}

/* ---- records ---- */

static int rec_string(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_string r;
	int64_t id, *slot;
	int created;

	if (!spool_rec_load(&r, sizeof(r), p, size) || r.len > size - sizeof(r) || !r.id)
		return bad_record(pf);
	id = cs_writer_intern_len(pf->im->w, (const char *)p + sizeof(r), r.len);
	if (id < 0)
		return import_writer_error(pf->im, id);
	slot = u64map_put(&pf->strings, r.id, &created);
	if (!slot)
		return import_nomem(pf->im);
	*slot = id;
	return 0;
}

static int rec_process(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_process r;
	struct proc_info *proc = pf->proc;
	char *cmd;

	if (!spool_rec_load(&r, sizeof(r), p, size) || r.cmdline_len > size - sizeof(r))
		return bad_record(pf);
	cmd = strndup((const char *)p + sizeof(r), r.cmdline_len);
	if (!cmd)
		return import_nomem(pf->im);
	free(proc->cmdline);
	proc->cmdline = cmd;
	proc->ppid = r.ppid;
	proc->rank = r.rank < 0 ? CS_ID_NONE : r.rank;
	proc->local_rank = r.local_rank < 0 ? CS_ID_NONE : r.local_rank;
	proc->world_size = r.world_size < 0 ? CS_ID_NONE : r.world_size;
	return 0;
}

static int rec_device(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_device r;
	char uuid[48];
	const uint8_t *u;
	cs_device d;
	int created, rc;

	if (!spool_rec_load(&r, sizeof(r), p, size) || r.name_len > size - sizeof(r))
		return bad_record(pf);
	if (!u64map_put(&pf->proc->devices, r.device_id, &created))
		return import_nomem(pf->im);
	if (!created)
		return 0;
	u = r.uuid;
	snprintf(uuid, sizeof(uuid),
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
	memset(&d, 0, sizeof(d));
	d.pid = pf->proc->pid;
	d.device_id = (int32_t)r.device_id;
	d.uuid = uuid;
	d.name = strndup((const char *)p + sizeof(r), r.name_len);
	if (!d.name)
		return import_nomem(pf->im);
	d.total_memory = size_val(pf->im, r.total_memory);
	d.sm_count = r.sm_count;
	d.compute_major = r.compute_major;
	d.compute_minor = r.compute_minor;
	d.core_clock_khz = r.core_clock_khz;
	d.memory_bandwidth = size_val(pf->im, r.memory_bandwidth);
	rc = cs_writer_add_device(pf->im->w, &d);
	free((char *)d.name);
	return rc < 0 ? import_writer_error(pf->im, rc) : 0;
}

static int rec_kernel(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_kernel r;
	cs_event ev;
	cs_kernel *k = &ev.u.kernel;
	int bad_latency, rc;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	cs_event_clear(&ev, CS_EV_KERNEL);
	ts_span(im, r.start, r.end, &k->start, &k->end);
	/* queued <= submitted <= start, or the latency timestamps are nonsense (graphs, JAX) */
	bad_latency = r.queued && r.submitted && r.queued > r.submitted;
	if (r.queued) {
		if (bad_latency || (r.start && r.queued > r.start))
			im->st->unknown_timestamps++;
		else
			k->queued = ts_opt(im, r.queued);
	}
	if (r.submitted) {
		if (bad_latency || (r.start && r.submitted > r.start))
			im->st->unknown_timestamps++;
		else
			k->submitted = ts_opt(im, r.submitted);
	}
	k->pid = pf->proc->pid;
	k->device_id = (int32_t)r.device_id;
	k->context_id = r.context_id;
	k->stream_id = r.stream_id;
	k->correlation_id = r.correlation_id;
	k->grid_x = r.grid[0];
	k->grid_y = r.grid[1];
	k->grid_z = r.grid[2];
	k->block_x = r.block[0];
	k->block_y = r.block[1];
	k->block_z = r.block[2];
	k->registers_per_thread = r.registers;
	k->static_shared_memory = r.static_shared;
	k->dynamic_shared_memory = r.dynamic_shared;
	k->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	k->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	k->name_id = string_ref(pf, r.name_sid, STR_UNKNOWN);
	rc = note_gpu_record(pf, k->device_id, k->context_id, k->stream_id);
	return rc ? rc : corr_join_activity(pf, &ev, r.correlation_id);
}

static int rec_memcpy(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memcpy r;
	cs_event ev;
	cs_memcpy *m = &ev.u.memcpy;
	int rc;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	cs_event_clear(&ev, CS_EV_MEMCPY);
	ts_span(pf->im, r.start, r.end, &m->start, &m->end);
	m->pid = pf->proc->pid;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id;
	m->correlation_id = r.correlation_id;
	m->copy_kind = r.copy_kind;
	m->src_kind = r.src_kind;
	m->dst_kind = r.dst_kind;
	m->is_async = r.flags & 1;
	m->src_device_id = r.src_device == UINT32_MAX ? CS_ID_NONE : (int32_t)r.src_device;
	m->dst_device_id = r.dst_device == UINT32_MAX ? CS_ID_NONE : (int32_t)r.dst_device;
	m->bytes = size_val(pf->im, r.bytes);
	m->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	m->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	rc = note_gpu_record(pf, m->device_id, m->context_id, m->stream_id);
	return rc ? rc : corr_join_activity(pf, &ev, r.correlation_id);
}

static int rec_memset(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memset r;
	cs_event ev;
	cs_memset *m = &ev.u.memset;
	int rc;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	cs_event_clear(&ev, CS_EV_MEMSET);
	ts_span(pf->im, r.start, r.end, &m->start, &m->end);
	m->pid = pf->proc->pid;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id;
	m->correlation_id = r.correlation_id;
	m->mem_kind = r.mem_kind;
	m->is_async = r.flags & 1;
	m->value = r.value;
	m->bytes = size_val(pf->im, r.bytes);
	m->graph_id = r.graph_id ? (int64_t)r.graph_id : CS_ID_NONE;
	m->graph_node_id = r.graph_id ? (int64_t)r.graph_node_id : CS_ID_NONE;
	rc = note_gpu_record(pf, m->device_id, m->context_id, m->stream_id);
	return rc ? rc : corr_join_activity(pf, &ev, r.correlation_id);
}

static int rec_memory(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_memory r;
	cs_event ev;
	cs_memory *m = &ev.u.memory;
	int32_t *dev;
	int created;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	if (r.op != 1 && r.op != 2)
		return bad_record(pf);
	dev = u64map_put(&pf->proc->contexts, r.context_id, &created);
	if (!dev)
		return import_nomem(pf->im);
	*dev = (int32_t)r.device_id;
	cs_event_clear(&ev, CS_EV_MEMORY);
	m->start = ts_rel(pf->im, r.timestamp);
	m->pid = pf->proc->pid;
	m->tid = r.h.tid;
	m->device_id = (int32_t)r.device_id;
	m->context_id = r.context_id;
	m->stream_id = r.stream_id == UINT64_MAX ? CS_ID_NONE : (int64_t)r.stream_id;
	m->correlation_id = r.correlation_id;
	m->op = r.op == 1 ? CS_MEMOP_ALLOC : CS_MEMOP_FREE;
	m->mem_kind = r.mem_kind;
	m->cbid = CS_ID_NONE;
	m->address = r.address;
	m->bytes = size_val(pf->im, r.bytes);
	return corr_join_activity(pf, &ev, r.correlation_id);
}

static int rec_sync(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_sync r;
	cs_event ev;
	cs_sync *s = &ev.u.sync;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	cs_event_clear(&ev, CS_EV_SYNC);
	ts_span(pf->im, r.start, r.end, &s->start, &s->end);
	s->pid = pf->proc->pid;
	s->tid = r.h.tid;
	s->device_id = CS_ID_NONE; /* from the context when the row is written */
	s->context_id = r.context_id;
	s->stream_id = r.stream_id == UINT32_MAX ? CS_ID_NONE : (int64_t)r.stream_id;
	s->event_id = r.cuda_event_id == UINT32_MAX ? CS_ID_NONE : (int64_t)r.cuda_event_id;
	s->correlation_id = r.correlation_id;
	s->type = r.type >= CS_SYNC_EVENT_SYNCHRONIZE && r.type <= CS_SYNC_CONTEXT_SYNCHRONIZE
			  ? (int32_t)r.type
			  : CS_SYNC_UNKNOWN;
	s->cbid = CS_ID_NONE;
	s->stack_id = CS_ID_NONE;
	return corr_join_activity(pf, &ev, r.correlation_id);
}

/*
 * A memory row made from an API call: a failed allocation or free (no activity record shows it),
 * or a VMM call.
 */
static int write_api_memory(struct proc_file *pf, const struct cs_rec_api *r,
			    const struct corr_entry *api, int op, int is_vmm, int64_t bytes)
{
	cs_event ev;
	cs_memory *m = &ev.u.memory;

	cs_event_clear(&ev, CS_EV_MEMORY);
	m->start = api->start;
	m->pid = pf->proc->pid;
	m->tid = api->tid;
	m->device_id = CS_ID_NONE;
	m->stream_id = CS_ID_NONE;
	m->correlation_id = r->correlation_id;
	m->op = op;
	m->mem_kind = CS_MEM_UNKNOWN;
	m->is_vmm = is_vmm;
	m->result = api->result;
	m->cbid = api->cbid;
	m->address = r->arg_address;
	m->bytes = bytes;
	m->stack_id = api->stack_id;
	return import_write_event(pf->im, &ev);
}

/* cuMemCreate & co: a memory row each; a release gets the size of the create of its handle. */
static int api_vmm(struct proc_file *pf, const struct cs_rec_api *r, const struct corr_entry *api)
{
	static const int ops[] = {
		[CS_APICLASS_VMM_CREATE] = CS_MEMOP_VMM_CREATE,
		[CS_APICLASS_VMM_RELEASE] = CS_MEMOP_VMM_RELEASE,
		[CS_APICLASS_VMM_MAP] = CS_MEMOP_VMM_MAP,
		[CS_APICLASS_VMM_UNMAP] = CS_MEMOP_VMM_UNMAP,
		[CS_APICLASS_VMM_RESERVE] = CS_MEMOP_VMM_RESERVE,
		[CS_APICLASS_VMM_ADDRESS_FREE] = CS_MEMOP_VMM_ADDRESS_FREE,
	};
	int64_t bytes = size_val(pf->im, r->arg_bytes), *slot;
	int created;

	if (r->api_class == CS_APICLASS_VMM_CREATE && r->result == 0) {
		slot = u64map_put(&pf->vmm, r->arg_address, &created);
		if (!slot)
			return import_nomem(pf->im);
		*slot = bytes;
	} else if (r->api_class == CS_APICLASS_VMM_RELEASE) {
		slot = u64map_get(&pf->vmm, r->arg_address);
		bytes = slot ? *slot : 0;
		if (slot && r->result == 0)
			u64map_del(&pf->vmm, r->arg_address);
	}
	return write_api_memory(pf, r, api, ops[r->api_class], 1, bytes);
}

static int rec_api(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_api r;
	struct corr_entry api;
	int rc;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	memset(&api, 0, sizeof(api));
	api.has_api = 1;
	ts_span(im, r.start, r.end, &api.start, &api.end);
	api.stack_id = stack_ref(pf, r.stack_id);
	api.tid = r.h.tid;
	api.cbid = (int32_t)r.cbid;
	api.result = r.result;
	api.api_class = r.api_class;
	api.api_kind = r.domain;

	if (im->keep_all_api || !api_class_is_folded(r.api_class)) {
		cs_event ev;
		cs_api *a = &ev.u.api;

		cs_event_clear(&ev, CS_EV_API);
		a->start = api.start;
		a->end = api.end;
		a->pid = pf->proc->pid;
		a->tid = api.tid;
		a->api_kind = api.api_kind;
		a->cbid = api.cbid;
		a->correlation_id = r.correlation_id;
		a->result = r.result;
		a->name_id = string_ref(pf, r.name_sid, STR_UNKNOWN);
		a->stack_id = api.stack_id;
		rc = import_write_event(im, &ev);
		if (rc)
			return rc;
	}

	switch (r.api_class) {
	case CS_APICLASS_ALLOC:
	case CS_APICLASS_FREE:
		if (r.result != 0)
			return write_api_memory(pf, &r, &api,
						r.api_class == CS_APICLASS_ALLOC ? CS_MEMOP_ALLOC
										 : CS_MEMOP_FREE,
						0, size_val(im, r.arg_bytes));
		return corr_join_api(pf, r.correlation_id, &api);
	case CS_APICLASS_VMM_CREATE:
	case CS_APICLASS_VMM_RELEASE:
	case CS_APICLASS_VMM_MAP:
	case CS_APICLASS_VMM_UNMAP:
	case CS_APICLASS_VMM_RESERVE:
	case CS_APICLASS_VMM_ADDRESS_FREE:
		return api_vmm(pf, &r, &api);
	case CS_APICLASS_LAUNCH:
	case CS_APICLASS_GRAPH_LAUNCH:
	case CS_APICLASS_MEMCPY_SYNC:
	case CS_APICLASS_MEMCPY_ASYNC:
	case CS_APICLASS_MEMSET:
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_QUERY_STREAM:
	case CS_APICLASS_QUERY_EVENT:
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return corr_join_api(pf, r.correlation_id, &api);
	}
	return 0; /* OTHER, PROFILER_START/STOP and classes of newer versions: the API row is all */
}

static int write_nvtx(struct proc_file *pf, const struct nvtx_open *o, int type, int depth,
		      int64_t end, uint32_t end_tid, int64_t range_id)
{
	cs_event ev;
	cs_nvtx *n = &ev.u.nvtx;

	cs_event_clear(&ev, CS_EV_NVTX);
	n->start = o->start;
	n->end = end;
	if (end != CS_TS_UNKNOWN && o->start != CS_TS_UNKNOWN && end < o->start) {
		pf->im->st->unknown_timestamps++;
		n->end = CS_TS_UNKNOWN;
	}
	n->pid = pf->proc->pid;
	n->tid = o->tid;
	n->end_tid = end_tid;
	n->type = type;
	n->depth = depth;
	n->domain_id = o->domain_id;
	n->text_id = o->text_id;
	n->range_id = range_id;
	n->color = o->color;
	n->category = o->category;
	n->payload_id = o->payload_id;
	return import_write_event(pf->im, &ev);
}

static int rec_nvtx(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_nvtx r;
	struct nvtx_open o, *slot;
	struct nvtx_stack *st;
	uint64_t stack_key;
	int created, rc;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	/* push/pop nest per thread and domain: nvtxDomainRangePop pops its own domain's stack */
	stack_key = (uint64_t)r.h.tid << 32 | r.domain_sid;
	memset(&o, 0, sizeof(o));
	o.start = ts_rel(im, r.timestamp);
	o.tid = r.h.tid;
	o.color = r.color;
	o.category = r.category;
	if (r.op == CS_NVTX_OP_PUSH || r.op == CS_NVTX_OP_START || r.op == CS_NVTX_OP_MARK) {
		o.text_id = string_ref(pf, r.text_sid, STR_EMPTY);
		o.domain_id = string_ref(pf, r.domain_sid, STR_NONE);
		o.payload_id = string_ref(pf, r.payload_sid, STR_NONE);
	}
	switch (r.op) {
	case CS_NVTX_OP_PUSH:
		st = u64map_put(&pf->nvtx_stacks, stack_key, &created);
		if (!st)
			return import_nomem(im);
		if (cs_grow((void **)&st->v, &st->cap, (size_t)st->n + 1, sizeof(*st->v)))
			return import_nomem(im);
		st->v[st->n++] = o;
		return 0;
	case CS_NVTX_OP_POP:
		st = u64map_get(&pf->nvtx_stacks, stack_key);
		if (!st || !st->n) {
			im->nvtx_unmatched++;
			return 0;
		}
		st->n--;
		return write_nvtx(pf, &st->v[st->n], CS_NVTX_PUSHPOP, (int)st->n, o.start, r.h.tid,
				  CS_ID_NONE);
	case CS_NVTX_OP_START:
		slot = u64map_put(&pf->nvtx_ranges, r.range_id, &created);
		if (!slot)
			return import_nomem(im);
		if (!created) {
			/* the id came back before its end: the older range never ended */
			im->st->unknown_timestamps++;
			rc = write_nvtx(pf, slot, CS_NVTX_STARTEND, 0, CS_TS_UNKNOWN, 0,
					(int64_t)r.range_id);
			if (rc)
				return rc;
		}
		*slot = o;
		return 0;
	case CS_NVTX_OP_END:
		slot = u64map_get(&pf->nvtx_ranges, r.range_id);
		if (!slot) {
			im->nvtx_unmatched++;
			return 0;
		}
		rc = write_nvtx(pf, slot, CS_NVTX_STARTEND, 0, o.start, r.h.tid,
				(int64_t)r.range_id);
		u64map_del(&pf->nvtx_ranges, r.range_id);
		return rc;
	case CS_NVTX_OP_MARK:
		return write_nvtx(pf, &o, CS_NVTX_MARK, 0, o.start, r.h.tid, CS_ID_NONE);
	}
	im->unknown_records++; /* an op of a newer version */
	return 0;
}

/* A mapping of the process: later pcs in its range resolve to this file. */
static int rec_module(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct cs_rec_module r;
	const char *path;

	if (!spool_rec_load(&r, sizeof(r), p, size))
		return bad_record(pf);
	path = string_text(pf, r.path_sid);
	if (!path)
		return r.path_sid ? 0 : bad_record(pf);
	if (cs_modmap_add(&pf->modules, r.start, r.end, r.offset, path, strlen(path)))
		return import_nomem(pf->im);
	return 0;
}

/* A native frame: the pc resolved to module, symbol and offset where the host allows. */
static void native_frame(struct proc_file *pf, uint64_t pc, cs_frame *f)
{
	struct cs_sym_result res;

	cs_symbolize(&pf->modules, pc, &res);
	f->kind = 1;
	f->pc = pc;
	f->module = res.module;
	f->symbol = res.symbol;
	f->offset = res.offset;
	f->file = res.file;
	f->line = res.line;
	pf->im->native_pcs++;
	if (!res.symbol)
		pf->im->unsymbolized_pcs++;
}

static void python_frame(struct proc_file *pf, const struct cs_rec_pyframe *py, cs_frame *f)
{
	f->kind = 2;
	f->file = string_text(pf, py->file_sid);
	f->symbol = string_text(pf, py->func_sid);
	f->line = py->line > 0 ? py->line : 0;
}

/* Kind and text of the frame that marks Python frames borrowed from the main thread, waiting in
 * backward() while an autograd engine thread made the call (docs/trace-format.md). */
#define FRAME_NOTE 3
#define BORROWED_PY_NOTE                                                                      \
	"[autograd engine thread: the Python frames below are the main thread's, waiting in " \
	"backward()]"

/* A stack: native frames then Python frames, innermost first in each part. */
static int rec_stack(struct proc_file *pf, const unsigned char *p, size_t size)
{
	struct importer *im = pf->im;
	struct cs_rec_stack r;
	int64_t id = CS_ID_NONE, *slot;
	size_t n;
	int created, note;

	if (!spool_rec_load(&r, sizeof(r), p, size) || !r.id ||
	    (uint64_t)r.depth * 8 + (uint64_t)r.py_depth * sizeof(struct cs_rec_pyframe) >
		    size - sizeof(r))
		return bad_record(pf);
	note = (r.flags & CS_STACK_PY_BORROWED) && r.py_depth > 0;
	n = (size_t)r.depth + r.py_depth + (size_t)note;
	if (n > 0) {
		const unsigned char *py = p + sizeof(r) + 8 * (size_t)r.depth;

		if (n > im->frames_cap) {
			cs_frame *f = realloc(im->frames, n * sizeof(*f));

			if (!f)
				return import_nomem(im);
			im->frames = f;
			im->frames_cap = n;
		}
		memset(im->frames, 0, n * sizeof(*im->frames));
		for (uint32_t i = 0; i < r.depth; i++) {
			uint64_t pc;

			memcpy(&pc, p + sizeof(r) + 8 * (size_t)i, 8);
			native_frame(pf, pc, &im->frames[i]);
		}
		if (note) {
			im->frames[r.depth].kind = FRAME_NOTE;
			im->frames[r.depth].symbol = BORROWED_PY_NOTE;
		}
		for (uint32_t i = 0; i < r.py_depth; i++) {
			struct cs_rec_pyframe fr;

			memcpy(&fr, py + sizeof(fr) * (size_t)i, sizeof(fr));
			python_frame(pf, &fr, &im->frames[r.depth + (size_t)note + i]);
		}
		id = cs_writer_add_stack(im->w, im->frames, (int)n);
		if (id < 0)
			return import_writer_error(im, id);
	}
	slot = u64map_put(&pf->stacks, r.id, &created);
	if (!slot)
		return import_nomem(im);
	*slot = id;
	return 0;
}

_Static_assert(offsetof(struct cs_rec_kernel, start) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_memcpy, start) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_memset, start) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_memory, timestamp) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_sync, start) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_api, start) == sizeof(struct cs_rec) &&
		       offsetof(struct cs_rec_nvtx, timestamp) == sizeof(struct cs_rec),
	       "event records begin with their start");

/* Where the records that carry a correlation id have it (0: none). */
static const uint16_t corr_offset[CS_REC_TYPE_MAX] = {
	[CS_REC_KERNEL] = offsetof(struct cs_rec_kernel, correlation_id),
	[CS_REC_MEMCPY] = offsetof(struct cs_rec_memcpy, correlation_id),
	[CS_REC_MEMSET] = offsetof(struct cs_rec_memset, correlation_id),
	[CS_REC_MEMORY] = offsetof(struct cs_rec_memory, correlation_id),
	[CS_REC_SYNC] = offsetof(struct cs_rec_sync, correlation_id),
	[CS_REC_API] = offsetof(struct cs_rec_api, correlation_id),
};

/* The correlation id of a record that has one (0: none). */
static uint32_t rec_correlation(const struct cs_rec *h, const unsigned char *p)
{
	size_t off = h->type < CS_REC_TYPE_MAX ? corr_offset[h->type] : 0;
	uint32_t corr = 0;

	if (off && h->size >= off + sizeof(corr))
		memcpy(&corr, p + off, sizeof(corr));
	return corr;
}

/*
 * An event of a ring's segment: 1 when it is left out (counted), 0 when kept, a negative code
 * without memory. Left out: it started before the window, or
 * its call did (its correlation id is not after the latest one of the deleted segments, or its
 * call was left out here). A call left out takes the GPU records already waiting for it along.
 */
static int ring_cut(struct proc_file *pf, const struct cs_rec *h, const unsigned char *p)
{
	uint32_t corr = rec_correlation(h, p);
	uint64_t start = 0;
	int cut;

	if (!cs_rec_is_event(h->type) || h->size < sizeof(*h) + sizeof(start))
		return 0;
	memcpy(&start, p + sizeof(*h), sizeof(start));
	cut = (start && start < pf->ring.window_start) ||
	      (corr && pf->ring.last_corr && (int32_t)(corr - pf->ring.last_corr) <= 0) ||
	      (corr && u64map_get(&pf->ring_cut_corr, corr));
	if (!cut) {
		if (start > pf->proc->ring_last)
			pf->proc->ring_last = start;
		return 0;
	}
	if (h->type == CS_REC_API && corr) {
		int created;

		if (!u64map_put(&pf->ring_cut_corr, corr, &created))
			return import_nomem(pf->im);
		cs_sat_accum(&pf->proc->ring_cut, corr_drop_pending(pf, corr));
	}
	cs_sat_accum(&pf->proc->ring_cut, 1);
	return 1;
}

int import_record(struct proc_file *pf, const struct cs_rec *h, const unsigned char *p)
{
	struct cs_rec_dropped d;
	struct cs_rec_end e;

	if (pf->in_segment) {
		int cut = ring_cut(pf, h, p);

		if (cut)
			return cut < 0 ? cut : 0;
	}
	switch (h->type) {
	case CS_REC_STRING:
		return rec_string(pf, p, h->size);
	case CS_REC_PROCESS:
		return rec_process(pf, p, h->size);
	case CS_REC_DEVICE:
		return rec_device(pf, p, h->size);
	case CS_REC_CLOCK:
		return 0; /* the first pass took the time base */
	case CS_REC_KERNEL:
		return rec_kernel(pf, p, h->size);
	case CS_REC_MEMCPY:
		return rec_memcpy(pf, p, h->size);
	case CS_REC_MEMSET:
		return rec_memset(pf, p, h->size);
	case CS_REC_MEMORY:
		return rec_memory(pf, p, h->size);
	case CS_REC_SYNC:
		return rec_sync(pf, p, h->size);
	case CS_REC_API:
		return rec_api(pf, p, h->size);
	case CS_REC_NVTX:
		return rec_nvtx(pf, p, h->size);
	case CS_REC_DROPPED:
		if (!spool_rec_load(&d, sizeof(d), p, h->size))
			return bad_record(pf);
		cs_sat_accum(&pf->dropped, count_val(pf->im, d.count));
		pf->proc->cupti_bytes = size_val(pf->im, d.cupti_device_bytes);
		return 0;
	case CS_REC_STACK:
		return rec_stack(pf, p, h->size);
	case CS_REC_MODULE:
		return rec_module(pf, p, h->size);
	case CS_REC_CALL_TAILS: {
		struct cs_rec_call_tails t;

		if (!spool_rec_load(&t, sizeof(t), p, h->size))
			return bad_record(pf);
		pf->proc->has_tails = 1;
		for (int k = 0; k < CS_TAIL_KINDS; k++) {
			cs_sat_accum(&pf->proc->tail_calls[k], count_val(pf->im, t.calls[k]));
			cs_sat_accum(&pf->proc->tail_ns[k], count_val(pf->im, t.ns[k]));
		}
		return 0;
	}
	case CS_REC_RING:
		if (!spool_rec_load(&pf->ring, sizeof(pf->ring), p, h->size))
			return bad_record(pf);
		pf->has_ring = pf->proc->has_ring = 1;
		pf->proc->ring = pf->ring;
		return 0;
	case CS_REC_END:
		if (!spool_rec_load(&e, sizeof(e), p, h->size))
			return bad_record(pf);
		if (e.timestamp)
			pf->proc->end = ts_opt(pf->im, e.timestamp);
		pf->proc->exit_code = e.exit_code < 0 ? CS_ID_NONE : e.exit_code;
		pf->end_dropped = count_val(pf->im, e.dropped);
		return 0;
	}
	pf->im->unknown_records++;
	return 0;
}

/* The end of a file: what still waits is written as it is. */
int import_finish_file(struct proc_file *pf)
{
	struct u64map *m;
	int rc;

	rc = corr_sweep(pf, 1, 0, 0);
	if (rc)
		return rc;
	m = &pf->nvtx_stacks;
	for (size_t i = 0; i < m->cap; i++) {
		struct nvtx_stack *st = u64map_val(m, i);

		if (!m->used[i])
			continue;
		for (uint32_t d = 0; d < st->n; d++) {
			pf->im->st->unknown_timestamps++;
			rc = write_nvtx(pf, &st->v[d], CS_NVTX_PUSHPOP, (int)d, CS_TS_UNKNOWN, 0,
					CS_ID_NONE);
			if (rc)
				return rc;
		}
		st->n = 0;
	}
	m = &pf->nvtx_ranges;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		pf->im->st->unknown_timestamps++;
		rc = write_nvtx(pf, u64map_val(m, i), CS_NVTX_STARTEND, 0, CS_TS_UNKNOWN, 0,
				(int64_t)m->keys[i]);
		if (rc)
			return rc;
	}
	/* END repeats the total of the DROPPED records; a file cut short has only these */
	cs_sat_accum(&pf->proc->dropped,
		     pf->dropped > pf->end_dropped ? pf->dropped : pf->end_dropped);
	return 0;
}

void proc_file_free(struct proc_file *pf)
{
	struct u64map *m = &pf->corr;

	for (size_t i = 0; i < m->cap; i++) {
		struct corr_entry *e = u64map_val(m, i);
		struct pending *pn, *next;

		if (!m->used[i])
			continue;
		for (pn = e->pending; pn; pn = next) {
			next = pn->next;
			free(pn);
		}
	}
	m = &pf->nvtx_stacks;
	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			free(((struct nvtx_stack *)u64map_val(m, i))->v);
	u64map_free(&pf->strings);
	cs_modmap_free(&pf->modules);
	u64map_free(&pf->stacks);
	u64map_free(&pf->corr);
	u64map_free(&pf->nvtx_stacks);
	u64map_free(&pf->nvtx_ranges);
	u64map_free(&pf->vmm);
	u64map_free(&pf->ring_cut_corr);
}
