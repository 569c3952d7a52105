/*
 * kernel_names.h - a fact of the analysis: what a kernel's name says, and the kernels of the
 * steady steps grouped by name. cuda-core-scan, no-tensor-cores, unfused-elementwise,
 * gather-list-cat and index-select-embedding read the function's own name; cuda-core-scan and
 * no-tensor-cores the time by name of the kernels they match.
 *
 * A fact takes what it is made of as parameters and knows nothing of the rules' cache.
 */
#ifndef CUSCOPE_FACT_KERNEL_NAMES_H
#define CUSCOPE_FACT_KERNEL_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "cuscope/analyze.h"

/*
 * The function's own name in a kernel name, into buf (size > 0): for an Itanium-mangled name the
 * last component of its (nested) name before template arguments begin; for a plain or demangled
 * name the identifier before the first '<' or '(' after the last "::" or space. The template
 * arguments (functors, element types) are not part of it.
 */
void fact_kernel_own_name(const char *name, char *buf, size_t size);

/*
 * The operands of a PyTorch element-wise kernel (its outputs and inputs): the N of the
 * std::array<char*, N> of data pointers its loop is given (mangled St5arrayIPcLmNE), from 1 to 64;
 * 0 when the name does not say.
 */
int fact_kernel_operands(const char *name);

/*
 * What a test of kernel names said of the name ids asked, kept (a rule asks it for every kernel
 * of millions, of tens of thousands of names): a table of FACT_NAME_MEMO slots addressed by id,
 * where another id of the same slot replaces the one kept. Made with fact_name_memo_new(), freed
 * with free().
 */
#define FACT_NAME_MEMO 65536
struct fact_name_memo {
	int (*test)(const char *name); /* its answers fit a signed char */
	int64_t id[FACT_NAME_MEMO];
	signed char answer[FACT_NAME_MEMO];
};
/* A memo of test, or NULL without memory. */
struct fact_name_memo *fact_name_memo_new(int (*test)(const char *name));
/* test() of the text of name id (cs_analysis_string). */
int fact_name_memo_get(struct fact_name_memo *m, const cs_analysis *a, int64_t id);

/*
 * The names of the kernels of process pid, each tested once with its function's own name
 * (fact_kernel_own_name(), up to 255 bytes): into *marks (freed with free(); its *nnames =
 * cs_analysis_kernel_names(a) slots and one more, by name id) 1 for a name that test accepts, -1
 * for one it does not, 0 for a name no kernel of pid has. 1 when test accepted a name, 0 when
 * none, CS_ERR_NOMEM without memory (*marks NULL).
 */
int fact_kernel_name_marks(const cs_analysis *a, uint32_t pid,
			   int (*test)(const char *name, const char *own), int8_t **marks,
			   int64_t *nnames);

/* The kernels of one name. */
struct fact_name_time {
	int64_t name_id;
	int64_t ns, launches, blocks;
	int64_t stack_id; /* of the first such kernel that has one */
};

/*
 * The kernels that match (match(k, arg) != 0) launched in steady steps of s, by name: their time,
 * launches and blocks, most time first (ties by name id). *out is freed with free(); *launches
 * (when not NULL) gets the number of matching kernels. 0, or CS_ERR_NOMEM.
 */
int fact_kernel_names(const cs_analysis *a, const cs_steps *s,
		      int (*match)(const cs_a_kernel *k, void *arg), void *arg,
		      struct fact_name_time **out, int32_t *n, int64_t *launches);

#endif
