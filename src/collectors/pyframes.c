/*
 * pyframes.c - the calling thread's Python frames, read without the GIL and without calling into
 * the interpreter.
 *
 * cs_py_init (outside the hot path) finds CPython through dlsym, reads its version (Py_Version on
 * 3.11+, Py_GetVersion's constant string on 3.10), refuses debug and free-threaded builds and picks
 * the struct layout of that version: a table below for 3.10, 3.11 and 3.12 (taken from each
 * version's headers and checked against offsetof() on the real headers), and for 3.13 the debug
 * offsets the interpreter publishes at the start of _PyRuntime. It also resolves the type objects
 * that serve as magic numbers (PyCode_Type, PyFrame_Type, PyUnicode_Type, PyBytes_Type).
 *
 * cs_py_walk (inside CUDA callbacks) gets the thread state from PyGILState_GetThisThreadState, a
 * read of a thread-specific key that needs no GIL, checks that it belongs to the calling thread and
 * follows the frame chain: PyFrameObject.f_back on 3.10, _PyInterpreterFrame.previous on 3.11+.
 * While the thread is inside our callback it runs no Python code, so nothing pushes or pops its
 * frames; every pointer is still checked (non-NULL, aligned, in the user address range) and every
 * object's type compared to the expected type object before its fields are used, and the walk is
 * bounded, so an unexpected layout gives fewer frames rather than a crash. Line numbers come from
 * the code object's line table: the 3.10 format (byte-offset and line deltas) or the 3.11+ location
 * table, decoded here.
 *
 * cs_py_walk_backward (inside CUDA callbacks, on a thread without Python frames, such as an
 * autograd engine thread) reads the main thread's chain instead, but only when its innermost frame
 * is torch's autograd engine call, which proves the main thread is blocked waiting for backward().
 * The main thread's state is remembered by the main thread itself; no thread list is walked. Until
 * that proof holds, every read of the other thread's memory goes through process_vm_readv on this
 * process, which fails with EFAULT instead of faulting.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "pyframes.h"
#include "vm_read.h"

#define MAX_STEPS	256	  /* frames visited per walk, skipped ones included */
#define MAX_TABLE	(1 << 24) /* longest line table read, in bytes */
#define MAX_STR		(1 << 20) /* longest string read, in code points */
#define PY_OB_TYPE	8  /* offsetof(PyObject, ob_type), every supported version */
#define PY_OB_SIZE	16 /* offsetof(PyVarObject, ob_size) */
#define OWNER_GENERATOR 1  /* enum _frameowner, 3.11+ */
#define OWNER_CSTACK	3  /* 3.12+: the entry frame of an evaluation loop, no code of its own */

enum py_chain {
	CHAIN_FRAMEOBJECT, /* 3.10: tstate->frame, PyFrameObject.f_back */
	CHAIN_CFRAME, /* 3.11, 3.12: tstate->cframe->current_frame, _PyInterpreterFrame.previous */
	CHAIN_DIRECT, /* 3.13: tstate->current_frame, _PyInterpreterFrame.previous */
};

/* Byte offsets of the fields read, for one interpreter version. */
struct py_layout {
	enum py_chain chain;
	int owner_cstack;   /* owner value of frames to skip, -1 when none */
	int location_table; /* 1: 3.11+ location table and instruction pointers; 0: 3.10 */
	/* PyThreadState */
	uint32_t ts_interp, ts_thread_id, ts_frame; /* ts_frame: frame, cframe or current_frame */
	uint32_t cframe_current;		    /* _PyCFrame.current_frame */
	/* PyFrameObject (3.10) or _PyInterpreterFrame (3.11+) */
	uint32_t fr_previous, fr_code, fr_owner;
	uint32_t fr_instr;  /* f_lasti (3.10), prev_instr (3.11, 3.12), instr_ptr (3.13) */
	uint32_t fr_lineno; /* 3.10: f_lineno */
	/* PyCodeObject */
	uint32_t co_filename, co_name, co_linetable, co_firstlineno;
	uint32_t co_firsttraceable; /* 0: not known, no incomplete frames skipped */
	uint32_t co_code;	    /* 3.11+: co_code_adaptive */
	/* PyBytesObject, PyASCIIObject, PyCompactUnicodeObject */
	uint32_t bytes_sval;
	uint32_t str_length, str_state, str_ascii_size, str_compact_size;
	uint32_t str_ready; /* state bit "ready" (up to 3.11), 0 when strings are always ready */
};

static const struct py_layout layout_310 = {
	.chain = CHAIN_FRAMEOBJECT,
	.owner_cstack = -1,
	.location_table = 0,
	.ts_interp = 16,
	.ts_thread_id = 176,
	.ts_frame = 24,
	.fr_previous = 24,
	.fr_code = 32,
	.fr_instr = 96,
	.fr_lineno = 100,
	.co_filename = 104,
	.co_name = 112,
	.co_linetable = 120,
	.co_firstlineno = 40,
	.bytes_sval = 32,
	.str_length = 16,
	.str_state = 32,
	.str_ascii_size = 48,
	.str_compact_size = 72,
	.str_ready = 1u << 7,
};

static const struct py_layout layout_311 = {
	.chain = CHAIN_CFRAME,
	.owner_cstack = -1,
	.location_table = 1,
	.ts_interp = 16,
	.ts_thread_id = 152,
	.ts_frame = 56,
	.cframe_current = 8,
	.fr_previous = 48,
	.fr_code = 32,
	.fr_instr = 56,
	.fr_owner = 69,
	.co_filename = 112,
	.co_name = 128,
	.co_linetable = 136,
	.co_firstlineno = 72,
	.co_firsttraceable = 168,
	.co_code = 184,
	.bytes_sval = 32,
	.str_length = 16,
	.str_state = 32,
	.str_ascii_size = 48,
	.str_compact_size = 72,
	.str_ready = 1u << 7,
};

static const struct py_layout layout_312 = {
	.chain = CHAIN_CFRAME,
	.owner_cstack = OWNER_CSTACK,
	.location_table = 1,
	.ts_interp = 16,
	.ts_thread_id = 136,
	.ts_frame = 56,
	.cframe_current = 0,
	.fr_previous = 8,
	.fr_code = 0,
	.fr_instr = 56,
	.fr_owner = 70,
	.co_filename = 112,
	.co_name = 128,
	.co_linetable = 136,
	.co_firstlineno = 68,
	.co_firsttraceable = 176,
	.co_code = 192,
	.bytes_sval = 32,
	.str_length = 16,
	.str_state = 32,
	.str_ascii_size = 40,
	.str_compact_size = 56,
};

/*
 * 3.13's _Py_DebugOffsets, read as 64-bit words: the index of each field used. The table starts
 * with the 8-byte cookie "xdebugpy"; its layout is fixed within 3.13 (it grew in 3.14).
 */
enum {
	DBG_VERSION = 1,
	DBG_FREE_THREADED = 2,
	DBG_TS_SIZE = 19,
	DBG_TS_INTERP = 22,
	DBG_TS_CURRENT_FRAME = 23,
	DBG_TS_THREAD_ID = 24,
	DBG_FR_SIZE = 28,
	DBG_FR_PREVIOUS = 29,
	DBG_FR_EXECUTABLE = 30,
	DBG_FR_INSTR_PTR = 31,
	DBG_FR_OWNER = 33,
	DBG_CO_SIZE = 34,
	DBG_CO_FILENAME = 35,
	DBG_CO_QUALNAME = 37,
	DBG_CO_LINETABLE = 38,
	DBG_CO_FIRSTLINENO = 39,
	DBG_CO_CODE_ADAPTIVE = 43,
	DBG_OB_TYPE = 45,
	DBG_BYTES_SIZE = 64,
	DBG_BYTES_OB_SIZE = 65,
	DBG_BYTES_SVAL = 66,
	DBG_STR_SIZE = 67,
	DBG_STR_STATE = 68,
	DBG_STR_LENGTH = 69,
	DBG_STR_ASCII_SIZE = 70,
	DBG_WORDS = 73,
};
/* 3.13.x: _co_firsttraceable sits 16 bytes before co_code_adaptive (184 and 200 in the headers) */
#define CO_FIRSTTRACEABLE_313 184
#define CO_CODE_ADAPTIVE_313  200

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct py_layout layout_313;
static const struct py_layout *layout; /* published last, with release order */
static int found_version;
static void *(*get_this_thread_state)(void);
static uintptr_t code_type, frame_type, unicode_type, bytes_type;
static int safe_reads; /* process_vm_readv works on this process (no seccomp filter refuses it) */

/* The main thread's thread state, noted by the main thread itself (main_ts published last, with
 * release order); it lives until the interpreter finalizes. */
static uintptr_t main_ts;
static pthread_t main_thread;
static pid_t main_pid;

/* ---- reads ---- */

static inline int ptr_ok(uintptr_t p)
{
	return p >= 4096 && p < CS_USER_ADDR_END && !(p & 7);
}

/* Loads of any type from memory the interpreter wrote: aliasing-safe, and plain loads (no library
 * call even at -O0). */
typedef uintptr_t __attribute__((may_alias)) uptr_alias;
typedef int32_t __attribute__((may_alias)) i32_alias;
typedef int64_t __attribute__((may_alias)) i64_alias;

static inline uintptr_t rd_ptr(uintptr_t base, uint32_t off)
{
	return *(const uptr_alias *)(base + off);
}

static inline int32_t rd_i32(uintptr_t base, uint32_t off)
{
	return *(const i32_alias *)(base + off);
}

static inline int64_t rd_i64(uintptr_t base, uint32_t off)
{
	return *(const i64_alias *)(base + off);
}

/* obj is a readable object whose type is exactly type. */
static inline int is_type(uintptr_t obj, uintptr_t type)
{
	return ptr_ok(obj) && rd_ptr(obj, PY_OB_TYPE) == type;
}

/* ---- line tables ---- */

/* The bytes of a bytes object, or NULL. */
static const uint8_t *bytes_data(const struct py_layout *L, uintptr_t obj, int64_t *len)
{
	if (!is_type(obj, bytes_type))
		return NULL;
	*len = rd_i64(obj, PY_OB_SIZE);
	if (*len < 0 || *len > MAX_TABLE)
		return NULL;
	return (const uint8_t *)(obj + L->bytes_sval);
}

/*
 * 3.10 co_linetable: pairs (bytecode offset delta in bytes, unsigned; line delta, signed, -128 for
 * "no line"). Each pair covers [start, start + delta) and moves the line by its delta; the line of
 * the range holding addr is the answer. addr is in bytes.
 */
static int32_t line_310(const uint8_t *t, int64_t len, int32_t line, int64_t addr)
{
	int64_t start = 0;

	for (int64_t i = 0; i + 1 < len; i += 2) {
		int64_t end = start + t[i];
		int8_t ldelta = (int8_t)t[i + 1];
		int32_t cur = -1;

		if (ldelta != -128) {
			line += ldelta;
			cur = line;
		}
		if (addr < end)
			return cur;
		start = end;
	}
	return -1;
}

/* An unsigned varint of the location table (6 bits a byte, bit 6 = more follow), bounded by len. */
static uint32_t read_varint(const uint8_t *t, int64_t len, int64_t *i)
{
	uint32_t v = 0;
	int shift = 0;

	while (*i < len && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		if (!(b & 64))
			break;
		shift += 6;
	}
	return v;
}

/*
 * 3.11+ location table: entries start with a byte with bit 7 set: bits 3-6 the form, bits 0-2 the
 * number of code units covered minus one. Forms 0-9 (short) and 10-12 (one line) move the line by 0
 * and form-10, 13 (no column) and 14 (long) by a signed varint that follows, 15 means "no line".
 * The remaining bytes of an entry (columns, end line) are skipped: they never have bit 7 set.
 * lasti is in code units.
 */
static int32_t line_311(const uint8_t *t, int64_t len, int32_t line, int64_t lasti)
{
	int64_t end = 0, i = 0;

	while (i < len) {
		uint8_t b = t[i++];
		int form = (b >> 3) & 15;
		int32_t cur;

		if (!(b & 128))
			continue; /* not an entry start: the table is not what it should be */
		if (form == 13 || form == 14) {
			int64_t j = i;
			uint32_t u = read_varint(t, len, &j);

			line += (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
		} else if (form >= 10 && form <= 12) {
			line += form - 10;
		}
		cur = form == 15 ? -1 : line;
		end += (b & 7) + 1;
		if (lasti < end)
			return cur;
		while (i < len && !(t[i] & 128))
			i++;
	}
	return -1;
}

/*
 * Lines already decoded, by code object and instruction: a training loop walks the same call
 * sites every step, and decoding a long function's table costs microseconds. Shared by all
 * threads without a lock: each slot is two words written one after the other, and the value word
 * carries a hash of the key and of the line table it came from, so a torn slot (key of one writer,
 * value of another) or a code object freed and replaced at the same address fails the check and
 * is decoded again.
 */
#define LINE_CACHE 4096

struct line_slot {
	uint64_t key; /* code | instruction << 48 */
	uint64_t val; /* line | check << 32 */
};
static struct line_slot line_cache[LINE_CACHE];

static inline uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* The line of a code object at an instruction (bytes on 3.10, code units on 3.11+); 0: unknown. */
static int32_t code_line(const struct py_layout *L, uintptr_t code, int64_t at)
{
	int32_t first = rd_i32(code, L->co_firstlineno), line;
	uintptr_t table = rd_ptr(code, L->co_linetable);
	struct line_slot *slot = NULL;
	uint64_t key = 0, check = 0;
	const uint8_t *t;
	int64_t len;

	if (at < 0)
		return first > 0 ? first : 0;
	if (at < (1 << 16)) {
		uint64_t k, v;

		key = (uint64_t)code | (uint64_t)at << 48;
		check = hash64(key ^ hash64(table)) >> 32;
		slot = &line_cache[hash64(key) & (LINE_CACHE - 1)];
		k = __atomic_load_n(&slot->key, __ATOMIC_RELAXED);
		v = __atomic_load_n(&slot->val, __ATOMIC_RELAXED);
		if (k == key && v >> 32 == check)
			return (int32_t)(uint32_t)v;
	}
	t = bytes_data(L, table, &len);
	if (!t)
		return 0;
	line = L->location_table ? line_311(t, len, first, at) : line_310(t, len, first, at);
	if (line < 0)
		line = 0;
	if (slot) {
		__atomic_store_n(&slot->key, key, __ATOMIC_RELAXED);
		__atomic_store_n(&slot->val, (uint64_t)(uint32_t)line | check << 32,
				 __ATOMIC_RELAXED);
	}
	return line;
}

/* ---- walks ---- */

static int walk_frameobjects(const struct py_layout *L, uintptr_t f, cs_py_frame *out, int max)
{
	int n = 0;

	for (int steps = 0; f && n < max && steps < MAX_STEPS; steps++) {
		uintptr_t code;
		int32_t lasti, lineno;

		if (!is_type(f, frame_type))
			break;
		code = rd_ptr(f, L->fr_code);
		if (!is_type(code, code_type))
			break;
		lasti = rd_i32(f, L->fr_instr);
		lineno = rd_i32(f, L->fr_lineno); /* set only while a trace function runs */
		out[n].code = (const void *)code;
		if (lineno > 0)
			out[n].line = lineno;
		else
			out[n].line = code_line(L, code, lasti < 0 ? -1 : (int64_t)lasti * 2);
		n++;
		f = rd_ptr(f, L->fr_previous);
	}
	return n;
}

static int walk_interpreter_frames(const struct py_layout *L, uintptr_t f, cs_py_frame *out,
				   int max)
{
	int n = 0;

	for (int steps = 0; f && n < max && steps < MAX_STEPS; steps++) {
		uintptr_t code, instr, next;
		int owner;
		int64_t lasti, ncode;

		if (!ptr_ok(f))
			break;
		next = rd_ptr(f, L->fr_previous);
		owner = *(const int8_t *)(f + L->fr_owner);
		if (owner == L->owner_cstack)
			goto skip;
		code = rd_ptr(f, L->fr_code);
		if (!is_type(code, code_type)) {
			/* 3.13 frames may run something other than a code object (None in shims);
			 * on 3.11 and 3.12 it can only mean a layout we do not understand. */
			if (L->chain == CHAIN_DIRECT)
				goto skip;
			break;
		}
		instr = rd_ptr(f, L->fr_instr);
		ncode = rd_i64(code, PY_OB_SIZE); /* code units */
		lasti = ((int64_t)instr - (int64_t)(code + L->co_code)) / 2;
		/* A frame being set up has not reached its first traceable instruction yet: the
		 * interpreter hides it too. */
		if (owner != OWNER_GENERATOR && L->co_firsttraceable &&
		    lasti < rd_i32(code, L->co_firsttraceable))
			goto skip;
		out[n].code = (const void *)code;
		out[n].line = lasti < 0 || lasti >= ncode ? 0 : code_line(L, code, lasti);
		n++;
	skip:
		f = next;
	}
	return n;
}

/* Remember ts when the calling thread is the main thread (its id is the process id). ts has passed
 * the checks of cs_py_walk. */
static void note_main(uintptr_t ts)
{
	pid_t pid = getpid();

	if (gettid() != pid)
		return;
	main_thread = pthread_self();
	main_pid = pid;
	__atomic_store_n(&main_ts, ts, __ATOMIC_RELEASE);
}

int cs_py_walk(cs_py_frame *out, int max)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);
	uintptr_t ts, f;

	if (!L || !out || max <= 0)
		return 0;
	ts = (uintptr_t)get_this_thread_state();
	/* The key holds the thread state of this thread, or NULL; the thread id check guards
	 * against anything else (a key reused after the interpreter finalized). */
	if (!ptr_ok(ts) || rd_ptr(ts, L->ts_thread_id) != (uintptr_t)pthread_self() ||
	    !ptr_ok(rd_ptr(ts, L->ts_interp)))
		return 0;
	if (!__atomic_load_n(&main_ts, __ATOMIC_RELAXED))
		note_main(ts);
	f = rd_ptr(ts, L->ts_frame);
	switch (L->chain) {
	case CHAIN_FRAMEOBJECT:
		return walk_frameobjects(L, f, out, max);
	case CHAIN_CFRAME:
		if (!ptr_ok(f))
			return 0;
		return walk_interpreter_frames(L, rd_ptr(f, L->cframe_current), out, max);
	case CHAIN_DIRECT:
		return walk_interpreter_frames(L, f, out, max);
	}
	return 0;
}

/* ---- a cheap key of the calling thread's frames (launch sites) ---- */

static inline uint64_t key_mix(uint64_t h, uint64_t v)
{
	return hash64(h ^ v) + 0x9e3779b97f4a7c15ull;
}

int cs_py_chain_key(uint64_t *key)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);
	uintptr_t ts, f;
	uint64_t h = 0;
	int n = 0;

	if (!L || !key)
		return 0;
	ts = (uintptr_t)get_this_thread_state();
	if (!ptr_ok(ts) || rd_ptr(ts, L->ts_thread_id) != (uintptr_t)pthread_self() ||
	    !ptr_ok(rd_ptr(ts, L->ts_interp)))
		return 0;
	f = rd_ptr(ts, L->ts_frame);
	if (L->chain == CHAIN_CFRAME) {
		if (!ptr_ok(f))
			return 0;
		f = rd_ptr(f, L->cframe_current);
	}
	/* The same frames cs_py_walk would visit, each as its code object and the position in it
	 * (the instruction pointer, or f_lasti on 3.10): no line table is decoded. */
	for (int steps = 0; f && steps < MAX_STEPS; steps++) {
		uintptr_t code, at;

		if (L->chain == CHAIN_FRAMEOBJECT) {
			if (!is_type(f, frame_type))
				break;
			code = rd_ptr(f, L->fr_code);
			at = (uintptr_t)(uint32_t)rd_i32(f, L->fr_instr);
		} else {
			if (!ptr_ok(f))
				break;
			if (*(const int8_t *)(f + L->fr_owner) == L->owner_cstack) {
				f = rd_ptr(f, L->fr_previous);
				continue;
			}
			code = rd_ptr(f, L->fr_code);
			at = rd_ptr(f, L->fr_instr);
		}
		h = key_mix(key_mix(h, code), at);
		n++;
		f = rd_ptr(f, L->fr_previous);
	}
	*key = key_mix(h, (uint64_t)n);
	return n;
}

/* ---- the main thread's frames, for a thread without any (cs_py_walk_backward) ---- */

#define MAX_BORROWED 128 /* frames returned by one borrowed walk */

/* A read of this process's memory without the risk of a fault (main_pid is this process: checked
 * by the caller). */
static int safe_read(void *dst, uintptr_t src, size_t n)
{
	return cs_vm_read(main_pid, dst, src, n);
}

static int srd_ptr(uintptr_t base, uint32_t off, uintptr_t *v)
{
	return safe_read(v, base + off, sizeof(*v));
}

static int srd_i32(uintptr_t base, uint32_t off, int32_t *v)
{
	return safe_read(v, base + off, sizeof(*v));
}

static int srd_i64(uintptr_t base, uint32_t off, int64_t *v)
{
	return safe_read(v, base + off, sizeof(*v));
}

static int safe_is_type(uintptr_t obj, uintptr_t type)
{
	uintptr_t t;

	return ptr_ok(obj) && !srd_ptr(obj, PY_OB_TYPE, &t) && t == type;
}

/*
 * Does the str object s equal want (suffix 0), or end with want after a '/' or at its start
 * (suffix 1)? want is ASCII and shorter than 64 characters. Safe reads only.
 */
static int safe_str_is(const struct py_layout *L, uintptr_t s, const char *want, int suffix)
{
	size_t m = strlen(want);
	uint8_t buf[4 * 65];
	uint32_t state, kind;
	int32_t st;
	int64_t n, from;
	uintptr_t data;
	size_t units;

	if (m >= 64 || !safe_is_type(s, unicode_type) || srd_i64(s, L->str_length, &n) ||
	    srd_i32(s, L->str_state, &st))
		return 0;
	state = (uint32_t)st;
	kind = (state >> 2) & 7;
	if (n < (int64_t)m || n > MAX_STR || (!suffix && n != (int64_t)m) ||
	    (kind != 1 && kind != 2 && kind != 4))
		return 0;
	if (state & (1u << 5)) {
		data = s + ((state & (1u << 6)) ? L->str_ascii_size : L->str_compact_size);
	} else {
		if ((L->str_ready && !(state & L->str_ready)) ||
		    srd_ptr(s, L->str_compact_size, &data))
			return 0;
	}
	/* the matched part, and the character before it when there is one */
	from = n - (int64_t)m;
	units = m;
	if (from > 0) {
		from--;
		units++;
	}
	if (safe_read(buf, data + (uintptr_t)from * kind, units * kind))
		return 0;
	for (size_t i = 0; i < units; i++) {
		uint32_t c = kind == 1	 ? buf[i]
			     : kind == 2 ? (uint32_t)buf[2 * i] | (uint32_t)buf[2 * i + 1] << 8
					 : (uint32_t)buf[4 * i] | (uint32_t)buf[4 * i + 1] << 8 |
						   (uint32_t)buf[4 * i + 2] << 16 |
						   (uint32_t)buf[4 * i + 3] << 24;
		uint32_t w = units > m ? (i ? (uint8_t)want[i - 1] : '/') : (uint8_t)want[i];

		if (c != w)
			return 0;
	}
	return 1;
}

/*
 * Is code torch's call into the autograd engine, where the calling thread blocks until backward()
 * is done? torch >= 2.2: _engine_run_backward in torch/autograd/graph.py; before: backward (or
 * grad) in torch/autograd/__init__.py, which call Variable._execution_engine.run_backward.
 */
static int autograd_entry(const struct py_layout *L, uintptr_t code)
{
	static const struct {
		const char *file, *func;
	} entries[] = {
		{"torch/autograd/graph.py", "_engine_run_backward"},
		{"torch/autograd/__init__.py", "backward"},
		{"torch/autograd/__init__.py", "run_backward"},
		{"torch/autograd/__init__.py", "grad"},
	};
	uintptr_t file, func;

	if (srd_ptr(code, L->co_filename, &file) || srd_ptr(code, L->co_name, &func))
		return 0;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (safe_str_is(L, func, entries[i].func, 0) &&
		    safe_str_is(L, file, entries[i].file, 1))
			return 1;
	}
	return 0;
}

/* The innermost frame of thread's chain (0 when none or when ts is not that thread's state any
 * more). Safe reads only. */
static uintptr_t thread_head(const struct py_layout *L, uintptr_t ts, pthread_t thread)
{
	uintptr_t tid, interp, f;

	if (srd_ptr(ts, L->ts_thread_id, &tid) || tid != (uintptr_t)thread ||
	    srd_ptr(ts, L->ts_interp, &interp) || !ptr_ok(interp) || srd_ptr(ts, L->ts_frame, &f))
		return 0;
	if (L->chain == CHAIN_CFRAME && (!ptr_ok(f) || srd_ptr(f, L->cframe_current, &f)))
		return 0;
	return f;
}

/* One frame of another thread's chain, read with safe reads. */
struct borrowed_frame {
	uintptr_t code, next;
	uintptr_t instr; /* what says where the frame is: f_lasti (3.10), the instruction pointer */
	int64_t at;	 /* argument of code_line */
	int32_t line;	 /* a line known without the table: f_lineno (3.10), or -1 */
};

/* 1: a frame to report, 0: a frame the interpreter hides (skip it), -1: end of the walk. */
static int borrowed_frame(const struct py_layout *L, uintptr_t f, struct borrowed_frame *b)
{
	int64_t lasti, ncode;
	int32_t i32, first;
	int8_t owner;

	b->line = -1;
	if (!ptr_ok(f))
		return -1;
	if (L->chain == CHAIN_FRAMEOBJECT) {
		if (!safe_is_type(f, frame_type) || srd_ptr(f, L->fr_previous, &b->next) ||
		    srd_ptr(f, L->fr_code, &b->code) || !safe_is_type(b->code, code_type) ||
		    srd_i32(f, L->fr_instr, &i32) || srd_i32(f, L->fr_lineno, &b->line))
			return -1;
		b->instr = (uint32_t)i32;
		b->at = i32 < 0 ? -1 : (int64_t)i32 * 2;
		if (b->line <= 0)
			b->line = -1;
		return 1;
	}
	if (srd_ptr(f, L->fr_previous, &b->next) || safe_read(&owner, f + L->fr_owner, 1))
		return -1;
	if (owner == L->owner_cstack)
		return 0;
	if (srd_ptr(f, L->fr_code, &b->code))
		return -1;
	if (!safe_is_type(b->code, code_type))
		return L->chain == CHAIN_DIRECT ? 0 : -1;
	if (srd_ptr(f, L->fr_instr, &b->instr) || srd_i64(b->code, PY_OB_SIZE, &ncode))
		return -1;
	lasti = ((int64_t)b->instr - (int64_t)(b->code + L->co_code)) / 2;
	if (owner != OWNER_GENERATOR && L->co_firsttraceable) {
		if (srd_i32(b->code, L->co_firsttraceable, &first))
			return -1;
		if (lasti < first)
			return 0;
	}
	b->at = lasti;
	if (lasti < 0 || lasti >= ncode)
		b->line = 0;
	return 1;
}

/* Where frame f is now (as borrowed_frame's instr); 0 on success. */
static int frame_instr(const struct py_layout *L, uintptr_t f, uintptr_t *instr)
{
	int32_t i32;

	if (L->chain != CHAIN_FRAMEOBJECT)
		return srd_ptr(f, L->fr_instr, instr);
	if (srd_i32(f, L->fr_instr, &i32))
		return -1;
	*instr = (uint32_t)i32;
	return 0;
}

/*
 * The frames of thread (state ts), innermost first, read with safe reads while it stays in one
 * call: when the innermost frame is hidden (a call being set up), or fails entry (when given),
 * or the chain's head or the innermost frame's instruction moved during the walk, none.
 */
static int walk_borrowed(const struct py_layout *L, uintptr_t ts, pthread_t thread,
			 int (*entry)(const struct py_layout *, uintptr_t), cs_py_frame *out,
			 int max)
{
	uintptr_t head, f, first = 0, first_instr = 0, instr;
	int64_t at[MAX_BORROWED];
	int32_t line[MAX_BORROWED];
	int n = 0;

	if (max > MAX_BORROWED)
		max = MAX_BORROWED;
	head = f = thread_head(L, ts, thread);
	for (int steps = 0; f && n < max && steps < MAX_STEPS; steps++) {
		struct borrowed_frame b;
		int r = borrowed_frame(L, f, &b);

		if (r < 0)
			break;
		/* A hidden frame above the first one (a call being set up, an entry of the
		 * evaluation loop): the thread is running, not blocked in a call. */
		if (!r && !n)
			return 0;
		if (r > 0) {
			if (!n) {
				if (entry && !entry(L, b.code))
					return 0;
				first = f;
				first_instr = b.instr;
			}
			out[n].code = (const void *)b.code;
			at[n] = b.at;
			line[n] = b.line;
			n++;
		}
		f = b.next;
	}
	if (!n)
		return 0;
	/* Still blocked in the same call, at the same instruction: the frames read are the ones it
	 * had all along, and the code objects they run are alive. */
	if (thread_head(L, ts, thread) != head || frame_instr(L, first, &instr) ||
	    instr != first_instr)
		return 0;
	for (int i = 0; i < n; i++)
		out[i].line = line[i] >= 0 ? line[i] : code_line(L, (uintptr_t)out[i].code, at[i]);
	return n;
}

int cs_py_walk_backward(cs_py_frame *out, int max)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);
	uintptr_t ts = __atomic_load_n(&main_ts, __ATOMIC_ACQUIRE);

	if (!L || !ts || !safe_reads || !out || max <= 0)
		return 0;
	/* not from the main thread itself, nor from a child forked since it was noted */
	if (pthread_equal(pthread_self(), main_thread) || getpid() != main_pid)
		return 0;
	/* The innermost frame decides: anywhere but in the engine call, the main thread may be
	 * running and its frames change under the reader. */
	return walk_borrowed(L, ts, main_thread, autograd_entry, out, max);
}

uintptr_t cs_py_thread_state(void)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);

	return L ? (uintptr_t)get_this_thread_state() : 0;
}

int cs_py_walk_other(uintptr_t ts, uint64_t thread, cs_py_frame *out, int max)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);

	if (!L || !ts || !safe_reads || !out || max <= 0 || pthread_equal(pthread_self(), thread))
		return 0;
	return walk_borrowed(L, ts, (pthread_t)thread, NULL, out, max);
}

void cs_py_atfork_child(void)
{
	__atomic_store_n(&main_ts, 0, __ATOMIC_RELEASE);
}

/* ---- strings ---- */

/* Append code point c as UTF-8 if it fits whole (one byte is kept for the NUL). */
static int put_utf8(char *buf, size_t cap, size_t *len, uint32_t c)
{
	unsigned char u[4];
	size_t k;

	if (c >= 0xd800 && c <= 0xdfff)
		c = 0xfffd; /* lone surrogates (surrogateescape file names) are not UTF-8 */
	if (c < 0x80) {
		u[0] = (unsigned char)c;
		k = 1;
	} else if (c < 0x800) {
		u[0] = (unsigned char)(0xc0 | c >> 6);
		u[1] = (unsigned char)(0x80 | (c & 63));
		k = 2;
	} else if (c < 0x10000) {
		u[0] = (unsigned char)(0xe0 | c >> 12);
		u[1] = (unsigned char)(0x80 | ((c >> 6) & 63));
		u[2] = (unsigned char)(0x80 | (c & 63));
		k = 3;
	} else if (c < 0x110000) {
		u[0] = (unsigned char)(0xf0 | c >> 18);
		u[1] = (unsigned char)(0x80 | ((c >> 12) & 63));
		u[2] = (unsigned char)(0x80 | ((c >> 6) & 63));
		u[3] = (unsigned char)(0x80 | (c & 63));
		k = 4;
	} else {
		return put_utf8(buf, cap, len, 0xfffd);
	}
	if (*len + k >= cap)
		return -1;
	for (size_t i = 0; i < k; i++)
		buf[(*len)++] = (char)u[i];
	return 0;
}

/* A string of a code object another thread runs (which may be gone by the time it is read) is
 * copied with safe reads, its first SAFE_STR_UNITS characters at most. */
#define SAFE_STR_UNITS 240

/*
 * Copy a str object as UTF-8; with safe, through safe reads only. The state word holds interned
 * (bits 0-1), kind (2-4: 1, 2 or 4 bytes a code point), compact (5) and ascii (6) in every
 * supported version; bit 7 was "ready" up to 3.11 and is "statically allocated" since 3.12.
 * Compact ASCII data follows PyASCIIObject, other compact data follows PyCompactUnicodeObject,
 * and a legacy (non-compact) string points to its data from the word after
 * PyCompactUnicodeObject.
 */
static int copy_str(const struct py_layout *L, uintptr_t s, char *buf, size_t cap, int safe)
{
	uint8_t raw[4 * SAFE_STR_UNITS];
	const uint8_t *p;
	uint32_t state, kind;
	int32_t st;
	int64_t n;
	uintptr_t data;
	size_t len = 0;

	if (!buf || !cap)
		return 0;
	buf[0] = '\0';
	if (safe ? !safe_is_type(s, unicode_type) || srd_i64(s, L->str_length, &n) ||
			   srd_i32(s, L->str_state, &st)
		 : !is_type(s, unicode_type))
		return -1;
	if (!safe) {
		n = rd_i64(s, L->str_length);
		st = rd_i32(s, L->str_state);
	}
	state = (uint32_t)st;
	kind = (state >> 2) & 7;
	if (n < 0 || n > MAX_STR || (kind != 1 && kind != 2 && kind != 4))
		return -1;
	if (state & (1u << 5)) {
		data = s + ((state & (1u << 6)) ? L->str_ascii_size : L->str_compact_size);
	} else {
		if (L->str_ready && !(state & L->str_ready))
			return -1; /* a legacy string not made ready has only wchar_t data */
		if (safe ? srd_ptr(s, L->str_compact_size, &data)
			 : ((data = rd_ptr(s, L->str_compact_size)), 0))
			return -1;
		if (data < 4096 || data >= CS_USER_ADDR_END || (data & (kind - 1)))
			return -1;
	}
	p = (const uint8_t *)data;
	if (safe) {
		if (n > SAFE_STR_UNITS)
			n = SAFE_STR_UNITS;
		if (n && safe_read(raw, data, (size_t)n * kind))
			return -1;
		p = raw;
	}
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *u = p + i * kind; /* little-endian code units */
		uint32_t c = kind == 1	 ? u[0]
			     : kind == 2 ? (uint32_t)u[0] | (uint32_t)u[1] << 8
					 : (uint32_t)u[0] | (uint32_t)u[1] << 8 |
						   (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;

		if (put_utf8(buf, cap, &len, c))
			break;
	}
	buf[len] = '\0';
	return 0;
}

int cs_py_code_strings_other(const void *code, char *file, size_t file_cap, char *func,
			     size_t func_cap)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);
	uintptr_t co = (uintptr_t)code, f, n;

	if (!L || !safe_reads || !safe_is_type(co, code_type) || srd_ptr(co, L->co_filename, &f) ||
	    srd_ptr(co, L->co_name, &n) || copy_str(L, f, file, file_cap, 1) ||
	    copy_str(L, n, func, func_cap, 1))
		return -1;
	return 0;
}

int cs_py_code_strings(const void *code, char *file, size_t file_cap, char *func, size_t func_cap)
{
	const struct py_layout *L = __atomic_load_n(&layout, __ATOMIC_ACQUIRE);
	uintptr_t co = (uintptr_t)code;

	if (file && file_cap)
		file[0] = '\0';
	if (func && func_cap)
		func[0] = '\0';
	if (!L || !is_type(co, code_type))
		return -1;
	if (copy_str(L, rd_ptr(co, L->co_filename), file, file_cap, 0) ||
	    copy_str(L, rd_ptr(co, L->co_name), func, func_cap, 0))
		return -1;
	return 0;
}

/* ---- init ---- */

/* Major and minor of the interpreter: Py_Version (3.11+) or the string of Py_GetVersion. */
static int detect_version(void)
{
	const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
	const char *(*get_version)(void);
	const char *s;
	int major = 0, minor = 0;

	if (hex)
		return (int)((*hex >> 24) & 0xff) << 8 | (int)((*hex >> 16) & 0xff);
	/* Before 3.11: Py_GetVersion formats constants into a static buffer; it needs no GIL and
	 * may be called even before the interpreter is initialized. */
	*(void **)&get_version = dlsym(RTLD_DEFAULT, "Py_GetVersion");
	if (!get_version || !(s = get_version()))
		return 0;
	while (*s >= '0' && *s <= '9' && major < 100)
		major = major * 10 + (*s++ - '0');
	if (*s++ != '.')
		return 0;
	while (*s >= '0' && *s <= '9' && minor < 100)
		minor = minor * 10 + (*s++ - '0');
	return major << 8 | minor;
}

/* Fill layout_313 from the debug offsets at the start of _PyRuntime; 0 when they look right. */
static int load_debug_offsets(const void *runtime)
{
	uint64_t w[DBG_WORDS];
	struct py_layout *L = &layout_313;

	memcpy(w, runtime, sizeof(w));
	if (memcmp(w, "xdebugpy", 8) || ((w[DBG_VERSION] >> 16) & 0xffff) != 0x030d ||
	    w[DBG_FREE_THREADED])
		return -1;
	/* Every field used must lie inside the struct it belongs to. */
	if (w[DBG_TS_SIZE] > 4096 || w[DBG_FR_SIZE] > 4096 || w[DBG_CO_SIZE] > 4096 ||
	    w[DBG_BYTES_SIZE] > 4096 || w[DBG_STR_SIZE] > 4096)
		return -1;
	if (w[DBG_TS_INTERP] + 8 > w[DBG_TS_SIZE] || w[DBG_TS_CURRENT_FRAME] + 8 > w[DBG_TS_SIZE] ||
	    w[DBG_TS_THREAD_ID] + 8 > w[DBG_TS_SIZE] || w[DBG_FR_PREVIOUS] + 8 > w[DBG_FR_SIZE] ||
	    w[DBG_FR_EXECUTABLE] + 8 > w[DBG_FR_SIZE] || w[DBG_FR_INSTR_PTR] + 8 > w[DBG_FR_SIZE] ||
	    w[DBG_FR_OWNER] + 1 > w[DBG_FR_SIZE] || w[DBG_CO_FILENAME] + 8 > w[DBG_CO_SIZE] ||
	    w[DBG_CO_QUALNAME] + 8 > w[DBG_CO_SIZE] || w[DBG_CO_LINETABLE] + 8 > w[DBG_CO_SIZE] ||
	    w[DBG_CO_FIRSTLINENO] + 4 > w[DBG_CO_SIZE] ||
	    w[DBG_CO_CODE_ADAPTIVE] > w[DBG_CO_SIZE] || w[DBG_BYTES_SVAL] > w[DBG_BYTES_SIZE] ||
	    w[DBG_STR_LENGTH] + 8 > w[DBG_STR_SIZE] || w[DBG_STR_STATE] + 4 > w[DBG_STR_SIZE] ||
	    w[DBG_STR_ASCII_SIZE] > w[DBG_STR_SIZE])
		return -1;
	/* The fixed parts of the object header are not published for lookup: they must be the
	 * ones read everywhere here. */
	if (w[DBG_OB_TYPE] != PY_OB_TYPE || w[DBG_BYTES_OB_SIZE] != PY_OB_SIZE)
		return -1;
	memset(L, 0, sizeof(*L));
	L->chain = CHAIN_DIRECT;
	L->owner_cstack = OWNER_CSTACK;
	L->location_table = 1;
	L->ts_interp = (uint32_t)w[DBG_TS_INTERP];
	L->ts_thread_id = (uint32_t)w[DBG_TS_THREAD_ID];
	L->ts_frame = (uint32_t)w[DBG_TS_CURRENT_FRAME];
	L->fr_previous = (uint32_t)w[DBG_FR_PREVIOUS];
	L->fr_code = (uint32_t)w[DBG_FR_EXECUTABLE];
	L->fr_instr = (uint32_t)w[DBG_FR_INSTR_PTR];
	L->fr_owner = (uint32_t)w[DBG_FR_OWNER];
	L->co_filename = (uint32_t)w[DBG_CO_FILENAME];
	L->co_name = (uint32_t)w[DBG_CO_QUALNAME];
	L->co_linetable = (uint32_t)w[DBG_CO_LINETABLE];
	L->co_firstlineno = (uint32_t)w[DBG_CO_FIRSTLINENO];
	L->co_code = (uint32_t)w[DBG_CO_CODE_ADAPTIVE];
	/* _co_firsttraceable is not published: trust the header's offset only where the code object
	 * is laid out as in the headers it was taken from. */
	L->co_firsttraceable = L->co_code == CO_CODE_ADAPTIVE_313 ? CO_FIRSTTRACEABLE_313 : 0;
	L->bytes_sval = (uint32_t)w[DBG_BYTES_SVAL];
	L->str_length = (uint32_t)w[DBG_STR_LENGTH];
	L->str_state = (uint32_t)w[DBG_STR_STATE];
	L->str_ascii_size = (uint32_t)w[DBG_STR_ASCII_SIZE];
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject (3.12+). */
	L->str_compact_size = L->str_ascii_size + 16;
	return 0;
}

/* The object that defines sym, by its load address; NULL when unknown. */
static void *defining_object(const void *sym)
{
	Dl_info info;

	if (!sym || !dladdr(sym, &info))
		return NULL;
	return info.dli_fbase;
}

static int init_locked(void)
{
	void *gil = dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	int (*is_initialized)(void);
	void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	const struct py_layout *L = NULL;
	const void *syms[6];
	uintptr_t ts;
	void *base;

	if (!gil)
		return -1;
	found_version = detect_version();
	*(void **)&is_initialized = dlsym(RTLD_DEFAULT, "Py_IsInitialized");
	if (!is_initialized || !runtime)
		return -1;
	/* Debug builds (reference count checks, traced references) lay objects out differently. */
	if (dlsym(RTLD_DEFAULT, "_Py_NegativeRefcount") || dlsym(RTLD_DEFAULT, "_Py_RefTotal") ||
	    dlsym(RTLD_DEFAULT, "_Py_PrintReferences"))
		return -1;
	switch (found_version) {
	case 0x030a:
		L = &layout_310;
		break;
	case 0x030b:
		L = &layout_311;
		break;
	case 0x030c:
		L = &layout_312;
		break;
	case 0x030d:
		if (load_debug_offsets(runtime))
			return -1;
		L = &layout_313;
		break;
	default:
		return -1;
	}
	code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
	frame_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyFrame_Type");
	unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
	bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
	if (!code_type || !frame_type || !unicode_type || !bytes_type)
		return -1;
	/* All from one interpreter: a process with two copies of libpython is not supported. */
	syms[0] = gil;
	syms[1] = runtime;
	syms[2] = (const void *)code_type;
	syms[3] = (const void *)frame_type;
	syms[4] = (const void *)unicode_type;
	syms[5] = (const void *)bytes_type;
	base = defining_object(gil);
	for (size_t i = 1; i < sizeof(syms) / sizeof(syms[0]); i++) {
		if (!base || defining_object(syms[i]) != base)
			return -1;
	}
	/* Before Py_Initialize the thread-state key may not exist yet. */
	if (!is_initialized())
		return -1;
	*(void **)&get_this_thread_state = gil;
	/* Resolve what the hot path calls (lazily bound PLT entries inside libpython and here) now,
	 * so that no call from a CUDA callback goes through the dynamic linker. */
	ts = (uintptr_t)get_this_thread_state();
	(void)pthread_self();
	(void)pthread_equal(pthread_self(), pthread_self());
	(void)gettid();
	/* The borrowed walk reads another thread's memory with process_vm_readv: check it works (a
	 * seccomp filter may refuse it) and resolve it. */
	{
		uint64_t probe = 0x7079667261, copy = 0;

		safe_reads = !cs_vm_read(getpid(), &copy, (uintptr_t)&probe, sizeof(probe)) &&
			     copy == probe;
	}
	if (ptr_ok(ts) && rd_ptr(ts, L->ts_thread_id) == (uintptr_t)pthread_self() &&
	    ptr_ok(rd_ptr(ts, L->ts_interp)))
		note_main(ts);
	__atomic_store_n(&layout, L, __ATOMIC_RELEASE);
	return 0;
}

int cs_py_init(void)
{
	int rc;

	if (__atomic_load_n(&layout, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&init_lock);
	rc = __atomic_load_n(&layout, __ATOMIC_ACQUIRE) ? 0 : init_locked();
	pthread_mutex_unlock(&init_lock);
	return rc;
}

int cs_py_version(void)
{
	return found_version;
}
