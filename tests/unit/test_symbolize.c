/*
 * test_symbolize.c - native pc symbolization (src/spool/symbolize.c).
 *
 * The mappings come from /proc/self/maps, as the injection library writes them, and the pcs are
 * the test binary's own functions (a global one, a static one, a C++-mangled one defined in
 * assembly, a real return address) and libc's getpid: names, demangling, offsets, the pc - 1 rule,
 * files that cannot be read, mappings replaced by later ones. A timed case symbolizes 100k
 * distinct pcs of a large shared library (CUSCOPE_SYM_BENCH_LIB, else the largest .so under
 * /usr/lib/x86_64-linux-gnu and /usr/local/cuda/lib64) and prints the rate.
 */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize.h"
#include "testutil.h"

/* ---- functions to find ---- */

/* foo::bar(), as a C++ compiler would name it; nop and ret assemble on x86-64 and aarch64. */
__asm__(".pushsection .text\n"
	".globl _ZN3foo3barEv\n"
	".type _ZN3foo3barEv, @function\n"
	"_ZN3foo3barEv:\n"
	"\tnop\n\tnop\n\tnop\n\tnop\n\tret\n"
	".size _ZN3foo3barEv, .-_ZN3foo3barEv\n"
	".popsection\n");
void cpp_foo_bar(void) __asm__("_ZN3foo3barEv");

static volatile int sink;

__attribute__((noinline)) int sym_global_function(int x)
{
	sink += x;
	return sink * 3 + x;
}

__attribute__((noinline)) static int sym_static_function(int x)
{
	sink -= x;
	return sink * 5 - x;
}

/* The return address into its caller. */
__attribute__((noinline)) static uintptr_t return_address(void)
{
	sink++;
	return (uintptr_t)__builtin_extract_return_addr(__builtin_return_address(0));
}

__attribute__((noinline)) static uintptr_t sym_caller(void)
{
	uintptr_t ra = return_address();

	sink++; /* not a tail call */
	return ra;
}

/* The line of the call in sym_line_caller (test_line_of_call). */
static int call_line;

__attribute__((noinline)) static uintptr_t sym_line_caller(void)
{
	uintptr_t ra;

	call_line = __LINE__ + 1;
	ra = return_address();
	sink++; /* not a tail call */
	return ra;
}

/* ---- mappings ---- */

/* The file mappings of this process, as the injection library reads them. */
static void map_self(struct cs_modmap *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 256];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off;
		char perms[8], *path;
		int n = 0;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &n) <
			    4 ||
		    !n)
			continue;
		path = line + n;
		path[strcspn(path, "\n")] = '\0';
		if (path[0] != '/')
			continue;
		ck_assert_int_eq(cs_modmap_add(m, start, end, off, path, strlen(path)), 0);
	}
	fclose(f);
}

static char *self_exe(void)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	return buf;
}

struct ctx {
	struct cs_symbolizer *s;
	struct cs_modmap m;
};

static void ctx_open(struct ctx *c)
{
	c->s = cs_symbolizer_new();
	ck_assert_ptr_nonnull(c->s);
	cs_modmap_init(&c->m, c->s);
}

static void ctx_close(struct ctx *c)
{
	cs_modmap_free(&c->m);
	cs_symbolizer_free(c->s);
}

static void check_sym(struct ctx *c, uintptr_t pc, const char *module, const char *symbol,
		      uint64_t offset)
{
	struct cs_sym_result r;

	cs_symbolize(&c->m, pc, &r);
	ck_assert_msg(r.module && !strcmp(r.module, module), "pc %#lx: module '%s', want '%s'",
		      (unsigned long)pc, r.module ? r.module : "(null)", module);
	ck_assert_msg(r.symbol && !strcmp(r.symbol, symbol), "pc %#lx: symbol '%s', want '%s'",
		      (unsigned long)pc, r.symbol ? r.symbol : "(null)", symbol);
	ck_assert_uint_eq(r.offset, offset);
}

/* ---- tests ---- */

START_TEST(test_own_functions)
{
	struct ctx c;
	const char *exe = self_exe();

	ctx_open(&c);
	map_self(&c.m);
	/* pc + k: a return address k bytes into the function */
	check_sym(&c, (uintptr_t)&sym_global_function + 1, exe, "sym_global_function", 1);
	check_sym(&c, (uintptr_t)&sym_global_function + 3, exe, "sym_global_function", 3);
	check_sym(&c, (uintptr_t)&sym_static_function + 2, exe, "sym_static_function", 2);
	check_sym(&c, (uintptr_t)&cpp_foo_bar + 1, exe, "foo::bar()", 1);
	check_sym(&c, (uintptr_t)&cpp_foo_bar + 4, exe, "foo::bar()", 4);
	ctx_close(&c);
}
END_TEST

START_TEST(test_return_address)
{
	struct ctx c;
	struct cs_sym_result r;
	uintptr_t ra = sym_caller();

	ctx_open(&c);
	map_self(&c.m);
	cs_symbolize(&c.m, ra, &r);
	ck_assert_str_eq(r.module, self_exe());
	ck_assert_str_eq(r.symbol, "sym_caller");
	ck_assert_uint_eq(r.offset, ra - (uintptr_t)&sym_caller);
	ck_assert_uint_gt(r.offset, 0);
	/* the first byte of a function, as a return address, belongs to what precedes it */
	cs_symbolize(&c.m, (uintptr_t)&sym_global_function, &r);
	ck_assert(r.symbol == NULL || strcmp(r.symbol, "sym_global_function") != 0);
	ctx_close(&c);
}
END_TEST

/* With libdw, a return address into a function of this test (built with -g) names the file and the
 * line of the call; without it, no file. */
START_TEST(test_line_of_call)
{
	struct ctx c;
	struct cs_sym_result r;
	uintptr_t ra = sym_line_caller();

	ctx_open(&c);
	map_self(&c.m);
	cs_symbolize(&c.m, ra, &r);
	ck_assert_str_eq(r.symbol, "sym_line_caller");
#ifdef CUSCOPE_HAVE_LIBDW
	ck_assert_ptr_nonnull(r.file);
	ck_assert_msg(strstr(r.file, "test_symbolize.c") != NULL, "%s", r.file);
	ck_assert_int_eq(r.line, call_line);
	/* a library without debug information: its function, no line */
	{
		uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getppid") + 1;

		cs_symbolize(&c.m, pc, &r);
		ck_assert_ptr_null(r.file);
		ck_assert_int_eq(r.line, 0);
	}
#else
	ck_assert_ptr_null(r.file);
	ck_assert_int_eq(r.line, 0);
#endif
	ctx_close(&c);
}
END_TEST

START_TEST(test_libc)
{
	struct ctx c;
	struct cs_sym_result r;
	uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
	size_t loaded = 0, unreadable = 0;

	ck_assert(pc != 0);
	ctx_open(&c);
	map_self(&c.m);
	cs_symbolize(&c.m, pc + 1, &r);
	ck_assert_ptr_nonnull(r.module);
	ck_assert_msg(strstr(r.module, "libc.so") != NULL, "module %s", r.module);
	/* getpid and __getpid share the address: the name without underscores wins */
	ck_assert_str_eq(r.symbol, "getpid");
	ck_assert_uint_eq(r.offset, 1);
	/* the same file again comes from the cache */
	cs_symbolize(&c.m, (uintptr_t)dlsym(RTLD_DEFAULT, "getppid") + 1, &r);
	ck_assert_str_eq(r.symbol, "getppid");
	cs_symbolizer_counts(c.s, &loaded, &unreadable);
	ck_assert_uint_eq(loaded, 1);
	ck_assert_uint_eq(unreadable, 0);
	ctx_close(&c);
}
END_TEST

START_TEST(test_unreadable_and_unmapped)
{
	static const char gone[] = "/nonexistent/libgone.so";
	struct ctx c;
	struct cs_sym_result r;
	size_t loaded = 1, unreadable = 0;

	ctx_open(&c);
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x10000, 0x20000, 0x3000, gone, strlen(gone)), 0);
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x30000, 0x31000, 0, "/dev/null", 9), 0);
	cs_symbolize(&c.m, 0x10100, &r);
	ck_assert_str_eq(r.module, gone);
	ck_assert_ptr_null(r.symbol);
	ck_assert_uint_eq(r.offset, 0x3100); /* the pc's offset in the file */
	cs_symbolize(&c.m, 0x30010, &r);
	ck_assert_str_eq(r.module, "/dev/null");
	ck_assert_ptr_null(r.symbol);
	ck_assert_uint_eq(r.offset, 0x10);
	/* outside every mapping; the first byte past a mapping is still its return address */
	cs_symbolize(&c.m, 0x25000, &r);
	ck_assert_ptr_null(r.module);
	ck_assert_ptr_null(r.symbol);
	ck_assert_uint_eq(r.offset, 0);
	cs_symbolize(&c.m, 0x20000, &r);
	ck_assert_str_eq(r.module, gone);
	cs_symbolize(&c.m, 0x10000, &r);
	ck_assert_ptr_null(r.module);
	cs_symbolize(&c.m, 0, &r);
	ck_assert_ptr_null(r.module);
	cs_symbolizer_counts(c.s, &loaded, &unreadable);
	ck_assert_uint_eq(loaded, 0);
	ck_assert_uint_eq(unreadable, 2);
	ctx_close(&c);
}
END_TEST

START_TEST(test_mappings_replaced)
{
	struct ctx c;
	struct cs_sym_result r;

	ctx_open(&c);
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x1000, 0x5000, 0x100000, "/x/a.so", 7), 0);
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x6000, 0x7000, 0, "/x/c.so", 7), 0);
	/* b.so lands in the middle of a.so: a.so keeps both ends */
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x2000, 0x3000, 0x40000, "/x/b.so", 7), 0);
	ck_assert_uint_eq(c.m.n, 4);
	cs_symbolize(&c.m, 0x1801, &r);
	ck_assert_str_eq(r.module, "/x/a.so");
	ck_assert_uint_eq(r.offset, 0x100801);
	cs_symbolize(&c.m, 0x2801, &r);
	ck_assert_str_eq(r.module, "/x/b.so");
	ck_assert_uint_eq(r.offset, 0x40801);
	cs_symbolize(&c.m, 0x4801, &r);
	ck_assert_str_eq(r.module, "/x/a.so");
	ck_assert_uint_eq(r.offset, 0x103801);
	/* the same range again, another file (a library unloaded, another loaded there) */
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x6000, 0x7000, 0, "/x/d.so", 7), 0);
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x6000, 0x7000, 0, "/x/d.so", 7), 0);
	ck_assert_uint_eq(c.m.n, 4);
	cs_symbolize(&c.m, 0x6801, &r);
	ck_assert_str_eq(r.module, "/x/d.so");
	/* one mapping over all of them */
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x0, 0x8000, 0, "/x/e.so", 7), 0);
	ck_assert_uint_eq(c.m.n, 1);
	cs_symbolize(&c.m, 0x2801, &r);
	ck_assert_str_eq(r.module, "/x/e.so");
	ck_assert_uint_eq(r.offset, 0x2801);
	/* an empty range changes nothing */
	ck_assert_int_eq(cs_modmap_add(&c.m, 0x9000, 0x9000, 0, "/x/f.so", 7), 0);
	ck_assert_uint_eq(c.m.n, 1);
	ctx_close(&c);
}
END_TEST

/*
 * Mappings added in a random order, overlapping each other, checked after each batch against a
 * painted map of every address: the tree must give what a flat array of owners gives.
 */
#define PAINT_SPAN 4096
#define PAINT_BASE 0x100000ull

START_TEST(test_mappings_random_order)
{
	static const char *const paths[] = {"/x/p0.so", "/x/p1.so", "/x/p2.so", "/x/p3.so"};
	static int owner[PAINT_SPAN];
	static uint64_t file_off[PAINT_SPAN];
	static int stamp[PAINT_SPAN]; /* the add that mapped the address */
	static const uint64_t lens[] = {1, 2, 3, 8, 16, 32, 64, 900};
	uint64_t state = 0x9e3779b97f4a7c15ull;
	struct ctx c;
	struct cs_sym_result r;
	int bad = 0, checked = 0;

	for (int a = 0; a < PAINT_SPAN; a++)
		owner[a] = -1;
	ctx_open(&c);
	for (int i = 1; i <= 3000; i++) {
		uint64_t start, len, off;
		int k;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		start = state % PAINT_SPAN;
		len = lens[(state >> 20) % 8];
		if (start + len > PAINT_SPAN)
			len = PAINT_SPAN - start;
		off = (state >> 32) % 100000;
		k = (int)((state >> 40) % 4);
		ck_assert_int_eq(cs_modmap_add(&c.m, PAINT_BASE + start, PAINT_BASE + start + len,
					       off, paths[k], strlen(paths[k])),
				 0);
		for (uint64_t a = start; a < start + len; a++) {
			owner[a] = k;
			file_off[a] = off + (a - start);
			stamp[a] = i;
		}
		if (i % 250)
			continue;
		/* every address, and the first one past the span */
		for (int a = 0; a <= PAINT_SPAN; a++) {
			int want = a < PAINT_SPAN ? owner[a] : -1;

			cs_symbolize(&c.m, PAINT_BASE + (uint64_t)a + 1, &r);
			checked++;
			if (want < 0 ? r.module != NULL
				     : !r.module || strcmp(r.module, paths[want]) ||
					       r.offset != file_off[a] + 1)
				bad++;
		}
	}
	ck_assert_int_eq(checked, 12 * (PAINT_SPAN + 1));
	ck_assert_int_eq(bad, 0);
	/* one mapping per run of addresses that one add mapped (an add cut in two makes two) */
	{
		size_t runs = 0;

		for (int a = 0; a < PAINT_SPAN; a++)
			if (owner[a] >= 0 &&
			    (a == 0 || owner[a - 1] < 0 || stamp[a - 1] != stamp[a]))
				runs++;
		ck_assert_uint_gt(runs, 50);
		ck_assert_uint_eq(c.m.n, runs);
	}
	ctx_close(&c);
}
END_TEST

/* ---- speed ---- */

/* The largest regular .so file of dir (not following links to smaller names twice). */
static void largest_so(const char *dir, char *best, off_t *best_size)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct stat st;

		if (!strstr(de->d_name, ".so"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) || !S_ISREG(st.st_mode) || st.st_size <= *best_size)
			continue;
		*best_size = st.st_size;
		snprintf(best, PATH_MAX, "%s", path);
	}
	closedir(d);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define BENCH_PCS  100000
#define BENCH_BASE 0x7f0000000000ull

START_TEST(test_speed)
{
	static char lib[PATH_MAX];
	const char *env = getenv("CUSCOPE_SYM_BENCH_LIB");
	off_t size = 0;
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	struct stat st;
	uint64_t text_lo[64], text_len[64], total = 0, state = 88172645463325252ull;
	struct ctx c;
	struct cs_sym_result r;
	double t0, t1, t2;
	int fd, mapped = 0, named = 0, phn, ntext = 0;

	if (env && *env) {
		snprintf(lib, sizeof(lib), "%s", env);
	} else {
		largest_so("/usr/lib/x86_64-linux-gnu", lib, &size);
		largest_so("/usr/local/cuda/lib64", lib, &size);
	}
	if (!lib[0]) {
		printf("symbolize speed: no shared library found, skipped\n");
		return;
	}
	/* mappings as the loader makes them: one per PT_LOAD, page-aligned */
	fd = open(lib, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(pread(fd, &eh, sizeof(eh), 0), sizeof(eh));
	phn = eh.e_phnum < 64 ? eh.e_phnum : 64;
	ck_assert_int_eq(pread(fd, ph, (size_t)phn * sizeof(*ph), (off_t)eh.e_phoff),
			 (ssize_t)((size_t)phn * sizeof(*ph)));
	close(fd);
	ctx_open(&c);
	for (int i = 0; i < phn; i++) {
		uint64_t va = ph[i].p_vaddr & ~0xfffull, off = ph[i].p_offset & ~0xfffull;
		uint64_t end = (ph[i].p_vaddr + ph[i].p_memsz + 0xfff) & ~0xfffull;

		if (ph[i].p_type != PT_LOAD)
			continue;
		ck_assert_int_eq(cs_modmap_add(&c.m, BENCH_BASE + va, BENCH_BASE + end, off, lib,
					       strlen(lib)),
				 0);
		if ((ph[i].p_flags & PF_X) && ph[i].p_filesz) {
			text_lo[ntext] = BENCH_BASE + ph[i].p_vaddr;
			text_len[ntext] = ph[i].p_filesz;
			total += text_len[ntext++];
		}
	}
	ck_assert_uint_gt(total, 4 * BENCH_PCS);

	/* the first lookup reads the file: its symbols, sorted */
	t0 = now_s();
	cs_symbolize(&c.m, text_lo[0] + 1, &r);
	t1 = now_s();
	/* distinct pcs spread over the executable segments: a stride plus a little noise */
	for (uint64_t i = 0; i < BENCH_PCS; i++) {
		uint64_t span = total / BENCH_PCS, pos, pc;
		int t = 0;

		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		pos = i * span + state % span;
		while (pos >= text_len[t]) /* pos < total */
			pos -= text_len[t++];
		pc = text_lo[t] + pos + 1;
		cs_symbolize(&c.m, pc, &r);
		/* no ck_assert in the loop: each one is a write to Check's pipe */
		mapped += r.module != NULL;
		named += r.symbol != NULL;
	}
	t2 = now_s();
	printf("symbolize speed: %s (%lld MB): file read and sorted in %.1f ms; %d distinct pcs in "
	       "%.1f ms (%.2f us each), %d with a symbol\n",
	       lib, (long long)st.st_size >> 20, (t1 - t0) * 1e3, BENCH_PCS, (t2 - t1) * 1e3,
	       (t2 - t1) * 1e6 / BENCH_PCS, named);
	ck_assert_int_eq(mapped, BENCH_PCS);
	/* far above what it takes: catches a lookup that went linear */
	ck_assert_msg(t2 - t1 < 10.0, "100k pcs took %.1f s", t2 - t1);
	ctx_close(&c);
}
END_TEST

static Suite *symbolize_suite(void)
{
	Suite *s = suite_create("symbolize");
	TCase *tc = tcase_create("symbolize");
	TCase *speed = tcase_create("speed");

	tcase_add_test(tc, test_own_functions);
	tcase_add_test(tc, test_return_address);
	tcase_add_test(tc, test_line_of_call);
	tcase_add_test(tc, test_libc);
	tcase_add_test(tc, test_unreadable_and_unmapped);
	tcase_add_test(tc, test_mappings_replaced);
	tcase_add_test(tc, test_mappings_random_order);
	suite_add_tcase(s, tc);
	tcase_add_test(speed, test_speed);
	tcase_set_timeout(speed, 120);
	suite_add_tcase(s, speed);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(symbolize_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
