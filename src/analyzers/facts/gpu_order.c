/* gpu_order.c - the GPU work of a process in start order (facts/gpu_order.h). */
#include "gpu_order.h"

#include <string.h>

void fact_gpu_iter_init(struct fact_gpu_iter *it, const cs_analysis *a, uint32_t pid)
{
	it->a = a;
	it->pid = pid;
	it->k = 0;
	it->c = 0;
}

/* 10 ns bins up to 50 us */
#define LAG_BIN_NS 10
#define LAG_BINS   5000

int64_t fact_gpu_launch_lag(const cs_analysis *a, uint32_t pid)
{
	static _Thread_local uint32_t bins[LAG_BINS];
	struct fact_gpu_iter it;
	struct fact_gpu_work w;
	int64_t reach = CS_TS_UNKNOWN, n = 0, below = 0, half, seen;

	memset(bins, 0, sizeof(bins));
	fact_gpu_iter_init(&it, a, pid);
	while (fact_gpu_next(&it, &w)) {
		if (w.is_kernel && !w.graph && w.launch_end != CS_TS_UNKNOWN &&
		    w.launch_start != CS_TS_UNKNOWN && w.start >= w.launch_start &&
		    (reach == CS_TS_UNKNOWN || reach < w.launch_end)) {
			int64_t lag = w.start - w.launch_end;

			n++;
			if (lag < 0)
				below++;
			else if (lag / LAG_BIN_NS < LAG_BINS)
				bins[lag / LAG_BIN_NS]++;
		}
		if (reach == CS_TS_UNKNOWN || w.end > reach)
			reach = w.end;
	}
	if (n < FACT_LAG_MIN)
		return 0;
	/* the lower median's bin, at its middle */
	half = (n - 1) / 2;
	if (half < below)
		return 0;
	seen = below;
	for (int64_t b = 0; b < LAG_BINS; b++) {
		seen += bins[b];
		if (seen > half)
			return b * LAG_BIN_NS + LAG_BIN_NS / 2;
	}
	return LAG_BINS * LAG_BIN_NS;
}
