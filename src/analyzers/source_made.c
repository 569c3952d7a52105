/* source_made.c - what the program's source says made a copied tensor (source_made.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "source_made.h"
#include "h2d_rules.h"
#include "h2d_stalls.h"
#include "cuscope/trace.h"
#include "cJSON.h"

/* A source file larger than this is not read. */
#define MAX_SOURCE_BYTES (16 << 20)
/* The part of a line kept (the rest of a longer line is skipped). */
#define LINE_KEEP 400

/* True when name ends in ".py". */
static int py_name(const char *name)
{
	size_t n = strlen(name);

	return n >= 4 && strcmp(name + n - 3, ".py") == 0;
}

/* Open path when it is, links followed, a regular file named *.py of at most MAX_SOURCE_BYTES. */
static FILE *open_py(const char *path)
{
	char *real;
	struct stat st;
	FILE *f = NULL;

	if (!py_name(path) || !(real = realpath(path, NULL)))
		return NULL;
	if (py_name(real) && stat(real, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= MAX_SOURCE_BYTES)
		f = fopen(real, "r");
	free(real);
	return f;
}

/*
 * Without dir, the recorded path, else its tails (less one leading directory at a time, two
 * components kept at least) under the current directory: a trace recorded in /work/repo read in
 * a checkout elsewhere. With dir, only the tails under dir. The path found into found.
 */
static FILE *find_source(const char *recorded, const char *dir, char *found, size_t size)
{
	const char *tail = recorded;
	FILE *f;

	if (!dir && (f = open_py(recorded))) {
		snprintf(found, size, "%s", recorded);
		return f;
	}
	for (;;) {
		const char *slash;

		while (*tail == '/')
			tail++;
		if (!strchr(tail, '/'))
			break; /* one component left: too loose a match */
		if ((tail != recorded || dir) &&
		    (dir && strcmp(dir, ".") != 0
			     ? snprintf(found, size, "%s/%s", dir, tail)
			     : snprintf(found, size, "%s", tail)) < (int)size &&
		    (f = open_py(found)))
			return f;
		slash = strchr(tail, '/');
		tail = slash + 1;
	}
	found[0] = '\0';
	return NULL;
}

struct src_line {
	int32_t no;
	int indent;		  /* leading blanks, a tab as 8 */
	char text[LINE_KEEP + 1]; /* without the indentation, the comment or the newline */
};

/* Strip the newline, a comment (a '#' outside quotes) and trailing blanks; the indentation into
 * *indent; the text moved to the start of s. */
static void clean_line(char *s, int *indent)
{
	char quote = 0;
	size_t i = 0, n;

	*indent = 0;
	while (s[i] == ' ' || s[i] == '\t')
		*indent += s[i++] == '\t' ? 8 : 1;
	memmove(s, s + i, strlen(s + i) + 1);
	for (i = 0; s[i]; i++) {
		if (quote) {
			if (s[i] == '\\' && s[i + 1])
				i++;
			else if (s[i] == quote)
				quote = 0;
		} else if (s[i] == '"' || s[i] == '\'') {
			quote = s[i];
		} else if (s[i] == '#') {
			s[i] = '\0';
			break;
		}
	}
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

/* Read lines upto-RU_MADE_LINES+1 .. upto of f into ring (indexed by line % RU_MADE_LINES). 0: the
 * file has fewer lines. */
static int read_lines(FILE *f, int32_t upto, struct src_line *ring)
{
	char buf[LINE_KEEP + 2];
	int32_t no = 0;

	while (no < upto && fgets(buf, sizeof(buf), f)) {
		size_t n = strlen(buf);

		no++;
		if (n && buf[n - 1] != '\n' && !feof(f)) {
			int c;

			while ((c = fgetc(f)) != EOF && c != '\n')
				;
		}
		if (no > upto - RU_MADE_LINES) {
			struct src_line *l = &ring[no % RU_MADE_LINES];

			l->no = no;
			snprintf(l->text, sizeof(l->text), "%s", buf);
			clean_line(l->text, &l->indent);
		}
	}
	return no == upto;
}

static int starts_with(const char *s, const char *word)
{
	size_t n = strlen(word);

	return strncmp(s, word, n) == 0 && (s[n] == ' ' || s[n] == '(' || s[n] == '\0');
}

/* The identifier at s into id (size bytes); its length. */
static size_t ident(const char *s, char *id, size_t size)
{
	size_t n = 0;

	while ((isalnum((unsigned char)s[n]) || s[n] == '_') && n + 1 < size) {
		id[n] = s[n];
		n++;
	}
	id[n] = '\0';
	return n;
}

static int in_list(const char *id, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(id, *list) == 0)
			return 1;
	return 0;
}

/* Is what follows s (after blanks) a call? */
static int called(const char *s)
{
	while (*s == ' ')
		s++;
	return *s == '(';
}

/*
 * Does the line call a tensor factory that runs on the host: torch.F(...) for a random or
 * constant factory or torch.tensor/as_tensor, without a device argument, or NumPy's random module
 * or array factories? Data read from outside (outside_data()) is a batch, decided apart.
 */
static int host_factory(const char *line)
{
	static const char *const torch_f[] = {
		"randn",	"rand",	       "randint",   "randperm",	  "normal",
		"bernoulli",	"multinomial", "poisson",   "randn_like", "rand_like",
		"randint_like", "zeros",       "ones",	    "full",	  "empty",
		"arange",	"linspace",    "logspace",  "eye",	  "tensor",
		"as_tensor",	"zeros_like",  "ones_like", "full_like",  NULL};
	static const char *const np_f[] = {"zeros", "ones",  "full", "arange", "linspace",
					   "array", "empty", "eye",  NULL};
	static const char *const pre[] = {"torch.", "np.", "numpy.", NULL};
	/* with a device argument a factory makes its tensor there, but torch.tensor(list) and
	 * as_tensor still build it from Python on the host */
	int device = strstr(line, "device") != NULL;

	for (int p = 0; pre[p]; p++) {
		size_t plen = strlen(pre[p]);

		for (const char *s = strstr(line, pre[p]); s; s = strstr(s + 1, pre[p])) {
			char id[32];
			size_t n;

			if (s > line &&
			    (isalnum((unsigned char)s[-1]) || s[-1] == '_' || s[-1] == '.'))
				continue;
			n = ident(s + plen, id, sizeof(id));
			if (!n)
				continue;
			if (p == 0 && in_list(id, torch_f) && called(s + plen + n) &&
			    (!device || strcmp(id, "tensor") == 0 || strcmp(id, "as_tensor") == 0))
				return 1;
			if (p > 0 && !device &&
			    (strcmp(id, "random") == 0 ||
			     (in_list(id, np_f) && called(s + plen + n))))
				return 1;
		}
	}
	return 0;
}

/*
 * Does the line read data from outside the program: NumPy's or torch's loaders, a memory map, a
 * file, an image decoder? What it reads is a batch, whatever else the lines make. (torch.from_numpy
 * says nothing: its array may be np.random's.)
 */
static int outside_data(const char *line)
{
	static const char *const words[] = {"memmap(",	     "np.load(", "numpy.load(", "fromfile(",
					    "torch.load(",   "open(",	 "imread(",	"read_csv(",
					    "read_parquet(", "decode(",	 NULL};

	for (int i = 0; words[i]; i++)
		if (strstr(line, words[i]))
			return 1;
	return 0;
}

/* A loop header: for ... in ...: or while ...: */
static int loop_header(const char *t)
{
	size_t n = strlen(t);

	return n && t[n - 1] == ':' &&
	       (starts_with(t, "for") || starts_with(t, "async for") || starts_with(t, "while"));
}

/* Does the copy's line use a name that the loop header `for NAMES in ...:` binds? */
static int gives_to(const char *header, const char *copy)
{
	const char *s = strchr(header, ' '), *in = strstr(header, " in ");
	char id[64];

	if (!s || !in)
		return 0;
	while (s < in) {
		size_t n;

		while (s < in && !(isalpha((unsigned char)*s) || *s == '_'))
			s++;
		n = ident(s, id, sizeof(id));
		if (!n)
			break;
		s += n;
		if (s > in || strcmp(id, "_") == 0)
			continue;
		for (const char *c = strstr(copy, id); c; c = strstr(c + 1, id)) {
			char before = c > copy ? c[-1] : ' ', after = c[strlen(id)];

			if (!(isalnum((unsigned char)before) || before == '_' || before == '.') &&
			    !(isalnum((unsigned char)after) || after == '_'))
				return 1;
		}
	}
	return 0;
}

static void decided(struct ru_made *out, int kind, const struct src_line *l)
{
	out->kind = kind;
	out->line = l->no;
	snprintf(out->text, sizeof(out->text), "%.*s", (int)sizeof(out->text) - 1, l->text);
}

void ru_source_made(const cs_analysis *a, int64_t stack_id, struct ru_made *out)
{
	const cs_frame *fr = NULL;
	struct src_line *ring;
	char path[sizeof(out->file)];
	int32_t line = 0, host_line = 0;
	int n = 0, indent;
	cs_error err;
	FILE *f;

	memset(out, 0, sizeof(*out));
	if (!a->trace || stack_id == CS_ID_NONE ||
	    cs_trace_get_stack(a->trace, stack_id, &fr, &n, &err) != 0)
		return;
	for (int i = 0; i < n; i++)
		if (fr[i].kind == 2 && fr[i].file && fr[i].line > 0) {
			snprintf(path, sizeof(path), "%s", fr[i].file);
			line = fr[i].line;
			break;
		}
	if (!line)
		return;
	out->copy_line = line;
	f = find_source(path, a->source_dir, out->file, sizeof(out->file));
	if (!f)
		return;
	ring = calloc(RU_MADE_LINES, sizeof(*ring));
	if (!ring || !read_lines(f, line, ring)) {
		free(ring);
		fclose(f);
		return;
	}
	fclose(f);
	/* the copy's own line makes the tensor it sends (torch.randn(n).cuda()): that decides */
	{
		const struct src_line *l = &ring[line % RU_MADE_LINES];

		if (l->no == line && host_factory(l->text) && !strstr(l->text, "next(") &&
		    !outside_data(l->text)) {
			decided(out, RU_MADE_HOST, l);
			free(ring);
			return;
		}
	}
	/* from the copy's line up: the lines of its block and of the blocks around it in the same
	 * function, to the function's def or the header of the loop the copy is in */
	indent = ring[line % RU_MADE_LINES].indent;
	for (int32_t no = line; no > 0 && no > line - RU_MADE_LINES; no--) {
		const struct src_line *l = &ring[no % RU_MADE_LINES];

		if (l->no != no || !l->text[0])
			continue;
		if (no < line && l->indent < indent) {
			indent = l->indent;
			if (starts_with(l->text, "def") || starts_with(l->text, "async def") ||
			    starts_with(l->text, "class"))
				break;
			if (loop_header(l->text)) {
				/* the loop over the data gives the batch when the copy sends what
				 * it gave (a loop over a count, or over the model's layers, does
				 * not) */
				if (!strstr(l->text, "range(") &&
				    gives_to(l->text, ring[line % RU_MADE_LINES].text))
					decided(out, RU_MADE_BATCH, l);
				break;
			}
		}
		if (strstr(l->text, "next(") || outside_data(l->text)) {
			decided(out, RU_MADE_BATCH, l);
			break;
		}
		if (!host_line && host_factory(l->text))
			host_line = no;
	}
	if (out->kind == RU_MADE_UNKNOWN && host_line)
		decided(out, RU_MADE_HOST, &ring[host_line % RU_MADE_LINES]);
	free(ring);
}

int ru_h2d_by_source(const cs_analysis *a, struct fact_h2d_stalls *h)
{
	/* a verdict per call site: a few sites make all the copies */
	struct {
		int64_t stack;
		int kind;
	} memo[64];
	int nmemo = 0;

	for (int64_t i = 0; i < h->n; i++) {
		struct fact_h2d_stall *y = &h->v[i];
		int64_t stack = a->copies[y->copy].stack_id;
		int kind = -1;

		/* only a copy host-created-tensor would own (pageable, a tensor): another stays
		 * dataloader-stall's, whatever made it */
		if (y->in_step || stack == CS_ID_NONE || !ru_host_tensor_copy(&a->copies[y->copy]))
			continue;
		for (int m = 0; m < nmemo; m++)
			if (memo[m].stack == stack)
				kind = memo[m].kind;
		if (kind < 0) {
			struct ru_made made;

			ru_source_made(a, stack, &made);
			kind = made.kind;
			if (nmemo < (int)(sizeof(memo) / sizeof(memo[0]))) {
				memo[nmemo].stack = stack;
				memo[nmemo++].kind = kind;
			}
		}
		if (kind == RU_MADE_HOST)
			y->in_step = 1;
	}
	return 0;
}

int ru_made_evidence(const cs_analysis *a, cJSON *e, int64_t stack_id, struct ru_made *out)
{
	static const char *const made[] = {"nothing recognised", "a tensor made on the host",
					   "a batch (an iterator's, or read from a file)"};
	struct ru_made local, *m = out ? out : &local;
	cJSON *o;

	memset(m, 0, sizeof(*m));
	if (stack_id == CS_ID_NONE)
		return 0;
	ru_source_made(a, stack_id, m);
	if (!(o = cJSON_AddObjectToObject(e, "source_line")))
		return CS_ERR_NOMEM;
	if (!m->copy_line)
		return cJSON_AddStringToObject(o, "says", "no Python frame") ? 0 : CS_ERR_NOMEM;
	if (!m->file[0])
		return cJSON_AddStringToObject(o, "says", "file not found (report --source-dir)")
			       ? 0
			       : CS_ERR_NOMEM;
	if (!cJSON_AddStringToObject(o, "says", made[m->kind]) ||
	    !cJSON_AddStringToObject(o, "file", m->file) ||
	    !cJSON_AddNumberToObject(o, "line", m->kind ? m->line : m->copy_line) ||
	    (m->kind && !cJSON_AddStringToObject(o, "text", m->text)))
		return CS_ERR_NOMEM;
	return 0;
}
