// cu_copy_k10.cu - copy in, 10x the same kernel, copy out, in two variants:
//
//   cu_copy_k10 sync        per iteration: a synchronous cudaMemcpy of 64 MiB in (pageable), the same
//                           smoothing kernel 10 times, a synchronous cudaMemcpy of 64 MiB out, then ~1 ms of
//                           host-side validation before the next copy in: the GPU idles for it every
//                           iteration. The kernel sequence is one kernel name over and over. Labels: d2h-sync
//                           must be found.
//   cu_copy_k10 pipelined   the same work with pinned buffers, a copy stream and a compute stream, double
//                           buffered: the host validates iteration i-1 (waiting on its event) while iteration i
//                           is queued. Labels: nothing of the five.
#include "corpus_cuda.h"

__global__ void smooth_kernel(const float *in, float *out, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float l = in[i > 0 ? i - 1 : i], r = in[i < n - 1 ? i + 1 : i];
	out[i] = 0.25f * l + 0.5f * in[i] + 0.25f * r;
}

static double validate(const float *h, int n) {
	double s = 0;
	for (int i = 0; i < n; i += 64) // a sampled check
		s += h[i];
	spin_us(1000); // plus writing the record
	return s;
}

static void smooth10(float *a, float *b, int n, cudaStream_t s) {
	for (int k = 0; k < 10; k++) {
		smooth_kernel<<<(n + 255) / 256, 256, 0, s>>>(a, b, n);
		float *t = a;
		a = b;
		b = t;
	}
}

int main(int argc, char **argv) {
	corpus_args a = corpus_parse(argc, argv);
	bool pipelined = !strcmp(a.mode, "pipelined");
	if (!pipelined && strcmp(a.mode, "sync")) {
		fprintf(stderr, "usage: cu_copy_k10 sync|pipelined [--steps N]\n");
		return 2;
	}
	const int n = 16 << 20;
	const size_t bytes = n * sizeof(float);
	const int iters = a.warmup + a.steps;
	double check = 0, t0 = 0;
	float *src, *dst;
	if (pipelined) {
		CK(cudaMallocHost(&src, 2 * bytes));
		CK(cudaMallocHost(&dst, 2 * bytes));
	} else {
		src = (float *)malloc(2 * bytes);
		dst = (float *)malloc(2 * bytes);
	}
	for (int i = 0; i < 2 * n; i++)
		src[i] = (float)((i * 2654435761u) % 1000) * 1e-3f;
	float *da[2], *db[2];
	for (int k = 0; k < 2; k++) {
		CK(cudaMalloc(&da[k], bytes));
		CK(cudaMalloc(&db[k], bytes));
	}
	if (!pipelined) {
		for (int it = 0; it < iters; it++) {
			if (it == a.warmup) {
				CK(cudaDeviceSynchronize());
				t0 = now_s();
			}
			float *in = src + (size_t)(it % 2) * n;
			CK(cudaMemcpy(da[0], in, bytes, cudaMemcpyHostToDevice));
			smooth10(da[0], db[0], n, 0);
			CK(cudaMemcpy(dst, da[0], bytes, cudaMemcpyDeviceToHost)); // waits for the kernels
			check += validate(dst, n);
		}
	} else {
		cudaStream_t cs, xs;
		cudaEvent_t in_ready[2], out_ready[2], buf_free[2];
		CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
		CK(cudaStreamCreateWithFlags(&xs, cudaStreamNonBlocking));
		for (int k = 0; k < 2; k++) {
			CK(cudaEventCreateWithFlags(&in_ready[k], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&out_ready[k], cudaEventDisableTiming));
			CK(cudaEventCreateWithFlags(&buf_free[k], cudaEventDisableTiming));
			CK(cudaEventRecord(buf_free[k], cs));
		}
		for (int it = 0; it < iters; it++) {
			int b = it % 2;
			if (it == a.warmup) {
				CK(cudaDeviceSynchronize());
				t0 = now_s();
			}
			CK(cudaStreamWaitEvent(xs, buf_free[b], 0));
			CK(cudaMemcpyAsync(da[b], src + (size_t)b * n, bytes, cudaMemcpyHostToDevice, xs));
			CK(cudaEventRecord(in_ready[b], xs));
			CK(cudaStreamWaitEvent(cs, in_ready[b], 0));
			smooth10(da[b], db[b], n, cs);
			CK(cudaEventRecord(buf_free[b], cs));
			CK(cudaStreamWaitEvent(xs, buf_free[b], 0));
			CK(cudaMemcpyAsync(dst + (size_t)b * n, da[b], bytes, cudaMemcpyDeviceToHost, xs));
			CK(cudaEventRecord(out_ready[b], xs));
			if (it > 0) { // the previous iteration's output, one iteration late
				int p = 1 - b;
				CK(cudaEventSynchronize(out_ready[p]));
				check += validate(dst + (size_t)p * n, n);
			}
		}
		CK(cudaEventSynchronize(out_ready[(iters - 1) % 2]));
		check += validate(dst + (size_t)((iters - 1) % 2) * n, n);
	}
	CK(cudaDeviceSynchronize());
	printf("info: step_ms=%.3f\n", (now_s() - t0) * 1e3 / a.steps);
	printf("done steps=%d mode=%s check=%.1f\n", a.steps, a.mode, check);
	return 0;
}
