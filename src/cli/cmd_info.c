/*
 * cmd_info.c - `cuscope info`: what a trace holds (where it came from, its processes and devices,
 * how many events of each kind, and whether records were lost).
 *
 * Everything is read into one JSON document first and printed after, as JSON or as text, so that a
 * trace that fails half way prints nothing on stdout. The JSON keys are documented in
 * docs/commands/info.md.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cuscope/gpu_links.h"
#include "cuscope/grow.h"
#include "cuscope/host_speed.h"
#include "cuscope/launch_cost.h"
#include "cuscope/strbuf.h"
#include "cuscope/u64map.h"
#include "cuscope/utf8.h"

/* Meta keys (docs/trace-format.md). */
#define META_CUSCOPE_VERSION "cuscope_version"
#define META_COMMAND_LINE    "command"
#define META_HOST	     "host"
#define META_REALTIME_BASE   "realtime_base_ns"

static const char info_usage[] =
	"usage: cuscope info [--format text|json] FILE\n"
	"\n"
	"Show what a trace holds: where and when it was recorded, its processes and devices,\n"
	"how many events of each kind, strings, stacks and findings, and whether records\n"
	"were lost.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT   text (default) or json\n"
	"  -h, --help            show this help\n";

/* Event kinds as info names them: the JSON key and the text label. */
static const struct {
	enum cs_event_kind kind;
	const char *key;
	const char *label;
} info_kinds[] = {
	{CS_EV_KERNEL, "kernel", "kernels"},
	{CS_EV_MEMCPY, "memcpy", "memcpys"},
	{CS_EV_MEMSET, "memset", "memsets"},
	{CS_EV_MEMORY, "memory", "memory operations"},
	{CS_EV_SYNC, "sync", "synchronizations"},
	{CS_EV_API, "api", "API calls"},
	{CS_EV_NVTX, "nvtx", "NVTX ranges and marks"},
};

#define INFO_NKINDS (sizeof(info_kinds) / sizeof(info_kinds[0]))

/* Events per process, counted when the trace has several. */
struct pid_count {
	uint32_t pid;
	int64_t events;
	cJSON *obj; /* its object in processes */
};

struct info_ctx {
	cJSON *processes;
	cJSON *devices;
	const char *gpu_links; /* META gpu_links, or NULL */
	struct pid_count *pids;
	size_t npids, cap;
	/* pid -> size_t: its first slot in pids (a trace may list 40,000 processes) */
	struct u64map index;
	int failed; /* out of memory */
};

static int info_add_process(const cs_process *p, void *arg)
{
	struct info_ctx *ctx = arg;
	size_t *slot;
	int created;
	cJSON *o;

	if (cs_grow((void **)&ctx->pids, &ctx->cap, ctx->npids + 1, sizeof(*ctx->pids)))
		goto fail;
	o = cJSON_CreateObject();
	if (!o || !cJSON_AddItemToArray(ctx->processes, o)) {
		cJSON_Delete(o);
		goto fail;
	}
	slot = u64map_put(&ctx->index, p->pid, &created);
	if (!slot)
		goto fail;
	if (created) /* a pid listed twice: its events go to the first */
		*slot = ctx->npids;
	ctx->pids[ctx->npids].pid = p->pid;
	ctx->pids[ctx->npids].events = 0;
	ctx->pids[ctx->npids].obj = o;
	ctx->npids++;

	cs_json_add_int(o, "pid", p->pid, -1);
	cs_json_add_int(o, "ppid", p->ppid, -1);
	cs_json_add_int(o, "rank", p->rank, CS_ID_NONE);
	cs_json_add_int(o, "local_rank", p->local_rank, CS_ID_NONE);
	cs_json_add_int(o, "world_size", p->world_size, CS_ID_NONE);
	cs_json_add_string(o, "command_line", p->command_line);
	cs_json_add_int(o, "start_ns", p->start, CS_TS_UNKNOWN);
	cs_json_add_int(o, "end_ns", p->end, CS_TS_UNKNOWN);
	cs_json_add_int(o, "exit_code", p->exit_code, CS_ID_NONE);
	cJSON_AddBoolToObject(o, "end_record", p->end != CS_TS_UNKNOWN);
	cJSON_AddBoolToObject(o, "used_cuda", p->used_cuda != 0);
	cs_json_add_int(o, "events", 0, -1);
	cs_json_add_int(o, "dropped_records", p->dropped_records, -1);
	return 0;
fail:
	ctx->failed = 1;
	return 1;
}

static int info_add_device(const cs_device *d, void *arg)
{
	struct info_ctx *ctx = arg;
	cJSON *o = cJSON_CreateObject();
	char cc[32];

	if (!o || !cJSON_AddItemToArray(ctx->devices, o)) {
		cJSON_Delete(o);
		ctx->failed = 1;
		return 1;
	}
	snprintf(cc, sizeof(cc), "%d.%d", d->compute_major, d->compute_minor);
	cs_json_add_int(o, "pid", d->pid, -1);
	cs_json_add_int(o, "device_id", d->device_id, CS_ID_NONE);
	cs_json_add_string(o, "name", d->name);
	cs_json_add_string(o, "uuid", d->uuid);
	cs_json_add_int(o, "total_memory_bytes", d->total_memory, -1);
	cs_json_add_int(o, "sm_count", d->sm_count, -1);
	cs_json_add_string(o, "compute_capability", cc);
	cs_json_add_int(o, "core_clock_khz", d->core_clock_khz, 0); /* 0: unknown */
	cs_json_add_int(o, "memory_bandwidth_bytes_per_s", d->memory_bandwidth, 0);
	/* the PCIe link that record found for the GPU (0: unknown) */
	cs_json_add_int(o, "pcie_link_bytes_per_s",
			(int64_t)cs_gpu_link_bytes_per_s(ctx->gpu_links, d->uuid), 0);
	return 0;
}

/* The process of an event; 0 for a kind it does not know. */
static uint32_t event_pid(const cs_event *ev)
{
	switch (ev->kind) {
	case CS_EV_KERNEL:
		return ev->u.kernel.pid;
	case CS_EV_MEMCPY:
		return ev->u.memcpy.pid;
	case CS_EV_MEMSET:
		return ev->u.memset.pid;
	case CS_EV_MEMORY:
		return ev->u.memory.pid;
	case CS_EV_SYNC:
		return ev->u.sync.pid;
	case CS_EV_API:
		return ev->u.api.pid;
	case CS_EV_NVTX:
		return ev->u.nvtx.pid;
	default:
		return 0;
	}
}

/* Count the events of every kind per process: one pass over the events of the trace. */
static int info_count_per_process(cs_trace *t, struct info_ctx *ctx, cs_error *err)
{
	cs_filter all = cs_filter_all();
	size_t last = 0; /* events come in runs of one process: try the last one's slot first */

	for (size_t k = 0; k < INFO_NKINDS; k++) {
		cs_iter *it;
		cs_event ev;
		int rc = cs_iter_open(t, info_kinds[k].kind, &all, &it, err);

		if (rc < 0)
			return rc;
		while ((rc = cs_iter_next(it, &ev)) > 0) {
			uint32_t pid = event_pid(&ev);

			if (ctx->pids[last].pid != pid) {
				const size_t *slot = u64map_get(&ctx->index, pid);

				if (slot)
					last = *slot;
			}
			if (ctx->pids[last].pid == pid)
				ctx->pids[last].events++;
		}
		cs_iter_close(it);
		if (rc < 0)
			return cs_error_set(err, rc, "%s", cs_err_str(rc));
	}
	return 0;
}

/* Values the import stored as unknown because they lay outside the plausible bounds (meta
 * import_stats, docs/trace-format.md "Plausible values"); 0 when the trace does not say. */
static int64_t info_implausible(cs_trace *t)
{
	const char *text = cs_trace_meta(t, "import_stats");
	cJSON *st = text ? cJSON_Parse(text) : NULL;
	int64_t n = st ? cs_json_get_int(st, "implausible_values", 0) : 0;

	cJSON_Delete(st);
	return n > 0 ? n : 0;
}

/* Add META key, a JSON object, to doc under the same key (nothing when it is missing or not an
 * object); -1 without memory. */
static int add_meta_object(cJSON *doc, cs_trace *t, const char *key)
{
	const char *text = cs_trace_meta(t, key);
	cJSON *o = text ? cJSON_Parse(text) : NULL;

	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return 0;
	}
	if (!cJSON_AddItemToObject(doc, key, o)) {
		cJSON_Delete(o);
		return -1;
	}
	return 0;
}

/* Read everything info shows into a JSON document. NULL on failure, with *code and err set. */
static cJSON *info_collect(cs_trace *t, const char *path, int *code, cs_error *err)
{
	struct info_ctx ctx = {0};
	cs_trace_summary s;
	struct stat st;
	cJSON *doc = NULL, *events, *lc;
	const char *realtime, *lc_text = cs_trace_meta(t, CS_META_LAUNCH_COST);
	char when[CS_FMT_MAX];
	int64_t total = 0, base = INT64_MIN;
	cs_unended *unended = NULL;
	int rc, nunended = 0;

	u64map_init(&ctx.index, sizeof(size_t));
	rc = cs_trace_get_summary(t, &s, err);
	if (rc < 0)
		goto fail;
	doc = cJSON_CreateObject();
	if (!doc)
		goto nomem;
	cs_json_add_string(doc, "file", path);
	cs_json_add_int(doc, "size_bytes", stat(path, &st) == 0 ? (int64_t)st.st_size : -1, -1);
	cs_json_add_int(doc, "schema_version", cs_trace_schema_version(t), -1);
	cs_json_add_string(doc, "cuscope_version", cs_trace_meta(t, META_CUSCOPE_VERSION));
	cs_json_add_string(doc, "command_line", cs_trace_meta(t, META_COMMAND_LINE));
	cs_json_add_string(doc, "host", cs_trace_meta(t, META_HOST));

	realtime = cs_trace_meta(t, META_REALTIME_BASE);
	if (realtime && *realtime) {
		char *end;

		base = strtoll(realtime, &end, 10);
		if (*end)
			base = INT64_MIN;
	}
	cs_json_add_string(doc, "start_time",
			   base != INT64_MIN ? cli_fmt_walltime_iso(when, sizeof(when), base)
					     : NULL);
	cs_json_add_int(doc, "start_realtime_ns", base, INT64_MIN);
	cs_json_add_int(doc, "start_ns", s.start, CS_TS_UNKNOWN);
	cs_json_add_int(doc, "end_ns", s.end, CS_TS_UNKNOWN);
	cs_json_add_int(doc, "duration_ns",
			s.start != CS_TS_UNKNOWN && s.end != CS_TS_UNKNOWN ? s.end - s.start
									   : INT64_MIN,
			INT64_MIN);

	ctx.processes = cJSON_AddArrayToObject(doc, "processes");
	ctx.devices = cJSON_AddArrayToObject(doc, "devices");
	if (!ctx.processes || !ctx.devices)
		goto nomem;
	rc = cs_trace_each_process(t, info_add_process, &ctx, err);
	if (rc < 0)
		goto fail;
	if (ctx.failed)
		goto nomem;
	ctx.gpu_links = cs_trace_meta(t, "gpu_links");
	rc = cs_trace_each_device(t, info_add_device, &ctx, err);
	if (rc < 0)
		goto fail;
	if (ctx.failed)
		goto nomem;

	for (size_t k = 0; k < INFO_NKINDS; k++)
		total += s.counts[info_kinds[k].kind];
	if (ctx.npids == 1) {
		ctx.pids[0].events = total;
	} else if (ctx.npids > 1) {
		rc = info_count_per_process(t, &ctx, err);
		if (rc < 0)
			goto fail;
	}
	for (size_t i = 0; i < ctx.npids; i++) {
		cJSON *p = ctx.pids[i].obj;
		cJSON *n = cs_json_int(ctx.pids[i].events);

		if (!n || !cJSON_ReplaceItemInObject(p, "events", n)) {
			cJSON_Delete(n);
			goto nomem;
		}
	}
	/* the processes without an end record: from when their records may be missing */
	rc = cs_trace_unended(t, &unended, &nunended, err);
	if (rc < 0)
		goto fail;
	/* both in PROCESSES order, the processes without an end a part of all of them: each its
	 * own row, even where a pid is listed twice */
	for (size_t i = 0, k = 0; i < (size_t)nunended; i++) {
		while (k < ctx.npids && ctx.pids[k].pid != unended[i].pid)
			k++;
		if (k == ctx.npids)
			break;
		cs_json_add_int(ctx.pids[k++].obj, "last_event_ns", unended[i].last, CS_TS_UNKNOWN);
	}
	free(unended);
	cs_json_add_int(doc, "processes_without_end", nunended, -1);

	cs_json_add_int(doc, "streams", s.streams, -1);
	events = cJSON_AddObjectToObject(doc, "events");
	if (!events)
		goto nomem;
	for (size_t k = 0; k < INFO_NKINDS; k++)
		cs_json_add_int(events, info_kinds[k].key, s.counts[info_kinds[k].kind], -1);
	cs_json_add_int(doc, "events_total", total, -1);
	cs_json_add_int(doc, "strings", s.strings, -1);
	cs_json_add_int(doc, "stacks", s.stacks, -1);
	cs_json_add_int(doc, "findings", s.findings, -1);
	cs_json_add_int(doc, "dropped_records", s.dropped_records, -1);
	cs_json_add_int(doc, "implausible_values", info_implausible(t), -1);
	/* what recording cost a launch, as record measured it (null when not measured) */
	lc = cJSON_Parse(lc_text ? lc_text : "null");
	if (!cJSON_IsObject(lc) || cs_launch_cost_ns_of(lc) <= 0) {
		cJSON_Delete(lc);
		lc = cJSON_CreateNull();
	}
	if (!lc || !cJSON_AddItemToObject(doc, "launch_cost", lc)) {
		cJSON_Delete(lc);
		goto nomem;
	}
	/* the host's speed before and after the program, as record's probes measured it */
	{
		const char *hs_text = cs_trace_meta(t, CS_META_HOST_SPEED);
		cs_host_speed hs;
		cJSON *hj = cs_host_speed_parse(hs_text, &hs) ? cJSON_Parse(hs_text)
							      : cJSON_CreateNull();

		if (!hj || !cJSON_AddItemToObject(doc, "host_speed", hj)) {
			cJSON_Delete(hj);
			goto nomem;
		}
	}
	/* a trace of record --ring: the window kept and what was cut; of cuscope dump: which dump
	 * (only then) */
	if (add_meta_object(doc, t, CS_META_RING) || add_meta_object(doc, t, CS_META_DUMP))
		goto nomem;
	free(ctx.pids);
	u64map_free(&ctx.index);
	return doc;

nomem:
	rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
fail:
	free(ctx.pids);
	u64map_free(&ctx.index);
	cJSON_Delete(doc);
	*code = rc;
	return NULL;
}

/* ---- text output ---- */

static const char *json_str(const cJSON *o, const char *key, const char *none)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : none;
}

/* An integer field as text, "-" when null. */
static const char *json_int_text(char *buf, size_t size, const cJSON *o, const char *key, int sep)
{
	int64_t v = cs_json_get_int(o, key, INT64_MIN);

	if (v == INT64_MIN)
		snprintf(buf, size, "-");
	else if (sep)
		cs_fmt_count(buf, size, v);
	else
		snprintf(buf, size, "%" PRId64, v);
	return buf;
}

/* value may come from the trace (the command, the host, a GPU's name): escaped for a terminal */
static void info_line(const char *label, const char *value)
{
	char *clean = cs_text_clean(value);

	printf("%-17s %s\n", label, clean ? clean : "");
	free(clean);
}

static void info_print_processes(const cJSON *procs, int width)
{
	static const struct cs_column with_rank[] = {
		{"PID", CS_ALIGN_RIGHT, 0},	{"PPID", CS_ALIGN_RIGHT, 0},
		{"RANK", CS_ALIGN_RIGHT, 0},	{"EVENTS", CS_ALIGN_RIGHT, 0},
		{"DROPPED", CS_ALIGN_RIGHT, 0}, {"COMMAND", CS_ALIGN_LEFT, 1},
	};
	static const struct cs_column no_rank[] = {
		{"PID", CS_ALIGN_RIGHT, 0},    {"PPID", CS_ALIGN_RIGHT, 0},
		{"EVENTS", CS_ALIGN_RIGHT, 0}, {"DROPPED", CS_ALIGN_RIGHT, 0},
		{"COMMAND", CS_ALIGN_LEFT, 1},
	};
	const cJSON *p;
	struct cs_table table;
	int ranks = 0;

	cJSON_ArrayForEach(p, procs)
	{
		if (cs_json_get_int(p, "rank", INT64_MIN) != INT64_MIN)
			ranks = 1;
	}
	if (ranks)
		cs_table_init(&table, with_rank, 6);
	else
		cs_table_init(&table, no_rank, 5);
	cJSON_ArrayForEach(p, procs)
	{
		char pid[CS_FMT_MAX], ppid[CS_FMT_MAX], rank[CS_FMT_MAX], events[CS_FMT_MAX],
			dropped[CS_FMT_MAX];
		const char *cmd = json_str(p, "command_line", "-");
		const char *row_rank[] = {
			json_int_text(pid, sizeof(pid), p, "pid", 0),
			json_int_text(ppid, sizeof(ppid), p, "ppid", 0),
			json_int_text(rank, sizeof(rank), p, "rank", 0),
			json_int_text(events, sizeof(events), p, "events", 1),
			json_int_text(dropped, sizeof(dropped), p, "dropped_records", 1),
			cmd};
		const char *row_plain[] = {pid, ppid, events, dropped, cmd};

		cs_table_add_row(&table, ranks ? row_rank : row_plain);
	}
	cs_table_print(&table, stdout, 2, width);
	cs_table_free(&table);
}

static void info_print_devices(const cJSON *devs, int width)
{
	static const struct cs_column cols[] = {
		{"PID", CS_ALIGN_RIGHT, 0},  {"ID", CS_ALIGN_RIGHT, 0},
		{"NAME", CS_ALIGN_LEFT, 0},  {"MEMORY", CS_ALIGN_RIGHT, 0},
		{"SMS", CS_ALIGN_RIGHT, 0},  {"CC", CS_ALIGN_RIGHT, 0},
		{"PCIE", CS_ALIGN_RIGHT, 0}, {"UUID", CS_ALIGN_LEFT, 1},
	};
	const cJSON *d;
	struct cs_table table;

	cs_table_init(&table, cols, 8);
	cJSON_ArrayForEach(d, devs)
	{
		char pid[CS_FMT_MAX], id[CS_FMT_MAX], mem[CS_FMT_MAX], sms[CS_FMT_MAX],
			link[CS_FMT_MAX + 4] = "-";
		int64_t bytes = cs_json_get_int(d, "total_memory_bytes", -1),
			bps = cs_json_get_int(d, "pcie_link_bytes_per_s", 0);
		const char *row[] = {json_int_text(pid, sizeof(pid), d, "pid", 0),
				     json_int_text(id, sizeof(id), d, "device_id", 0),
				     json_str(d, "name", "-"),
				     bytes >= 0 ? cs_fmt_bytes(mem, sizeof(mem), bytes) : "-",
				     json_int_text(sms, sizeof(sms), d, "sm_count", 0),
				     json_str(d, "compute_capability", "-"),
				     link,
				     json_str(d, "uuid", "-")};

		if (bps > 0) {
			char b[CS_FMT_MAX];

			snprintf(link, sizeof(link), "%s/s", cs_fmt_bytes(b, sizeof(b), bps));
		}

		cs_table_add_row(&table, row);
	}
	cs_table_print(&table, stdout, 2, width);
	cs_table_free(&table);
}

/* The processes that ended without their end record, and from when their records may be missing. */
static void info_print_without_end(const cJSON *doc, const cJSON *procs)
{
	char a[CS_FMT_MAX], line[256];
	int64_t n = cs_json_get_int(doc, "processes_without_end", 0);
	const cJSON *p;

	if (n <= 0)
		return;
	snprintf(line, sizeof(line),
		 "%s  WARNING: ended by SIGKILL, os._exit or a signal handler of %s own",
		 cs_fmt_count(a, sizeof(a), n), n == 1 ? "its" : "their");
	info_line("no end record", line);
	cJSON_ArrayForEach(p, procs)
	{
		int64_t last = cs_json_get_int(p, "last_event_ns", INT64_MIN);
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(p, "end_record");

		if (!cJSON_IsFalse(e))
			continue;
		if (last == INT64_MIN)
			printf("  pid %" PRId64 ": no event recorded\n",
			       cs_json_get_int(p, "pid", -1));
		else
			printf("  pid %" PRId64 ": records after %s may be missing\n",
			       cs_json_get_int(p, "pid", -1), cs_fmt_duration(a, sizeof(a), last));
	}
}

/* "before B, after A" of a probe's pair (ns scaled by div, printed with unit), or "-". */
static void probe_pair(cs_strbuf *sb, const cJSON *pair, double div, const char *unit)
{
	static const char *const when[2] = {"before", "after"};
	const char *sep = "";

	for (int w = 0; w < 2; w++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(pair, when[w]);

		if (!cJSON_IsNumber(v))
			continue;
		cs_strbuf_printf(sb, "%s%.2f %s %s", sep, v->valuedouble / div, unit, when[w]);
		sep = ", ";
	}
}

/* The host's speed as record's probes measured it before and after the program. */
static void info_print_host_speed(const cJSON *hs)
{
	const cJSON *launch = cJSON_GetObjectItemCaseSensitive(hs, "launch_ns");
	cs_strbuf sb = CS_STRBUF_INIT;

	if (!cJSON_IsObject(hs))
		return;
	cs_strbuf_puts(&sb, "CPU work (1000 steps) ");
	probe_pair(&sb, cJSON_GetObjectItemCaseSensitive(hs, "cpu_ns"), 1e3, "us");
	if (cJSON_IsObject(launch)) {
		cs_strbuf_puts(&sb, "; bare launch ");
		probe_pair(&sb, launch, 1e3, "us");
		cs_strbuf_printf(&sb, " on %.64s", json_str(hs, "device", "?"));
	}
	info_line("host speed", sb.failed ? "?" : cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
}

/* What recording cost a launch, and its parts, when record measured it. */
static void info_print_launch_cost(const cJSON *lc)
{
	const cJSON *added = cJSON_GetObjectItemCaseSensitive(lc, "added_wall_ns"), *p;
	cs_strbuf sb = CS_STRBUF_INIT;
	const char *sep = " (";

	if (!cJSON_IsObject(lc))
		return;
	cs_strbuf_printf(
		&sb, "%.2f us per launch, measured after the run on %.64s",
		cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(lc, "ns_per_launch")) / 1e3,
		json_str(lc, "device", "?"));
	cJSON_ArrayForEach(p, added)
	{
		if (!cJSON_IsNumber(p))
			continue;
		cs_strbuf_printf(&sb, "%s%.64s %+.2f", sep, cs_launch_cost_part_label(p->string),
				 p->valuedouble / 1e3);
		sep = ", ";
	}
	if (*sep == ',')
		cs_strbuf_puts(&sb, ")");
	info_line("recording cost", sb.failed ? "?" : cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
}

/* A trace of record --ring: the budget, the window kept and what was cut before it. */
static void info_print_ring(const cJSON *ring)
{
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX];
	int64_t size = cs_json_get_int(ring, "size_bytes", 0);
	int64_t start = cs_json_get_int(ring, "window_start_ns", CS_TS_UNKNOWN);
	int64_t end = cs_json_get_int(ring, "window_end_ns", CS_TS_UNKNOWN);
	int64_t segs = cs_json_get_int(ring, "segments_dropped", 0);
	cs_strbuf sb = CS_STRBUF_INIT;

	if (!cJSON_IsObject(ring))
		return;
	if (size > 0)
		cs_strbuf_printf(&sb, "the last %s of each process",
				 cs_fmt_bytes(a, sizeof(a), size));
	else
		cs_strbuf_printf(
			&sb, "the last %s of each process",
			cs_fmt_duration(a, sizeof(a), cs_json_get_int(ring, "duration_ns", 0)));
	if (!segs) {
		cs_strbuf_puts(&sb, "; nothing cut (the whole run is kept)");
	} else {
		if (start != CS_TS_UNKNOWN && end != CS_TS_UNKNOWN && end >= start)
			cs_strbuf_printf(&sb, "; kept %s from %s",
					 cs_fmt_duration(a, sizeof(a), end - start),
					 cs_fmt_duration(b, sizeof(b), start));
		cs_strbuf_printf(
			&sb, "; cut before it: %s segments, %s records (%s)",
			cs_fmt_count(a, sizeof(a), segs),
			cs_fmt_count(b, sizeof(b), cs_json_get_int(ring, "records_dropped", 0)),
			cs_fmt_bytes(c, sizeof(c), cs_json_get_int(ring, "bytes_dropped", 0)));
		cs_strbuf_printf(
			&sb, ", and %s events that started before it",
			cs_fmt_count(a, sizeof(a), cs_json_get_int(ring, "records_cut", 0)));
	}
	info_line("ring", sb.failed ? "?" : cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
}

/* A dump of a running recording (cuscope dump): which, when, and who answered. */
static void info_print_dump(const cJSON *dump)
{
	char a[CS_FMT_MAX];
	int64_t late = cs_json_get_int(dump, "late", 0);
	cs_strbuf sb = CS_STRBUF_INIT;

	if (!cJSON_IsObject(dump))
		return;
	cs_strbuf_printf(&sb, "%lld of a running recording, taken %s; %lld of %lld running "
			      "process%s answered",
			 (long long)cs_json_get_int(dump, "n", 0),
			 cli_fmt_walltime(a, sizeof(a), cs_json_get_int(dump, "realtime_ns", 0)),
			 (long long)cs_json_get_int(dump, "answered", 0),
			 (long long)cs_json_get_int(dump, "running", 0),
			 cs_json_get_int(dump, "running", 0) == 1 ? "" : "es");
	if (late)
		cs_strbuf_printf(&sb, ", %lld taken as %s files were", (long long)late,
				 late == 1 ? "its" : "their");
	info_line("dump", sb.failed ? "?" : cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
}

static void info_print_text(const cJSON *doc)
{
	char a[CS_FMT_MAX], b[CS_FMT_MAX], line[256];
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(doc, "processes");
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(doc, "devices");
	const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "events");
	int width = cli_output_width(-1);
	int64_t v, dropped;
	const char *version;

	info_line("file", json_str(doc, "file", "-"));
	v = cs_json_get_int(doc, "size_bytes", -1);
	if (v >= 0) {
		snprintf(line, sizeof(line), "%s (%s bytes)", cs_fmt_bytes(a, sizeof(a), v),
			 cs_fmt_count(b, sizeof(b), v));
		info_line("size", line);
	} else {
		info_line("size", "-");
	}
	info_line("schema version", json_int_text(a, sizeof(a), doc, "schema_version", 0));
	version = json_str(doc, "cuscope_version", NULL);
	if (version) {
		snprintf(line, sizeof(line), "cuscope %.*s", CS_FMT_MAX, version);
		info_line("written by", line);
	} else {
		info_line("written by", "-");
	}
	info_line("command", json_str(doc, "command_line", "-"));
	info_line("host", json_str(doc, "host", "-"));
	v = cs_json_get_int(doc, "start_realtime_ns", INT64_MIN);
	info_line("start time", v != INT64_MIN ? cli_fmt_walltime(a, sizeof(a), v) : "-");
	v = cs_json_get_int(doc, "duration_ns", INT64_MIN);
	info_line("duration", v != INT64_MIN ? cs_fmt_duration(a, sizeof(a), v) : "-");
	info_print_dump(cJSON_GetObjectItemCaseSensitive(doc, CS_META_DUMP));
	info_print_ring(cJSON_GetObjectItemCaseSensitive(doc, "ring"));
	info_print_launch_cost(cJSON_GetObjectItemCaseSensitive(doc, "launch_cost"));
	info_print_host_speed(cJSON_GetObjectItemCaseSensitive(doc, "host_speed"));

	info_line("processes", cs_fmt_count(a, sizeof(a), cJSON_GetArraySize(procs)));
	if (cJSON_GetArraySize(procs) > 0)
		info_print_processes(procs, width);
	info_print_without_end(doc, procs);
	info_line("devices", cs_fmt_count(a, sizeof(a), cJSON_GetArraySize(devs)));
	if (cJSON_GetArraySize(devs) > 0)
		info_print_devices(devs, width);
	info_line("streams", json_int_text(a, sizeof(a), doc, "streams", 1));

	info_line("events", json_int_text(a, sizeof(a), doc, "events_total", 1));
	for (size_t k = 0; k < INFO_NKINDS; k++)
		printf("  %-22s %12s\n", info_kinds[k].label,
		       json_int_text(a, sizeof(a), events, info_kinds[k].key, 1));
	info_line("strings", json_int_text(a, sizeof(a), doc, "strings", 1));
	info_line("stacks", json_int_text(a, sizeof(a), doc, "stacks", 1));
	info_line("findings", json_int_text(a, sizeof(a), doc, "findings", 1));
	dropped = cs_json_get_int(doc, "dropped_records", 0);
	if (dropped > 0) {
		snprintf(line, sizeof(line),
			 "%s  WARNING: records were lost while recording; the trace is incomplete",
			 cs_fmt_count(a, sizeof(a), dropped));
		info_line("dropped records", line);
	} else {
		info_line("dropped records", "0");
	}
	v = cs_json_get_int(doc, "implausible_values", 0);
	if (v > 0) {
		snprintf(line, sizeof(line),
			 "%s  WARNING: values outside the plausible bounds, stored as unknown",
			 cs_fmt_count(a, sizeof(a), v));
		info_line("implausible", line);
	}
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	enum cli_format format = CLI_FORMAT_TEXT;
	const char *path;
	cs_trace *t;
	cs_error err = {0, ""};
	cJSON *doc;
	int c, code = 0, rc;

	while ((c = cli_getopt(argc, argv, "f:h", longopts)) != -1) {
		switch (c) {
		case 'f':
			if (cli_parse_format(argv[0], optarg, &format))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(info_usage, stdout);
			return CLI_EXIT_OK;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	path = cli_single_file(argv[0], argc, argv);
	if (!path)
		return CLI_EXIT_USAGE;
	rc = cli_open_trace(path, &t, CS_TRACE_ONE_THREAD);
	if (rc)
		return rc;
	doc = info_collect(t, path, &code, &err);
	cs_trace_close(t);
	if (!doc)
		return cli_trace_error(path, code, &err);
	if (format == CLI_FORMAT_JSON)
		rc = cli_json_print(doc);
	else
		info_print_text(doc);
	cJSON_Delete(doc);
	return rc;
}
