/*
 * host_created_tensor.c - the host-created-tensor rule: inside the steady steps, a tensor made
 * on the host (torch.rand(n).cuda(), torch.tensor(list, device="cuda")) and copied to the device
 * each step: the training thread makes no CUDA call while it computes the data on the CPU, the
 * GPU runs out of work, then a large host-to-device copy from pageable memory follows.
 *
 * The copies come from fact_h2d_stalls() (facts/h2d_stalls.c), which also finds dataloader-stall's:
 * a copy at the step boundary is the next batch's, one inside the step this rule's. The cost is the
 * GPU idle while the host made the data (up to the copy's call); the idle while the call itself
 * held the host is pageable-memcpy's. docs/rules/host-created-tensor.md has the decision and the
 * measured values.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2d_rules.h"
#include "source_made.h"
#include "finding_kit.h"
#include "h2d_stalls.h"
#include "recurrence.h"
#include "rules.h"
#include "cuscope/checked.h"

#define RULE_ID RULE_ID_HOST_CREATED_TENSOR

/* A stall this rule owns: a tensor's copy from pageable memory inside the step. */
static int owns(const cs_analysis *a, const struct fact_h2d_stall *y)
{
	return y->in_step && ru_host_tensor_copy(&a->copies[y->copy]);
}

/* The fix. */
static const char fix[] =
	"Create the tensor on the device: torch.rand(n, device=\"cuda\") instead of "
	"torch.rand(n).cuda(), torch.zeros/full/arange/randn(..., device=\"cuda\"); data "
	"that must come from Python (torch.tensor(list)) is made once before the loop, or "
	"kept on the device and updated there.";

static void title(char *buf, size_t size, const struct ru_h2d_median *m, const struct ru_recur *r,
		  const char *near1, const char *near2, const char *rare)
{
	char b1[32], b2[32], b3[32];

	if (r->recurring)
		snprintf(buf, size,
			 "tensors made on the host and copied to the GPU inside every step: %s of "
			 "GPU idle per step (%.1f%%) while the host computes %s of data (no CUDA "
			 "call for %s), then copies it from pageable memory%s%s",
			 ru_fmt_ns(b1, sizeof(b1), r->lost), r->share * 100,
			 ru_fmt_bytes(b3, sizeof(b3), m->bytes),
			 ru_fmt_ns(b2, sizeof(b2), m->stretch_ns), near1, near2);
	else
		snprintf(buf, size,
			 "a tensor made on the host and copied to the GPU inside the step (%s, no "
			 "CUDA call for %s) %s%s",
			 ru_fmt_bytes(b3, sizeof(b3), m->bytes),
			 ru_fmt_ns(b2, sizeof(b2), m->stretch_ns), rare, near1);
}

static int evidence(const cs_analysis *a, cs_report_finding *f, const struct fact_h2d_stalls *h,
		    const struct ru_h2d_sum *sum, const struct ru_h2d_median *m)
{
	cJSON *e = f->evidence, *ex;

	cJSON_AddNumberToObject(e, "idle_ns_per_step", (double)m->idle_ns);
	cJSON_AddNumberToObject(e, "no_call_stretch_ns", (double)m->stretch_ns);
	cJSON_AddNumberToObject(e, "launch_pace_far_ns", (double)h->far);
	cJSON_AddNumberToObject(e, "copies_per_step", (double)m->copies);
	cJSON_AddNumberToObject(e, "bytes_per_step", (double)m->bytes);
	if (m->best >= 0) {
		const cs_a_copy *c = &a->copies[sum[m->best].copy];

		ex = cJSON_AddObjectToObject(e, "longest_stretch_copy");
		if (!ex)
			return CS_ERR_NOMEM;
		cJSON_AddNumberToObject(ex, "step", m->best);
		cJSON_AddNumberToObject(ex, "bytes", (double)c->bytes);
		cJSON_AddBoolToObject(ex, "async_call", c->is_async != 0);
		cJSON_AddNumberToObject(ex, "call_start", (double)c->launch_start);
		cJSON_AddNumberToObject(ex, "call_end", (double)c->launch_end);
		cJSON_AddNumberToObject(ex, "stream", (double)c->stream_id);
		if (c->stack_id != CS_ID_NONE)
			f->stack_id = c->stack_id;
	}
	if (m->best >= 0) {
		struct ru_made made;
		char *fix;

		if (ru_made_evidence(a, e, a->copies[sum[m->best].copy].stack_id, &made))
			return CS_ERR_NOMEM;
		/* the fix names the line that made the tensor on the host, when the source says */
		if (made.kind == RU_MADE_HOST && f->fix) {
			const char *base = strrchr(made.file, '/');
			size_t n = strlen(f->fix) + strlen(made.text) + strlen(made.file) + 64;

			if (!(fix = malloc(n)))
				return CS_ERR_NOMEM;
			snprintf(fix, n, "%s:%d makes it on the host (%s). %s",
				 base ? base + 1 : made.file, (int)made.line, made.text, f->fix);
			free(f->fix);
			f->fix = fix;
		}
	}
	return 0;
}

int cs_rule_host_created_tensor_check(cs_rule_ctx *ctx, cs_error *err)
{
	static const struct ru_h2d_rule rule = {RULE_ID, owns, title, fix, NULL, evidence, 1};

	return ru_run_h2d_rule(ctx, &rule, err);
}
