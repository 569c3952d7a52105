/*
 * symbolize.c - native return addresses to module, function and offset (see symbolize.h).
 *
 * Each module file is mapped read-only once, the first time a pc falls in it, and stays mapped
 * until the symbolizer is freed: symbol names are read in place from its string table. Only the
 * function symbols (STT_FUNC, STT_GNU_IFUNC) with an address are kept, as 16-byte entries sorted
 * by address; of several symbols at one address (aliases) one is kept: one with a size, then a
 * global or weak one, then the one with the fewest leading underscores ("getpid" before
 * "__getpid"). Building the table touches the symbol table once; the string table is read only
 * for aliases and for the symbols a lookup returns, so a library of a million symbols costs its
 * sort and little else. Demangled names are made once per symbol and cached.
 *
 * A file that cannot be opened, is not a regular file, or is not a 64-bit ELF of this host's byte
 * order is remembered as unreadable: its pcs keep the module path and their file offset. Files are
 * named by their path, as /proc/PID/maps gave it; nothing checks that the file is the one the
 * process mapped (a library replaced after the job would give wrong names).
 */
#include <elf.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef CUSCOPE_HAVE_LIBDW
#include <elfutils/libdw.h>
#endif

#include "cuscope/demangle.h"
#include "cuscope/grow.h"
#include "symbolize.h"
#include "cuscope/u64map.h"


#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_ELFDATA ELFDATA2LSB
#else
#define HOST_ELFDATA ELFDATA2MSB
#endif

#define SYM_SIZE_MAX 0x7fffffffu

/* A function symbol, 16 bytes. */
struct sym {
	uint64_t addr;	    /* ELF virtual address */
	uint32_t name;	    /* offset in the string table */
	uint32_t size : 31; /* bytes, 0 when unknown; clamped to SYM_SIZE_MAX */
	uint32_t local : 1; /* STB_LOCAL */
};

/* A PT_LOAD segment: file bytes [off, off + filesz) are mapped at vaddr. */
struct load {
	uint64_t off, filesz, vaddr;
};

struct cs_sym_file {
	struct cs_sym_file *next; /* in its hash chain */
	char *path;
	int state; /* 0 not read yet, 1 read, -1 unreadable */
	void *map;
	size_t map_len;
	struct load *loads;
	size_t nloads;
	struct sym *syms;
	size_t nsyms;
	const char *strtab;
	size_t strtab_len;
	struct u64map demangled; /* symbol index -> char * (NULL: not a C++ name after all) */
	void *dwarf;		 /* Dwarf * of the file's debug sections (libdw), or NULL */
	int dwarf_fd;		 /* its descriptor */
	int dwarf_state;	 /* 0 not opened yet, 1 open, -1 no line table */
};

struct cs_symbolizer {
	struct u64map files; /* hash of the path -> struct cs_sym_file * (a chain) */
	struct cs_sym_file **all;
	size_t nall, cap;
	size_t loaded, unreadable;
};

/* ---- the file cache ---- */

static uint64_t path_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

struct cs_symbolizer *cs_symbolizer_new(void)
{
	struct cs_symbolizer *s = calloc(1, sizeof(*s));

	if (s)
		u64map_init(&s->files, sizeof(struct cs_sym_file *));
	return s;
}

static void file_free(struct cs_sym_file *f)
{
	struct u64map *m = &f->demangled;

	for (size_t i = 0; i < m->cap; i++)
		if (m->used[i])
			free(*(char **)u64map_val(m, i));
	u64map_free(m);
#ifdef CUSCOPE_HAVE_LIBDW
	if (f->dwarf) {
		dwarf_end(f->dwarf);
		close(f->dwarf_fd);
	}
#endif
	if (f->map)
		munmap(f->map, f->map_len);
	free(f->loads);
	free(f->syms);
	free(f->path);
	free(f);
}

void cs_symbolizer_free(struct cs_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nall; i++)
		file_free(s->all[i]);
	free(s->all);
	u64map_free(&s->files);
	free(s);
}

void cs_symbolizer_counts(const struct cs_symbolizer *s, size_t *loaded, size_t *unreadable)
{
	if (loaded)
		*loaded = s ? s->loaded : 0;
	if (unreadable)
		*unreadable = s ? s->unreadable : 0;
}

/* The cache entry of a path, made (not read) on first use; NULL when out of memory. */
static struct cs_sym_file *file_get(struct cs_symbolizer *s, const char *path, size_t len)
{
	uint64_t h = path_hash(path, len);
	struct cs_sym_file **head, *f;
	int created;

	head = u64map_get(&s->files, h);
	for (f = head ? *head : NULL; f; f = f->next)
		if (!strncmp(f->path, path, len) && !f->path[len])
			return f;
	if (cs_grow((void **)&s->all, &s->cap, s->nall + 1, sizeof(*s->all)))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->path = strndup(path, len);
	head = u64map_put(&s->files, h, &created);
	if (!f->path || !head) {
		free(f->path);
		free(f);
		return NULL;
	}
	u64map_init(&f->demangled, sizeof(char *));
	f->next = *head;
	*head = f;
	s->all[s->nall++] = f;
	return f;
}

/* ---- reading an ELF file ---- */

/* 1 when [off, off + len) lies inside the file. */
static int in_file(const struct cs_sym_file *f, uint64_t off, uint64_t len)
{
	return off <= f->map_len && len <= f->map_len - off;
}

static int read_loads(struct cs_sym_file *f, const Elf64_Ehdr *eh)
{
	const unsigned char *base = f->map;

	if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(f, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
		return -1;
	f->loads = calloc(eh->e_phnum ? eh->e_phnum : 1, sizeof(*f->loads));
	if (!f->loads)
		return -1;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, base + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		f->loads[f->nloads].off = ph.p_offset;
		f->loads[f->nloads].filesz = ph.p_filesz;
		f->loads[f->nloads].vaddr = ph.p_vaddr;
		f->nloads++;
	}
	return 0;
}

/*
 * Sort by address: a stable LSD radix sort on the address bits that vary, 11 bits a pass (two or
 * three passes for a library of less than 8 GiB), several times faster than qsort for the 500k+
 * symbols of libtorch. Returns -1 when out of memory.
 */
#define RADIX_BITS 11
static int sort_syms(struct sym **v, size_t n)
{
	uint64_t lo = UINT64_MAX, hi = 0, span;
	struct sym *src = *v, *dst;
	size_t *count;
	int bits;

	if (n < 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		lo = src[i].addr < lo ? src[i].addr : lo;
		hi = src[i].addr > hi ? src[i].addr : hi;
	}
	span = hi - lo;
	if (!span)
		return 0;
	bits = 64 - __builtin_clzll(span);
	dst = malloc(n * sizeof(*dst));
	count = malloc(sizeof(*count) << RADIX_BITS);
	if (!dst || !count) {
		free(dst);
		free(count);
		return -1;
	}
	for (int shift = 0; shift < bits; shift += RADIX_BITS) {
		size_t sum = 0;
		struct sym *t;

		memset(count, 0, sizeof(*count) << RADIX_BITS);
		for (size_t i = 0; i < n; i++)
			count[((src[i].addr - lo) >> shift) & ((1u << RADIX_BITS) - 1)]++;
		for (size_t d = 0; d < (1u << RADIX_BITS); d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[((src[i].addr - lo) >> shift) & ((1u << RADIX_BITS) - 1)]++] =
				src[i];
		t = src;
		src = dst;
		dst = t;
	}
	free(dst);
	free(count);
	*v = src;
	return 0;
}

/* Lower is better: among aliases, the one a person would call the function by (ties: the first
 * name). */
static int alias_rank(const struct cs_sym_file *f, const struct sym *s)
{
	const char *n = f->strtab + s->name;
	int r = 0;

	if (!s->size)
		r += 16;
	if (s->local)
		r += 8;
	for (int i = 0; i < 3 && n[i] == '_'; i++)
		r++;
	return r;
}

/*
 * The function symbols of one symbol table section, with its string table. 0 with f->syms set
 * (possibly empty), or -1 when the section is unusable.
 */
static int read_symtab(struct cs_sym_file *f, const Elf64_Shdr *sh, const Elf64_Shdr *str)
{
	const unsigned char *base = f->map;
	size_t n, k = 0, out = 0;

	if ((sh->sh_entsize && sh->sh_entsize != sizeof(Elf64_Sym)) || sh->sh_type == SHT_NOBITS ||
	    str->sh_type != SHT_STRTAB || !str->sh_size ||
	    !in_file(f, sh->sh_offset, sh->sh_size) || !in_file(f, str->sh_offset, str->sh_size) ||
	    base[str->sh_offset + str->sh_size - 1] != '\0')
		return -1;
	n = sh->sh_size / sizeof(Elf64_Sym);
	f->strtab = (const char *)base + str->sh_offset;
	f->strtab_len = str->sh_size;
	f->syms = malloc((n ? n : 1) * sizeof(*f->syms));
	if (!f->syms)
		return -1;
	for (size_t i = 0; i < n; i++) {
		Elf64_Sym es;
		int type;

		memcpy(&es, base + sh->sh_offset + i * sizeof(es), sizeof(es));
		type = ELF64_ST_TYPE(es.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || es.st_shndx == SHN_UNDEF ||
		    !es.st_value || !es.st_name || es.st_name >= str->sh_size)
			continue;
		f->syms[k].addr = es.st_value;
		f->syms[k].size = es.st_size > SYM_SIZE_MAX ? SYM_SIZE_MAX : (uint32_t)es.st_size;
		f->syms[k].name = (uint32_t)es.st_name;
		f->syms[k].local = ELF64_ST_BIND(es.st_info) == STB_LOCAL;
		k++;
	}
	if (sort_syms(&f->syms, k))
		return -1;
	/* one symbol per address */
	for (size_t i = 0; i < k;) {
		size_t best = i, j;

		for (j = i + 1; j < k && f->syms[j].addr == f->syms[i].addr; j++) {
			int rj = alias_rank(f, &f->syms[j]), rb = alias_rank(f, &f->syms[best]);

			if (rj < rb || (rj == rb && f->syms[j].name < f->syms[best].name))
				best = j;
		}
		f->syms[out++] = f->syms[best];
		i = j;
	}
	f->nsyms = out;
	return 0;
}

/* .symtab when it has functions, else .dynsym. A file without either has no symbols. */
static void read_symbols(struct cs_sym_file *f, const Elf64_Ehdr *eh)
{
	static const uint32_t types[] = {SHT_SYMTAB, SHT_DYNSYM};
	const unsigned char *base = f->map;
	const Elf64_Shdr *sh;
	size_t shnum = eh->e_shnum;

	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(f, eh->e_shoff, sizeof(Elf64_Shdr)) || eh->e_shoff % 8)
		return;
	sh = (const Elf64_Shdr *)(base + eh->e_shoff);
	if (!shnum)
		shnum = sh[0].sh_size; /* more than SHN_LORESERVE sections */
	if (shnum > (f->map_len - eh->e_shoff) / sizeof(Elf64_Shdr))
		return;
	for (size_t t = 0; t < 2; t++) {
		for (size_t i = 0; i < shnum; i++) {
			if (sh[i].sh_type != types[t] || sh[i].sh_link >= shnum)
				continue;
			free(f->syms);
			f->syms = NULL;
			f->nsyms = 0;
			if (read_symtab(f, &sh[i], &sh[sh[i].sh_link]) == 0 && f->nsyms)
				return;
		}
	}
	free(f->syms);
	f->syms = NULL;
	f->nsyms = 0;
	f->strtab = NULL;
}

/* Map and parse f once: 0 when it could be read, -1 otherwise. */
static int file_load(struct cs_symbolizer *s, struct cs_sym_file *f)
{
	Elf64_Ehdr eh;
	struct stat st;
	void *map;
	int fd;

	if (f->state)
		return f->state > 0 ? 0 : -1;
	f->state = -1;
	s->unreadable++;
	/* never open a device or a pipe a mapping may name */
	if (stat(f->path, &st) || !S_ISREG(st.st_mode))
		return -1;
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(eh)) {
		close(fd);
		return -1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	f->map = map;
	f->map_len = (size_t)st.st_size;
	memcpy(&eh, map, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != HOST_ELFDATA || read_loads(f, &eh)) {
		munmap(f->map, f->map_len);
		f->map = NULL;
		return -1;
	}
	read_symbols(f, &eh);
	f->state = 1;
	s->unreadable--;
	s->loaded++;
	return 0;
}

/* The ELF virtual address of a file offset; 0 when no loaded segment holds it. */
static int file_vaddr(const struct cs_sym_file *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nloads; i++) {
		const struct load *l = &f->loads[i];

		if (off >= l->off && off - l->off < l->filesz) {
			*vaddr = off - l->off + l->vaddr;
			return 1;
		}
	}
	return 0;
}

/* The function at addr: the last symbol at or before it, which must contain it if sized. */
static const struct sym *file_find(const struct cs_sym_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nsyms;
	const struct sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &f->syms[lo - 1];
	if (s->size && addr - s->addr >= s->size)
		return NULL;
	return s;
}

/* The name to show: demangled (once) when it is a C++ name. */
static const char *sym_name(struct cs_sym_file *f, const struct sym *s)
{
	const char *raw = f->strtab + s->name;
	uint64_t idx = (uint64_t)(s - f->syms);
	char **slot;
	int created;

	if (raw[0] != '_' || raw[1] != 'Z')
		return raw;
	slot = u64map_get(&f->demangled, idx);
	if (slot)
		return *slot ? *slot : raw;
	slot = u64map_put(&f->demangled, idx, &created);
	if (!slot)
		return raw; /* out of memory: the mangled name will do */
	*slot = cs_demangle_alloc(raw);
	return *slot ? *slot : raw;
}

/* ---- mappings ---- */

void cs_modmap_init(struct cs_modmap *m, struct cs_symbolizer *s)
{
	memset(m, 0, sizeof(*m));
	m->sym = s;
}

void cs_modmap_free(struct cs_modmap *m)
{
	tdestroy(m->root, free);
	m->root = NULL;
	m->n = 0;
}

/*
 * The tree's order: a range before another is less, ranges that overlap are equal. The mappings
 * in the tree never overlap, so a range compares greater, then equal, then less as it is compared
 * with them from the lowest to the highest: a search finds one of those it overlaps.
 */
static int range_cmp(const void *a, const void *b)
{
	const struct cs_mapping *x = a, *y = b;

	if (x->end <= y->start)
		return -1;
	return x->start >= y->end ? 1 : 0;
}

/* The mapping that holds addr, or NULL. */
static struct cs_mapping *mapping_at(const struct cs_modmap *m, uint64_t addr)
{
	struct cs_mapping key = {.start = addr, .end = addr + 1};
	struct cs_mapping **p;

	if (addr == UINT64_MAX) /* no mapping ends past it */
		return NULL;
	p = tfind(&key, &m->root, range_cmp);
	return p ? *p : NULL;
}

/* Put a copy of x in the tree, which holds nothing it overlaps; -1 when out of memory. */
static int mapping_put(struct cs_modmap *m, const struct cs_mapping *x)
{
	struct cs_mapping *c = malloc(sizeof(*c));

	if (!c)
		return -1;
	*c = *x;
	if (!tsearch(c, &m->root, range_cmp)) {
		free(c);
		return -1;
	}
	m->n++;
	return 0;
}

int cs_modmap_add(struct cs_modmap *m, uint64_t start, uint64_t end, uint64_t offset,
		  const char *path, size_t len)
{
	struct cs_mapping add = {start, end, offset, NULL}, left = {0, 0, 0, NULL}, right = left;
	struct cs_mapping **p, *o;

	if (end <= start)
		return 0;
	add.file = file_get(m->sym, path, len);
	if (!add.file)
		return -1;
	p = tfind(&add, &m->root, range_cmp);
	/* the same mapping again: nothing changes */
	if (p && (*p)->start == start && (*p)->end == end && (*p)->offset == offset &&
	    (*p)->file == add.file)
		return 0;
	/* what the new range overlaps goes, but for what sticks out on either side */
	for (; p; p = tfind(&add, &m->root, range_cmp)) {
		o = *p;
		tdelete(o, &m->root, range_cmp);
		m->n--;
		if (o->start < start) {
			left = *o;
			left.end = start;
		}
		if (o->end > end) {
			right = *o;
			right.offset += end - o->start;
			right.start = end;
		}
		free(o);
	}
	if (mapping_put(m, &add) || (left.end > left.start && mapping_put(m, &left)) ||
	    (right.end > right.start && mapping_put(m, &right)))
		return -1;
	return 0;
}

/*
 * The source file and line of ELF virtual address addr in f, from its DWARF line table (a program
 * or library built with -g); nothing when the file has none or libdw is not there. The file's
 * debug sections are opened once, the first time; the strings live as long as the symbolizer.
 */
static void file_line(struct cs_sym_file *f, uint64_t addr, struct cs_sym_result *out)
{
#ifdef CUSCOPE_HAVE_LIBDW
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *src;
	int line = 0;

	if (f->dwarf_state == 0) {
		int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

		f->dwarf_state = -1;
		if (fd >= 0) {
			f->dwarf = dwarf_begin(fd, DWARF_C_READ);
			if (f->dwarf) {
				f->dwarf_fd = fd;
				f->dwarf_state = 1;
			} else {
				close(fd);
			}
		}
	}
	if (f->dwarf_state < 0 || !dwarf_addrdie(f->dwarf, addr, &cu))
		return;
	l = dwarf_getsrc_die(&cu, addr);
	if (!l || !(src = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, &line) || line <= 0)
		return;
	out->file = src;
	out->line = line;
#else
	(void)f;
	(void)addr;
	(void)out;
#endif
}

void cs_symbolize(struct cs_modmap *m, uint64_t pc, struct cs_sym_result *out)
{
	const struct cs_mapping *map;
	const struct sym *s;
	uint64_t a, off, vaddr;

	out->module = NULL;
	out->symbol = NULL;
	out->offset = 0;
	out->file = NULL;
	out->line = 0;
	if (!pc)
		return;
	/* the call's own instruction: a return address may be the first byte past its function */
	a = pc - 1;
	map = mapping_at(m, a);
	if (!map)
		return;
	off = a - map->start + map->offset;
	out->module = map->file->path;
	out->offset = off + 1;
	if (file_load(m->sym, map->file) || !file_vaddr(map->file, off, &vaddr))
		return;
	s = file_find(map->file, vaddr);
	if (!s)
		return;
	out->symbol = sym_name(map->file, s);
	out->offset = vaddr + 1 - s->addr;
	file_line(map->file, vaddr, out);
}
