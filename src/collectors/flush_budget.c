/*
 * flush_budget.c - how much of the program's time the flushes made on its own threads may take.
 *
 * A host wait that ends two flush periods or more after the last flush is followed by a flush on
 * the waiting thread (flush.c), so that a process ending right after the wait keeps what completed
 * before it. While the GPU, drained by the wait, has nothing to run, that flush's time is added to
 * the program's step. With a budget (the development option wait_flush_budget=PERMILLE), such
 * flushes are made on the waiting thread only while their time stays within PERMILLE thousandths of
 * the time since recording began, plus an allowance that lets the first ones through whatever their
 * cost: a token bucket that fills at PERMILLE ns per us and holds at most the allowance. The others
 * are left to the flush thread, at once. A flush that costs more than the allowance is charged the
 * allowance (the debt never goes below minus the allowance), so that however long one flush took,
 * a flush is allowed again once the time it takes to earn the allowance has passed.
 *
 * Pure arithmetic on the caller's times; the caller serializes the calls.
 */
#include "flush_budget.h"

void cs_flush_budget_init(struct cs_flush_budget *b, uint64_t now, unsigned permille,
			  uint64_t allowance_ns)
{
	b->last = now;
	b->permille = permille;
	b->cap = allowance_ns > INT64_MAX ? INT64_MAX : (int64_t)allowance_ns;
	b->tokens = b->cap;
}

/* Add what the time since the last call earned, up to the cap. A clock that went back earns
 * nothing. */
static void refill(struct cs_flush_budget *b, uint64_t now)
{
	if (now > b->last) {
		uint64_t earned = (now - b->last) / 1000u * b->permille;

		if (b->tokens < b->cap)
			b->tokens = earned >= (uint64_t)(b->cap - b->tokens)
					    ? b->cap
					    : b->tokens + (int64_t)earned;
	}
	b->last = now > b->last ? now : b->last;
}

int cs_flush_budget_allows(struct cs_flush_budget *b, uint64_t now)
{
	refill(b, now);
	return b->tokens > 0;
}

void cs_flush_budget_spend(struct cs_flush_budget *b, uint64_t ns)
{
	int64_t s = ns > (uint64_t)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)ns;

	b->tokens = b->tokens - s < -b->cap ? -b->cap : b->tokens - s;
}
