/*
 * cmd_stats.c - `cuscope stats`: where the GPU time went. The kernels by total GPU time, with the
 * columns of Nsight Systems' cuda_gpu_kern_sum report (Time(%), Total Time, Instances, Avg, Med,
 * Min, Max, StdDev, Name), then memory copies by direction and memsets.
 *
 * The numbers are computed here from the reader's iterators. Every kernel's duration is kept (8
 * bytes each, in one array per kernel name) for the median; that is 80 MB for ten million kernels.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/demangle.h"
#include "cuscope/grow.h"

#include "cli.h"
#include "cuscope/progress.h"
#include "cuscope/checked.h"
#include "cuscope/u64map.h"

#define STATS_DEFAULT_LIMIT 20
#define STATS_NCOPY_KINDS   (CS_COPY_PTOP + 1)

static const char stats_usage[] =
	"usage: cuscope stats [--format text|json] [--limit N] [--pid PID] [--width N] FILE\n"
	"\n"
	"Summarize where the GPU time went: the kernels by total GPU time (like the\n"
	"cuda_gpu_kern_sum report of nsys stats), then memory copies by direction and memsets.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT   text (default) or json\n"
	"  -n, --limit N         show the N kernels with the most GPU time (default 20, 0 = all)\n"
	"  -p, --pid PID         only events of process PID\n"
	"  -w, --width N         fit text lines in N columns, cutting long kernel names in the\n"
	"                        middle (default: the terminal's width on a terminal, no limit\n"
	"                        otherwise; 0 = no limit)\n"
	"  -h, --help            show this help\n";

/* The launches of one kernel name. */
struct kernel_stat {
	int64_t name_id;
	char *name;
	int64_t *durations;
	size_t n, cap;
	int64_t total, min, max;
	double median, stddev;
};

/* Kernel stats by name id: a vector and an index over it. */
struct kernel_table {
	struct kernel_stat *v;
	size_t n, cap;
	struct u64map index; /* name id -> size_t index into v */
};

struct copy_stat {
	int64_t count;
	int64_t bytes;
	int64_t timed_bytes; /* bytes of the copies with known start and end */
	int64_t time_ns;
};

struct stats {
	struct kernel_table kernels;
	int64_t kernel_time; /* total of every kernel */
	int64_t kernel_count;
	int64_t kernel_skipped; /* unknown start or end */
	struct copy_stat copies[STATS_NCOPY_KINDS];
	struct copy_stat memsets;
};

/* The stat of name_id, created (with a copy of name) on first sight. NULL when out of memory. */
static struct kernel_stat *kernel_table_get(struct kernel_table *kt, int64_t name_id,
					    const char *name)
{
	struct kernel_stat *k;
	size_t *idx;
	int created;

	if (!kt->index.vsize)
		u64map_init(&kt->index, sizeof(size_t));
	idx = u64map_put(&kt->index, (uint64_t)name_id, &created);
	if (!idx)
		return NULL;
	if (!created)
		return &kt->v[*idx];
	if (kt->n == kt->cap) {
		size_t cap = kt->cap ? kt->cap * 2 : 64;
		struct kernel_stat *nv = realloc(kt->v, cap * sizeof(*nv));

		if (!nv) {
			u64map_del(&kt->index, (uint64_t)name_id);
			return NULL;
		}
		kt->v = nv;
		kt->cap = cap;
	}
	k = &kt->v[kt->n];
	memset(k, 0, sizeof(*k));
	k->name_id = name_id;
	k->name = cs_utf8_repair(name ? name : "<unknown>");
	if (!k->name) {
		u64map_del(&kt->index, (uint64_t)name_id);
		return NULL;
	}
	k->min = INT64_MAX;
	k->max = INT64_MIN;
	*idx = kt->n++;
	return k;
}

static int kernel_stat_add(struct kernel_stat *k, int64_t duration)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 8;
		int64_t *nd = realloc(k->durations, cap * sizeof(*nd));

		if (!nd)
			return -1;
		k->durations = nd;
		k->cap = cap;
	}
	k->durations[k->n++] = duration;
	cs_sat_accum(&k->total, duration);
	if (duration < k->min)
		k->min = duration;
	if (duration > k->max)
		k->max = duration;
	return 0;
}

/* Median and sample standard deviation (n - 1, as nsys); frees the durations. */
static void kernel_stat_finish(struct kernel_stat *k)
{
	double mean = (double)k->total / (double)k->n, sq = 0;

	cs_sort_i64(k->durations, k->n);
	if (k->n % 2)
		k->median = (double)k->durations[k->n / 2];
	else
		k->median =
			((double)k->durations[k->n / 2 - 1] + (double)k->durations[k->n / 2]) / 2;
	for (size_t i = 0; i < k->n; i++) {
		double d = (double)k->durations[i] - mean;

		sq += d * d;
	}
	k->stddev = k->n > 1 ? sqrt(sq / (double)(k->n - 1)) : 0;
	free(k->durations);
	k->durations = NULL;
}

/* Most GPU time first; ties by name, so that the order does not depend on the trace's. */
static int cmp_kernel_total(const void *a, const void *b)
{
	const struct kernel_stat *x = a, *y = b;
	int c;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	c = strcmp(x->name, y->name);
	if (c)
		return c;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

static void stats_free(struct stats *st)
{
	for (size_t i = 0; i < st->kernels.n; i++) {
		free(st->kernels.v[i].name);
		free(st->kernels.v[i].durations);
	}
	free(st->kernels.v);
	u64map_free(&st->kernels.index);
}

/* a + b, held at the int64 limits (byte counts of a damaged file can reach them) */
static int64_t add_held(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static void copy_stat_add(struct copy_stat *c, int64_t start, int64_t end, int64_t bytes)
{
	c->count++;
	c->bytes = add_held(c->bytes, bytes);
	if (start != CS_TS_UNKNOWN && end != CS_TS_UNKNOWN && end >= start) {
		c->timed_bytes = add_held(c->timed_bytes, bytes);
		c->time_ns += end - start;
	}
}

/* Read one kind of event and add it up. Returns 0 or a negative cs_err code (err set). */
static int stats_read(cs_trace *t, enum cs_event_kind kind, const cs_filter *f, struct stats *st,
		      cs_error *err)
{
	cs_iter *it;
	cs_event ev;
	int rc = cs_iter_open(t, kind, f, &it, err);

	if (rc < 0)
		return rc;
	while ((rc = cs_iter_next(it, &ev)) > 0) {
		if (ev.kind == CS_EV_KERNEL) {
			const cs_kernel *k = &ev.u.kernel;
			struct kernel_stat *ks;

			if (k->start == CS_TS_UNKNOWN || k->end == CS_TS_UNKNOWN ||
			    k->end < k->start) {
				st->kernel_skipped++;
				continue;
			}
			/* k->name lives until the next cs_iter_next(): the table copies it */
			ks = kernel_table_get(&st->kernels, k->name_id, k->name);
			if (!ks || kernel_stat_add(ks, k->end - k->start)) {
				rc = CS_ERR_NOMEM;
				break;
			}
			cs_sat_accum(&st->kernel_time, k->end - k->start);
			st->kernel_count++;
		} else if (ev.kind == CS_EV_MEMCPY) {
			const cs_memcpy *m = &ev.u.memcpy;
			int dir = m->copy_kind >= 0 && m->copy_kind < STATS_NCOPY_KINDS
					  ? m->copy_kind
					  : CS_COPY_UNKNOWN;

			copy_stat_add(&st->copies[dir], m->start, m->end, m->bytes);
		} else if (ev.kind == CS_EV_MEMSET) {
			copy_stat_add(&st->memsets, ev.u.memset.start, ev.u.memset.end,
				      ev.u.memset.bytes);
		}
	}
	cs_iter_close(it);
	if (rc < 0)
		return cs_error_set(err, rc, "%s", cs_err_str(rc));
	return 0;
}

static int stats_collect(cs_trace *t, int64_t pid, struct stats *st, cs_error *err)
{
	static const enum cs_event_kind kinds[] = {CS_EV_KERNEL, CS_EV_MEMCPY, CS_EV_MEMSET};
	cs_filter f = cs_filter_all();
	int rc;

	f.pid = pid;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		rc = stats_read(t, kinds[i], &f, st, err);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < st->kernels.n; i++)
		kernel_stat_finish(&st->kernels.v[i]);
	cs_sort(st->kernels.v, st->kernels.n, sizeof(*st->kernels.v), cmp_kernel_total);
	return 0;
}

static const char *plural(int64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static double percent(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* Mean bandwidth of the timed copies in GB/s (bytes per ns), or -1 when none was timed. */
static double bandwidth_gbps(const struct copy_stat *c)
{
	return c->time_ns > 0 ? (double)c->timed_bytes / (double)c->time_ns : -1;
}

/* Number of kernel names shown under limit, and the time of the rest. */
static size_t shown_kernels(const struct stats *st, int64_t limit, int64_t *rest_time)
{
	size_t shown = limit > 0 && (size_t)limit < st->kernels.n ? (size_t)limit : st->kernels.n;

	*rest_time = 0;
	for (size_t i = shown; i < st->kernels.n; i++)
		cs_sat_accum(rest_time, st->kernels.v[i].total);
	return shown;
}

/* ---- text ---- */

static void stats_print_kernels(const struct stats *st, int64_t limit, int width)
{
	static const struct cs_column cols[] = {
		{"Time(%)", CS_ALIGN_RIGHT, 0},	  {"Total Time", CS_ALIGN_RIGHT, 0},
		{"Instances", CS_ALIGN_RIGHT, 0}, {"Avg", CS_ALIGN_RIGHT, 0},
		{"Med", CS_ALIGN_RIGHT, 0},	  {"Min", CS_ALIGN_RIGHT, 0},
		{"Max", CS_ALIGN_RIGHT, 0},	  {"StdDev", CS_ALIGN_RIGHT, 0},
		{"Name", CS_ALIGN_LEFT, 1},
	};
	struct cs_table table;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX];
	int64_t rest;
	size_t shown = shown_kernels(st, limit, &rest);

	if (st->kernels.n == 0) {
		printf("CUDA kernels: none\n");
	} else {
		printf("CUDA kernels: %s %s of %s %s, %s of GPU time\n\n",
		       cs_fmt_count(a, sizeof(a), st->kernel_count),
		       plural(st->kernel_count, "launch", "launches"),
		       cs_fmt_count(b, sizeof(b), (int64_t)st->kernels.n),
		       plural((int64_t)st->kernels.n, "kernel", "kernels"),
		       cs_fmt_duration(c, sizeof(c), st->kernel_time));
		/* rows grouped by the name as recorded, told apart where their short names agree */
		const char **raw = calloc(shown ? shown : 1, sizeof(*raw));
		char **names = calloc(shown ? shown : 1, sizeof(*names));

		for (size_t i = 0; raw && i < shown; i++)
			raw[i] = st->kernels.v[i].name;
		if (!raw || !names || cs_demangle_short_distinct(raw, shown, names)) {
			free(names);
			names = NULL;
		}
		cs_table_init(&table, cols, 9);
		for (size_t i = 0; i < shown; i++) {
			const struct kernel_stat *k = &st->kernels.v[i];
			char pct[CS_FMT_MAX], total[CS_FMT_MAX], n[CS_FMT_MAX], avg[CS_FMT_MAX],
				med[CS_FMT_MAX], min[CS_FMT_MAX], max[CS_FMT_MAX], sd[CS_FMT_MAX];
			const char *row[] = {
				pct,
				cs_fmt_duration(total, sizeof(total), k->total),
				cs_fmt_count(n, sizeof(n), (int64_t)k->n),
				cs_fmt_duration(avg, sizeof(avg),
						llround((double)k->total / (double)k->n)),
				cs_fmt_duration(med, sizeof(med), llround(k->median)),
				cs_fmt_duration(min, sizeof(min), k->min),
				cs_fmt_duration(max, sizeof(max), k->max),
				cs_fmt_duration(sd, sizeof(sd), llround(k->stddev)),
				names ? names[i] : cs_demangle_short(k->name),
			};

			snprintf(pct, sizeof(pct), "%.1f%%", percent(k->total, st->kernel_time));
			cs_table_add_row(&table, row);
		}
		cs_table_print(&table, stdout, 1, width);
		cs_table_free(&table);
		for (size_t i = 0; names && i < shown; i++)
			free(names[i]);
		free(names);
		free(raw);
		if (shown < st->kernels.n)
			printf("... %s more %s (%.1f%% of GPU time)\n",
			       cs_fmt_count(a, sizeof(a), (int64_t)(st->kernels.n - shown)),
			       plural((int64_t)(st->kernels.n - shown), "kernel", "kernels"),
			       percent(rest, st->kernel_time));
	}
	if (st->kernel_skipped)
		printf("%s %s without timestamps skipped\n",
		       cs_fmt_count(a, sizeof(a), st->kernel_skipped),
		       plural(st->kernel_skipped, "kernel", "kernels"));
}

/* A row of count, bytes, time and bandwidth, after a label when label is not NULL. */
static void copy_row(struct cs_table *table, const char *label, const struct copy_stat *c)
{
	char count[CS_FMT_MAX], bytes[CS_FMT_MAX], time[CS_FMT_MAX], bw[CS_FMT_MAX];
	double gbps = bandwidth_gbps(c);
	const char *row[] = {
		label,
		cs_fmt_count(count, sizeof(count), c->count),
		cs_fmt_bytes(bytes, sizeof(bytes), c->bytes),
		cs_fmt_duration(time, sizeof(time), c->time_ns),
		bw,
	};

	if (gbps >= 0)
		snprintf(bw, sizeof(bw), "%.2f GB/s", gbps);
	else
		snprintf(bw, sizeof(bw), "-");
	cs_table_add_row(table, label ? row : row + 1);
}

static void stats_print_copies(const struct stats *st, int width)
{
	static const struct cs_column cols[] = {
		{"Direction", CS_ALIGN_LEFT, 0},    {"Count", CS_ALIGN_RIGHT, 0},
		{"Total Bytes", CS_ALIGN_RIGHT, 0}, {"Total Time", CS_ALIGN_RIGHT, 0},
		{"Bandwidth", CS_ALIGN_RIGHT, 0},
	};
	struct cs_table table;
	int any = 0;

	for (int d = 0; d < STATS_NCOPY_KINDS; d++)
		any |= st->copies[d].count > 0;
	if (!any) {
		printf("\nMemory copies: none\n");
	} else {
		printf("\nMemory copies:\n\n");
		cs_table_init(&table, cols, 5);
		for (int d = 0; d < STATS_NCOPY_KINDS; d++)
			if (st->copies[d].count > 0)
				copy_row(&table, cs_copy_kind_name(d), &st->copies[d]);
		cs_table_print(&table, stdout, 1, width);
		cs_table_free(&table);
	}
	if (st->memsets.count == 0) {
		printf("\nMemsets: none\n");
	} else {
		printf("\nMemsets:\n\n");
		cs_table_init(&table, cols + 1, 4);
		copy_row(&table, NULL, &st->memsets);
		cs_table_print(&table, stdout, 1, width);
		cs_table_free(&table);
	}
}

/* ---- JSON ---- */

/* The totals of a group of copies or memsets, with its direction when not NULL. */
static cJSON *copy_json(const char *direction, const struct copy_stat *c)
{
	cJSON *o = cJSON_CreateObject();
	double gbps = bandwidth_gbps(c);

	if (!o)
		return NULL;
	if (direction)
		cs_json_add_string(o, "direction", direction);
	cs_json_add_int(o, "count", c->count, -1);
	cs_json_add_int(o, "bytes", c->bytes, -1);
	cs_json_add_int(o, "total_ns", c->time_ns, -1);
	if (gbps >= 0)
		cJSON_AddNumberToObject(o, "bandwidth_gbps", gbps);
	else
		cJSON_AddNullToObject(o, "bandwidth_gbps");
	return o;
}

static cJSON *stats_json(const char *path, int64_t pid, const struct stats *st, int64_t limit)
{
	cJSON *doc = cJSON_CreateObject(), *kern, *top, *copies, *more;
	int64_t rest;
	size_t shown = shown_kernels(st, limit, &rest);

	if (!doc)
		return NULL;
	cs_json_add_string(doc, "file", path);
	cs_json_add_int(doc, "pid", pid, -1);
	kern = cJSON_AddObjectToObject(doc, "kernels");
	if (!kern)
		goto fail;
	cs_json_add_int(kern, "total_ns", st->kernel_time, -1);
	cs_json_add_int(kern, "instances", st->kernel_count, -1);
	cs_json_add_int(kern, "names", (int64_t)st->kernels.n, -1);
	cs_json_add_int(kern, "skipped_without_timestamps", st->kernel_skipped, -1);
	top = cJSON_AddArrayToObject(kern, "top");
	if (!top)
		goto fail;
	for (size_t i = 0; i < shown; i++) {
		const struct kernel_stat *k = &st->kernels.v[i];
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(top, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		cs_json_add_string(o, "name", k->name);
		cs_json_add_string(o, "name_demangled", cs_demangle(k->name));
		cJSON_AddNumberToObject(o, "time_percent", percent(k->total, st->kernel_time));
		cs_json_add_int(o, "total_ns", k->total, -1);
		cs_json_add_int(o, "instances", (int64_t)k->n, -1);
		cJSON_AddNumberToObject(o, "avg_ns", (double)k->total / (double)k->n);
		cJSON_AddNumberToObject(o, "median_ns", k->median);
		cs_json_add_int(o, "min_ns", k->min, -1);
		cs_json_add_int(o, "max_ns", k->max, -1);
		cJSON_AddNumberToObject(o, "stddev_ns", k->stddev);
	}
	more = cJSON_AddObjectToObject(kern, "more");
	if (!more)
		goto fail;
	cs_json_add_int(more, "names", (int64_t)(st->kernels.n - shown), -1);
	cs_json_add_int(more, "total_ns", rest, -1);
	cJSON_AddNumberToObject(more, "time_percent", percent(rest, st->kernel_time));

	copies = cJSON_AddArrayToObject(doc, "memcpy");
	if (!copies)
		goto fail;
	for (int d = 0; d < STATS_NCOPY_KINDS; d++) {
		cJSON *o;

		if (st->copies[d].count == 0)
			continue;
		o = copy_json(cs_copy_kind_name(d), &st->copies[d]);
		if (!o || !cJSON_AddItemToArray(copies, o)) {
			cJSON_Delete(o);
			goto fail;
		}
	}
	more = copy_json(NULL, &st->memsets);
	if (!more || !cJSON_AddItemToObject(doc, "memset", more)) {
		cJSON_Delete(more);
		goto fail;
	}
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

int cmd_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'}, {"limit", required_argument, NULL, 'n'},
		{"pid", required_argument, NULL, 'p'},	  {"width", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},	  {NULL, 0, NULL, 0},
	};
	enum cli_format format = CLI_FORMAT_TEXT;
	int64_t limit = STATS_DEFAULT_LIMIT, pid = -1, width = -1;
	struct stats st;
	const char *path;
	cs_trace *t;
	cs_error err = {0, ""};
	cs_progress *progress;
	int c, rc;

	while ((c = cli_getopt(argc, argv, "f:n:p:w:h", longopts)) != -1) {
		switch (c) {
		case 'f':
			if (cli_parse_format(argv[0], optarg, &format))
				return CLI_EXIT_USAGE;
			break;
		case 'n':
			if (cli_parse_int(argv[0], "--limit", optarg, 0, INT64_MAX, &limit))
				return CLI_EXIT_USAGE;
			break;
		case 'p':
			if (cli_parse_int(argv[0], "--pid", optarg, 0, UINT32_MAX, &pid))
				return CLI_EXIT_USAGE;
			break;
		case 'w':
			if (cli_parse_int(argv[0], "--width", optarg, 0, 100000, &width))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(stats_usage, stdout);
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
	rc = cli_check_pid(t, path, pid);
	if (rc) {
		cs_trace_close(t);
		return rc;
	}
	memset(&st, 0, sizeof(st));
	progress = cs_progress_start("reading the trace");
	rc = stats_collect(t, pid, &st, &err);
	cs_progress_end(progress);
	cs_trace_close(t);
	if (rc < 0) {
		stats_free(&st);
		return cli_trace_error(path, rc, &err);
	}
	if (format == CLI_FORMAT_JSON) {
		cJSON *doc = stats_json(path, pid, &st, limit);

		if (doc) {
			rc = cli_json_print(doc);
			cJSON_Delete(doc);
		} else {
			cli_error("out of memory");
			rc = CLI_EXIT_USAGE;
		}
	} else {
		int w = cli_output_width((int)width);

		stats_print_kernels(&st, limit, w);
		stats_print_copies(&st, w);
		rc = CLI_EXIT_OK;
	}
	stats_free(&st);
	return rc;
}
