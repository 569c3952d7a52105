/*
 * report_ranks.h - the cross-rank section of `cuscope report` (text, JSON, markdown): every rank
 * that communicates with its steady-state medians, the slowest rank of each step and by how much,
 * and the straggler when there is one (include/cuscope/ranks.h).
 */
#ifndef CUSCOPE_CLI_REPORT_RANKS_H
#define CUSCOPE_CLI_REPORT_RANKS_H

#include <cjson/cJSON.h>

#include "cuscope/ranks.h"

/* Print the section (nothing for a view of fewer than two ranks); verbose adds the table of
 * steps. */
void report_ranks_text(const cs_rank_view *rv, int verbose, int width);
/* The "ranks" object of the JSON report (docs/report-format.md); JSON null for a view of fewer
 * than two ranks; NULL without memory. */
cJSON *report_ranks_json(const cs_rank_view *rv);
/* The "Ranks" section of the markdown report (nothing for fewer than two ranks). */
void report_ranks_markdown(const cs_rank_view *rv);

#endif
