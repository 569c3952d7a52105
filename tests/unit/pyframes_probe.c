/*
 * pyframes_probe.c - a shared library for test_pyframes only: tests/data/pyframes_helper.py loads
 * it with ctypes (whose calls release the GIL, as PyTorch's bindings do around CUDA work) and asks
 * it for the calling thread's Python frames, read by src/collectors/pyframes.c.
 */
#include <pthread.h>
#include <stdio.h>

#include "collectors/pyframes.h"

#define EXPORT __attribute__((visibility("default")))

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc = -1;

static void init(void)
{
	init_rc = cs_py_init();
}

/*
 * Write the calling thread's frames into out as "file:func:line\n" lines, innermost first
 * (truncated to cap, NUL-terminated); returns how many frames cs_py_walk found (0 when
 * cs_py_init failed or there are none). Calls cs_py_init once, on the first call.
 */
EXPORT int cs_test_capture(char *out, int cap)
{
	cs_py_frame frames[128];
	size_t len = 0;
	int n;

	pthread_once(&init_once, init);
	if (!out || cap <= 0)
		return -1;
	out[0] = '\0';
	n = cs_py_walk(frames, 128);
	for (int i = 0; i < n; i++) {
		char file[1024], func[256];
		int w;

		if (cs_py_code_strings(frames[i].code, file, sizeof(file), func, sizeof(func)))
			snprintf(func, sizeof(func), "?");
		w = snprintf(out + len, (size_t)cap - len, "%s:%s:%d\n", file, func,
			     (int)frames[i].line);
		if (w < 0 || (size_t)w >= (size_t)cap - len)
			break;
		len += (size_t)w;
	}
	return n;
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
