// c_pageable_pinned.cu - chunks copied from and to pageable host memory with cudaMemcpy vs pinned memory
// with cudaMemcpyAsync on two streams (pageable-memcpy).
//
// A streaming loop: each iteration sends a 32 MiB chunk of input to the GPU, runs one kernel on it (a few
// FMAs per element, tens of microseconds) and brings the 32 MiB result back; the host holds the whole input
// and output (4 chunks, cycled).
//
//   bad:   input and output in malloc'ed (pageable) memory, `cudaMemcpy` both ways. CUDA level, per
//          iteration: a pageable HtoD and a pageable DtoH copy of 32 MiB; the driver stages each through a
//          pinned bounce buffer while the calling thread is held, at a fraction of the link's rate, and the
//          copies, the kernel and the host run one after the other.
//   fixed: input and output allocated with cudaMallocHost (pinned), `cudaMemcpyAsync` in, kernel, async copy
//          out, alternating between two streams: DMA at the link's rate, the upload of one chunk overlapping
//          the download of the previous one, the host free.
//
// Expected saving: large (pinned copies several times faster and overlapped in both directions).
//
//   c_pageable_pinned bad|fixed|ab [--steps 30] [--rounds 5] [--warmup 4]
#include "savings_cu.h"

static const size_t CHUNK = (size_t)8 << 20;  // floats: 32 MiB
static const int NCHUNK = 4, THREADS = 256;

__global__ void process(const float *in, float *out, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float v = in[i];
		for (int k = 0; k < 8; k++)
			v = fmaf(v, 0.99f, 0.01f);
		out[i] = v;
	}
}

struct Stream : Variant {
	bool bad;
	float *hin = nullptr, *hout = nullptr, *din[2] = {}, *dout[2] = {};
	cudaStream_t st[2];
	explicit Stream(bool b) : bad(b)
	{
		size_t bytes = NCHUNK * CHUNK * sizeof(float);
		if (bad) {
			hin = (float *)malloc(bytes);
			hout = (float *)malloc(bytes);
			if (!hin || !hout)
				exit(1);
		} else {
			CHECK(cudaMallocHost(&hin, bytes));
			CHECK(cudaMallocHost(&hout, bytes));
		}
		for (size_t i = 0; i < NCHUNK * CHUNK; i++)
			hin[i] = (float)(i & 1023) * (1.0f / 1024.0f);
		memset(hout, 0, bytes);
		for (int s = 0; s < 2; s++) {
			CHECK(cudaMalloc(&din[s], CHUNK * sizeof(float)));
			CHECK(cudaMalloc(&dout[s], CHUNK * sizeof(float)));
			CHECK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		}
	}
	~Stream()
	{
		if (bad) {
			free(hin);
			free(hout);
		} else {
			cudaFreeHost(hin);
			cudaFreeHost(hout);
		}
		for (int s = 0; s < 2; s++) {
			cudaFree(din[s]);
			cudaFree(dout[s]);
			cudaStreamDestroy(st[s]);
		}
	}
	void step(int i) override
	{
		size_t off = (size_t)(i % NCHUNK) * CHUNK, bytes = CHUNK * sizeof(float);
		if (bad) {
			CHECK(cudaMemcpy(din[0], hin + off, bytes, cudaMemcpyHostToDevice));
			process<<<1024, THREADS>>>(din[0], dout[0], CHUNK);
			CHECK_LAUNCH();
			CHECK(cudaMemcpy(hout + off, dout[0], bytes, cudaMemcpyDeviceToHost));
			return;
		}
		int s = i % 2;
		CHECK(cudaMemcpyAsync(din[s], hin + off, bytes, cudaMemcpyHostToDevice, st[s]));
		process<<<1024, THREADS, 0, st[s]>>>(din[s], dout[s], CHUNK);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(hout + off, dout[s], bytes, cudaMemcpyDeviceToHost, st[s]));
	}
	double checksum() override
	{
		double h = 0;
		for (size_t i = 0; i < NCHUNK * CHUNK; i += 4097)
			h += hout[i];
		return h;
	}
};

static Variant *make(bool bad) { return new Stream(bad); }

int main(int argc, char **argv) { return pair_main(argc, argv, make); }
