/*
 * pyframes.h - the calling thread's Python frames, read without the GIL.
 *
 * The injection library needs the Python file, function and line behind a CUDA API call, but
 * PyTorch releases the GIL around most of its CUDA work, and the interpreter's frame API must not
 * be called without it. A thread's own frame chain cannot change while that thread is inside one
 * of our callbacks, so pyframes.c reads it directly with the struct layouts of each CPython
 * version (3.10 to 3.13, x86_64, release builds; 3.13's from the debug offsets the interpreter
 * publishes in _PyRuntime). It needs no Python headers and never calls into the interpreter from
 * cs_py_walk. docs/backtraces.md explains the layouts and the safety argument.
 */
#ifndef CUSCOPE_PYFRAMES_H
#define CUSCOPE_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

/*
 * Find the interpreter in this process and pick the layout for its version: 0 when Python frames
 * can be read, -1 otherwise (not Python, unknown version, interpreter not initialized yet, debug
 * or free-threaded build). Call outside CUDA callbacks (it uses dlsym and dladdr). After a failure
 * it may be called again (the interpreter may have been initialized since); after a success it
 * returns 0 at once.
 */
int cs_py_init(void);

/* Version found by cs_py_init, e.g. 0x030c as (major << 8) | minor, also when that version is not
 * supported; 0 when none was found. */
int cs_py_version(void);

/* One frame: the code object (an opaque pointer for cs_py_code_strings) and the line being
 * executed (0 when it cannot be known). */
typedef struct cs_py_frame {
	const void *code;
	int32_t line;
} cs_py_frame;

/*
 * The calling thread's Python frames, innermost first; returns how many (0 when none or
 * unsupported). Safe without the GIL, from the thread itself only: another thread's frames may
 * change under the reader. Takes no lock and calls nothing that could (no loader lock, no
 * allocation), so it may run inside CUDA callbacks.
 */
int cs_py_walk(cs_py_frame *out, int max);

/*
 * A 64-bit key of the calling thread's Python frames as cs_py_walk would visit them: each frame's
 * code object and its position in it (instruction pointer or f_lasti), with no line decoded, so
 * that the same call site reached the same way gives the same key at the cost of a walk of the
 * chain. Returns the number of frames in the key (0: none or unsupported, *key unset). Same use as
 * cs_py_walk. A code object freed and another allocated at its address with the same position
 * gives the same key: the launch sites that use it accept that rare misattribution.
 */
int cs_py_chain_key(uint64_t *key);

/*
 * For a thread without Python frames of its own (cs_py_walk gave none), such as an autograd engine
 * thread running backward's CUDA work: the main thread's frames, innermost first, but only while
 * the main thread is blocked in torch's autograd engine call (innermost frame _engine_run_backward
 * in torch/autograd/graph.py, or backward, run_backward or grad in torch/autograd/__init__.py), so
 * that the outer frames name the line that called backward(). Returns how many (0 otherwise, on
 * the main thread itself, and until the main thread has been seen by cs_py_init or cs_py_walk).
 * Reads the other thread's memory with process_vm_readv (no fault on a stale pointer) until the
 * frames are proven to be stable; takes no lock, allocates nothing. Same use as cs_py_walk.
 */
int cs_py_walk_backward(cs_py_frame *out, int max);

/* The calling thread's Python thread state (an opaque address for cs_py_walk_other), 0 when the
 * interpreter is not known or the thread has none. One thread-local read: cheap enough for every
 * CUDA wait. */
uintptr_t cs_py_thread_state(void);

/*
 * The frames of another thread (its state ts from cs_py_thread_state, its pthread_t as thread),
 * innermost first, while that thread stays blocked in one call, as cs_py_walk_backward reads the
 * main thread's: safe reads (process_vm_readv), proven stable over the walk; 0 frames when the
 * thread is running, is the caller, or ts is no longer its state. No lock, no allocation.
 */
int cs_py_walk_other(uintptr_t ts, uint64_t thread, cs_py_frame *out, int max);

/* In a child after fork(): forget the parent's main thread. */
void cs_py_atfork_child(void);

/*
 * Copy the code object's file name and function name (qualified name on 3.11+) as UTF-8 into
 * the buffers (truncated at a character boundary, NUL-terminated); 0 on success, -1 when they
 * cannot be read. The code pointer must come from cs_py_walk on a frame that is still running
 * (read them in the same callback): a code object that was freed since may have been reused.
 * Either buffer may be NULL (cap 0) when that string is not wanted. Takes no lock.
 */
int cs_py_code_strings(const void *code, char *file, size_t file_cap, char *func, size_t func_cap);

/* cs_py_code_strings for a code pointer of cs_py_walk_other (another thread's frame, which may
 * be gone by now): safe reads only, the first 240 characters of each string at most. */
int cs_py_code_strings_other(const void *code, char *file, size_t file_cap, char *func,
			     size_t func_cap);

#endif
