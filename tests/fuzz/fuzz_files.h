/*
 * fuzz_files.h - what both fuzz targets set up: a private directory (in memory when /dev/shm is
 * there) holding the input file and the file a target writes, removed at exit.
 */
#ifndef CUSCOPE_FUZZ_FILES_H
#define CUSCOPE_FUZZ_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The input's and the output's paths, set by fuzz_files_init(). */
extern char fuzz_in_path[4200], fuzz_out_path[4200];

/* Make the directory cuscope-fuzz-NAME-XXXXXX with the files in_name and out_name in it, removed at
 * exit; aborts when it cannot. */
void fuzz_files_init(const char *name, const char *in_name, const char *out_name);
/* Write an input's bytes to fuzz_in_path; aborts when it cannot. */
void fuzz_files_write(const uint8_t *data, size_t size);

#endif
