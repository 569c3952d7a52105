/*
 * gate_internal.h - what the files of src/gate/ share and nothing else uses: text from a trace
 * made safe for markdown and XML output.
 */
#ifndef CUSCOPE_GATE_INTERNAL_H
#define CUSCOPE_GATE_INTERNAL_H

/*
 * A copy of s (malloc'd; NULL without memory) with each invalid UTF-8 sequence and each control
 * character (C0, DEL, C1) replaced by '?': kernel names and finding titles are user data.
 */
char *gate_clean_text(const char *s);

#endif
