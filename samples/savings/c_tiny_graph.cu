// c_tiny_graph.cu - 256 tiny kernels launched one by one per iteration vs the same sequence as a CUDA graph
// (launch-starvation).
//
// Each iteration updates 16 small state vectors (4096 floats each) with 256 dependent kernels of one block
// each (16 rounds of a stencil-like update per vector): every kernel runs for a microsecond or two, less than
// the host needs to launch it.
//
//   bad:   256 cudaLaunchKernel calls per iteration on one stream. CUDA level: each kernel starts only when
//          the host has launched it; the GPU idles between kernels (busy well under half the time); no wait,
//          no copy.
//   fixed: the 256 launches captured once into a CUDA graph (stream capture), instantiated, and replayed with
//          one cudaGraphLaunch per iteration: the same kernels, back to back on the GPU.
//
// Expected saving: large (per-kernel cost drops from a launch to the graph's node-to-node latency).
//
//   c_tiny_graph bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const int VEC = 1024, NVEC = 16, ROUNDS = 16, THREADS = 256;

__global__ void update(float *v, int n, float a)
{
	for (int i = threadIdx.x; i < n; i += blockDim.x)
		v[i] = fmaf(v[i], a, 0.001f * (float)(i & 7));
}

struct Tiny : Variant {
	bool bad;
	float *v = nullptr;
	cudaStream_t st;
	cudaGraphExec_t exec = nullptr;
	explicit Tiny(bool b) : bad(b)
	{
		CHECK(cudaMalloc(&v, NVEC * VEC * sizeof(float)));
		CHECK(cudaMemset(v, 0, NVEC * VEC * sizeof(float)));
		CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
		if (!bad) {
			cudaGraph_t g;
			CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
			launch_all();
			CHECK(cudaStreamEndCapture(st, &g));
			CHECK(cudaGraphInstantiate(&exec, g, 0));
			CHECK(cudaGraphDestroy(g));
		}
	}
	~Tiny()
	{
		if (exec)
			cudaGraphExecDestroy(exec);
		cudaStreamDestroy(st);
		cudaFree(v);
	}
	void launch_all()
	{
		for (int r = 0; r < ROUNDS; r++)
			for (int k = 0; k < NVEC; k++) {
				update<<<1, THREADS, 0, st>>>(v + k * VEC, VEC, 0.999f - 0.0001f * r);
				CHECK_LAUNCH();
			}
	}
	void step(int) override
	{
		if (bad)
			launch_all();
		else
			CHECK(cudaGraphLaunch(exec, st));
	}
	double checksum() override
	{
		float h[8];
		CHECK(cudaMemcpy(h, v, sizeof(h), cudaMemcpyDeviceToHost));
		double s = 0;
		for (float x : h)
			s += x;
		return s;
	}
};

static Variant *make(bool bad) { return new Tiny(bad); }

int main(int argc, char **argv) { return pair_main(argc, argv, make); }
