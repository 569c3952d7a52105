/*
 * flush_budget.h - the share of the program's time that flushes on its own threads may take
 * (flush_budget.c).
 */
#ifndef CUSCOPE_FLUSH_BUDGET_H
#define CUSCOPE_FLUSH_BUDGET_H

#include <stdint.h>

struct cs_flush_budget {
	uint64_t last;	   /* time of the last call, ns */
	int64_t tokens;	   /* ns of flushing allowed now; negative after a flush that cost more */
	int64_t cap;	   /* the most that can be saved up (the allowance) */
	unsigned permille; /* ns earned per us of time */
};

/* A full bucket at time now: allowance_ns of flushing at once, then permille thousandths of the
 * time. */
void cs_flush_budget_init(struct cs_flush_budget *b, uint64_t now, unsigned permille,
			  uint64_t allowance_ns);
/* 1 when a flush at time now is within the budget. */
int cs_flush_budget_allows(struct cs_flush_budget *b, uint64_t now);
/* A flush that took ns; the debt stops at minus the allowance. */
void cs_flush_budget_spend(struct cs_flush_budget *b, uint64_t ns);

#endif
