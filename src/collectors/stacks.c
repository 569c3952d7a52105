/*
 * stacks.c - host call stacks at the API calls analyzers blame (waits, copies, allocations, frees).
 *
 * A stack is the native return addresses of the calling thread, from glibc's backtrace() (libgcc's
 * unwinder, which finds unwind tables through _dl_find_object on glibc 2.35 and later, without the
 * loader lock that dl_iterate_phdr would take while PyTorch dlopens cuBLAS under driver locks),
 * followed by the thread's Python frames read without the GIL (pyframes.c); a thread without any
 * (an autograd engine thread) gets the main thread's while that one waits in backward(), and the
 * stack is marked CS_STACK_PY_BORROWED. Stacks are deduplicated
 * here: a training loop hits the same few call sites every step, so each distinct stack is written
 * once (CS_REC_STACK) and API records refer to it by id. Before the first stack with a pc in a
 * mapping the spool file has not described yet, the mappings of the process are read from
 * /proc/self/maps (plain file reads: no loader lock) and written as CS_REC_MODULE, so that the
 * importer can symbolize after the process is gone.
 */
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "pyframes.h"

#define MAX_NATIVE  48
#define MAX_PY	    64
#define MAX_STACKS  (1 << 17) /* distinct stacks remembered; more are written without dedup */
#define CODE_CACHE  4096
#define SKIP_FRAMES 2 /* cs_stack_capture and the API callback */

struct stack_key {
	uint64_t hash;
	uint32_t id;
};

struct module_range {
	uint64_t start, end;
};

static pthread_mutex_t stack_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stack_key *stack_table; /* open addressing, MAX_STACKS * 2 slots */
static uint32_t stack_count, next_stack_id = 1;
static int python_ok;
static int enabled;
/* executable mappings already written as CS_REC_MODULE, sorted by start */
static struct module_range *modules;
static size_t nmodules, modules_cap;

/* code object -> interned file and function, so that each frame costs no string work after the
 * first time */
struct code_entry {
	const void *code;
	uint32_t file_sid, func_sid;
};
static struct code_entry code_cache[CODE_CACHE];

int cs_stacks_init(int python)
{
	void *warm[4];

	/* The first backtrace() loads libgcc_s with dlopen: do it here, not inside a CUDA callback.
	 */
	backtrace(warm, 4);
	stack_table = calloc(MAX_STACKS * 2, sizeof(*stack_table));
	if (!stack_table)
		return -1;
	python_ok = python && cs_py_init() == 0;
	enabled = 1;
	return 0;
}

int cs_stacks_python(void)
{
	return python_ok;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static int module_known(uint64_t pc)
{
	size_t lo = 0, hi = nmodules;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (modules[mid].end <= pc)
			lo = mid + 1;
		else if (modules[mid].start > pc)
			hi = mid;
		else
			return 1;
	}
	return 0;
}

static void module_add(uint64_t start, uint64_t end)
{
	size_t i;

	if (nmodules == modules_cap) {
		size_t ncap = modules_cap ? modules_cap * 2 : 256;
		struct module_range *nm = realloc(modules, ncap * sizeof(*nm));

		if (!nm)
			return;
		modules = nm;
		modules_cap = ncap;
	}
	for (i = nmodules; i > 0 && modules[i - 1].start > start; i--)
		modules[i] = modules[i - 1];
	modules[i].start = start;
	modules[i].end = end;
	nmodules++;
}

/* Read /proc/self/maps and write the executable file mappings not written yet. Called under
 * stack_lock. */
static void modules_refresh(void)
{
	char buf[8192], line[4096 + 256];
	size_t ll = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			unsigned long long start, end, off;
			char perms[8], path[4096];
			struct cs_rec_module r;

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			path[0] = '\0';
			if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &start, &end,
				   perms, &off, path) < 4)
				continue;
			if (perms[2] != 'x' || path[0] != '/' || module_known(start))
				continue;
			memset(&r, 0, sizeof(r));
			r.start = start;
			r.end = end;
			r.offset = off;
			r.path_sid = cs_intern(path, (size_t)-1);
			cs_out_write(&r, sizeof(r), CS_REC_MODULE, 0);
			module_add(start, end);
		}
	}
	close(fd);
}

static void code_strings(const void *code, uint32_t *file_sid, uint32_t *func_sid)
{
	struct code_entry *e = &code_cache[((uintptr_t)code >> 4) & (CODE_CACHE - 1)];
	char file[1024], func[256];
	int hit;

	/* Threads capture at once: an entry is read and written whole, under the lock. */
	pthread_mutex_lock(&stack_lock);
	hit = e->code == code;
	if (hit) {
		*file_sid = e->file_sid;
		*func_sid = e->func_sid;
	}
	pthread_mutex_unlock(&stack_lock);
	if (hit)
		return;
	if (cs_py_code_strings(code, file, sizeof(file), func, sizeof(func))) {
		*file_sid = *func_sid = 0;
		return;
	}
	*file_sid = cs_intern(file, (size_t)-1);
	*func_sid = cs_intern(func, (size_t)-1);
	pthread_mutex_lock(&stack_lock);
	e->code = code;
	e->file_sid = *file_sid;
	e->func_sid = *func_sid;
	pthread_mutex_unlock(&stack_lock);
}

/* The stack of the caller skip frames above this function's caller. */
static uint32_t capture(int skip)
{
	void *pcs[MAX_NATIVE + SKIP_FRAMES + 1];
	cs_py_frame py[MAX_PY];
	struct {
		struct cs_rec_stack h;
		uint64_t pc[MAX_NATIVE];
		struct cs_rec_pyframe py[MAX_PY];
	} rec;
	struct cs_rec_pyframe *pyf;
	int n, npy = 0, depth;
	uint32_t flags = 0;
	uint64_t h = 0;
	uint32_t id = 0;
	size_t slot, size;

	if (!enabled)
		return 0;
	n = backtrace(pcs, MAX_NATIVE + SKIP_FRAMES + skip);
	depth = n > SKIP_FRAMES + skip ? n - SKIP_FRAMES - skip : 0;
	if (depth > MAX_NATIVE)
		depth = MAX_NATIVE;
	if (python_ok) {
		npy = cs_py_walk(py, MAX_PY);
		if (!npy && (npy = cs_py_walk_backward(py, MAX_PY)) > 0)
			flags |= CS_STACK_PY_BORROWED;
	}
	for (int i = 0; i < depth; i++) {
		rec.pc[i] = (uint64_t)(uintptr_t)pcs[i + SKIP_FRAMES + skip];
		h = mix(h, rec.pc[i]);
	}
	/* Python frames follow the pcs directly in the record. */
	pyf = (struct cs_rec_pyframe *)&rec.pc[depth];
	for (int i = 0; i < npy; i++) {
		code_strings(py[i].code, &pyf[i].file_sid, &pyf[i].func_sid);
		pyf[i].line = py[i].line;
		pyf[i].pad = 0;
		h = mix(h, ((uint64_t)pyf[i].file_sid << 32) | pyf[i].func_sid);
		h = mix(h, (uint64_t)(uint32_t)pyf[i].line);
	}
	if (!depth && !npy)
		return 0;
	h = mix(h, (uint64_t)depth << 32 | (uint32_t)npy);
	h = mix(h, flags);
	if (!h)
		h = 1;
	pthread_mutex_lock(&stack_lock);
	/* A hash match is taken as the same stack: 64-bit hashes of a few thousand stacks do not
	 * collide in practice, and a collision only misattributes a location. */
	for (slot = h & (MAX_STACKS * 2 - 1); stack_table[slot].hash;
	     slot = (slot + 1) & (MAX_STACKS * 2 - 1)) {
		if (stack_table[slot].hash == h) {
			id = stack_table[slot].id;
			goto out;
		}
	}
	id = next_stack_id++;
	if (stack_count < MAX_STACKS) {
		stack_table[slot].hash = h;
		stack_table[slot].id = id;
		stack_count++;
	}
	for (int i = 0; i < depth; i++) {
		if (!module_known(rec.pc[i])) {
			modules_refresh();
			break;
		}
	}
	memset(&rec.h, 0, sizeof(rec.h));
	rec.h.id = id;
	rec.h.depth = (uint32_t)depth;
	rec.h.py_depth = (uint32_t)npy;
	rec.h.flags = flags;
	size = sizeof(rec.h) + (size_t)depth * sizeof(uint64_t) + (size_t)npy * sizeof(*pyf);
	cs_out_write(&rec, size, CS_REC_STACK, cs_tid());
out:
	pthread_mutex_unlock(&stack_lock);
	return id;
}

uint32_t cs_stack_capture(void)
{
	return capture(0);
}

/* ---- launch sites ---- */

/*
 * A kernel launch's stack is captured the way a wait's is, but launches come a thousand times
 * more often, from a few call sites that repeat every step, so each launch first computes a key
 * that tells the call site apart cheaply and captures only the first time it sees that key:
 *   - a thread with Python frames: cs_py_chain_key(), the code objects and positions of its
 *     frames (a walk of the chain, no line decoded); every launch from the same Python line
 *     reached the same way shares the captured stack;
 *   - a thread without (a C program, an autograd engine thread): native frames cannot be keyed
 *     without unwinding, which is what costs, so launches are sampled per kernel function instead:
 *     the first LAUNCH_FIRST launches of each function and then the launches whose count is a power
 *     of two get a stack, the others none (analyzers take a kernel's location from the launches
 *     that have one).
 * Both tables are read without a lock (an entry's value is published before its key) and filled
 * under launch_lock; when one is full, keys not in it get no stack rather than a capture each.
 */
#define LAUNCH_SITES (1 << 14) /* distinct Python call sites keyed */
#define LAUNCH_FUNCS (1 << 12) /* distinct kernel functions counted */
#define LAUNCH_FIRST 4

struct launch_site {
	_Atomic uint64_t key;
	_Atomic uint32_t id;
};
struct launch_func {
	_Atomic uintptr_t fn;
	_Atomic uint32_t count;
};
static struct launch_site launch_sites[LAUNCH_SITES * 2];
static struct launch_func launch_funcs[LAUNCH_FUNCS * 2];
static uint32_t nlaunch_sites, nlaunch_funcs;
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t launch_by_python(uint64_t key)
{
	size_t mask = LAUNCH_SITES * 2 - 1, slot;
	uint32_t id;
	uint64_t k;

	if (!key)
		key = 1;
	for (slot = mix(0, key) & mask;
	     (k = atomic_load_explicit(&launch_sites[slot].key, memory_order_acquire));
	     slot = (slot + 1) & mask)
		if (k == key)
			return atomic_load_explicit(&launch_sites[slot].id, memory_order_relaxed);
	if (atomic_load_explicit(&launch_sites[slot].key, memory_order_relaxed) == 0 &&
	    __atomic_load_n(&nlaunch_sites, __ATOMIC_RELAXED) >= LAUNCH_SITES)
		return 0;
	id = capture(1);
	pthread_mutex_lock(&launch_lock);
	for (slot = mix(0, key) & mask;
	     (k = atomic_load_explicit(&launch_sites[slot].key, memory_order_relaxed)) && k != key;
	     slot = (slot + 1) & mask)
		;
	if (!k && nlaunch_sites < LAUNCH_SITES) {
		atomic_store_explicit(&launch_sites[slot].id, id, memory_order_relaxed);
		atomic_store_explicit(&launch_sites[slot].key, key, memory_order_release);
		__atomic_store_n(&nlaunch_sites, nlaunch_sites + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&launch_lock);
	return id;
}

static uint32_t launch_sampled(const void *fn)
{
	size_t mask = LAUNCH_FUNCS * 2 - 1, slot;
	uintptr_t want = (uintptr_t)fn ? (uintptr_t)fn : 1, f;
	uint32_t n;

	for (slot = mix(0, want) & mask;
	     (f = atomic_load_explicit(&launch_funcs[slot].fn, memory_order_acquire)) && f != want;
	     slot = (slot + 1) & mask)
		;
	if (!f) {
		pthread_mutex_lock(&launch_lock);
		for (slot = mix(0, want) & mask;
		     (f = atomic_load_explicit(&launch_funcs[slot].fn, memory_order_relaxed)) &&
		     f != want;
		     slot = (slot + 1) & mask)
			;
		if (!f) {
			if (nlaunch_funcs >= LAUNCH_FUNCS) {
				pthread_mutex_unlock(&launch_lock);
				return 0;
			}
			atomic_store_explicit(&launch_funcs[slot].fn, want, memory_order_release);
			nlaunch_funcs++;
		}
		pthread_mutex_unlock(&launch_lock);
	}
	n = atomic_fetch_add_explicit(&launch_funcs[slot].count, 1, memory_order_relaxed) + 1;
	if (n > LAUNCH_FIRST && (n & (n - 1)))
		return 0;
	return capture(1);
}

uint32_t cs_stack_capture_launch(const void *fn)
{
	uint64_t key;

	if (!enabled)
		return 0;
	if (python_ok && cs_py_chain_key(&key) > 0)
		return launch_by_python(key);
	return launch_sampled(fn);
}

void cs_stacks_atfork_prepare(void)
{
	pthread_mutex_lock(&stack_lock);
}

void cs_stacks_atfork_parent(void)
{
	pthread_mutex_unlock(&stack_lock);
}

void cs_stacks_atfork_child(void)
{
	pthread_mutex_init(&stack_lock, NULL);
	pthread_mutex_init(&launch_lock, NULL);
	enabled = 0;
	cs_py_atfork_child();
}
