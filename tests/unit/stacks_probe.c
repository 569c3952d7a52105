/*
 * stacks_probe.c - the launch-site capture of the injection library (src/collectors/stacks.c),
 * built with the Python frame reader into a library that tests/data/stacks_helper.py loads with
 * ctypes into a real interpreter, the way a CUDA callback runs inside a PyTorch process: the spool
 * is replaced by a counter of the stack records written, the string table by a counter.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "collector.h"

#define EXPORT __attribute__((visibility("default")))

static _Atomic uint32_t stack_records, next_sid = 1;

void cs_out_write(void *rec, size_t size, uint16_t type, uint32_t tid)
{
	(void)rec;
	(void)size;
	(void)tid;
	if (type == CS_REC_STACK)
		atomic_fetch_add(&stack_records, 1);
}

uint32_t cs_intern(const char *s, size_t len)
{
	(void)s;
	(void)len;
	return atomic_fetch_add(&next_sid, 1);
}

uint32_t cs_tid(void)
{
	return (uint32_t)gettid();
}

/* cs_stacks_init(1): 0 when stacks can be captured; cs_stacks_python() in *python. */
EXPORT int cs_test_stacks_init(int *python)
{
	int rc = cs_stacks_init(1);

	*python = cs_stacks_python();
	return rc;
}

/* One launch of kernel function fn from the calling thread: its stack id, 0 for none. */
EXPORT unsigned cs_test_launch(const void *fn)
{
	return cs_stack_capture_launch(fn);
}

/* The same through one more native frame: another native stack from the same Python line. */
__attribute__((noinline)) static unsigned launch_deeper(const void *fn)
{
	unsigned id = cs_stack_capture_launch(fn);

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays on the stack */
	return id;
}

EXPORT unsigned cs_test_launch_deep(const void *fn)
{
	return launch_deeper(fn);
}

/* The stack records written so far. */
EXPORT unsigned cs_test_stack_records(void)
{
	return atomic_load(&stack_records);
}

struct native_run {
	const void *fn;
	int n, with_stack;
};

static void *native_launches(void *arg)
{
	struct native_run *r = arg;

	for (int i = 0; i < r->n; i++)
		r->with_stack += cs_stack_capture_launch(r->fn) != 0;
	return NULL;
}

/* n launches of fn on a thread of the library's own (no Python frames): how many got a stack. */
EXPORT int cs_test_launch_native(const void *fn, int n)
{
	struct native_run r = {fn, n, 0};
	pthread_t t;

	if (pthread_create(&t, NULL, native_launches, &r))
		return -1;
	pthread_join(t, NULL);
	return r.with_stack;
}
