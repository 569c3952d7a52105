/*
 * correlate.c - the correlation join of one file, and the writing of rows.
 *
 * API records that feed GPU rows (launches, copies, sets), host waits and allocations wait in a
 * hash map keyed by correlation id; activity records that arrive before their API record wait
 * there too. A match removes the entry, except for a graph launch (one API call, many GPU
 * records). API entries still unmatched API_WINDOW correlation ids later are dropped (waits first
 * become a sync row of their own); activity records that find no API record within PENDING_WINDOW
 * ids are written without launch information; past CORR_MAX entries the windows shrink. Ids
 * compare in serial-number arithmetic: a 32-bit wrap is harmless.
 */
#include <stdlib.h>
#include <string.h>

#include "spool_internal.h"

/* Serial-number order of 32-bit correlation ids: the newest seen bounds how long entries wait. */
static void note_corr(struct proc_file *pf, uint32_t corr)
{
	if (!pf->have_corr || (int32_t)(corr - pf->newest_corr) > 0) {
		pf->newest_corr = corr;
		pf->have_corr = 1;
	}
}

/* ---- the device of a context ---- */

int32_t proc_context_device(struct proc_file *pf, uint32_t context)
{
	const int32_t *dev = u64map_get(&pf->proc->contexts, context);

	return dev ? *dev : CS_ID_NONE;
}

/* ---- writing events ---- */

/* The writer's message is a whole line that names the file ("cannot write 'run.db': ..."). */
int import_writer_error(struct importer *im, int64_t rc)
{
	const char *msg = cs_writer_errmsg(im->w);

	if (msg && *msg)
		return cs_error_set(im->err, (int)rc, "%s", msg);
	return cs_error_set(im->err, (int)rc, "cannot write '%s': %s", im->out_path,
			    cs_err_str((int)rc));
}

int import_write_event(struct importer *im, const cs_event *ev)
{
	int rc;

	switch (ev->kind) {
		/* clang-format off */
#define CS_EVENT_TABLE(KIND, name) \
	case CS_EV_##KIND: \
		rc = cs_writer_add_##name(im->w, &ev->u.name); \
		break;
#include "cuscope/columns.def"
		/* clang-format on */
	default:
		return cs_error_set(im->err, CS_ERR_INVALID, "unknown event kind %d", ev->kind);
	}
	if (rc < 0)
		return import_writer_error(im, rc);
	im->st->counts[ev->kind]++;
	return 0;
}

static int is_sync_class(int cls)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
	case CS_APICLASS_WAIT_EVENT:
	case CS_APICLASS_WAIT_DEVICE:
	case CS_APICLASS_QUERY_STREAM:
	case CS_APICLASS_QUERY_EVENT:
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return 1;
	}
	return 0;
}

/* Classes whose API row is folded into the GPU rows they feed (kept as rows only with api=all). */
int api_class_is_folded(int cls)
{
	return cls == CS_APICLASS_LAUNCH || cls == CS_APICLASS_GRAPH_LAUNCH ||
	       cls == CS_APICLASS_MEMCPY_ASYNC || cls == CS_APICLASS_MEMSET;
}

static int sync_type_of_class(int cls)
{
	switch (cls) {
	case CS_APICLASS_WAIT_STREAM:
		return CS_SYNC_STREAM_SYNCHRONIZE;
	case CS_APICLASS_WAIT_EVENT:
		return CS_SYNC_EVENT_SYNCHRONIZE;
	case CS_APICLASS_WAIT_DEVICE:
		return CS_SYNC_CONTEXT_SYNCHRONIZE;
	case CS_APICLASS_QUERY_STREAM:
		return CS_SYNC_STREAM_QUERY;
	case CS_APICLASS_QUERY_EVENT:
		return CS_SYNC_EVENT_QUERY;
	case CS_APICLASS_STREAM_WAIT_EVENT:
		return CS_SYNC_STREAM_WAIT_EVENT;
	}
	return CS_SYNC_UNKNOWN;
}

static int is_host_copy(int kind)
{
	return kind == CS_COPY_HTOD || kind == CS_COPY_DTOH || kind == CS_COPY_HTOA ||
	       kind == CS_COPY_ATOH;
}

/*
 * Fill the launch fields of a GPU row from its API call. A call that started after the GPU work
 * started is not plausible: its times are dropped (counted), the rest is kept.
 */
static void join_launch(struct importer *im, const struct corr_entry *api, int64_t gpu_start,
			int64_t *ls, int64_t *le, uint32_t *tid, int32_t *cbid, int64_t *stack_id)
{
	if (api->start != CS_TS_UNKNOWN && gpu_start != CS_TS_UNKNOWN && api->start > gpu_start) {
		im->st->unknown_timestamps += 1 + (api->end != CS_TS_UNKNOWN);
		*ls = *le = CS_TS_UNKNOWN;
	} else {
		*ls = api->start;
		*le = api->end;
	}
	*tid = api->tid;
	*cbid = api->cbid;
	*stack_id = api->stack_id;
}

/* A sync row made from an API call alone: a wait with no CUPTI record, or a synchronous copy. */
static int write_api_sync(struct proc_file *pf, uint32_t corr, const struct corr_entry *api,
			  int type, int32_t device, uint32_t context, int64_t stream)
{
	cs_event ev;
	cs_sync *s = &ev.u.sync;

	cs_event_clear(&ev, CS_EV_SYNC);
	s->start = api->start;
	s->end = api->end;
	s->pid = pf->proc->pid;
	s->tid = api->tid;
	s->device_id = device;
	s->context_id = context;
	s->stream_id = stream;
	s->event_id = CS_ID_NONE;
	s->correlation_id = corr;
	s->type = type;
	s->cbid = api->cbid;
	s->api_kind = api->api_kind;
	s->result = api->result;
	s->stack_id = api->stack_id;
	return import_write_event(pf->im, &ev);
}

/* Write an activity row, joined with its API call when api is not NULL; the map is left alone. */
static int emit_activity(struct proc_file *pf, cs_event *ev, const struct corr_entry *api)
{
	struct importer *im = pf->im;
	int rc;

	switch (ev->kind) {
	case CS_EV_KERNEL: {
		cs_kernel *k = &ev->u.kernel;

		if (api) {
			join_launch(im, api, k->start, &k->launch_start, &k->launch_end,
				    &k->launch_tid, &k->launch_cbid, &k->stack_id);
			k->launch_api_kind = api->api_kind;
		}
		return import_write_event(im, ev);
	}
	case CS_EV_MEMCPY: {
		cs_memcpy *m = &ev->u.memcpy;

		if (api)
			join_launch(im, api, m->start, &m->launch_start, &m->launch_end,
				    &m->launch_tid, &m->launch_cbid, &m->stack_id);
		rc = import_write_event(im, ev);
		if (!rc && api && api->api_class == CS_APICLASS_MEMCPY_SYNC &&
		    is_host_copy(m->copy_kind))
			rc = write_api_sync(pf, (uint32_t)m->correlation_id, api, CS_SYNC_MEMCPY,
					    m->device_id, m->context_id, m->stream_id);
		return rc;
	}
	case CS_EV_MEMSET: {
		cs_memset *m = &ev->u.memset;

		if (api)
			join_launch(im, api, m->start, &m->launch_start, &m->launch_end,
				    &m->launch_tid, &m->launch_cbid, &m->stack_id);
		return import_write_event(im, ev);
	}
	case CS_EV_MEMORY: {
		cs_memory *m = &ev->u.memory;

		if (api) {
			m->cbid = api->cbid;
			if (api->tid)
				m->tid = api->tid;
			m->stack_id = api->stack_id;
		}
		return import_write_event(im, ev);
	}
	case CS_EV_SYNC: {
		cs_sync *s = &ev->u.sync;

		s->device_id = proc_context_device(pf, s->context_id);
		if (api) {
			int type = sync_type_of_class(api->api_class);

			/* a query comes with the type of the wait it polls: the class tells */
			if (type == CS_SYNC_STREAM_QUERY || type == CS_SYNC_EVENT_QUERY ||
			    type == CS_SYNC_STREAM_WAIT_EVENT)
				s->type = type;
			s->cbid = api->cbid;
			s->api_kind = api->api_kind;
			if (api->tid)
				s->tid = api->tid;
			s->result = api->result;
			s->stack_id = api->stack_id;
		}
		return import_write_event(im, ev);
	}
	default:
		return import_write_event(im, ev);
	}
}

/* An entry leaves the map unmatched: pending rows go out without a launch, waits on their own. */
static int finalize_entry(struct proc_file *pf, uint32_t corr, struct corr_entry *e)
{
	struct pending *pn, *next;
	int rc = 0;

	if (e->has_api && is_sync_class(e->api_class))
		rc = write_api_sync(pf, corr, e, sync_type_of_class(e->api_class), CS_ID_NONE, 0,
				    CS_ID_NONE);
	for (pn = e->pending; pn; pn = next) {
		next = pn->next;
		if (!rc)
			rc = emit_activity(pf, &pn->ev, NULL);
		free(pn);
		pf->npending--;
	}
	e->pending = NULL;
	return rc;
}

/*
 * Let go of the entries that waited longer than their window (API entries api_window correlation
 * ids, activity records pending_window); all of them at the end of the file.
 */
int corr_sweep(struct proc_file *pf, int all, uint32_t api_window, uint32_t pending_window)
{
	struct u64map *m = &pf->corr;
	size_t i = 0;
	int rc;

	while (i < m->cap) {
		struct corr_entry *e, copy;
		uint32_t corr, age;

		if (!m->used[i]) {
			i++;
			continue;
		}
		e = u64map_val(m, i);
		corr = (uint32_t)m->keys[i];
		age = pf->newest_corr - corr;
		if (!all && age <= (e->has_api ? api_window : pending_window)) {
			i++;
			continue;
		}
		copy = *e;
		u64map_del_at(m, i); /* slot i now holds a later entry, or nothing: look again */
		rc = finalize_entry(pf, corr, &copy);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The widest window (2^k - 1 correlation ids) that keeps at most target entries: a histogram of the
 * entries' ages by bit length.
 */
static uint32_t window_keeping(struct proc_file *pf, size_t target)
{
	const struct u64map *m = &pf->corr;
	size_t count[33] = {0}, kept = 0;
	int b;

	for (size_t i = 0; i < m->cap; i++) {
		uint32_t age;

		if (!m->used[i])
			continue;
		age = pf->newest_corr - (uint32_t)m->keys[i];
		count[age ? 32 - __builtin_clz(age) : 0]++;
	}
	for (b = 0; b < 33 && kept + count[b] <= target; b++)
		kept += count[b];
	/* buckets 0..b-1 are kept: ages up to 2^(b-1) - 1 */
	return b == 0 ? 0 : (uint32_t)((1ull << (b - 1)) - 1);
}

/*
 * Sweep now and then: when the map doubled since the last sweep, and at most every CORR_MAX
 * entries. A map still past CORR_MAX / 2 after a sweep (a program polling cudaEventQuery, say) is
 * swept again with the window that keeps half of CORR_MAX, so that memory stays bounded whatever
 * the records.
 */
static int maybe_sweep(struct proc_file *pf)
{
	int rc;

	if (pf->corr.n + pf->npending <= pf->next_sweep)
		return 0;
	rc = corr_sweep(pf, 0, API_WINDOW, PENDING_WINDOW);
	if (!rc && pf->corr.n + pf->npending > CORR_MAX / 2) {
		uint32_t w = window_keeping(pf, CORR_MAX / 2);

		rc = corr_sweep(pf, 0, w, w < PENDING_WINDOW ? w : PENDING_WINDOW);
	}
	pf->next_sweep = 2 * (pf->corr.n + pf->npending);
	if (pf->next_sweep < SWEEP_MIN)
		pf->next_sweep = SWEEP_MIN;
	if (pf->next_sweep > CORR_MAX)
		pf->next_sweep = CORR_MAX;
	return rc;
}

/* An activity record with a correlation id: joined now, or kept until its API record comes. */
int corr_join_activity(struct proc_file *pf, cs_event *ev, uint32_t corr)
{
	struct corr_entry *e;
	struct pending *pn;
	int created, rc;

	if (!corr)
		return emit_activity(pf, ev, NULL);
	note_corr(pf, corr);
	e = u64map_get(&pf->corr, corr);
	if (e && e->has_api) {
		rc = emit_activity(pf, ev, e);
		if (e->api_class != CS_APICLASS_GRAPH_LAUNCH)
			u64map_del(&pf->corr, corr);
		return rc;
	}
	pn = malloc(sizeof(*pn));
	if (!pn)
		return import_nomem(pf->im);
	pn->ev = *ev;
	e = u64map_put(&pf->corr, corr, &created);
	if (!e) {
		free(pn);
		return import_nomem(pf->im);
	}
	pn->next = e->pending;
	e->pending = pn;
	pf->npending++;
	return maybe_sweep(pf);
}

/* A call left out (a ring's cut): drop the records waiting for it; returns how many. */
int64_t corr_drop_pending(struct proc_file *pf, uint32_t corr)
{
	struct corr_entry *e = u64map_get(&pf->corr, corr);
	struct pending *pn, *next;
	int64_t n = 0;

	if (!e || e->has_api)
		return 0;
	for (pn = e->pending; pn; pn = next) {
		next = pn->next;
		free(pn);
		pf->npending--;
		n++;
	}
	u64map_del(&pf->corr, corr);
	return n;
}

/* An API call that GPU rows, a CUPTI sync record or a memory record may join. */
int corr_join_api(struct proc_file *pf, uint32_t corr, const struct corr_entry *api)
{
	struct corr_entry *e;
	struct pending *pn, *next;
	int created, rc = 0;

	if (!corr)
		return is_sync_class(api->api_class)
			       ? write_api_sync(pf, 0, api, sync_type_of_class(api->api_class),
						CS_ID_NONE, 0, CS_ID_NONE)
			       : 0;
	note_corr(pf, corr);
	e = u64map_put(&pf->corr, corr, &created);
	if (!e)
		return import_nomem(pf->im);
	if (e->has_api) {
		/* the same id twice: the first call is done with */
		rc = finalize_entry(pf, corr, e);
		if (rc)
			return rc;
	}
	pn = e->pending;
	*e = *api;
	e->pending = NULL;
	if (!pn)
		return maybe_sweep(pf);
	for (; pn; pn = next) {
		next = pn->next;
		if (!rc)
			rc = emit_activity(pf, &pn->ev, api);
		free(pn);
		pf->npending--;
	}
	if (api->api_class != CS_APICLASS_GRAPH_LAUNCH)
		u64map_del(&pf->corr, corr);
	return rc;
}
