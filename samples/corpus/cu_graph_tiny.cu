// cu_graph_tiny.cu - negative: 300 tiny kernels per step, replayed from one CUDA graph.
//
// The step (300 kernels of ~2 us each, three kernel names, one small block each) is captured once with
// stream capture; each step is one cudaGraphLaunch plus ~50 us of host work, and the graph's kernels run back
// to back on the device. Launched one by one, the same kernels would starve the GPU; replayed, they do not.
// Labels: nothing of the five (launch-starvation must not).
#include "corpus_cuda.h"

__global__ void tiny_a(float *y, unsigned long long ns) {
	unsigned long long t0 = gtime();
	float v = y[threadIdx.x];
	do
		v = v * 0.5f + 1.0f;
	while (gtime() - t0 < ns);
	y[threadIdx.x] = v;
}

__global__ void tiny_b(float *y, unsigned long long ns) {
	unsigned long long t0 = gtime();
	float v = y[threadIdx.x];
	do
		v = v * 0.25f + 2.0f;
	while (gtime() - t0 < ns);
	y[threadIdx.x] = v;
}

__global__ void tiny_c(float *y) { y[threadIdx.x] = sqrtf(fabsf(y[threadIdx.x])); }

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	float *y;
	CK(cudaMalloc(&y, 256 * sizeof(float)));
	CK(cudaMemset(y, 0, 256 * sizeof(float)));
	cudaStream_t s;
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	for (int k = 0; k < 300; k++) {
		if (k % 3 == 0)
			tiny_a<<<1, 256, 0, s>>>(y, 2000);
		else if (k % 3 == 1)
			tiny_b<<<1, 256, 0, s>>>(y, 2000);
		else
			tiny_c<<<1, 256, 0, s>>>(y);
	}
	CK(cudaStreamEndCapture(s, &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	double t0 = 0;
	for (int i = 0; i < a.warmup + a.steps; i++) {
		if (i == a.warmup) {
			CK(cudaStreamSynchronize(s));
			t0 = now_s();
		}
		CK(cudaGraphLaunch(ge, s));
		spin_us(50); // host work of the step
	}
	CK(cudaStreamSynchronize(s));
	float h;
	CK(cudaMemcpy(&h, y, sizeof h, cudaMemcpyDeviceToHost));
	printf("info: step_ms=%.3f\n", (now_s() - t0) * 1e3 / a.steps);
	printf("done steps=%d kernels_per_step=300\n", a.steps);
	return 0;
}
