/*
 * format.c - output helpers of the cuscope commands: human durations, sizes and counts, wall-clock
 * times, UTF-8 aware truncation, a table printer that fits the terminal, and JSON output through
 * cJSON.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define CLI_ELLIPSIS   "\xe2\x80\xa6" /* U+2026 */
#define CLI_COLUMN_GAP 2
#define CLI_MIN_SHRUNK 12 /* a shrunk column keeps at least this many characters */

/* Split ns since the epoch into seconds and milliseconds, flooring for times before 1970. */
static void split_epoch_ns(int64_t ns, time_t *sec, int *msec)
{
	int64_t s = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		s--;
	}
	*sec = (time_t)s;
	*msec = (int)(rem / 1000000);
}

char *cli_fmt_walltime(char *buf, size_t size, int64_t ns)
{
	struct tm tm;
	time_t sec;
	int msec;
	char date[32], zone[16];

	split_epoch_ns(ns, &sec, &msec);
	if (!localtime_r(&sec, &tm)) {
		snprintf(buf, size, "-");
		return buf;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, size, "%s.%03d %s", date, msec, zone);
	return buf;
}

char *cli_fmt_walltime_iso(char *buf, size_t size, int64_t ns)
{
	struct tm tm;
	time_t sec;
	int msec;
	char date[32];

	split_epoch_ns(ns, &sec, &msec);
	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, size, "-");
		return buf;
	}
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", date, msec);
	return buf;
}

/* ---- UTF-8 ---- */

/* Bytes of the character at s: a valid sequence, or one byte of an invalid one. */
static size_t utf8_char_len(const unsigned char *s)
{
	size_t n = cs_utf8_seq_len(s);

	return n ? n : 1;
}

size_t cli_text_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0;

	while (*p) {
		p += utf8_char_len(p);
		w++;
	}
	return w;
}

char *cli_truncate_middle(const char *s, size_t width)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t total = cli_text_width(s), head, tail, head_bytes = 0, skip, len = strlen(s);
	const char *tail_start;
	char *out;

	if (total <= width || width == 0)
		return strdup(total <= width ? s : "");
	if (width == 1)
		return strdup(CLI_ELLIPSIS);
	head = width / 2;
	tail = width - 1 - head;
	for (size_t i = 0; i < head; i++)
		head_bytes += utf8_char_len(p + head_bytes);
	/* find the byte where the last `tail` characters start */
	skip = total - tail;
	tail_start = s;
	for (size_t i = 0; i < skip; i++)
		tail_start += utf8_char_len((const unsigned char *)tail_start);
	out = malloc(head_bytes + strlen(CLI_ELLIPSIS) + (len - (size_t)(tail_start - s)) + 1);
	if (!out)
		return NULL;
	memcpy(out, s, head_bytes);
	strcpy(out + head_bytes, CLI_ELLIPSIS);
	strcat(out + head_bytes, tail_start);
	return out;
}

int cli_output_width(int requested)
{
	struct winsize ws;
	const char *columns;

	if (requested >= 0)
		return requested;
	if (!isatty(STDOUT_FILENO))
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	columns = getenv("COLUMNS");
	if (columns && atoi(columns) > 0)
		return atoi(columns);
	return 80;
}

/* ---- tables ---- */

void cli_table_init(struct cli_table *t, const struct cli_column *cols, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->cols = cols;
	t->ncols = ncols;
}

void cli_table_add_row(struct cli_table *t, const char *const *cells)
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
		char *c = strdup(cells[i] ? cells[i] : "");

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
static void print_cell(FILE *out, const struct cli_column *col, const char *text, size_t width,
		       int last)
{
	size_t w = cli_text_width(text);
	char *cut = NULL;

	if (w > width) {
		cut = cli_truncate_middle(text, width);
		if (cut) {
			text = cut;
			w = cli_text_width(cut);
		}
	}
	if (col->align == CLI_ALIGN_RIGHT && w < width)
		print_padding(out, width - w);
	fputs(text, out);
	if (col->align == CLI_ALIGN_LEFT && !last && w < width)
		print_padding(out, width - w);
	free(cut);
}

void cli_table_print(const struct cli_table *t, FILE *out, int indent, int width)
{
	size_t n = (size_t)t->ncols, total, *widths;
	int shrink = -1;

	widths = calloc(n, sizeof(*widths));
	if (!widths)
		return;
	for (size_t c = 0; c < n; c++) {
		widths[c] = cli_text_width(t->cols[c].header);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t w = cli_text_width(t->cells[r * n + c]);

			if (w > widths[c])
				widths[c] = w;
		}
		if (t->cols[c].shrink && shrink < 0)
			shrink = (int)c;
	}
	total = (size_t)(indent > 0 ? indent : 0) + (n - 1) * CLI_COLUMN_GAP;
	for (size_t c = 0; c < n; c++)
		total += widths[c];
	if (width > 0 && shrink >= 0 && total > (size_t)width) {
		size_t others = total - widths[shrink];
		size_t room = (size_t)width > others ? (size_t)width - others : 0;

		if (room < CLI_MIN_SHRUNK)
			room = CLI_MIN_SHRUNK;
		if (room < widths[shrink])
			widths[shrink] = room;
	}
	/* header, rule, rows */
	for (long r = -2; r < (long)t->nrows; r++) {
		print_padding(out, (size_t)(indent > 0 ? indent : 0));
		for (size_t c = 0; c < n; c++) {
			int last = c + 1 == n;

			if (c > 0)
				print_padding(out, CLI_COLUMN_GAP);
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

void cli_table_free(struct cli_table *t)
{
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

/* ---- JSON ---- */

cJSON *cli_json_add_string(cJSON *obj, const char *key, const char *s)
{
	cJSON *item;
	char *fixed;

	if (!s)
		return cJSON_AddNullToObject(obj, key);
	fixed = cs_utf8_repair(s);
	if (!fixed)
		return NULL;
	item = cJSON_AddStringToObject(obj, key, fixed);
	free(fixed);
	return item;
}

cJSON *cli_json_int(int64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%" PRId64, v);
	return cJSON_CreateRaw(text);
}

cJSON *cli_json_add_int(cJSON *obj, const char *key, int64_t v, int64_t none)
{
	cJSON *item = v == none ? cJSON_CreateNull() : cli_json_int(v);

	if (!item || !cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

int64_t cli_json_get_int(const cJSON *obj, const char *key, int64_t none)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsRaw(v) && v->valuestring) {
		char *end;
		long long n = strtoll(v->valuestring, &end, 10);

		return *end ? none : n;
	}
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : none;
}

int cli_json_print(const cJSON *root)
{
	char *text = cJSON_Print(root);

	if (!text) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	fputs(text, stdout);
	fputc('\n', stdout);
	cJSON_free(text);
	return CLI_EXIT_OK;
}

int cli_use_color(int no_color_opt)
{
	const char *env = getenv("NO_COLOR");

	return !no_color_opt && !(env && *env) && isatty(STDOUT_FILENO);
}

/* The mark whose word line starts (after its blanks) or ends with, as a whole cell; NULL. */
static const struct cli_mark *line_mark(const char *line, const struct cli_mark *marks, int n,
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
		if (len > w && line[len - w - 1] == ' ' && !strncmp(line + len - w, marks[i].word, w)) {
			*at = len - w;
			return &marks[i];
		}
	}
	return NULL;
}

void cli_table_print_marked(const struct cli_table *t, int indent, int width, int color,
			    const struct cli_mark *marks, int nmarks)
{
	char *buf = NULL, *line, *save = NULL;
	size_t size = 0;
	FILE *m = color ? open_memstream(&buf, &size) : NULL;

	if (!m) {
		cli_table_print(t, stdout, indent, width);
		return;
	}
	cli_table_print(t, m, indent, width);
	fclose(m);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t at = 0;
		const struct cli_mark *k = line_mark(line, marks, nmarks, &at);

		if (k)
			printf("%.*s\033[%sm%s\033[0m%s\n", (int)at, line, k->sgr, k->word,
			       line + at + strlen(k->word));
		else
			printf("%s\n", line);
	}
	free(buf);
}
