// savings_cu.h - what the CUDA C++ pairs of samples/savings share: arguments, timing, the A/B rounds.
//
// Each pair is one .cu file built with `nvcc -O2 -arch=sm_90 -I samples/savings` and run as
//
//   PAIR bad|fixed|ab [--steps N] [--rounds R] [--warmup W]
//
// with the same meaning and output as the Python pairs (savings_common.py): a block is W warm-up steps (default
// 4), cudaDeviceSynchronize, N steady steps (default 30), cudaDeviceSynchronize, timed on the host with
// std::chrono around the steady steps only (the block's time / N); `ab` builds both variants in one process
// and runs R rounds (default 5) of one block each, bad first in odd rounds and fixed first in even ones.
// Output: `done variant=V step_ms=X steps=N warmup=W checksum=C`, or per round `round=K bad_ms=X fixed_ms=Y`
// and `done ab saving=S bad_ms=.. fixed_ms=.. spread=.. rounds=R steps=N` (medians over the rounds).
// A failed CUDA call is reported on stderr with exit status 1; bad arguments exit with status 2.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                                   \
	do {                                                                                              \
		cudaError_t err_ = (call);                                                                    \
		if (err_ != cudaSuccess) {                                                                    \
			fprintf(stderr, "%s failed: %s (%s:%d)\n", #call, cudaGetErrorString(err_), __FILE__, __LINE__); \
			exit(1);                                                                                  \
		}                                                                                             \
	} while (0)
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

// One variant of a pair: step(i) is one iteration (i counts the block's steps from 0, warm-up included);
// checksum() is read after the block's last synchronize.
struct Variant {
	virtual ~Variant() {}
	virtual void begin() {}
	virtual void step(int i) = 0;
	virtual double checksum() { return 0.0; }
};

static double run_block(Variant &v, int warmup, int steps)
{
	v.begin();
	for (int i = 0; i < warmup; i++)
		v.step(i);
	CHECK(cudaDeviceSynchronize());
	auto t0 = std::chrono::steady_clock::now();
	for (int i = warmup; i < warmup + steps; i++)
		v.step(i);
	CHECK(cudaDeviceSynchronize());
	auto t1 = std::chrono::steady_clock::now();
	return std::chrono::duration<double, std::milli>(t1 - t0).count() / (steps > 0 ? steps : 1);
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

// make(true) builds the bad variant, make(false) the fixed one.
static int pair_main(int argc, char **argv, Variant *(*make)(bool bad), int default_steps = 30)
{
	const char *usage = "usage: %s bad|fixed|ab [--steps N] [--rounds R] [--warmup W]\n";
	if (argc < 2) {
		fprintf(stderr, usage, argv[0]);
		return 2;
	}
	const char *mode = argv[1];
	int steps = default_steps, rounds = 5, warmup = 4;
	for (int k = 2; k < argc; k++) {
		int *dst = !strcmp(argv[k], "--steps") ? &steps : !strcmp(argv[k], "--rounds") ? &rounds
		         : !strcmp(argv[k], "--warmup") ? &warmup : nullptr;
		if (!dst || k + 1 >= argc || atoi(argv[k + 1]) < (dst == &warmup ? 0 : 1)) {
			fprintf(stderr, usage, argv[0]);
			return 2;
		}
		*dst = atoi(argv[++k]);
	}
	if (!strcmp(mode, "bad") || !strcmp(mode, "fixed")) {
		Variant *v = make(!strcmp(mode, "bad"));
		double ms = run_block(*v, warmup, steps);
		printf("done variant=%s step_ms=%.4f steps=%d warmup=%d checksum=%.6g\n", mode, ms, steps, warmup,
		       v->checksum());
		delete v;
		return 0;
	}
	if (strcmp(mode, "ab")) {
		fprintf(stderr, usage, argv[0]);
		return 2;
	}
	Variant *bad = make(true), *fixed = make(false);
	std::vector<double> b, f, s;
	for (int r = 1; r <= rounds; r++) {
		double mb, mf;
		if (r % 2) {
			mb = run_block(*bad, warmup, steps);
			mf = run_block(*fixed, warmup, steps);
		} else {
			mf = run_block(*fixed, warmup, steps);
			mb = run_block(*bad, warmup, steps);
		}
		printf("round=%d bad_ms=%.4f fixed_ms=%.4f\n", r, mb, mf);
		fflush(stdout);
		b.push_back(mb);
		f.push_back(mf);
		s.push_back((mb - mf) / mb);
	}
	printf("done ab saving=%.4f bad_ms=%.4f fixed_ms=%.4f spread=%.4f rounds=%d steps=%d\n", median(s), median(b),
	       median(f), *std::max_element(s.begin(), s.end()) - *std::min_element(s.begin(), s.end()), rounds, steps);
	delete bad;
	delete fixed;
	return 0;
}
