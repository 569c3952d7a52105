/*
 * table.h - text tables for people: the display width of UTF-8 text, a cut in the middle, and a
 * table printer that fits a width (src/util/table.c). The commands and the report's renderers
 * print their tables with it.
 */
#ifndef CUSCOPE_TABLE_H
#define CUSCOPE_TABLE_H

#include <stddef.h>
#include <stdio.h>

/* Display width of a UTF-8 string: the number of characters (code points). */
size_t cs_text_width(const char *s);
/*
 * A copy of s (malloc'd) that shows at most width characters: a longer one keeps its beginning and
 * end with "…" in the middle. NULL when out of memory.
 */
char *cs_truncate_middle(const char *s, size_t width);
/*
 * As cs_truncate_middle for a name (a kernel's, a metric's): a C++ name longer than width loses its
 * leading namespaces first ("at::native::"), and a cut in the middle moves to a break near it
 * (after "_", "::", ", " or before "<") rather than inside a word: "vectorized_…<char*, 3ul>>"
 * rather than "at::native::ve…y<char*, 3ul>>". The table printer cuts its cells so.
 */
char *cs_truncate_name(const char *s, size_t width);

enum cs_align {
	CS_ALIGN_LEFT = 0,
	CS_ALIGN_RIGHT,
};

struct cs_column {
	const char *header;
	enum cs_align align;
	int shrink; /* may be cut (cs_truncate_name) to fit the width (at most one column) */
};

struct cs_table {
	const struct cs_column *cols;
	int ncols;
	char **cells; /* nrows * ncols copies */
	size_t nrows, cap;
	int failed; /* out of memory: rows are missing */
};

void cs_table_init(struct cs_table *t, const struct cs_column *cols, int ncols);
/* Append a row of t->ncols strings (copied through cs_text_clean(): control characters escaped;
 * NULL prints as empty). */
void cs_table_add_row(struct cs_table *t, const char *const *cells);
/*
 * Print the header, a rule and the rows, columns two spaces apart, each line starting with indent
 * spaces. With width > 0 the shrinkable column is cut to fit lines in width characters.
 */
void cs_table_print(const struct cs_table *t, FILE *out, int indent, int width);
/* A word of a table and its terminal colour (an ANSI SGR sequence such as "1;31"). */
struct cs_mark {
	const char *word;
	const char *sgr;
};
/* cs_table_print(); with color, each mark's word in its colour where it is the first or the last
 * cell of a line. */
void cs_table_print_marked(const struct cs_table *t, FILE *out, int indent, int width, int color,
			   const struct cs_mark *marks, int nmarks);
void cs_table_free(struct cs_table *t);

#endif
