/*
 * markdown.h - text from a trace written into markdown (the report's, diff's and gate's): one
 * escaper, so that a kernel name or an NVTX text can neither end a table cell nor start markup.
 */
#ifndef CUSCOPE_MARKDOWN_H
#define CUSCOPE_MARKDOWN_H

#include <stdio.h>

/* s for a table cell or a paragraph: cleaned (cs_text_clean), markdown punctuation escaped. */
void cs_md_text(FILE *f, const char *s);
/* s as inline code: cleaned, backticks and pipes (which would end the span or the cell) as '. */
void cs_md_code(FILE *f, const char *s);

#endif
