/* strbuf.h - a growable string buffer (used for SQL, JSON and report text). */
#ifndef CUSCOPE_STRBUF_H
#define CUSCOPE_STRBUF_H

#include <stddef.h>

typedef struct cs_strbuf {
	char *buf; /* always NUL-terminated once anything was added; NULL when empty */
	size_t len, cap;
	int failed; /* an allocation failed: contents are incomplete */
} cs_strbuf;

#define CS_STRBUF_INIT        \
	{                     \
		NULL, 0, 0, 0 \
	}

void cs_strbuf_add(cs_strbuf *sb, const char *s, size_t len);
void cs_strbuf_puts(cs_strbuf *sb, const char *s);
void cs_strbuf_printf(cs_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text so far ("" when empty); stays owned by sb. */
const char *cs_strbuf_str(const cs_strbuf *sb);
void cs_strbuf_reset(cs_strbuf *sb);
void cs_strbuf_free(cs_strbuf *sb);

#endif
