/*
 * ranks.c - the cross-rank section of `cuscope report` (report.h): the ranks of the
 * view side by side, each with the steady-state medians of its step time, own time (the step less
 * its exposed communication, which holds the waiting for others), compute, NCCL time, the share
 * of it overlapped with compute, exposed communication, host waits and the GPU idle before the
 * step; then the slowest rank of each step, and the straggler.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/sort.h"
#include "cuscope/grow.h"
#include "cuscope/json.h"
#include "cuscope/table.h"
#include "cuscope/units.h"
#include "report.h"

/* The medians of one rank over the steady rows. */
struct medians {
	int64_t time, own, compute, comm, overlap, exposed, wait, idle;
	int32_t slowest; /* steady rows where it is the slowest */
};

static int64_t med(int64_t *v, int32_t n)
{
	if (n == 0)
		return 0;
	cs_sort_i64(v, (size_t)n);
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2; /* v >= 0 */
}

static void rank_medians(const cs_rank_view *rv, int32_t e, int64_t *tmp, struct medians *m)
{
	static const size_t off[] = {
		offsetof(cs_rank_step, time),
		offsetof(cs_rank_step, own_ns),
		offsetof(cs_rank_step, compute_ns),
		offsetof(cs_rank_step, comm_ns),
		offsetof(cs_rank_step, comm_overlap_ns),
		offsetof(cs_rank_step, comm_exposed_ns),
		offsetof(cs_rank_step, host_wait_ns),
		offsetof(cs_rank_step, idle_before_ns),
	};
	int64_t *out[] = {&m->time,    &m->own,	    &m->compute, &m->comm,
			  &m->overlap, &m->exposed, &m->wait,	 &m->idle};

	memset(m, 0, sizeof(*m));
	for (size_t f = 0; f < sizeof(off) / sizeof(off[0]); f++) {
		int32_t n = 0;

		for (int32_t i = 0; i < rv->nrows; i++)
			if (rv->rows[i].steady)
				tmp[n++] =
					*(const int64_t *)((const char *)&rv->v[e].m[i] + off[f]);
		*out[f] = med(tmp, n);
	}
	for (int32_t i = 0; i < rv->nrows; i++)
		if (rv->rows[i].steady && rv->rows[i].slowest == e && rv->rows[i].behind_ns > 0)
			m->slowest++;
}

static const char *rank_label(char *buf, size_t size, const cs_rank_entry *e)
{
	if (e->rank != CS_ID_NONE)
		snprintf(buf, size, "%d", e->rank);
	else
		snprintf(buf, size, "-");
	return buf;
}

static int32_t steady_rows(const cs_rank_view *rv)
{
	int32_t n = 0;

	for (int32_t i = 0; i < rv->nrows; i++)
		n += rv->rows[i].steady != 0;
	return n;
}

static double share(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "rank 2 is the slowest in 18 of 18 steady steps, median 1.02 ms behind the others (compute)",
 * or how the slowest place is spread. */
static void straggler_line(const cs_rank_view *rv, char *buf, size_t size)
{
	cs_rank_straggler sg;
	char d[CS_FMT_MAX], lab[32];

	if (cs_rank_view_straggler(rv, &sg)) {
		const cs_rank_entry *e = &rv->v[sg.entry];

		snprintf(buf, size,
			 "rank %s (pid %u) is the slowest in %d of %d steady steps, median %s "
			 "behind "
			 "the others (cause: %s in %d of them)",
			 rank_label(lab, sizeof(lab), e), e->pid, sg.slowest, sg.steady,
			 cs_fmt_duration(d, sizeof(d), sg.behind_ns), cs_rank_cause_name(sg.cause),
			 sg.cause_steps);
	} else {
		snprintf(buf, size,
			 "no rank is consistently the slowest (rank-straggler's criterion, "
			 "docs/rules/rank-straggler.md)");
	}
}

void report_ranks_text(FILE *out, const cs_rank_view *rv, int verbose, int width)
{
	static const struct cs_column cols[] = {
		{"Rank", CS_ALIGN_RIGHT, 0},	   {"PID", CS_ALIGN_RIGHT, 0},
		{"Step", CS_ALIGN_RIGHT, 0},	   {"Own", CS_ALIGN_RIGHT, 0},
		{"Compute", CS_ALIGN_RIGHT, 0},	   {"NCCL", CS_ALIGN_RIGHT, 0},
		{"Overlapped", CS_ALIGN_RIGHT, 0}, {"Exposed", CS_ALIGN_RIGHT, 0},
		{"Host wait", CS_ALIGN_RIGHT, 0},  {"Idle before", CS_ALIGN_RIGHT, 0},
		{"Slowest in", CS_ALIGN_RIGHT, 0},
	};
	static const struct cs_column scols[] = {
		{"Step", CS_ALIGN_RIGHT, 0},   {"Slowest rank", CS_ALIGN_RIGHT, 0},
		{"Behind", CS_ALIGN_RIGHT, 0}, {"Cause", CS_ALIGN_LEFT, 0},
		{"Phase", CS_ALIGN_LEFT, 0},
	};
	struct cs_table t;
	int64_t *tmp;
	int32_t steady;
	char line[512];

	if (!rv || rv->n < 2 || rv->nrows == 0)
		return;
	tmp = malloc((size_t)rv->nrows * sizeof(*tmp));
	if (!tmp)
		return;
	steady = steady_rows(rv);
	fprintf(out, "Ranks: %d processes that communicate (NCCL), steps aligned by index; medians of %d "
	       "steady steps:\n",
	       rv->n, steady);
	cs_table_init(&t, cols, 11);
	for (int32_t e = 0; e < rv->n; e++) {
		struct medians m;
		char c[11][CS_FMT_MAX];
		const char *row[11];

		rank_medians(rv, e, tmp, &m);
		rank_label(c[0], sizeof(c[0]), &rv->v[e]);
		snprintf(c[1], sizeof(c[1]), "%u", rv->v[e].pid);
		cs_fmt_duration(c[2], sizeof(c[2]), m.time);
		cs_fmt_duration(c[3], sizeof(c[3]), m.own);
		cs_fmt_duration(c[4], sizeof(c[4]), m.compute);
		cs_fmt_duration(c[5], sizeof(c[5]), m.comm);
		snprintf(c[6], sizeof(c[6]), "%.0f%%", share(m.overlap, m.comm));
		cs_fmt_duration(c[7], sizeof(c[7]), m.exposed);
		cs_fmt_duration(c[8], sizeof(c[8]), m.wait);
		cs_fmt_duration(c[9], sizeof(c[9]), m.idle);
		snprintf(c[10], sizeof(c[10]), "%d%s", m.slowest,
			 rv->v[e].shares_gpu ? " (shared GPU)" : "");
		for (int k = 0; k < 11; k++)
			row[k] = c[k];
		cs_table_add_row(&t, row);
	}
	cs_table_print(&t, out, 2, width);
	cs_table_free(&t);
	straggler_line(rv, line, sizeof(line));
	fprintf(out, "  %s\n\n", line);
	if (verbose) {
		fprintf(out, "Slowest rank per step (own time: the step less its exposed "
		       "communication):\n");
		cs_table_init(&t, scols, 5);
		for (int32_t i = 0; i < rv->nrows; i++) {
			const cs_rank_row *r = &rv->rows[i];
			char idx[16], lab[32], d[CS_FMT_MAX];
			const char *row[5];

			snprintf(idx, sizeof(idx), "%d", r->index);
			row[0] = idx;
			row[1] = rank_label(lab, sizeof(lab), &rv->v[r->slowest]);
			row[2] = cs_fmt_duration(d, sizeof(d), r->behind_ns);
			row[3] = cs_rank_cause_name(r->cause);
			row[4] = r->steady ? "steady" : "warm-up";
			cs_table_add_row(&t, row);
		}
		cs_table_print(&t, out, 2, width);
		cs_table_free(&t);
		fputc('\n', out);
	}
	free(tmp);
}

static int add_i64(cJSON *o, const char *key, int64_t v)
{
	return cs_json_add_int(o, key, v, INT64_MIN) != NULL;
}

cJSON *report_ranks_json(const cs_rank_view *rv)
{
	cJSON *o, *ranks, *steps, *sgj;
	cs_rank_straggler sg;
	int64_t *tmp;
	int ok = 1;

	if (!rv || rv->n < 2 || rv->nrows == 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	tmp = malloc((size_t)rv->nrows * sizeof(*tmp));
	if (!o || !tmp)
		goto fail;
	ok &= add_i64(o, "count", rv->n);
	ok &= add_i64(o, "steady_steps", steady_rows(rv));
	ranks = cJSON_AddArrayToObject(o, "ranks");
	steps = cJSON_AddArrayToObject(o, "steps");
	ok &= ranks && steps;
	for (int32_t e = 0; ok && e < rv->n; e++) {
		const cs_rank_entry *x = &rv->v[e];
		cJSON *r = cJSON_CreateObject(), *md;
		struct medians m;

		ok &= r && cJSON_AddItemToArray(ranks, r);
		if (!ok)
			break;
		rank_medians(rv, e, tmp, &m);
		ok &= x->rank == CS_ID_NONE ? cJSON_AddNullToObject(r, "rank") != NULL
					    : add_i64(r, "rank", x->rank);
		ok &= x->local_rank == CS_ID_NONE ? cJSON_AddNullToObject(r, "local_rank") != NULL
						  : add_i64(r, "local_rank", x->local_rank);
		ok &= add_i64(r, "pid", x->pid);
		ok &= cJSON_AddBoolToObject(r, "shares_gpu", x->shares_gpu) != NULL;
		ok &= add_i64(r, "slowest_steps", m.slowest);
		md = cJSON_AddObjectToObject(r, "steady_median");
		ok &= md != NULL;
		if (!ok)
			break;
		ok &= add_i64(md, "step_ns", m.time) && add_i64(md, "own_ns", m.own) &&
		      add_i64(md, "compute_ns", m.compute) && add_i64(md, "comm_ns", m.comm) &&
		      add_i64(md, "comm_overlap_ns", m.overlap) &&
		      add_i64(md, "comm_exposed_ns", m.exposed) &&
		      add_i64(md, "host_wait_ns", m.wait) && add_i64(md, "idle_before_ns", m.idle);
	}
	for (int32_t i = 0; ok && i < rv->nrows; i++) {
		const cs_rank_row *r = &rv->rows[i];
		cJSON *s = cJSON_CreateObject(), *per;

		ok &= s && cJSON_AddItemToArray(steps, s);
		if (!ok)
			break;
		ok &= add_i64(s, "index", r->index);
		ok &= cJSON_AddBoolToObject(s, "steady", r->steady) != NULL;
		ok &= add_i64(s, "slowest_pid", rv->v[r->slowest].pid);
		ok &= add_i64(s, "behind_ns", r->behind_ns);
		ok &= cJSON_AddStringToObject(s, "cause", cs_rank_cause_name(r->cause)) != NULL;
		ok &= add_i64(s, "cause_ns", r->cause_ns);
		per = cJSON_AddArrayToObject(s, "ranks");
		ok &= per != NULL;
		for (int32_t e = 0; ok && e < rv->n; e++) {
			const cs_rank_step *m = &rv->v[e].m[i];
			cJSON *x = cJSON_CreateObject();

			ok &= x && cJSON_AddItemToArray(per, x);
			ok &= ok && add_i64(x, "pid", rv->v[e].pid) &&
			      add_i64(x, "step_ns", m->time) && add_i64(x, "own_ns", m->own_ns) &&
			      add_i64(x, "compute_ns", m->compute_ns) &&
			      add_i64(x, "comm_ns", m->comm_ns) &&
			      add_i64(x, "comm_overlap_ns", m->comm_overlap_ns) &&
			      add_i64(x, "comm_exposed_ns", m->comm_exposed_ns) &&
			      add_i64(x, "host_wait_ns", m->host_wait_ns) &&
			      add_i64(x, "idle_before_ns", m->idle_before_ns);
		}
	}
	if (ok && cs_rank_view_straggler(rv, &sg)) {
		sgj = cJSON_AddObjectToObject(o, "straggler");
		ok &= sgj && add_i64(sgj, "pid", rv->v[sg.entry].pid) &&
		      add_i64(sgj, "slowest_steps", sg.slowest) &&
		      add_i64(sgj, "behind_ns", sg.behind_ns) &&
		      add_i64(sgj, "behind_ci95_lo_ns", sg.behind_lo) &&
		      add_i64(sgj, "behind_ci95_hi_ns", sg.behind_hi) &&
		      cJSON_AddStringToObject(sgj, "cause", cs_rank_cause_name(sg.cause)) != NULL;
	} else if (ok) {
		ok &= cJSON_AddNullToObject(o, "straggler") != NULL;
	}
	if (!ok)
		goto fail;
	free(tmp);
	return o;
fail:
	free(tmp);
	cJSON_Delete(o);
	return NULL;
}

void report_ranks_markdown(FILE *out, const cs_rank_view *rv)
{
	int64_t *tmp;
	char line[512];

	if (!rv || rv->n < 2 || rv->nrows == 0)
		return;
	tmp = malloc((size_t)rv->nrows * sizeof(*tmp));
	if (!tmp)
		return;
	fprintf(out, "\n### Ranks\n\nMedians of %d steady steps, aligned by step index.\n\n"
	       "| Rank | PID | Step | Own | Compute | NCCL | Overlapped | Exposed | Host wait | "
	       "Idle before | Slowest in "
	       "|\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
	       steady_rows(rv));
	for (int32_t e = 0; e < rv->n; e++) {
		struct medians m;
		char c[8][CS_FMT_MAX], lab[32];

		rank_medians(rv, e, tmp, &m);
		fprintf(out, "| %s | %u | %s | %s | %s | %s | %.0f%% | %s | %s | %s | %d |\n",
		       rank_label(lab, sizeof(lab), &rv->v[e]), rv->v[e].pid,
		       cs_fmt_duration(c[0], sizeof(c[0]), m.time),
		       cs_fmt_duration(c[1], sizeof(c[1]), m.own),
		       cs_fmt_duration(c[2], sizeof(c[2]), m.compute),
		       cs_fmt_duration(c[3], sizeof(c[3]), m.comm), share(m.overlap, m.comm),
		       cs_fmt_duration(c[4], sizeof(c[4]), m.exposed),
		       cs_fmt_duration(c[5], sizeof(c[5]), m.wait),
		       cs_fmt_duration(c[6], sizeof(c[6]), m.idle), m.slowest);
	}
	straggler_line(rv, line, sizeof(line));
	fprintf(out, "\n%s\n", line);
	free(tmp);
}
