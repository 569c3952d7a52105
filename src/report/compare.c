/*
 * compare.c - the renderers of `cuscope diff` and `cuscope gate`: a comparison (cs_diff, computed
 * by src/gate/) as JSON, markdown, JUnit XML and text, each written to the FILE * it is given.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/demangle.h"
#include "cuscope/gate.h"
#include "cuscope/host_speed.h"
#include "cuscope/escape.h"
#include "cuscope/table.h"
#include "cuscope/units.h"
#include "cuscope/utf8.h"
#include "report.h"

/* ---- JSON ---- */

static const char *unit_name(int unit)
{
	static const char *const names[] = {"ns", "bytes", "count", "share"};

	return unit >= 0 && unit < 4 ? names[unit] : "count";
}


static cJSON *run_json(const cs_run *r, double scale)
{
	cJSON *o = cJSON_CreateObject(), *st;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "file", r->path);
	if (r->command)
		cJSON_AddStringToObject(o, "command", r->command);
	else
		cJSON_AddNullToObject(o, "command");
	cJSON_AddStringToObject(o, "step_method", cs_step_method_name(r->method));
	cJSON_AddStringToObject(o, "step_detail", r->detail);
	cJSON_AddNumberToObject(o, "steps", r->steps);
	cJSON_AddNumberToObject(o, "warmup_steps", r->warmup);
	cJSON_AddNumberToObject(o, "steady_steps", r->steady);
	cJSON_AddNumberToObject(o, "kernels_per_step", r->period);
	cJSON_AddNumberToObject(o, "compared_steps_per_step", scale);
	st = cJSON_AddObjectToObject(o, "step_time");
	if (st) {
		cJSON_AddNumberToObject(st, "median_ns", (double)r->step_median / scale);
		cJSON_AddNumberToObject(st, "p10_ns", (double)r->step_p10 / scale);
		cJSON_AddNumberToObject(st, "p90_ns", (double)r->step_p90 / scale);
	}
	cJSON_AddNumberToObject(o, "findings", r->nfindings);
	if (r->launch_pace > 0)
		cJSON_AddNumberToObject(o, "launch_pace_median_ns", r->launch_pace);
	else
		cJSON_AddNullToObject(o, "launch_pace_median_ns");
	if (r->launch_call > 0)
		cJSON_AddNumberToObject(o, "launch_call_median_ns", r->launch_call);
	else
		cJSON_AddNullToObject(o, "launch_call_median_ns");
	if (r->rank_select != CS_RANK_DEFAULT) {
		cJSON_AddNumberToObject(o, "rank", r->rank);
		cJSON_AddNumberToObject(o, "pid", r->pid);
		cJSON_AddStringToObject(o, "rank_select",
					r->rank_select == CS_RANK_SLOWEST ? "slowest" : "number");
	}
	return o;
}

static cJSON *finding_json(const cs_run_finding *f)
{
	cJSON *o = cJSON_CreateObject();
	char *title = cs_text_clean(f->title);

	if (!o || !title) {
		free(title);
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddStringToObject(o, "rule", f->rule);
	cJSON_AddStringToObject(o, "severity", cs_severity_name(f->severity));
	cJSON_AddStringToObject(o, "title", title);
	cJSON_AddNumberToObject(o, "lost_ns_per_step", (double)f->lost_ns_per_step);
	cJSON_AddBoolToObject(o, "near_threshold", f->near);
	free(title);
	return o;
}

static cJSON *row_json(const cs_diff *d, const cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	cJSON *o = cJSON_CreateObject(), *t;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "metric", def->id);
	cJSON_AddStringToObject(o, "label", def->label);
	if (r->kernel) {
		char *k = cs_text_clean(r->kernel);

		if (k)
			cJSON_AddStringToObject(o, "kernel", k);
		free(k);
		k = cs_text_clean(cs_demangle(r->kernel));
		if (k)
			cJSON_AddStringToObject(o, "kernel_demangled", k);
		free(k);
	}
	if (r->place > 0)
		cJSON_AddNumberToObject(o, "place", r->place);
	cJSON_AddStringToObject(o, "unit", unit_name(def->unit));
	cJSON_AddBoolToObject(o, "higher_is_worse", def->higher_is_worse);
	cJSON_AddNumberToObject(o, "base", r->base);
	cJSON_AddNumberToObject(o, "new", r->new_);
	cJSON_AddNumberToObject(o, "delta", r->delta);
	if (r->base != 0)
		cJSON_AddNumberToObject(o, "relative", r->rel);
	else
		cJSON_AddNullToObject(o, "relative");
	cJSON_AddBoolToObject(o, "gated", r->gated);
	t = cJSON_AddObjectToObject(o, "threshold");
	if (t) {
		cJSON_AddNumberToObject(t, "relative", r->t.rel);
		cJSON_AddNumberToObject(t, "absolute", r->t.abs);
		if (r->metric == CS_GM_KERNEL_TIME)
			cJSON_AddNumberToObject(t, "min_share", r->t.min_share);
	}
	cJSON_AddStringToObject(o, "kind", cs_metric_kind_name(def->kind));
	if (r->tested) {
		cJSON_AddNumberToObject(o, "confidence", r->confidence);
	} else {
		cJSON_AddNullToObject(o, "confidence");
	}
	cJSON_AddNumberToObject(o, "run_spread", r->spread);
	cJSON_AddNumberToObject(o, "run_margin", r->margin);
	cJSON_AddBoolToObject(o, "host_bound_wall", r->host_wall);
	if (r->host_wall && d->host_speed > 0)
		cJSON_AddNumberToObject(o, "host_adjusted_relative", r->host_rel);
	else
		cJSON_AddNullToObject(o, "host_adjusted_relative");
	cJSON_AddBoolToObject(o, "shared_gpu", r->shared);
	cJSON_AddNumberToObject(o, "score", r->score > 1e300 ? 1e300 : r->score);
	cJSON_AddStringToObject(o, "status",
				r->worse	  ? "worse"
				: r->inconclusive ? "inconclusive"
				: r->better	  ? "better"
						  : "within");
	return o;
}

cJSON *report_diff_json(const cs_diff *d)
{
	cJSON *doc = cJSON_CreateObject(), *x, *arr, *f, *lists[3];
	static const char *const list_names[] = {"new", "fixed", "persisting"};

	if (!doc)
		return NULL;
	cJSON_AddNumberToObject(doc, "version", 1);
	x = run_json(d->base, d->base_scale);
	if (!x || !cJSON_AddItemToObject(doc, "base", x))
		goto fail;
	x = run_json(d->new_, d->new_scale);
	if (!x || !cJSON_AddItemToObject(doc, "new", x))
		goto fail;
	arr = cJSON_AddArrayToObject(doc, "baselines");
	if (!arr)
		goto fail;
	for (int32_t i = 0; i < d->nbases; i++) {
		x = run_json(d->bases[i], d->base_scales[i]);
		if (!x || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			goto fail;
		}
		cJSON_AddNumberToObject(x, "gpu_busy", d->bases[i]->gpu_busy);
	}
	cJSON_AddBoolToObject(doc, "comparable", d->comparable);
	if (d->note[0])
		cJSON_AddStringToObject(doc, "note", d->note);
	else
		cJSON_AddNullToObject(doc, "note");
	cJSON_AddStringToObject(doc, "test_note", d->test_note);
	cJSON_AddBoolToObject(doc, "host_bound", d->host_bound);
	if (d->host_speed > 0)
		cJSON_AddNumberToObject(doc, "host_speed_ratio", d->host_speed);
	else
		cJSON_AddNullToObject(doc, "host_speed_ratio");
	if (d->shared_note[0])
		cJSON_AddStringToObject(doc, "shared_note", d->shared_note);
	else
		cJSON_AddNullToObject(doc, "shared_note");
	cJSON_AddBoolToObject(doc, "shared_gpu", d->shared_gpu);
	if (d->host_note[0])
		cJSON_AddStringToObject(doc, "host_note", d->host_note);
	else
		cJSON_AddNullToObject(doc, "host_note");
	x = cJSON_AddObjectToObject(doc, "gate");
	if (!x)
		goto fail;
	cJSON_AddNumberToObject(x, "checks", d->checks);
	cJSON_AddNumberToObject(x, "failed", d->failed);
	cJSON_AddNumberToObject(x, "inconclusive", d->inconclusive);
	if (d->probe) {
		cJSON *p = cJSON_AddObjectToObject(doc, "host_probe");

		cJSON_AddStringToObject(p, "kind", d->probe == 1 + CS_PROBE_LAUNCH ? "launch" : "cpu");
		cJSON_AddNumberToObject(p, "ratio", d->probe_ratio);
		cJSON_AddNumberToObject(p, "noise", d->probe_noise);
		cJSON_AddBoolToObject(p, "differs", d->probe_differs);
	} else {
		cJSON_AddNullToObject(doc, "host_probe");
	}
	cJSON_AddNumberToObject(x, "confidence_level", d->confidence);
	cJSON_AddNumberToObject(x, "new_findings_gated", d->nnew_gated);
	arr = cJSON_AddArrayToObject(doc, "metrics");
	if (!arr)
		goto fail;
	for (int32_t i = 0; i < d->nrows; i++) {
		cJSON *o = row_json(d, &d->rows[i]);

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			goto fail;
		}
	}
	f = cJSON_AddObjectToObject(doc, "findings");
	if (!f)
		goto fail;
	for (int l = 0; l < 3; l++) {
		lists[l] = cJSON_AddArrayToObject(f, list_names[l]);
		if (!lists[l])
			goto fail;
	}
	for (int32_t i = 0; i < d->nfindings; i++) {
		const cs_diff_finding *m = &d->findings[i];
		cJSON *o = finding_json(m->new_ ? m->new_ : m->base);
		int l = cs_diff_finding_status(m);

		if (!o || !cJSON_AddItemToArray(lists[l], o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (l == 2) {
			cJSON_AddStringToObject(o, "base_severity",
						cs_severity_name(m->base->severity));
			x = finding_json(m->base);
			if (x) {
				cJSON_AddStringToObject(
					o, "base_title",
					cJSON_GetObjectItem(x, "title")->valuestring);
				cJSON_Delete(x);
			}
		}
	}
	return doc;
fail:
	cJSON_Delete(doc);
	return NULL;
}

/* A run's steady step times per compared step: "2.94 ms (p10 2.90 ms .. p90 3.10 ms)". */
static const char *step_times(char *buf, size_t size, const cs_run *r, double scale)
{
	char a[64], b[64], c[64];

	snprintf(buf, size, "%s (p10 %s .. p90 %s)",
		 cs_fmt_value(a, sizeof(a), CS_UNIT_NS, (double)r->step_median / scale, 0),
		 cs_fmt_value(b, sizeof(b), CS_UNIT_NS, (double)r->step_p10 / scale, 0),
		 cs_fmt_value(c, sizeof(c), CS_UNIT_NS, (double)r->step_p90 / scale, 0));
	return buf;
}

/* ---- markdown ---- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void md_steps(FILE *f, const cs_run *r, double scale)
{
	char a[160];

	if (r->method == CS_STEPS_NONE) {
		fprintf(f, "none found (whole trace) | ");
		return;
	}
	if (r->rank_select != CS_RANK_DEFAULT) {
		char rank[64];

		fprintf(f, "%s: ", cs_run_rank_label(r, rank, sizeof(rank)));
	}
	fprintf(f, "%d, %d warm-up, %s", r->steps, r->warmup, cs_step_method_name(r->method));
	if (scale > 1)
		fprintf(f, " (compared as %d)", (int)(r->steady * scale));
	fprintf(f, " | %s", step_times(a, sizeof(a), r, scale));
}

/* The name of a row: its label, with the kernel name for kernel rows. */
static void md_row_name(FILE *f, const cs_diff_row *r)
{
	cs_md_text(f, cs_diff_row_label(r));
	if (r->kernel) {
		fputs(": ", f);
		if (r->place > 0)
			fprintf(f, "launch %d of ", (int)r->place);
		cs_md_code(f, cs_demangle_short(r->kernel));
	}
}

/* The confidence cell of a check: the test's, "exact" for an exact threshold, else "-". */
static void confidence_cell(char *buf, size_t size, const cs_diff_row *r)
{
	if (r->tested)
		cs_confidence_format(buf, size, r->confidence);
	else if (r->t.gate && r->t.rel <= 0 && r->t.abs <= 0)
		snprintf(buf, size, "exact");
	else
		snprintf(buf, size, "-");
}

static void md_row(FILE *f, const cs_diff *d, const cs_diff_row *r, int gate)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	char b[64], n[64], ch[64], th[96], conf[32];

	cs_fmt_value(b, sizeof(b), def->unit, r->base, 0);
	cs_fmt_value(n, sizeof(n), def->unit, r->new_, 0);
	cs_fmt_value(ch, sizeof(ch), def->unit, r->delta, 1);
	cs_diff_row_threshold(th, sizeof(th), d, r);
	confidence_cell(conf, sizeof(conf), r);
	fputs("| ", f);
	if (gate)
		fputs(r->worse ? "**FAIL** | " : r->inconclusive ? "**INCONCLUSIVE** | " : "ok | ", f);
	md_row_name(f, r);
	if (gate)
		fprintf(f, " | %s", cs_metric_kind_name(def->kind));
	fprintf(f, " | %s | %s | %s", b, n, ch);
	if (r->base != 0 && r->delta != 0 && def->unit != CS_UNIT_SHARE)
		fprintf(f, " (%+.1f%%)", 100 * r->rel);
	if (gate)
		fprintf(f, " | %s | %s |\n", conf, th);
	else
		fprintf(f, " | %s |\n", r->worse ? "worse" : r->better ? "better" : "");
}

static void md_findings(FILE *f, const cs_diff *d)
{
	static const char *const what[] = {"new", "fixed", "persisting"};

	if (d->nfindings == 0) {
		fputs("\nNo findings in either run.\n", f);
		return;
	}
	fputs("\n### Findings\n\n", f);
	for (int32_t i = 0; i < d->nfindings; i++) {
		const cs_diff_finding *m = &d->findings[i];
		const cs_run_finding *x = m->new_ ? m->new_ : m->base;
		int l = cs_diff_finding_status(m);

		fprintf(f, "- **%s** %s ", what[l], cs_severity_name(x->severity));
		cs_md_code(f, x->rule);
		fputs(": ", f);
		cs_md_text(f, x->title);
		if (l == 0 && x->near)
			fputs(" (near its threshold: not gated)", f);
		fputc('\n', f);
	}
}

int report_diff_markdown(FILE *f, const cs_diff *d, int gate, int limit)
{
	int kernels = 0, passed = 0;

	if (gate && d->inconclusive && !d->failed)
		fprintf(f,
			"## cuscope gate: INCONCLUSIVE (0 of %d checks regressed; %d inconclusive: "
			"the host was %.0f%% slower)\n\n",
			d->checks, d->inconclusive, 100 * (d->probe_ratio - 1));
	else if (gate)
		fprintf(f, "## cuscope gate: %s (%d of %d checks regressed)\n\n",
			d->failed ? "FAIL" : "PASS", d->failed, d->checks);
	else
		fputs("## cuscope diff\n\n", f);
	fputs("| | trace | steps | step time |\n|---|---|---|---|\n", f);
	for (int32_t i = 0; i < d->nbases; i++) {
		if (d->nbases > 1)
			fprintf(f, "| base %d | ", i + 1);
		else
			fputs("| base | ", f);
		cs_md_code(f, base_name(d->bases[i]->path));
		fputs(" | ", f);
		md_steps(f, d->bases[i], d->base_scales[i]);
		fputs(" |\n", f);
	}
	fputs("| new | ", f);
	cs_md_code(f, base_name(d->new_->path));
	fputs(" | ", f);
	md_steps(f, d->new_, d->new_scale);
	fputs(" |\n", f);
	{
		const char *notes[] = {d->note, gate ? d->test_note : "", gate ? d->host_note : "",
				       gate ? d->shared_note : ""};

		for (int i = 0; i < 4; i++) {
			if (!notes[i][0])
				continue;
			fputs("\n> **Note:** ", f);
			cs_md_text(f, notes[i]);
			fputc('\n', f);
		}
	}
	if (gate) {
		static const char head[] =
			"| Result | Check | Kind | Base | New | Change | Confidence | Threshold |\n"
			"|---|---|---|---:|---:|---:|---:|---|\n";

		if (d->failed || d->inconclusive) {
			fprintf(f, "\n%s", head);
			for (int32_t i = 0; i < d->nrows; i++)
				if (d->rows[i].gated && (d->rows[i].worse || d->rows[i].inconclusive))
					md_row(f, d, &d->rows[i], 1);
		}
		passed = d->checks - d->failed - d->inconclusive;
		if (passed > 0) {
			fprintf(f, "\n<details><summary>%d check%s passed</summary>\n\n%s", passed,
				passed == 1 ? "" : "s", head);
			for (int32_t i = 0; i < d->nrows; i++)
				if (d->rows[i].gated && !d->rows[i].worse && !d->rows[i].inconclusive)
					md_row(f, d, &d->rows[i], 1);
			fputs("\n</details>\n", f);
		}
	} else {
		fputs("\n| Metric | Base | New | Change | |\n|---|---:|---:|---:|---|\n", f);
		for (int32_t i = 0; i < d->nrows; i++) {
			const cs_diff_row *r = &d->rows[i];

			if (r->kernel && (r->score <= 1 || (limit > 0 && kernels >= limit)))
				continue;
			kernels += r->kernel != NULL;
			md_row(f, d, r, 0);
		}
	}
	md_findings(f, d);
	return ferror(f) ? CS_ERR_IO : 0;
}

/* ---- JUnit XML ---- */

/* "step_time", "kernel_time: NAME" */
static void junit_name(FILE *f, const cs_diff_row *r)
{
	cs_xml_text(f, cs_metric_get(r->metric)->id);
	if (r->kernel) {
		fputs(": ", f);
		cs_xml_text(f, r->kernel);
	}
	if (r->place > 0)
		fprintf(f, " #%d", (int)r->place);
}

/*
 * The failure message: metric (with a kernel's whole demangled name), base, new, change, the
 * confidence of a tested change and the threshold.
 */
static void junit_message(FILE *f, const cs_diff *d, const cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	char b[64], n[64], ch[64], th[96], conf[96] = "", c[32], line[512];

	cs_fmt_value(b, sizeof(b), def->unit, r->base, 0);
	cs_fmt_value(n, sizeof(n), def->unit, r->new_, 0);
	cs_fmt_value(ch, sizeof(ch), def->unit, r->delta, 1);
	cs_diff_row_threshold(th, sizeof(th), d, r);
	if (r->tested)
		snprintf(conf, sizeof(conf), ", confidence %s",
			 cs_confidence_format(c, sizeof(c), r->confidence));
	junit_name(f, r);
	if (r->kernel && strcmp(cs_demangle(r->kernel), r->kernel)) {
		fputs(" (", f);
		cs_xml_text(f, cs_demangle(r->kernel));
		fputc(')', f);
	}
	if (r->metric == CS_GM_FINDINGS) {
		snprintf(line, sizeof(line),
			 " (%s): base %s, new %s, %d new (%d near their threshold), threshold: %s",
			 def->label, b, n, d->nnew, d->nnew - d->nnew_gated, th);
	} else if (r->base != 0 && def->unit != CS_UNIT_SHARE) {
		snprintf(line, sizeof(line), " (%s): base %s, new %s (%s, %+.1f%%%s), threshold %s",
			 def->label, b, n, ch, 100 * r->rel, conf, th);
	} else {
		snprintf(line, sizeof(line), " (%s): base %s, new %s (%s%s), threshold %s",
			 def->label, b, n, ch, conf, th);
	}
	cs_xml_text(f, line);
}

int report_gate_junit(FILE *f, const cs_diff *d)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f,
		"<testsuites name=\"cuscope gate\" tests=\"%d\" failures=\"%d\" skipped=\"%d\">\n",
		d->checks, d->failed, d->inconclusive);
	fprintf(f,
		"  <testsuite name=\"cuscope gate\" tests=\"%d\" failures=\"%d\" errors=\"0\" "
		"skipped=\"%d\">\n",
		d->checks, d->failed, d->inconclusive);
	fputs("    <properties>\n      <property name=\"base\" value=\"", f);
	cs_xml_text(f, d->base->path);
	for (int32_t i = 1; i < d->nbases; i++) {
		fputs("\"/>\n      <property name=\"base\" value=\"", f);
		cs_xml_text(f, d->bases[i]->path);
	}
	fputs("\"/>\n      <property name=\"new\" value=\"", f);
	cs_xml_text(f, d->new_->path);
	fputs("\"/>\n", f);
	{
		const char *notes[] = {d->note, d->test_note, d->host_note, d->shared_note};

		for (int i = 0; i < 4; i++) {
			if (!notes[i][0])
				continue;
			fputs("      <property name=\"note\" value=\"", f);
			cs_xml_text(f, notes[i]);
			fputs("\"/>\n", f);
		}
	}
	fputs("    </properties>\n", f);
	for (int32_t i = 0; i < d->nrows; i++) {
		const cs_diff_row *r = &d->rows[i];

		if (!r->gated)
			continue;
		fputs("    <testcase classname=\"cuscope.gate\" name=\"", f);
		junit_name(f, r);
		if (r->inconclusive) {
			/* neither failed nor passed: a skipped test, its message says why */
			fputs("\" time=\"0\">\n      <skipped message=\"inconclusive: the host was ", f);
			fprintf(f, "%.0f%% slower (host-speed probe)", 100 * (d->probe_ratio - 1));
			fputs("\"/>\n    </testcase>\n", f);
			continue;
		}
		if (!r->worse) {
			fputs("\" time=\"0\"/>\n", f);
			continue;
		}
		fputs("\" time=\"0\">\n      <failure type=\"regression\" message=\"", f);
		junit_message(f, d, r);
		fputs("\">", f);
		junit_message(f, d, r);
		if (r->metric == CS_GM_FINDINGS) {
			for (int32_t j = 0; j < d->nfindings; j++) {
				const cs_run_finding *x = d->findings[j].new_;

				if (!x || d->findings[j].base)
					continue;
				fputs(x->near ? "\nnew finding (near its threshold, not gated): ["
					      : "\nnew finding: [",
				      f);
				cs_xml_text(f, cs_severity_name(x->severity));
				fputs("] ", f);
				cs_xml_text(f, x->rule);
				fputs(": ", f);
				cs_xml_text(f, x->title);
			}
		}
		fputs("</failure>\n    </testcase>\n", f);
	}
	fputs("  </testsuite>\n</testsuites>\n", f);
	return ferror(f) ? CS_ERR_IO : 0;
}

/* ---- the diff as text ---- */

static void diff_run(FILE *f, const char *label, const cs_run *r, double scale)
{
	char a[64], b[160];

	if (r->rank_select != CS_RANK_DEFAULT)
		fprintf(f, "%-6s%s (%s: pid %u)\n", label, r->path, cs_run_rank_label(r, a, sizeof(a)),
		       r->pid);
	else
		fprintf(f, "%-6s%s\n", label, r->path);
	if (r->method == CS_STEPS_NONE) {
		fprintf(f, "      no steps found (%s): the whole trace is compared\n", r->detail);
		return;
	}
	fprintf(f, "      %d steps (%s), %d warm-up", r->steps, cs_step_method_name(r->method),
	       r->warmup);
	if (scale > 1)
		fprintf(f, ", compared as %d steps", (int)(r->steady * scale));
	fprintf(f, "; step time median %s\n", step_times(b, sizeof(b), r, scale));
}

static void diff_findings(FILE *f, const cs_diff *d)
{
	static const char *const what[] = {"new", "fixed", "persisting"};

	if (d->nfindings == 0) {
		fprintf(f, "\nFindings: none in either trace\n");
		return;
	}
	fprintf(f, "\nFindings:\n");
	for (int32_t i = 0; i < d->nfindings; i++) {
		const cs_diff_finding *m = &d->findings[i];
		const cs_run_finding *x = m->new_ ? m->new_ : m->base;
		int l = cs_diff_finding_status(m);
		char *title = cs_utf8_repair(x->title);

		fprintf(f, "  %-10s  [%s] %s  %s\n", what[l], cs_severity_name(x->severity), x->rule,
			title ? title : "");
		free(title);
	}
}

int report_diff_text(FILE *f, const cs_diff *d, int limit, int width, int color)
{
	static const struct cs_column cols[] = {
		{"Metric", CS_ALIGN_LEFT, 1}, {"Base", CS_ALIGN_RIGHT, 0},
		{"New", CS_ALIGN_RIGHT, 0},   {"Change", CS_ALIGN_RIGHT, 0},
		{"", CS_ALIGN_RIGHT, 0},      {"", CS_ALIGN_LEFT, 0},
	};
	struct cs_table table;
	int kernels = 0, hidden = 0;

	diff_run(f, "base:", d->base, d->base_scale);
	diff_run(f, "new:", d->new_, d->new_scale);
	if (d->note[0])
		fprintf(f, "note: %s\n", d->note);
	fputc('\n', f);
	cs_table_init(&table, cols, 6);
	for (int32_t i = 0; i < d->nrows; i++) {
		const cs_diff_row *r = &d->rows[i];
		const cs_metric_def *def = cs_metric_get(r->metric);
		char name[4096], b[64], n[64], ch[64], rel[32];
		const char *row[] = {name, b,	n,
				     ch,   rel, r->worse ? "worse" : r->better ? "better" : ""};

		if (r->kernel && r->score <= 1)
			continue;
		if (r->kernel && limit > 0 && kernels >= limit) {
			hidden++;
			continue;
		}
		kernels += r->kernel != NULL;
		char kn[2048];

		if (r->kernel)
			snprintf(name, sizeof(name), "%s: %s", cs_diff_row_label(r),
				 cs_diff_row_kernel(kn, sizeof(kn), r));
		else
			snprintf(name, sizeof(name), "%s", cs_diff_row_label(r));
		cs_fmt_value(b, sizeof(b), def->unit, r->base, 0);
		cs_fmt_value(n, sizeof(n), def->unit, r->new_, 0);
		cs_fmt_value(ch, sizeof(ch), def->unit, r->delta, 1);
		if (r->base != 0 && r->delta != 0 && def->unit != CS_UNIT_SHARE)
			snprintf(rel, sizeof(rel), "%+.1f%%", 100 * r->rel);
		else
			rel[0] = '\0';
		{
			char *clean = cs_utf8_repair(name);

			if (clean) {
				snprintf(name, sizeof(name), "%s", clean);
				free(clean);
			}
		}
		cs_table_add_row(&table, row);
	}
	{
		static const struct cs_mark marks[] = {{"worse", "1;31"}, {"better", "32"}};

		cs_table_print_marked(&table, f, 1, width, color, marks, 2);
	}
	cs_table_free(&table);
	if (hidden)
		fprintf(f, "... %d more changed kernel %s (--limit 0 shows all)\n", hidden,
		       hidden == 1 ? "row" : "rows");
	diff_findings(f, d);
	return 0;
}

/* ---- the gate as text ---- */

enum {
	COL_RESULT,
	COL_CHECK,
	COL_KIND,
	COL_BASE,
	COL_NEW,
	COL_CHANGE,
	COL_CONF,
	COL_THRESHOLD,
	NCOLS
};

/* The Check column keeps at least this many characters; columns are dropped to leave it that. */
#define CHECK_MIN 28

/* The cells of a check's row (malloc'd strings; NULL without memory). */
static char **check_cells(const cs_diff *d, const cs_diff_row *r)
{
	const cs_metric_def *def = cs_metric_get(r->metric);
	char name[4096], kn[2048], b[64], n[64], ch[96], th[96], conf[32], *clean;
	const char *row[NCOLS] = {r->worse ? "FAIL" : r->inconclusive ? "INCONCLUSIVE" : "ok",
				  name,
				  r->kernel && !r->place ? "kernel" : cs_metric_kind_name(def->kind),
				  b,
				  n,
				  ch,
				  conf,
				  th};
	char **cells = calloc(NCOLS, sizeof(*cells));

	if (!cells)
		return NULL;
	/* a kernel's row is its time per step: the name alone, its kind says "kernel" */
	if (r->place > 0)
		snprintf(name, sizeof(name), "%s %s", cs_diff_row_label(r),
			 cs_diff_row_kernel(kn, sizeof(kn), r));
	else
		snprintf(name, sizeof(name), "%s",
			 r->kernel ? cs_demangle_short(r->kernel) : cs_diff_row_label(r));
	clean = cs_utf8_repair(name);
	if (clean) {
		snprintf(name, sizeof(name), "%s", clean);
		free(clean);
	}
	cs_fmt_value(b, sizeof(b), def->unit, r->base, 0);
	cs_fmt_value(n, sizeof(n), def->unit, r->new_, 0);
	cs_fmt_value(ch, sizeof(ch), def->unit, r->delta, 1);
	if (r->base != 0 && r->delta != 0 && def->unit != CS_UNIT_SHARE)
		snprintf(ch + strlen(ch), sizeof(ch) - strlen(ch),
			 fabs(r->rel) >= 1 ? " (%+.0f%%)" : " (%+.1f%%)", 100 * r->rel);
	if (r->tested)
		cs_confidence_format(conf, sizeof(conf), r->confidence);
	else
		snprintf(conf, sizeof(conf), "%s",
			 r->t.gate && r->t.rel <= 0 && r->t.abs <= 0 ? "exact" : "-");
	cs_diff_row_threshold(th, sizeof(th), d, r);
	for (int c = 0; c < NCOLS; c++) {
		cells[c] = strdup(row[c]);
		if (!cells[c]) {
			for (int j = 0; j < c; j++)
				free(cells[j]);
			free(cells);
			return NULL;
		}
	}
	return cells;
}

/*
 * The checks as a table that fits width (0: no limit): the failed checks, then the passed ones.
 * When the Check column would get fewer than CHECK_MIN
 * characters, the Kind, Threshold and Confidence columns are left out, in that order.
 */
static void gate_checks(FILE *f, const cs_diff *d, int width, int color)
{
	static const struct cs_column all[NCOLS] = {
		[COL_RESULT] = {"Result", CS_ALIGN_LEFT, 0},
		[COL_CHECK] = {"Check", CS_ALIGN_LEFT, 1},
		[COL_KIND] = {"Kind", CS_ALIGN_LEFT, 0},
		[COL_BASE] = {"Base", CS_ALIGN_RIGHT, 0},
		[COL_NEW] = {"New", CS_ALIGN_RIGHT, 0},
		[COL_CHANGE] = {"Change", CS_ALIGN_RIGHT, 0},
		[COL_CONF] = {"Confidence", CS_ALIGN_RIGHT, 0},
		[COL_THRESHOLD] = {"Threshold", CS_ALIGN_LEFT, 0},
	};
	static const int drop_order[] = {COL_KIND, COL_THRESHOLD, COL_CONF};
	struct cs_column cols[NCOLS];
	char ***rows = calloc((size_t)d->nrows + 1, sizeof(*rows));
	size_t widths[NCOLS];
	int show[NCOLS], ncols = 0;
	int32_t n = 0;
	struct cs_table table;

	if (!rows)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (int32_t i = 0; i < d->nrows; i++) {
			const cs_diff_row *r = &d->rows[i];

			if (r->gated && (r->worse || r->inconclusive) == !pass) {
				rows[n] = check_cells(d, r);
				if (rows[n])
					n++;
			}
		}
	for (int c = 0; c < NCOLS; c++) {
		widths[c] = cs_text_width(all[c].header);
		for (int32_t i = 0; i < n; i++) {
			size_t w = cs_text_width(rows[i][c]);

			if (w > widths[c])
				widths[c] = w;
		}
		show[c] = 1;
	}
	for (size_t k = 0; width > 0 && k < sizeof(drop_order) / sizeof(drop_order[0]); k++) {
		size_t others = 1; /* the indent */
		int shown = 0;

		for (int c = 0; c < NCOLS; c++)
			if (show[c] && c != COL_CHECK) {
				others += widths[c];
				shown++;
			}
		others += (size_t)shown * 2;
		if (others + CHECK_MIN <= (size_t)width)
			break;
		show[drop_order[k]] = 0;
	}
	for (int c = 0; c < NCOLS; c++)
		if (show[c])
			cols[ncols++] = all[c];
	cs_table_init(&table, cols, ncols);
	for (int32_t i = 0; i < n; i++) {
		const char *cells[NCOLS];
		int k = 0;

		for (int c = 0; c < NCOLS; c++)
			if (show[c])
				cells[k++] = rows[i][c];
		cs_table_add_row(&table, cells);
		for (int c = 0; c < NCOLS; c++)
			free(rows[i][c]);
		free(rows[i]);
	}
	free(rows);
	{
		static const struct cs_mark fail[] = {{"FAIL", "1;31"}, {"INCONCLUSIVE", "1;33"}};

		cs_table_print_marked(&table, f, 1, width, color, fail, 2);
	}
	cs_table_free(&table);
}

/*
 * Print prefix and text, the text wrapped at spaces to lines of at most width characters (0: no
 * limit), its continuation lines indented as far as the prefix.
 */
static void gate_wrapped(FILE *f, const char *prefix, const char *text, int width)
{
	size_t indent = strlen(prefix), col = indent;
	const char *p = text;

	fputs(prefix, f);
	while (*p) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p), w = 0;

		for (size_t i = 0; i < len; i++)
			w += ((unsigned char)p[i] & 0xc0) != 0x80;
		if (width > 0 && col > indent && col + 1 + w > (size_t)width) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, len, f);
		col += w;
		p += len;
		while (*p == ' ')
			p++;
	}
	fputc('\n', f);
}

/* "20.00 ms" and, for several baselines, their run-to-run spread of the step time. */
static void gate_base(FILE *f, const cs_diff *d)
{
	char a[64], r[64];
	double v[256], mean = 0;
	int32_t n = d->nbases < 256 ? d->nbases : 256;

	if (d->nbases == 1) {
		cs_run_rank_label(d->base, r, sizeof(r));
		fprintf(f, "base: %s (%s%sstep time %s)\n", d->base->path, r, r[0] ? ", " : "",
		       cs_fmt_value(a, sizeof(a), CS_UNIT_NS,
				    (double)d->base->step_median / d->base_scale, 0));
		return;
	}
	for (int32_t i = 0; i < n; i++) {
		v[i] = (double)d->bases[i]->step_median / d->base_scales[i];
		mean += v[i];
	}
	mean /= n;
	if (d->base->rank_select == CS_RANK_N)
		snprintf(r, sizeof(r), "rank %d, ", (int)d->base->rank);
	else if (d->base->rank_select == CS_RANK_SLOWEST)
		snprintf(r, sizeof(r), "the slowest rank of each, ");
	else
		r[0] = '\0';
	fprintf(f, "base: %d runs, %s .. %s (%sstep time %s, run-to-run spread %.2f%%", d->nbases,
	       d->bases[0]->path, d->bases[d->nbases - 1]->path, r,
	       cs_fmt_value(a, sizeof(a), CS_UNIT_NS, mean, 0),
	       mean > 0 ? 100 * cs_stat_sd(v, n) / mean : 0);
	if (d->host_speeds) {
		/* the same steps at the baselines' mean host speed: the spread the gate tests */
		mean = 0;
		for (int32_t i = 0; i < n; i++) {
			v[i] /= d->host_speeds[i];
			mean += v[i] / n;
		}
		fprintf(f, ", %.2f%% at one host speed", mean > 0 ? 100 * cs_stat_sd(v, n) / mean : 0);
	}
	fprintf(f, ")\n");
}

void report_gate_text(FILE *f, const cs_diff *d, int width, int color)
{
	char b[64], r[64];

	if (color && d->failed)
		fprintf(f, "cuscope gate: \033[1;31mFAIL\033[0m: ");
	else if (color && d->inconclusive)
		fprintf(f, "cuscope gate: \033[1;33mINCONCLUSIVE\033[0m: ");
	else
		fprintf(f, "cuscope gate: %s: ", d->failed	       ? "FAIL"
					     : d->inconclusive ? "INCONCLUSIVE"
							       : "PASS");
	fprintf(f, "%d of %d %s regressed", d->failed, d->checks, d->checks == 1 ? "check" : "checks");
	if (d->inconclusive)
		fprintf(f, "; %d inconclusive: the host was %.0f%% %s (host-speed probe)", d->inconclusive,
		       100 * fabs(d->probe_ratio - 1), d->probe_ratio > 1 ? "slower" : "faster");
	fputc('\n', f);
	gate_base(f, d);
	cs_run_rank_label(d->new_, r, sizeof(r));
	fprintf(f, "new:  %s (%s%sstep time %s)\n", d->new_->path, r, r[0] ? ", " : "",
	       cs_fmt_value(b, sizeof(b), CS_UNIT_NS, (double)d->new_->step_median / d->new_scale,
			    0));
	if (d->note[0])
		gate_wrapped(f, "note: ", d->note, width);
	gate_wrapped(f, "note: ", d->test_note, width);
	if (d->host_note[0])
		gate_wrapped(f, "note: ", d->host_note, width);
	if (d->shared_note[0])
		gate_wrapped(f, "note: ", d->shared_note, width);
	fputc('\n', f);
	gate_checks(f, d, width, color);
	for (int32_t i = 0, first = 1; i < d->nfindings; i++) {
		const cs_run_finding *x = d->findings[i].new_;
		char *title, head[128], text[4096];

		if (!x || d->findings[i].base)
			continue;
		if (first)
			fprintf(f, "\nNew findings:\n");
		first = 0;
		title = cs_utf8_repair(x->title);
		snprintf(head, sizeof(head), "  [%s] %s  ", cs_severity_name(x->severity), x->rule);
		snprintf(text, sizeof(text), "%s%s", title ? title : "",
			 x->near ? " (near its threshold: not gated)" : "");
		gate_wrapped(f, head, text, width);
		free(title);
	}
}
