/*
 * escape.h - text from a trace written into markdown, HTML and XML (the report's, diff's and
 * gate's): one escaper each, so that a kernel name or an NVTX text can neither end a table cell or
 * an attribute nor start markup.
 */
#ifndef CUSCOPE_ESCAPE_H
#define CUSCOPE_ESCAPE_H

#include <stdio.h>

/* s for a table cell or a paragraph: cleaned (cs_text_clean), markdown punctuation escaped. */
void cs_md_text(FILE *f, const char *s);
/* s as inline code: cleaned, backticks and pipes (which would end the span or the cell) as '. */
void cs_md_code(FILE *f, const char *s);
/* s for HTML or XML text and attribute values: cleaned, & < > " ' as character references. */
void cs_xml_text(FILE *f, const char *s);

#endif
