/* strbuf.c - a growable string buffer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/strbuf.h"

static int strbuf_reserve(cs_strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;
	char *nb;
	size_t cap;

	if (sb->failed)
		return -1;
	if (need <= sb->cap)
		return 0;
	cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		cap *= 2;
	nb = realloc(sb->buf, cap);
	if (!nb) {
		sb->failed = 1;
		return -1;
	}
	sb->buf = nb;
	sb->cap = cap;
	return 0;
}

void cs_strbuf_add(cs_strbuf *sb, const char *s, size_t len)
{
	if (strbuf_reserve(sb, len))
		return;
	if (len) /* s may be NULL then */
		memcpy(sb->buf + sb->len, s, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void cs_strbuf_puts(cs_strbuf *sb, const char *s)
{
	cs_strbuf_add(sb, s, strlen(s));
}

void cs_strbuf_printf(cs_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || strbuf_reserve(sb, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

const char *cs_strbuf_str(const cs_strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

void cs_strbuf_reset(cs_strbuf *sb)
{
	sb->len = 0;
	sb->failed = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

void cs_strbuf_free(cs_strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
	sb->failed = 0;
}
