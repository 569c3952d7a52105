/*
 * callback_cost.c - what cuscope's own code in the API callbacks costs a kernel launch, without a
 * GPU: the enter and exit callbacks of a cuLaunchKernel (driver domain, stacks on, as `record`
 * sets them), called the way CUPTI calls them, into a real spool file with the flush thread
 * running.
 *
 *   build/tests/callback_cost [LAUNCHES] [ROUNDS]      (defaults 2000000 and 5)
 *
 * Each round times LAUNCHES enter/exit pairs with the callbacks doing their work and with them
 * returning at once (the `cb_noop` option: what is left is the call itself), and prints the thread
 * CPU time per launch of both and their difference (median over the rounds). CUSCOPE_RECORD_EXTRA
 * adds development options of the injection library (e.g. clock=cupti). On a GPU machine
 * `cuscope calibrate` measures the same part ("cuscope's code") with CUPTI calling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cupti.h>

#include "api.h"
#include "collector.h"
#include "cuscope/spool.h"
#include "inject.h"

static double thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The argument block of cuLaunchKernel as CUPTI passes it: the function first. */
struct launch_params {
	const void *f;
	unsigned grid[3], block[3], shmem;
	void *stream, **params, **extra;
};

static double run(long n, int noop)
{
	static int kernel_function;
	struct launch_params p = {&kernel_function, {1, 1, 1}, {1, 1, 1}, 0, NULL, NULL, NULL};
	CUresult ret = CUDA_SUCCESS;
	uint64_t corr_data = 0;
	CUpti_CallbackData cb;
	double t0;

	cs_api_enable(NULL, 0, 0, 3, 3, noop, 1);
	memset(&cb, 0, sizeof(cb));
	cb.functionName = "cuLaunchKernel";
	cb.functionParams = &p;
	cb.functionReturnValue = &ret;
	cb.correlationData = &corr_data;
	cb.contextUid = 1;
	t0 = thread_ns();
	for (long i = 0; i < n; i++) {
		cb.correlationId = (uint32_t)i + 1;
		cb.callbackSite = CUPTI_API_ENTER;
		cs_api_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
				CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
		cb.callbackSite = CUPTI_API_EXIT;
		cs_api_callback(NULL, CUPTI_CB_DOMAIN_DRIVER_API,
				CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &cb);
	}
	return (thread_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double work[64], noop[64], diff[64];
	char dir[] = "/tmp/cuscope-callback-bench.XXXXXX", cmd[64], opts[512];

	if (n < 1 || rounds < 1 || rounds > 64) {
		fprintf(stderr, "usage: callback_cost [LAUNCHES] [ROUNDS (1..64)]\n");
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	setenv(CS_ENV_SPOOL_DIR, dir, 1);
	/* CUSCOPE_RECORD_EXTRA adds development options, as it does for `cuscope record` */
	snprintf(opts, sizeof(opts), "v=1,backtrace,quiet,no_signals%s%s",
		 getenv("CUSCOPE_RECORD_EXTRA") ? "," : "",
		 getenv("CUSCOPE_RECORD_EXTRA") ? getenv("CUSCOPE_RECORD_EXTRA") : "");
	setenv(CS_ENV_OPTIONS, opts, 1);
	if (cs_inject_setup() || cs_stacks_init(0)) {
		fprintf(stderr, "callback_cost: cannot set up recording into %s\n", dir);
		return 1;
	}
	run(n / 10, 0); /* warm up */
	for (int r = 0; r < rounds; r++) {
		noop[r] = run(n, 1);
		work[r] = run(n, 0);
		diff[r] = work[r] - noop[r];
	}
	qsort(work, (size_t)rounds, sizeof(double), cmp);
	qsort(noop, (size_t)rounds, sizeof(double), cmp);
	qsort(diff, (size_t)rounds, sizeof(double), cmp);
	printf("thread CPU per launch (enter + exit callback), median of %d rounds of %ld:\n",
	       rounds, n);
	printf("  callbacks doing their work     %8.1f ns\n", work[rounds / 2]);
	printf("  callbacks returning at once    %8.1f ns\n", noop[rounds / 2]);
	printf("  cuscope's code                 %8.1f ns\n", diff[rounds / 2]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? 1 : 0;
}
