// hang_spin.cu - a C++ host whose one kernel spins for SECONDS (default 6) while the host waits for
// it in cudaStreamSynchronize, called from wait_for_results(): under `record --hang-after 2` the hang
// report must show that function among the waiting thread's native frames (tests/gpu/run.sh, hang).
// Prints "done" and exits 0 once the kernel ends.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ void spin_for(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

__attribute__((noinline)) int wait_for_results(cudaStream_t s)
{
	int rc = (int)cudaStreamSynchronize(s);

	asm volatile("" ::: "memory"); // not a tail call: this frame stays on the stack
	return rc;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0;
	cudaStream_t s;

	if (cudaStreamCreate(&s) != cudaSuccess) {
		printf("info: skipped: no CUDA device\n");
		return 0;
	}
	spin_for<<<1, 1, 0, s>>>((unsigned long long)(seconds * 1e9));
	if (wait_for_results(s) != 0) {
		fprintf(stderr, "hang_spin: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	printf("done\n");
	return 0;
}
