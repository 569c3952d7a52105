/*
 * source_made.h - what the program's own source says made the data of a host-to-device copy: a
 * tensor factory run on the host (torch.randn(shape), torch.tensor(list), np.random...: the data
 * could be made on the device) or a batch taken from an iterator (next(it), the header of the
 * loop over a DataLoader). The trace cannot tell a batch from a tensor made on the host at the
 * start of a step (both are a pageable copy after host work without CUDA calls); the line that
 * made it can. dataloader-stall and host-created-tensor read it through the run's cache
 * (ru_cached_h2d_stalls()). docs/rules/host-created-tensor.md says how the lines are read.
 */
#ifndef CUSCOPE_SOURCE_MADE_H
#define CUSCOPE_SOURCE_MADE_H

#include <stdint.h>

#include "cuscope/analyze.h"

struct fact_h2d_stalls;

enum ru_made_kind {
	RU_MADE_UNKNOWN = 0, /* no Python frame, no readable source, or nothing recognised */
	RU_MADE_HOST,	     /* a tensor factory that ran on the host */
	RU_MADE_BATCH, /* a batch (an iterator's, or read from a file): next(...), a loop's header
			*/
};

/* The verdict and the source line that gave it. */
struct ru_made {
	int kind;	   /* enum ru_made_kind */
	char file[512];	   /* the file read (as found), or "" */
	int32_t line;	   /* the line that decided, or 0 */
	char text[160];	   /* that line, stripped, cut to fit */
	int32_t copy_line; /* the copy's own line */
};

/*
 * Read the source of the innermost Python frame of stack stack_id (its function's lines up to the
 * copy's, at most RU_MADE_LINES of them, none above the function's def or the header of a loop the
 * copy is in) and say what made the data. Without a->source_dir the file is looked for at its
 * recorded path and, when not there, as that path less its leading directories (at least two
 * components kept) under the current directory; with a->source_dir, only in the latter way under
 * it. Only regular files named *.py are read. *out is always set.
 */
#define RU_MADE_LINES 12
void ru_source_made(const cs_analysis *a, int64_t stack_id, struct ru_made *out);

/*
 * The evidence "source_line" of e: what ru_source_made() says of stack_id, as {"says": "a tensor
 * made on the host" | "a batch (an iterator's, or read from a file)" | "nothing recognised" |
 * "file not found (report --source-dir)" | "no Python frame", "file", "line" (the deciding line,
 * else the copy's), "text"}; nothing when the copy has no stack. The verdict into *out unless out
 * is NULL (zeroed without a stack). 0, or CS_ERR_NOMEM.
 */
int ru_made_evidence(const cs_analysis *a, struct cJSON *e, int64_t stack_id, struct ru_made *out);

/*
 * Stalls at a step's boundary (dataloader-stall's) whose copy's source shows a tensor factory run
 * on the host and no batch are inside the step (host-created-tensor's). 0, or CS_ERR_NOMEM.
 */
int ru_h2d_by_source(const cs_analysis *a, struct fact_h2d_stalls *h);

#endif
