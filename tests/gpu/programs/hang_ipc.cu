// hang_ipc.cu - a hang across two processes on one GPU. The parent's one kernel spins for SECONDS
// (default 6) and then records an interprocess event; the child (forked before either touches
// CUDA) makes its stream wait for that event, launches a kernel behind it and waits for it in
// cudaStreamSynchronize; the parent then waits in cudaStreamSynchronize too. Both processes wait
// for the parent's kernel: under `record --hang-after 2` each writes a notice, and the one hang
// report covers both (tests/gpu/run.sh, hang). Each prints "done" and the job exits 0 once the
// kernel ends.
#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

__global__ void spin_for(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

__global__ void behind(int *x)
{
	*x += 1;
}

static int child(int fd, int ready)
{
	cudaIpcEventHandle_t h;
	cudaEvent_t ev;
	cudaStream_t s;
	int *x;

	if (read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h))
		return 1;
	if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&x, sizeof(int)) != cudaSuccess ||
	    cudaIpcOpenEventHandle(&ev, h) != cudaSuccess) {
		fprintf(stderr, "child: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	cudaStreamWaitEvent(s, ev, 0);
	behind<<<1, 1, 0, s>>>(x);
	/* the parent begins its own wait when this one begins */
	if (write(ready, "r", 1) != 1)
		return 1;
	if (cudaStreamSynchronize(s) != cudaSuccess)
		return 1;
	printf("child done\n");
	fflush(stdout); /* _exit() follows */
	return 0;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0;
	cudaIpcEventHandle_t h;
	cudaEvent_t ev;
	cudaStream_t s;
	int fds[2], back[2], status = 0, n = 0;
	char c;
	pid_t pid;

	if (pipe(fds) || pipe(back))
		return 1;
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		close(back[0]);
		_exit(child(fds[0], back[1]));
	}
	close(fds[0]);
	close(back[1]);
	if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
		printf("info: skipped: no CUDA device\n");
		close(fds[1]);
		waitpid(pid, &status, 0);
		return 0;
	}
	if (cudaStreamCreate(&s) != cudaSuccess ||
	    cudaEventCreateWithFlags(&ev, cudaEventInterprocess | cudaEventDisableTiming) !=
		    cudaSuccess ||
	    cudaIpcGetEventHandle(&h, ev) != cudaSuccess) {
		fprintf(stderr, "hang_ipc: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	spin_for<<<1, 1, 0, s>>>((unsigned long long)(seconds * 1e9));
	cudaEventRecord(ev, s);
	/* the child waits for the event only once it is recorded behind the spinning kernel */
	if (write(fds[1], &h, sizeof(h)) != (ssize_t)sizeof(h))
		return 1;
	close(fds[1]);
	if (read(back[0], &c, 1) != 1) /* the child is in its wait (or failed) */
		fprintf(stderr, "hang_ipc: the child did not get to its wait\n");
	if (cudaStreamSynchronize(s) != cudaSuccess)
		return 1;
	waitpid(pid, &status, 0);
	printf("done\n");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
