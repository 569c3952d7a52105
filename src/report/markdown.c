/*
 * markdown.c - the report as markdown, for a CI comment: a summary table, a table of the
 * findings, and each finding's details in a collapsed section.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "cuscope/escape.h"
#include "cuscope/strbuf.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"
#include "report_internal.h"

/* ---- markdown ---- */

static void md_finding(const struct report_view *v, const cs_report_finding *f)
{
	FILE *out = v->out;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], runs[512];
	const cJSON *it;

	fprintf(out, "\n### %s: ", cs_severity_name(f->severity));
	cs_md_code(out, f->rule);
	fprintf(out, " ");
	cs_md_text(out, f->title);
	fprintf(out, "\n\n");
	if (v->multi) {
		char lab[64];

		fprintf(out, "- **Process:** ");
		cs_md_text(out, report_finding_label(lab, sizeof(lab), v, f));
		fprintf(out, "\n");
		for (int32_t i = 0; i < f->nprocs; i++) {
			const cs_finding_proc *p = &f->procs[i];
			char cost[256];

			if (p->pid == f->pid)
				continue;
			fprintf(out, "- **Also in:** ");
			cs_md_text(out, report_proc_label(lab, sizeof(lab), p->pid, p->rank,
							 p->local_rank));
			fprintf(out, ": ");
			cs_md_text(out, report_proc_cost(cost, sizeof(cost), p));
			fprintf(out, "\n");
		}
	}
	if (f->nsteps > 0) {
		report_step_runs(runs, sizeof(runs), f->steps, f->nsteps, STEP_RUNS_SHOWN);
		fprintf(out, "- **Steps:** %d of %d steady-state (%s)\n", f->nsteps,
		       cs_steps_steady(report_finding_steps(v, f)), runs);
	}
	if (f->lost_ns_per_step > 0)
		fprintf(out, "- **%s:** %s per step (%.1f%% of step time), %s in all\n",
		       f->saving_ns >= 0 ? "Fixing it saves (replayed)" : "GPU time lost",
		       cs_fmt_duration(a, sizeof(a), f->lost_ns_per_step), 100.0 * report_cost_share(f),
		       cs_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
	if (f->stack_id != CS_ID_NONE) {
		const cs_frame *frames;
		cs_error err = {0, ""};
		int n;

		struct report_site *sites;
		int64_t total;
		int ns = report_sites(v->t, f, &sites, &total);

		if (ns > 0) {
			char c[CS_FMT_MAX];

			fprintf(out, "- **Where:**\n");
			for (int i = 0; i < ns && (v->verbose || i < REPORT_SITES_SHOWN); i++) {
				fprintf(out, "  - ");
				cs_md_code(out, sites[i].where);
				fprintf(out, ": %lld call%s, %s (%.0f%%)\n", (long long)sites[i].count,
				       sites[i].count == 1 ? "" : "s",
				       cs_fmt_duration(c, sizeof(c), sites[i].cost_ns),
				       total > 0 ? 100.0 * (double)sites[i].cost_ns / (double)total
						 : 0.0);
			}
			if (!v->verbose && ns > REPORT_SITES_SHOWN)
				fprintf(out, "  - ... %d more\n", ns - REPORT_SITES_SHOWN);
			report_sites_free(sites, ns);
		} else if (cs_trace_get_stack(v->t, f->stack_id, &frames, &n, &err) == 0 && n > 0) {
			char *s = report_where_text(frames, n);

			if (s) {
				fprintf(out, "- **Where:** ");
				cs_md_code(out, s);
				fprintf(out, "\n");
			}
			free(s);
		}
	}
	if (f->fix && *f->fix) {
		fprintf(out, "- **Fix:** ");
		cs_md_text(out, f->fix);
		fprintf(out, "\n");
	}
	if (f->evidence && cJSON_GetArraySize(f->evidence) > 0) {
		fprintf(out, "\n<details><summary>Evidence</summary>\n\n| | |\n|---|---|\n");
		cJSON_ArrayForEach(it, f->evidence)
		{
			char *val, *key;

			if (!report_evidence_shown(it->string, v->verbose))
				continue;
			val = report_evidence_value(it->string, it, v->verbose);
			key = report_evidence_label(it->string);
			fprintf(out, "| ");
			cs_md_text(out, key ? key : "");
			free(key);
			fprintf(out, " | ");
			cs_md_text(out, val ? val : "");
			fprintf(out, " |\n");
			free(val);
		}
		fprintf(out, "\n</details>\n");
	}
}

int report_markdown(const struct report_view *v)
{
	FILE *out = v->out;
	const cs_steps *s = v->s;
	char a[CS_FMT_MAX], b[CS_FMT_MAX], c[CS_FMT_MAX];
	int count[4] = {0};

	fprintf(out, "## cuscope report: ");
	cs_md_code(out, report_base_name(v->path));
	fprintf(out, "\n\n| | |\n|---|---|\n");
	if (v->a->window.on) {
		char line[512];

		fprintf(out, "| Window | ");
		cs_md_text(out, cs_load_window_text(line, sizeof(line), &v->a->window));
		fprintf(out, "; %s |\n", REPORT_WINDOW_NOTE);
	}
	for (int32_t i = 0; v->multi && i < v->procs->n; i++) {
		const cs_report_process *p = &v->procs->v[i];
		char lab[64], st[320];
		char *found = report_proc_findings(v, p->pid);

		fprintf(out, "| Process | ");
		cs_md_text(out, report_proc_label(lab, sizeof(lab), p->pid, p->rank, p->local_rank));
		fprintf(out, ": ");
		cs_md_text(out, report_proc_line_text(v, st, sizeof(st), &p->steps));
		fprintf(out, "; ");
		cs_md_text(out, found ? found : "");
		fprintf(out, " |\n");
		free(found);
	}
	if (v->multi) {
		/* each process's steps and GPU busy share are in its row */
	} else if (s->method == CS_STEPS_NONE) {
		fprintf(out, "| Steps | none found (");
		cs_md_text(out, s->detail);
		fprintf(out, ") |\n");
	} else {
		fprintf(out, "| Steps | %d (", s->n);
		cs_md_text(out, s->detail);
		fprintf(out, "), %d warm-up |\n", s->warmup);
		fprintf(out, "| Step time | median %s (p10 %s, p90 %s)%s |\n",
		       cs_fmt_duration(a, sizeof(a), v->median),
		       cs_fmt_duration(b, sizeof(b), v->p10), cs_fmt_duration(c, sizeof(c), v->p90),
		       s->timing == CS_STEP_TIME_GPU ? "; GPU-bound: step time from the GPU" : "");
	}
	if (!v->multi) {
		struct report_host_idle h;
		char line[512];

		const cs_report_process *p = cs_report_process_find(v->procs, s->pid);

		fprintf(out, "| GPU busy | %.1f%% |\n", 100.0 * v->busy_share);
		if (p && p->replay_step_ns > 0)
			fprintf(out, "| If fixed | %s |\n",
			       report_fix_all_text(line, sizeof(line), p->replay_step_ns,
						   p->fix_all_step_ns, report_savings_sum(v, p->pid)));
		if (!report_host_idle(v, s, &h) && h.known && h.total >= REPORT_HOST_IDLE_SHOWN) {
			fprintf(out, "| GPU idle | ");
			cs_md_text(out, report_host_idle_text(line, sizeof(line), &h));
			fprintf(out, " |\n");
			if (report_idle_unexplained_text(v, s->pid, v->busy_share, &h, line,
							 sizeof(line))) {
				fprintf(out, "| Without a finding | ");
				cs_md_text(out, line);
				fprintf(out, " |\n");
			}
		}
	}
	for (int i = 0; i < v->nunended && i < UNENDED_SHOWN; i++) {
		char line[256];

		fprintf(out, "| Incomplete | ");
		cs_md_text(out, report_unended_text(line, sizeof(line), &v->unended[i]));
		fprintf(out, " |\n");
	}
	if (v->nunended > UNENDED_SHOWN)
		fprintf(out, "| Incomplete | %d more processes without their end record |\n",
		       v->nunended - UNENDED_SHOWN);
	for (int32_t i = 0; i < v->r->n; i++)
		count[v->r->v[i]->severity]++;
	fprintf(out, "| Findings | %d (%d error, %d warning, %d info) |\n", v->r->n, count[CS_SEV_ERROR],
	       count[CS_SEV_WARNING], count[CS_SEV_INFO]);
	report_ranks_markdown(out, v->ranks);
	if (v->r->n == 0) {
		fprintf(out, "\n**No findings.**\n");
		return 0;
	}
	fprintf(out, "\n| Severity | Rule | Finding |%s Steps | GPU lost per step | Total |\n"
	       "|---|---|---|%s---:|---:|---:|\n",
	       v->multi ? " Processes |" : "", v->multi ? "---|" : "");
	for (int32_t i = 0; i < v->r->n; i++) {
		const cs_report_finding *f = v->r->v[i];

		fprintf(out, "| %s | ", cs_severity_name(f->severity));
		cs_md_code(out, f->rule);
		fprintf(out, " | ");
		cs_md_text(out, f->title);
		if (v->multi) {
			char lab[64];

			fprintf(out, " | ");
			if (f->nprocs <= 1) {
				cs_md_text(out, report_finding_label(lab, sizeof(lab), v, f));
			} else {
				for (int32_t k = 0; k < f->nprocs; k++) {
					const cs_finding_proc *p = &f->procs[k];

					fprintf(out, "%s", k ? ", " : "");
					cs_md_text(out, report_proc_label(lab, sizeof(lab), p->pid,
									 p->rank, p->local_rank));
				}
			}
		}
		fprintf(out, " | %d | %s (%.1f%%) | %s |\n", f->nsteps,
		       cs_fmt_duration(a, sizeof(a), f->lost_ns_per_step), 100.0 * report_cost_share(f),
		       cs_fmt_duration(b, sizeof(b), cs_finding_total_lost(f)));
	}
	for (int32_t i = 0; i < v->r->n; i++)
		md_finding(v, v->r->v[i]);
	return 0;
}
