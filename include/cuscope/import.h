/*
 * import.h - turn the spool files the injection library wrote into one trace.
 *
 * Used by `cuscope record` when the profiled job ends and by `cuscope import` for spool files
 * written without record (CUDA_INJECTION64_PATH set by hand). Every process's file is decoded, its
 * process-local ids (strings, stacks) remapped, its timestamps made relative to the earliest clock
 * of the job, and the result written through the trace writer. A file cut short (the process was
 * killed mid-write) is read up to its last whole record; that is not an error.
 */
#ifndef CUSCOPE_IMPORT_H
#define CUSCOPE_IMPORT_H

#include <stdint.h>

#include "cuscope/error.h"
#include "cuscope/trace.h"

typedef struct cs_import_opts {
	int overwrite;		 /* replace an existing output file */
	const char *const *meta; /* extra meta key/value pairs, NULL-terminated list: k0, v0, k1,
				    v1, ..., NULL */
	/* Called now and then with the bytes read so far and the total; may be NULL. */
	void (*progress)(uint64_t done, uint64_t total, void *arg);
	void *progress_arg;
} cs_import_opts;

typedef struct cs_import_stats {
	int64_t files; /* spool files read */
	int64_t processes;
	int64_t counts[CS_EV_COUNT]; /* events written, by kind */
	int64_t dropped;	     /* records lost in the processes (CUPTI or the library) */
	int64_t unknown_timestamps;  /* timestamps stored as unknown: zero, or implausible */
	int64_t implausible;	     /* values stored as unknown because they were outside the
					bounds of include/cuscope/trace.h (timestamps, sizes, counts) */
	int64_t truncated_files;     /* files that ended in the middle of a record */
	int64_t bytes_read;
} cs_import_stats;

/*
 * Import the spool files paths[0..n) into a new trace at out_path (written to a temporary file and
 * renamed at the end: no half-written trace is ever left at out_path). Returns 0 or a negative
 * cs_err code.
 */
int cs_import_files(const char *const *paths, int n, const char *out_path,
		    const cs_import_opts *opts, cs_import_stats *stats, cs_error *err);
/*
 * Import every "*.cuspool" file in dir: regular files only, a FIFO, device or symbolic link there
 * is skipped with the warning of a bad file (cs_import_files refuses one named). CS_ERR_NOT_FOUND
 * when there is none.
 */
int cs_import_dir(const char *dir, const char *out_path, const cs_import_opts *opts,
		  cs_import_stats *stats, cs_error *err);
/* 1 when dir holds a file cs_import_dir() would import (by its name), 0 when not or unreadable. */
int cs_import_dir_has_spool(const char *dir);
/* 1 when a file of that name (no directory) is one cs_import_dir() imports: "*.cuspool". */
int cs_import_is_spool_name(const char *name);

#endif
