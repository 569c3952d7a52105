/*
 * table.c - text tables for people (include/cuscope/table.h): the width of UTF-8 text, a cut in
 * the middle that keeps both ends (of a name: without its namespaces first, at a break between its
 * words when one is near), and a table printer that fits a width, with the first or last
 * cell of a line coloured where asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/table.h"
#include "cuscope/utf8.h"

#define CS_ELLIPSIS "\xe2\x80\xa6" /* U+2026 */
#define COLUMN_GAP  2
#define MIN_SHRUNK  12 /* a shrunk column keeps at least this many characters */

/* ---- the width of text ---- */

/* Bytes of the character at s: a valid sequence, or one byte of an invalid one. */
static size_t utf8_char_len(const unsigned char *s)
{
	size_t n = cs_utf8_seq_len(s);

	return n ? n : 1;
}

size_t cs_text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0;

	while (*p) {
		p += utf8_char_len(p);
		w++;
	}
	return w;
}

char *cs_truncate_middle(const char *s, size_t width)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = cs_text_width(s), head, tail, head_bytes = 0, skip, len = strlen(s);
	const char *tail_start;
	char *out;

	if (total <= width || width == 0)
		return strdup(total <= width ? s : "");
	if (width == 1)
		return strdup(CS_ELLIPSIS);
	head = width / 2;
	tail = width - 1 - head;
	for (size_t i = 0; i < head; i++)
		head_bytes += utf8_char_len(p + head_bytes);
	/* find the byte where the last `tail` characters start */
	skip = total - tail;
	tail_start = s;
	for (size_t i = 0; i < skip; i++)
		tail_start += utf8_char_len((const unsigned char *)tail_start);
	out = malloc(head_bytes + strlen(CS_ELLIPSIS) + (len - (size_t)(tail_start - s)) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, head_bytes);
	strcpy(out + head_bytes, CS_ELLIPSIS);
	strcat(out + head_bytes, tail_start);
	return out;
}

/* ---- names cut at sensible places ---- */

/* A character after which a name may be cut (its head ends there) */
static int head_break(char c)
{
	return c == ':' || c == '_' || c == ' ' || c == ',' || c == '<' || c == '(' || c == '/' ||
	       c == '-' || c == '.';
}

/* A character at which the kept end of a name may start */
static int tail_break(const char *s, size_t i)
{
	char c = s[i];

	if (c == '<' || c == '(' || c == '/')
		return 1;
	if (c == ':')
		return i == 0 || s[i - 1] != ':';
	return i > 0 &&
	       (s[i - 1] == '_' || s[i - 1] == ' ' || s[i - 1] == ',' || s[i - 1] == '.' ||
		s[i - 1] == '-') &&
	       c != ' ';
}

/* The first namespace qualifier of a name ("at::" of "at::native::f<...>"): its length, 0 when it
 * has none before its template arguments. */
static size_t leading_qualifier(const char *s)
{
	int depth = 0;

	for (size_t i = 0; s[i]; i++) {
		char c = s[i];

		if (c == '(' || c == '[')
			depth++;
		else if ((c == ')' || c == ']') && depth > 0)
			depth--;
		else if (depth == 0 && (c == '<' || c == ' '))
			return 0;
		else if (depth == 0 && c == ':' && s[i + 1] == ':')
			return s[i + 2] ? i + 2 : 0;
	}
	return 0;
}

char *cs_truncate_name(const char *s, size_t width)
{
	size_t len, tail, head, slack, base;
	char *out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p >= 0x80)
			return cs_truncate_middle(s, width);
	len = strlen(s);
	if (len <= width || width < 8)
		return cs_truncate_middle(s, width);
	/* the namespaces first: the name itself says more */
	while (len > width) {
		size_t q = leading_qualifier(s);

		if (!q)
			break;
		s += q;
		len -= q;
	}
	if (len <= width)
		return strdup(s);
	/* a template whose name fits: the name and the first of its arguments that fit */
	base = strcspn(s, "<");
	if (base < len && base + 1 < width && s[len - 1] == '>') {
		size_t keep = width - base - 3, k; /* "<", "…", ">" */

		if (base + 3 > width) {
			keep = 0;
		} else {
			for (k = keep; k > 0 && (!head_break(s[base + k]) || s[base + k] == '.');
			     k--)
				;
			keep = k;
		}
		out = malloc(width * 4 + 8);
		if (!out)
			return NULL;
		if (keep == 0) {
			memcpy(out, s, base);
			strcpy(out + base, CS_ELLIPSIS);
		} else {
			memcpy(out, s, base + 1 + keep);
			strcpy(out + base + 1 + keep, CS_ELLIPSIS ">");
		}
		return out;
	}
	/* then the middle, the kept ends starting and ending at a break when one is near */
	tail = width - 1 - width / 2;
	slack = tail / 2;
	for (size_t k = 0; k <= slack; k++)
		if (tail_break(s, len - tail + k)) {
			tail -= k;
			break;
		}
	head = width - 1 - tail;
	slack = head / 2;
	for (size_t k = 0; k <= slack; k++)
		if (head_break(s[head - k - 1])) {
			head -= k;
			break;
		}
	out = malloc(head + strlen(CS_ELLIPSIS) + tail + 1);
	if (!out)
		return NULL;
	memcpy(out, s, head);
	strcpy(out + head, CS_ELLIPSIS);
	memcpy(out + head + strlen(CS_ELLIPSIS), s + len - tail, tail + 1);
	return out;
}

/* ---- tables ---- */

void cs_table_init(struct cs_table *t, const struct cs_column *cols, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->cols = cols;
	t->ncols = ncols;
}

void cs_table_add_row(struct cs_table *t, const char *const *cells)
{
	size_t n = (size_t)t->ncols;

	if (t->failed)
		return;
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		char **nc = realloc(t->cells, cap * n * sizeof(*nc));

		if (!nc) {
			t->failed = 1;
			return;
		}
		t->cells = nc;
		t->cap = cap;
	}
	for (size_t i = 0; i < n; i++) {
		/* cells hold names from traces: escaped, so that none reaches a terminal raw */
		char *c = cs_text_clean(cells[i]);

		if (!c) {
			for (size_t j = 0; j < i; j++)
				free(t->cells[t->nrows * n + j]);
			t->failed = 1;
			return;
		}
		t->cells[t->nrows * n + i] = c;
	}
	t->nrows++;
}

static void print_padding(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc(' ', out);
}

static void print_rule(FILE *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fputc('-', out);
}

/* One cell in width characters, cut in the middle when longer; a last cell is not padded. */
static void print_cell(FILE *out, const struct cs_column *col, const char *text, size_t width,
		       int last)
{
	size_t w = cs_text_width(text);
	char *cut = NULL;

	if (w > width) {
		cut = cs_truncate_name(text, width);
		if (cut) {
			text = cut;
			w = cs_text_width(cut);
		}
	}
	if (col->align == CS_ALIGN_RIGHT && w < width)
		print_padding(out, width - w);
	fputs(text, out);
	if (col->align == CS_ALIGN_LEFT && !last && w < width)
		print_padding(out, width - w);
	free(cut);
}

void cs_table_print(const struct cs_table *t, FILE *out, int indent, int width)
{
	size_t n = (size_t)t->ncols, total, *widths;
	int shrink = -1;

	widths = calloc(n, sizeof(*widths));
	if (!widths)
		return;
	for (size_t c = 0; c < n; c++) {
		widths[c] = cs_text_width(t->cols[c].header);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t w = cs_text_width(t->cells[r * n + c]);

			if (w > widths[c])
				widths[c] = w;
		}
		if (t->cols[c].shrink && shrink < 0)
			shrink = (int)c;
	}
	total = (size_t)(indent > 0 ? indent : 0) + (n - 1) * COLUMN_GAP;
	for (size_t c = 0; c < n; c++)
		total += widths[c];
	if (width > 0 && shrink >= 0 && total > (size_t)width) {
		size_t others = total - widths[shrink];
		size_t room = (size_t)width > others ? (size_t)width - others : 0;

		if (room < MIN_SHRUNK)
			room = MIN_SHRUNK;
		if (room < widths[shrink])
			widths[shrink] = room;
	}
	/* header, rule, rows */
	for (long r = -2; r < (long)t->nrows; r++) {
		print_padding(out, (size_t)(indent > 0 ? indent : 0));
		for (size_t c = 0; c < n; c++) {
			int last = c + 1 == n;

			if (c > 0)
				print_padding(out, COLUMN_GAP);
			if (r == -1)
				print_rule(out, widths[c]);
			else
				print_cell(out, &t->cols[c],
					   r == -2 ? t->cols[c].header
						   : t->cells[(size_t)r * n + c],
					   widths[c], last);
		}
		fputc('\n', out);
		if (ferror(out))
			break;
	}
	free(widths);
}

void cs_table_free(struct cs_table *t)
{
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ---- marked tables ---- */

/* The mark whose word line starts (after its blanks) or ends with, as a whole cell; NULL. */
static const struct cs_mark *line_mark(const char *line, const struct cs_mark *marks, int n,
				       size_t *at)
{
	size_t len = strlen(line), lead = strspn(line, " ");

	while (len > 0 && line[len - 1] == ' ')
		len--;
	for (int i = 0; i < n; i++) {
		size_t w = strlen(marks[i].word);

		if (len >= lead + w && !strncmp(line + lead, marks[i].word, w) &&
		    (line[lead + w] == ' ' || lead + w == len)) {
			*at = lead;
			return &marks[i];
		}
		if (len > w && line[len - w - 1] == ' ' &&
		    !strncmp(line + len - w, marks[i].word, w)) {
			*at = len - w;
			return &marks[i];
		}
	}
	return NULL;
}

void cs_table_print_marked(const struct cs_table *t, FILE *out, int indent, int width, int color,
			   const struct cs_mark *marks, int nmarks)
{
	char *buf = NULL, *line, *save = NULL;
	size_t size = 0;
	FILE *m = color ? open_memstream(&buf, &size) : NULL;

	if (!m) {
		cs_table_print(t, out, indent, width);
		return;
	}
	cs_table_print(t, m, indent, width);
	fclose(m);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t at = 0;
		const struct cs_mark *k = line_mark(line, marks, nmarks, &at);

		if (k)
			fprintf(out, "%.*s\033[%sm%s\033[0m%s\n", (int)at, line, k->sgr, k->word,
				line + at + strlen(k->word));
		else
			fprintf(out, "%s\n", line);
	}
	free(buf);
}
