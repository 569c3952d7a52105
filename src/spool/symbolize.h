/*
 * symbolize.h - native return addresses to module, function and offset, private to the spool
 * importer.
 *
 * The importer runs on the recording host right after the job, so the files the processes mapped
 * are still there. A cs_symbolizer caches what it learnt of each file (its program headers and
 * its function symbols, sorted) for the whole import: the processes of a job map the same
 * libraries, and each file is read once. A cs_modmap holds the mappings of one process (the
 * CS_REC_MODULE records), ordered by address.
 *
 * Lookup: the pc minus 1 (a return address can point past the end of its call's function) is
 * found in a mapping, turned into an offset in the file, then into the ELF virtual address through
 * the PT_LOAD segment that holds that offset, and matched to the function symbol at or before it
 * (.symtab, or .dynsym when the file is stripped). A symbol with a size must contain the address.
 * C++ names are demangled. See docs/backtraces.md, "Native frames".
 *
 * Not thread safe: one import uses one symbolizer from one thread.
 */
#ifndef CUSCOPE_SPOOL_SYMBOLIZE_H
#define CUSCOPE_SPOOL_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct cs_symbolizer;
struct cs_sym_file;

/* One mapping of a process: [start, end) maps the file from offset on. */
struct cs_mapping {
	uint64_t start, end, offset;
	struct cs_sym_file *file;
};

/*
 * The mappings of one process, never overlapping, in a balanced tree ordered by address (tsearch):
 * adding a mapping and looking up a pc take O(log n) in the mappings, in whatever order the
 * records come.
 */
struct cs_modmap {
	struct cs_symbolizer *sym;
	void *root; /* tsearch() tree of struct cs_mapping * */
	size_t n;   /* mappings in the tree */
};

/* What a pc resolves to. The strings live as long as the symbolizer. */
struct cs_sym_result {
	const char *module; /* path of the mapped file; NULL when no mapping holds the pc */
	const char *symbol; /* demangled function name; NULL when unknown */
	uint64_t offset;    /* pc - symbol address; without a symbol, the pc's offset in the file */
	/* the source file and line of the call, from the file's DWARF line table (built with -g;
	 * only with libdw); NULL and 0 when unknown */
	const char *file;
	int line;
};

/* A symbolizer with an empty cache; NULL when out of memory. */
struct cs_symbolizer *cs_symbolizer_new(void);
/* Unmap and free everything; the strings it returned die with it. */
void cs_symbolizer_free(struct cs_symbolizer *s);
/* Files the symbolizer opened and parsed, and those it could not read (for stats and tests). */
void cs_symbolizer_counts(const struct cs_symbolizer *s, size_t *loaded, size_t *unreadable);

void cs_modmap_init(struct cs_modmap *m, struct cs_symbolizer *s);
void cs_modmap_free(struct cs_modmap *m);
/*
 * Map [start, end) to path (len bytes, no NUL needed) from file offset offset. What the new
 * mapping overlaps of earlier ones is replaced, as mmap(MAP_FIXED) does. The file is opened only
 * when a pc is looked up in it. Returns 0, or -1 when out of memory (the map may then lack what
 * the new mapping overlapped); an empty range is ignored.
 */
int cs_modmap_add(struct cs_modmap *m, uint64_t start, uint64_t end, uint64_t offset,
		  const char *path, size_t len);
/* Resolve a return address of the process (see above). */
void cs_symbolize(struct cs_modmap *m, uint64_t pc, struct cs_sym_result *out);

#endif
