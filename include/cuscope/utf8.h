/* utf8.h - checking and repairing UTF-8 text from traces (kernel names, NVTX text, paths). */
#ifndef CUSCOPE_UTF8_H
#define CUSCOPE_UTF8_H

#include <stddef.h>

/* U+FFFD, what an invalid byte becomes. */
#define CS_UTF8_REPLACEMENT "\xef\xbf\xbd"

/*
 * Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is invalid (overlong forms,
 * surrogates, beyond U+10FFFF, a truncated sequence) or s is at the terminating NUL.
 */
size_t cs_utf8_seq_len(const unsigned char *s);
/*
 * Copy s to out with every byte of an invalid sequence replaced by U+FFFD, NUL-terminated; out has
 * room for 3 * strlen(s) + 1 bytes. Returns the bytes written, the NUL left out.
 */
size_t cs_utf8_repair_into(char *out, const char *s);
/* The same into a new string (malloc'd), or NULL without memory. */
char *cs_utf8_repair(const char *s);

/*
 * A copy of s fit for a terminal, a markdown or an HTML file (malloc'd): invalid UTF-8 repaired,
 * control characters escaped as cat -v and less show them, so that names from a trace cannot move
 * the cursor, change colours or set the title: C0 in caret notation (ESC "^[", TAB "^I", newline
 * "^J"), DEL "^?", C1 as "<U+009B>" (docs/security.md). NULL (for "") is "". NULL without memory.
 */
char *cs_text_clean(const char *s);

#endif
