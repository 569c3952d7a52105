/*
 * markdown.c - text from a trace written into markdown (cuscope/escape.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cuscope/escape.h"
#include "cuscope/utf8.h"

void cs_md_text(FILE *f, const char *s)
{
	char *c = cs_text_clean(s);

	if (!c)
		return;
	for (const char *p = c; *p; p++) {
		if (strchr("\\`*_[]<>|#~&!", *p))
			fputc('\\', f);
		fputc(*p, f);
	}
	free(c);
}

void cs_md_code(FILE *f, const char *s)
{
	char *c = cs_text_clean(s);

	if (!c)
		return;
	for (char *p = c; *p; p++)
		if (*p == '`' || *p == '|')
			*p = '\'';
	fprintf(f, "`%s`", c);
	free(c);
}

void cs_xml_text(FILE *f, const char *s)
{
	static const char *const ref[] = {['&'] = "&amp;", ['<'] = "&lt;",   ['>'] = "&gt;",
					  ['"'] = "&quot;", ['\''] = "&#39;"};
	char *c = cs_text_clean(s);

	if (!c)
		return;
	for (const unsigned char *p = (const unsigned char *)c; *p; p++) {
		if (*p < sizeof(ref) / sizeof(ref[0]) && ref[*p])
			fputs(ref[*p], f);
		else
			fputc(*p, f);
	}
	free(c);
}
