/*
 * pyframes_probe.c - a shared library for test_pyframes only: tests/data/pyframes_helper.py loads
 * it with ctypes (whose calls release the GIL, as PyTorch's bindings do around CUDA work) and asks
 * it for the calling thread's Python frames, read by src/collectors/pyframes.c, and for the frames
 * a thread without any borrows from the main thread while that one waits in backward().
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pyframes.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = -1;

static void init(void)
{
	init_rc = cs_py_init();
}

typedef int (*code_strings_fn)(const void *, char *, size_t, char *, size_t);

/* frames as "file:func:line\n" lines into out (truncated to cap, NUL-terminated), their names
 * read by strings (cs_py_code_strings, or cs_py_code_strings_other for another thread's) */
static void format_with(const cs_py_frame *frames, int n, char *out, int cap,
			code_strings_fn strings)
{
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		char file[1024], func[256];
		int w;

		if (strings(frames[i].code, file, sizeof(file), func, sizeof(func)))
			snprintf(func, sizeof(func), "?");
		w = snprintf(out + len, (size_t)cap - len, "%s:%s:%d\n", file, func,
			     (int)frames[i].line);
		if (w < 0 || (size_t)w >= (size_t)cap - len)
			break;
		len += (size_t)w;
	}
}

static void format_frames(const cs_py_frame *frames, int n, char *out, int cap)
{
	format_with(frames, n, out, cap, cs_py_code_strings);
}

/*
 * Write the calling thread's frames into out as "file:func:line\n" lines, innermost first
 * (truncated to cap, NUL-terminated); returns how many frames cs_py_walk found (0 when
 * cs_py_init failed or there are none). Calls cs_py_init once, on the first call.
 */
EXPORT int cs_test_capture(char *out, int cap)
{
	cs_py_frame frames[128];
	int n;

	pthread_once(&init_once, init);
	if (!out || cap <= 0)
		return -1;
	n = cs_py_walk(frames, 128);
	format_frames(frames, n, out, cap);
	return n;
}

/* cs_py_chain_key of the calling thread: the key, or 0 when it has no frames that can be read. */
EXPORT unsigned long long cs_test_chain_key(void)
{
	uint64_t key = 0;

	pthread_once(&init_once, init);
	return cs_py_chain_key(&key) > 0 ? (unsigned long long)key : 0;
}

/* cs_py_init's result (after the first capture): 0 when frames can be read, -1 otherwise. */
EXPORT int cs_test_init_result(void)
{
	pthread_once(&init_once, init);
	return init_rc;
}

/* cs_py_version after cs_py_init. */
EXPORT int cs_test_version(void)
{
	pthread_once(&init_once, init);
	return cs_py_version();
}

static void *native_thread(void *arg)
{
	cs_py_frame frames[16];

	*(int *)arg = cs_py_walk(frames, 16);
	return NULL;
}

/* Frames seen from a thread that Python did not create and that never ran Python code: none. */
EXPORT int cs_test_capture_native_thread(void)
{
	pthread_t t;
	int n = -1;

	pthread_once(&init_once, init);
	if (pthread_create(&t, NULL, native_thread, &n))
		return -1;
	pthread_join(t, NULL);
	return n;
}

/* ---- borrowed frames: a thread without Python frames while the main thread waits ---- */

#define BORROW_REPEAT 100

struct borrow {
	int with_state; /* give the thread a thread state without frames, as PyTorch's engine
			   threads */
	char *out, *scratch;
	int cap;
	int own, n, same;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void *borrow_thread(void *arg)
{
	struct borrow *b = arg;
	int (*ensure)(void) = NULL;
	void *(*save)(void) = NULL;
	void (*restore)(void *) = NULL;
	void (*release)(int) = NULL;
	cs_py_frame frames[128];
	void *ts = NULL;
	int g = 0;

	if (b->with_state) {
		/* PyTorch's engine threads: pybind11::gil_scoped_acquire then gil_scoped_release
		 * leave a thread state bound to the thread, and no frames. */
		*(void **)&ensure = dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
		*(void **)&save = dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
		*(void **)&restore = dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
		*(void **)&release = dlsym(RTLD_DEFAULT, "PyGILState_Release");
		if (ensure && save && restore && release) {
			g = ensure();
			ts = save();
		}
	}
	b->own = cs_py_walk(frames, 128);
	b->n = cs_py_walk_backward(frames, 128);
	format_frames(frames, b->n, b->out, b->cap);
	b->same = 1;
	for (int i = 1; i < BORROW_REPEAT; i++) {
		int n = cs_py_walk_backward(frames, 128);

		format_frames(frames, n, b->scratch, b->cap);
		b->same += n == b->n && !strcmp(b->scratch, b->out);
	}
	if (ts) {
		restore(ts);
		release(g);
	}
	pthread_mutex_lock(&b->lock);
	b->done = 1;
	pthread_cond_signal(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/*
 * Called by the main thread (through ctypes, so without the GIL): start a thread that has no
 * Python frames (with_state: it has a thread state without frames, else none at all) and wait on a
 * condition until it has read the frames it borrows from this thread, 100 times. out gets the
 * first capture's frames ("file:func:line\n" lines); *own what cs_py_walk gave that thread, *same
 * how many of the 100 captures were identical. Returns the number of borrowed frames, -1 on error.
 */
EXPORT int cs_test_borrow(char *out, char *scratch, int cap, int with_state, int *own, int *same)
{
	struct borrow b;
	pthread_t t;

	pthread_once(&init_once, init);
	if (!out || !scratch || cap <= 0)
		return -1;
	memset(&b, 0, sizeof(b));
	b.with_state = with_state;
	b.out = out;
	b.scratch = scratch;
	b.cap = cap;
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	if (pthread_create(&t, NULL, borrow_thread, &b))
		return -1;
	pthread_mutex_lock(&b.lock);
	while (!b.done)
		pthread_cond_wait(&b.cond, &b.lock);
	pthread_mutex_unlock(&b.lock);
	pthread_join(t, NULL);
	pthread_mutex_destroy(&b.lock);
	pthread_cond_destroy(&b.cond);
	*own = b.own;
	*same = b.same;
	return b.n;
}

/* cs_py_walk_backward on the calling thread itself: the main thread never borrows its own. */
EXPORT int cs_test_borrow_here(void)
{
	cs_py_frame frames[16];

	pthread_once(&init_once, init);
	return cs_py_walk_backward(frames, 16);
}

/* ---- a thread that borrows over and over while the main thread comes and goes ---- */

static pthread_t hammer;
static volatile int hammer_stop;
static long hammer_tries, hammer_hits, hammer_bad;

static void *hammer_thread(void *arg)
{
	cs_py_frame frames[128];
	char file[1024], func[256];

	(void)arg;
	while (!hammer_stop) {
		int n = cs_py_walk_backward(frames, 128);

		hammer_tries++;
		if (!n)
			continue;
		hammer_hits++;
		if (cs_py_code_strings(frames[0].code, file, sizeof(file), func, sizeof(func)) ||
		    !((strstr(file, "torch/autograd/graph.py") &&
		       !strcmp(func, "_engine_run_backward")) ||
		      (strstr(file, "torch/autograd/__init__.py") && !strcmp(func, "backward")))) {
			hammer_bad++;
			fprintf(stderr, "borrowed from the wrong place: %s:%s:%d (%d frames)\n",
				file, func, frames[0].line, n);
		}
	}
	return NULL;
}

/* Start a thread without Python frames that borrows the main thread's frames as fast as it can. */
EXPORT int cs_test_hammer_start(void)
{
	pthread_once(&init_once, init);
	hammer_stop = 0;
	hammer_tries = hammer_hits = hammer_bad = 0;
	return pthread_create(&hammer, NULL, hammer_thread, NULL) ? -1 : 0;
}

/* Stop it: *tries captures, *hits with borrowed frames; returns how many of those did not start
 * in the engine call. */
EXPORT long cs_test_hammer_stop(long *tries, long *hits)
{
	hammer_stop = 1;
	pthread_join(hammer, NULL);
	*tries = hammer_tries;
	*hits = hammer_hits;
	return hammer_bad;
}

/* Nanoseconds per capture of what a stack costs the calling thread inside a CUDA callback: the
 * native return addresses (glibc backtrace, 48 frames at most, as stacks.c) and the Python frames
 * with their lines; the average of n captures (tests/bench/stack_cost.py). */
EXPORT double cs_test_capture_cost(int n, int *native_depth, int *py_depth)
{
	void *pcs[48 + 2];
	cs_py_frame frames[64];
	struct timespec t0, t1;
	int nn = 0, np = 0;

	pthread_once(&init_once, init);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		nn = backtrace(pcs, 48 + 2);
		np = init_rc == 0 ? cs_py_walk(frames, 64) : 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*native_depth = nn;
	*py_depth = np;
	return ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
	       (n > 0 ? n : 1);
}

/* ---- another thread's frames while it waits (--hang-after's notice) ---- */

struct blocked {
	uintptr_t ts;
	pthread_t thread;
	char *out, *scratch;
	int cap, n, same;
};

static void *blocked_reader(void *arg)
{
	struct blocked *b = arg;
	cs_py_frame frames[128];

	b->n = cs_py_walk_other(b->ts, (uint64_t)b->thread, frames, 128);
	format_with(frames, b->n, b->out, b->cap, cs_py_code_strings_other);
	b->same = 1;
	for (int i = 1; i < BORROW_REPEAT; i++) {
		int n = cs_py_walk_other(b->ts, (uint64_t)b->thread, frames, 128);

		format_with(frames, n, b->scratch, b->cap, cs_py_code_strings_other);
		b->same += n == b->n && !strcmp(b->scratch, b->out);
	}
	return NULL;
}

/*
 * Called through ctypes (without the GIL), as a thread that waits in a CUDA call: note this
 * thread's state (cs_py_thread_state) and wait in pthread_join while another thread reads this
 * one's frames with cs_py_walk_other, 100 times. out gets the first read's frames, *own what
 * cs_py_walk_other gives when a thread asks for its own frames (none), *same how many of the 100
 * reads were identical. Returns the number of frames read, -1 on error.
 */
EXPORT int cs_test_walk_blocked(char *out, char *scratch, int cap, int unused, int *own,
				int *same)
{
	struct blocked b;
	cs_py_frame frames[8];
	pthread_t t;

	(void)unused;
	pthread_once(&init_once, init);
	if (!out || !scratch || cap <= 0)
		return -1;
	memset(&b, 0, sizeof(b));
	b.ts = cs_py_thread_state();
	b.thread = pthread_self();
	b.out = out;
	b.scratch = scratch;
	b.cap = cap;
	*own = cs_py_walk_other(b.ts, (uint64_t)b.thread, frames, 8);
	if (pthread_create(&t, NULL, blocked_reader, &b))
		return -1;
	pthread_join(t, NULL);
	*same = b.same;
	return b.n;
}
