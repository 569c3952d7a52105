/*
 * comparison.c - what `cuscope diff` and `cuscope gate` start with: the thresholds' configuration
 * (config.c), the metrics of the baselines and of the new run (metrics.c), and the diff of the new
 * run against the baselines (diff.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/gate.h"

int cs_comparison_load(const char *config_path, const cs_run_opts *o, const char *const *base_paths,
		       int32_t nbases, const char *new_path, cs_comparison *out, cs_error *err)
{
	cs_run_opts ro;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	cs_gate_config_defaults(&out->cfg);
	if (config_path)
		rc = cs_gate_config_load(config_path, &out->cfg, err);
	if (rc < 0)
		goto fail;
	if (o && o->confidence > 0)
		out->cfg.confidence = o->confidence;
	ro.step_range = o && o->step_range ? o->step_range : out->cfg.step_range;
	ro.warmup = o && o->warmup >= 0 ? o->warmup : out->cfg.warmup;
	ro.fold = (o && o->fold) || out->cfg.fold == 1;
	ro.confidence = 0;
	ro.rank_select = o ? o->rank_select : CS_RANK_DEFAULT;
	ro.rank = o ? o->rank : 0;
	ro.max_memory = o ? o->max_memory : 0;
	rc = CS_ERR_NOMEM;
	out->bases = calloc((size_t)(nbases > 0 ? nbases : 1), sizeof(*out->bases));
	out->base_ptrs = calloc((size_t)(nbases > 0 ? nbases : 1), sizeof(*out->base_ptrs));
	if (!out->bases || !out->base_ptrs) {
		cs_error_set(err, rc, "out of memory");
		goto fail;
	}
	for (int32_t i = 0; i < nbases; i++) {
		rc = cs_run_load(base_paths[i], &ro, &out->bases[i], err);
		if (rc < 0)
			goto fail;
		out->base_ptrs[i] = &out->bases[i];
		out->nbases++;
	}
	rc = cs_run_load(new_path, &ro, &out->new_, err);
	if (rc < 0)
		goto fail;
	rc = cs_diff_compute(out->base_ptrs, out->nbases, &out->new_, &out->cfg, &out->d, err);
	if (rc < 0)
		goto fail;
	return 0;
fail:
	for (int32_t i = 0; i < out->nbases; i++)
		cs_run_free(&out->bases[i]);
	free(out->bases);
	free(out->base_ptrs);
	cs_run_free(&out->new_);
	cs_gate_config_free(&out->cfg);
	memset(out, 0, sizeof(*out));
	return rc;
}

void cs_comparison_free(cs_comparison *c)
{
	cs_diff_free(&c->d);
	for (int32_t i = 0; i < c->nbases; i++)
		cs_run_free(&c->bases[i]);
	free(c->bases);
	free(c->base_ptrs);
	cs_run_free(&c->new_);
	cs_gate_config_free(&c->cfg);
}
