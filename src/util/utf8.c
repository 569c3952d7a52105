/* utf8.c - checking and repairing UTF-8 text (include/cuscope/utf8.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuscope/utf8.h"

size_t cs_utf8_seq_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return c ? 1 : 0;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

size_t cs_utf8_repair_into(char *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	while (*p) {
		size_t n = cs_utf8_seq_len(p);

		if (n) {
			memcpy(out + o, p, n);
			o += n;
			p += n;
		} else {
			memcpy(out + o, CS_UTF8_REPLACEMENT, 3);
			o += 3;
			p++;
		}
	}
	out[o] = '\0';
	return o;
}

char *cs_utf8_repair(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1);

	if (out)
		cs_utf8_repair_into(out, s);
	return out;
}

char *cs_text_clean(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *r = cs_utf8_repair(s ? s : ""), *out, *w;
	const unsigned char *p;

	if (!r)
		return NULL;
	/* at most 4 bytes out per byte in: a C1 character's 2 bytes become "<U+0085>" */
	out = malloc(4 * strlen(r) + 1);
	if (!out) {
		free(r);
		return NULL;
	}
	for (p = (const unsigned char *)r, w = out; *p; p++) {
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) { /* C1: as less shows it */
			memcpy(w, "<U+00", 5);
			w[5] = hex[p[1] >> 4];
			w[6] = hex[p[1] & 15];
			w[7] = '>';
			w += 8;
			p++;
		} else if (*p < 0x20 || *p == 0x7f) { /* C0 and DEL in caret notation: ESC is ^[ */
			*w++ = '^';
			*w++ = *p == 0x7f ? '?' : (char)(*p + 0x40);
		} else {
			*w++ = (char)*p;
		}
	}
	*w = '\0';
	free(r);
	return out;
}
