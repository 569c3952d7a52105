/*
 * import.c - decode the spool files of a job (include/cuscope/spool.h) into one trace: the driver.
 *
 * Two passes. The first reads each file's header and its first CS_REC_CLOCK (in the first 64 KiB):
 * files with a bad header are set aside, and the trace's time zero is the smallest cupti_ns of the
 * headers and those clock records (meta "time_base_ns"; "realtime_base_ns" is the CLOCK_REALTIME
 * of the same pair), among the files whose clocks are within CS_TS_MAX of each other. The second
 * pass streams each file through a fixed read buffer, record by record, and writes rows through the
 * trace writer as it goes: memory stays flat apart from per-process maps (strings, stacks, the
 * correlation join, open NVTX ranges, live VMM handles), which are freed at the end of each file.
 *
 * The work is shared out by job: framing.c cuts a file into records, decode.c turns records into
 * rows, correlate.c joins GPU records with their API calls; this file runs the two passes over
 * the files, picks the time base, writes the processes and the meta data.
 *
 * Decisions worth knowing:
 * - A file with a bad header (too short, wrong magic, newer or unknown version, bad header size)
 *   is skipped, and so is one whose clock lies more than CS_TS_MAX from those of most other files
 *   (the time base is the earliest clock of the largest group within CS_TS_MAX), and, among the
 *   files of a directory, one that is not a regular file or is a symbolic link. When no file is
 * left the import fails with the reason of the first one; otherwise it succeeds, counts the file in
 *   meta "import_stats" ("skipped_files") and leaves a one-line warning in err->msg with err->code
 *   CS_OK. A file that cannot be opened or read is an error.
 * - A file whose header clock is above INT64_MAX ns is skipped like a file with a bad header, and
 *   such a CLOCK record is ignored (framing.c).
 * - Files with the same pid (a pid reused in the job: "<pid>-<n>.cuspool") make one process row;
 *   their ids (strings, stacks, correlations, mappings) stay apart.
 * - A ring's main file and its segments (`record --ring`; framing.c finds them) are read as one
 *   file: the main file, then the segments the ring kept, in order, with one set of ids and one
 *   correlation join; decode.c leaves out what started before the window; META "ring" says what
 *   was kept and cut.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuscope/files.h"
#include "cuscope/grow.h"
#include "cuscope/launch_cost.h"
#include "cuscope/strbuf.h"
#include "spool_internal.h"
#include "cuscope/checked.h"

static void report_progress(struct importer *im, uint64_t done)
{
	im->done = done;
	if (im->progress && done >= im->next_progress) {
		im->progress(done, im->total, im->progress_arg);
		im->next_progress = done + PROGRESS_STEP;
	}
}

/* Read the records of one open file, from header_size on, into pf. */
static int read_records(struct importer *im, struct proc_file *pf, int fd, const char *path,
			uint32_t header_size)
{
	struct spool_file sf;
	uint64_t done0 = im->done;
	int rc;

	memset(&sf, 0, sizeof(sf));
	sf.buf = im->buf;
	sf.fd = fd;
#ifdef POSIX_FADV_SEQUENTIAL
	posix_fadvise(sf.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	/* the first pass checked the header */
	rc = spool_file_fill(&sf, header_size);
	if (rc <= 0) {
		rc = cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", path,
				  rc < 0 ? strerror(errno) : "the file got shorter");
		goto out;
	}
	rc = 0;
	sf.pos = header_size;
	for (;;) {
		const unsigned char *p;
		struct cs_rec h;
		int r = spool_file_next(&sf, &p, &h);

		if (r < 0) {
			rc = cs_error_set(im->err, CS_ERR_IO, "cannot read '%s': %s", path,
					  strerror(errno));
			goto out;
		}
		if (r == SF_TRUNCATED)
			im->st->truncated_files++;
		if (r != 1)
			break;
		rc = import_record(pf, &h, p);
		if (!rc)
			rc = im->sticky_rc;
		if (rc)
			goto out;
		report_progress(im, done0 + sf.bytes_read);
	}
out:
	im->done = done0 + sf.bytes_read;
	im->st->bytes_read += (int64_t)sf.bytes_read;
	return rc;
}

/*
 * The segments of a ring after its main file: those the ring had not deleted (pf->ring's first
 * segment on), in order, as one stream. A segment deleted since the first pass, or replaced by a
 * link or a FIFO, is left out.
 */
static int import_segments(struct importer *im, struct proc_file *pf, const struct file_info *fi)
{
	int rc = 0;

	for (size_t i = 0; i < fi->nsegs && !rc; i++) {
		const struct spool_seg *seg = &fi->segs[i];
		int fd;

		if (seg->n < pf->ring.first_segment)
			continue; /* deleted by the ring, or about to be */
		fd = cs_open_regular(seg->path, 1);
		if (fd < 0 && (errno == ENOENT || errno == ELOOP || errno == CS_ENOTREG))
			continue; /* deleted, or replaced by something else, since the first pass */
		if (fd < 0)
			return cs_error_set(im->err, CS_ERR_IO, "cannot open '%s': %s", seg->path,
					    cs_file_strerror(errno));
		pf->in_segment = 1;
		rc = read_records(im, pf, fd, seg->path, seg->header_size);
		close(fd);
	}
	return rc;
}

static int import_file(struct importer *im, const struct file_info *fi)
{
	struct proc_file pf;
	int fd, rc = 0;

	memset(&pf, 0, sizeof(pf));
	pf.im = im;
	pf.next_sweep = SWEEP_MIN;
	u64map_init(&pf.strings, sizeof(int64_t));
	cs_modmap_init(&pf.modules, im->sym);
	u64map_init(&pf.stacks, sizeof(int64_t));
	u64map_init(&pf.corr, sizeof(struct corr_entry));
	u64map_init(&pf.nvtx_stacks, sizeof(struct nvtx_stack));
	u64map_init(&pf.nvtx_ranges, sizeof(struct nvtx_open));
	u64map_init(&pf.vmm, sizeof(int64_t));
	u64map_init(&pf.ring_cut_corr, 1);
	pf.proc = import_proc_get(im, &fi->h);
	if (!pf.proc)
		return import_nomem(im);

	/* replaced by a FIFO or a link since the first pass: refused, not waited on */
	fd = cs_open_regular(fi->path, im->from_dir);
	if (fd < 0)
		return cs_error_set(im->err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", fi->path, cs_file_strerror(errno));
	rc = read_records(im, &pf, fd, fi->path, fi->h.header_size);
	close(fd);
	if (!rc && fi->ring)
		rc = import_segments(im, &pf, fi);
	if (!rc)
		rc = import_finish_file(&pf);
	proc_file_free(&pf);
	return rc;
}

/* ---- the whole import ---- */

/* META call_tails (docs/trace-format.md): per process that wrote CS_REC_CALL_TAILS, per kind of
 * call, the calls and the nanoseconds the library spent after their ends. */
_Static_assert(CS_CALL_TAIL_KINDS == CS_TAIL_KINDS, "call_tails kinds");

static int write_call_tails(struct importer *im)
{
	static const char *const kind[CS_TAIL_KINDS] = {"launch", "stack", "other"};
	cs_strbuf sb = CS_STRBUF_INIT;
	int n = 0, rc = 0;

	for (size_t i = 0; i < im->nprocs; i++) {
		const struct proc_info *p = im->procs[i];

		if (!p->has_tails)
			continue;
		cs_strbuf_printf(&sb, "%s\"%" PRIu32 "\":{", n++ ? "," : "{", p->pid);
		for (int k = 0; k < CS_TAIL_KINDS; k++)
			cs_strbuf_printf(&sb, "%s\"%s\":{\"calls\":%" PRId64 ",\"ns\":%" PRId64 "}",
					 k ? "," : "", kind[k], p->tail_calls[k], p->tail_ns[k]);
		cs_strbuf_puts(&sb, "}");
	}
	if (!n)
		return 0;
	cs_strbuf_puts(&sb, "}");
	if (sb.failed) {
		cs_strbuf_free(&sb);
		return import_nomem(im);
	}
	rc = cs_writer_set_meta(im->w, CS_META_CALL_TAILS, cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
	return rc;
}

static int64_t u64_sat(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The window of a ring process as ns since the trace start, or CS_TS_UNKNOWN. */
static int64_t ring_time(struct importer *im, uint64_t raw)
{
	if (!raw || raw > (uint64_t)INT64_MAX)
		return CS_TS_UNKNOWN;
	return (int64_t)raw - (int64_t)im->base_cupti;
}

static void ring_members(cs_strbuf *sb, int64_t start, int64_t end, int64_t segments,
			 int64_t records, int64_t bytes, int64_t cut)
{
	if (start != CS_TS_UNKNOWN)
		cs_strbuf_printf(sb, "\"window_start_ns\":%" PRId64 ",", start);
	if (end != CS_TS_UNKNOWN)
		cs_strbuf_printf(sb, "\"window_end_ns\":%" PRId64 ",", end);
	cs_strbuf_printf(sb,
			 "\"segments_dropped\":%" PRId64 ",\"records_dropped\":%" PRId64
			 ",\"bytes_dropped\":%" PRId64 ",\"records_cut\":%" PRId64,
			 segments, records, bytes, cut);
}

/*
 * META ring (docs/trace-format.md): for a trace of `record --ring`, the budget, and per process
 * and for the whole trace the window kept (from the latest window start: before it, events may be
 * missing) and what was cut: segments deleted, their records and bytes, and the events of the
 * segments kept that started before the window (left out).
 */
static int write_ring_meta(struct importer *im)
{
	cs_strbuf sb = CS_STRBUF_INIT, procs = CS_STRBUF_INIT;
	int64_t start = CS_TS_UNKNOWN, end = CS_TS_UNKNOWN, seg = 0, rec = 0, bytes = 0, cut = 0;
	uint64_t budget_bytes = 0, budget_ns = 0;
	int n = 0, rc;

	for (size_t i = 0; i < im->nprocs; i++) {
		const struct proc_info *p = im->procs[i];
		int64_t s = p->ring.segments_dropped ? ring_time(im, p->ring.window_start)
						     : CS_TS_UNKNOWN;
		int64_t e = ring_time(im, p->ring_last);

		if (!p->has_ring)
			continue;
		budget_bytes = p->ring.budget_bytes;
		budget_ns = p->ring.budget_ns;
		cs_strbuf_printf(&procs, "%s\"%" PRIu32 "\":{", n++ ? "," : "", p->pid);
		ring_members(&procs, s, e, p->ring.segments_dropped,
			     u64_sat(p->ring.records_dropped), u64_sat(p->ring.bytes_dropped),
			     p->ring_cut);
		cs_strbuf_puts(&procs, "}");
		if (s != CS_TS_UNKNOWN && (start == CS_TS_UNKNOWN || s > start))
			start = s;
		if (e != CS_TS_UNKNOWN && (end == CS_TS_UNKNOWN || e > end))
			end = e;
		seg += p->ring.segments_dropped;
		cs_sat_accum(&rec, u64_sat(p->ring.records_dropped));
		cs_sat_accum(&bytes, u64_sat(p->ring.bytes_dropped));
		cs_sat_accum(&cut, p->ring_cut);
	}
	if (!n) {
		cs_strbuf_free(&procs);
		return 0;
	}
	cs_strbuf_printf(&sb, "{\"size_bytes\":%" PRId64 ",\"duration_ns\":%" PRId64 ",",
			 u64_sat(budget_bytes), u64_sat(budget_ns));
	ring_members(&sb, start, end, seg, rec, bytes, cut);
	cs_strbuf_printf(&sb, ",\"processes\":{%s}}", cs_strbuf_str(&procs));
	if (sb.failed || procs.failed)
		rc = import_nomem(im);
	else
		rc = cs_writer_set_meta(im->w, CS_META_RING, cs_strbuf_str(&sb));
	cs_strbuf_free(&sb);
	cs_strbuf_free(&procs);
	return rc;
}

static int write_meta(struct importer *im, const cs_import_opts *opts)
{
	cs_import_stats *st = im->st;
	cs_strbuf sb = CS_STRBUF_INIT;
	size_t modules, unreadable;
	int rc = 0;

	for (size_t i = 0; opts->meta && opts->meta[i] && opts->meta[i + 1] && !rc; i += 2)
		rc = cs_writer_set_meta(im->w, opts->meta[i], opts->meta[i + 1]);
	for (size_t i = 0; i < im->nprocs; i++)
		cs_strbuf_printf(&sb, "%s%" PRIu32, i ? "," : "", im->procs[i]->pid);
	if (!rc)
		rc = cs_writer_set_meta(im->w, "pids", cs_strbuf_str(&sb));
	if (!rc)
		rc = cs_writer_set_meta_int(im->w, "time_base_ns", (int64_t)im->base_cupti);
	if (!rc)
		rc = cs_writer_set_meta_int(im->w, "realtime_base_ns", (int64_t)im->base_real);
	cs_strbuf_reset(&sb);
	cs_symbolizer_counts(im->sym, &modules, &unreadable);
	cs_strbuf_printf(
		&sb,
		"{\"files\":%" PRId64 ",\"skipped_files\":%" PRId64 ",\"processes\":%" PRId64
		",\"bytes_read\":%" PRId64 ",\"truncated_files\":%" PRId64
		",\"unknown_timestamps\":%" PRId64 ",\"implausible_values\":%" PRId64
		",\"dropped\":%" PRId64 ",\"bad_records\":%" PRId64 ",\"unknown_records\":%" PRId64
		",\"bad_references\":%" PRId64 ",\"nvtx_unmatched\":%" PRId64
		",\"native_pcs\":%" PRId64 ",\"unsymbolized_pcs\":%" PRId64 ",\"module_files\":%zu"
		",\"unreadable_module_files\":%zu}",
		st->files, im->skipped_files, st->processes, st->bytes_read, st->truncated_files,
		st->unknown_timestamps, st->implausible, st->dropped, im->bad_records,
		im->unknown_records, im->bad_refs, im->nvtx_unmatched, im->native_pcs,
		im->unsymbolized_pcs, modules, unreadable);
	if (sb.failed && !rc) {
		cs_strbuf_free(&sb);
		return import_nomem(im);
	}
	if (!rc)
		rc = cs_writer_set_meta(im->w, "import_stats", cs_strbuf_str(&sb));
	if (!rc)
		rc = write_call_tails(im);
	if (!rc)
		rc = write_ring_meta(im);
	cs_strbuf_free(&sb);
	return rc < 0 ? import_writer_error(im, rc) : 0;
}

static int write_processes(struct importer *im)
{
	for (size_t i = 0; i < im->nprocs; i++) {
		struct proc_info *p = im->procs[i];
		cs_process row;
		int rc;

		memset(&row, 0, sizeof(row));
		row.pid = p->pid;
		row.ppid = p->ppid;
		row.start = p->start;
		row.end = p->end;
		row.command_line = p->cmdline;
		row.rank = p->rank;
		row.local_rank = p->local_rank;
		row.world_size = p->world_size;
		row.exit_code = p->exit_code;
		row.used_cuda = p->used_cuda;
		row.dropped_records = p->dropped;
		row.cupti_device_bytes = p->cupti_bytes;
		rc = cs_writer_add_process(im->w, &row);
		if (rc < 0)
			return import_writer_error(im, rc);
		im->st->processes++;
		cs_sat_accum(&im->st->dropped, p->dropped);
	}
	return 0;
}

/* The first pass over every file: headers, the time base, the files to skip. */
struct file_clock {
	uint64_t cupti;
	int i;
};

static int cmp_clock(const void *pa, const void *pb)
{
	const struct file_clock *a = pa, *b = pb;

	if (a->cupti != b->cupti)
		return a->cupti < b->cupti ? -1 : 1;
	return a->i - b->i;
}

/*
 * The time base: the earliest clock of the largest group of files whose clocks lie within
 * CS_TS_MAX of each other (the earliest such group on a tie). A file whose clock is outside it
 * could only give implausible times: it is skipped (bad_code set). Returns the files skipped, or
 * -1 without memory.
 */
static int choose_time_base(struct importer *im, struct file_info *fi, int n)
{
	struct file_clock *c = calloc((size_t)n + 1, sizeof(*c));
	int m = 0, best = 0, best_len = 0, skipped = 0;

	if (!c)
		return -1;
	for (int i = 0; i < n; i++)
		if (!fi[i].bad_code && fi[i].base_cupti)
			c[m++] = (struct file_clock){fi[i].base_cupti, i};
	cs_sort(c, (size_t)m, sizeof(*c), cmp_clock);
	for (int i = 0, j = 0; i < m; i++) {
		while (j < m && c[j].cupti - c[i].cupti <= (uint64_t)CS_TS_MAX)
			j++;
		if (j - i > best_len) {
			best = i;
			best_len = j - i;
		}
	}
	if (m) {
		im->base_cupti = c[best].cupti;
		im->base_real = fi[c[best].i].base_real;
	}
	for (int k = 0; k < m; k++) {
		struct file_info *f = &fi[c[k].i];

		if (k >= best && k < best + best_len)
			continue;
		f->bad_code = CS_ERR_CORRUPT;
		snprintf(f->bad_msg, sizeof(f->bad_msg),
			 "implausible clock (CUPTI %" PRIu64 " ns): more than 2^53 ns (104 days) "
			 "from the clocks of the other files",
			 f->base_cupti);
		skipped++;
	}
	free(c);
	return skipped;
}

static int probe_files(struct importer *im, struct file_info *fi, int n, cs_strbuf *warning)
{
	int good = 0, rc;

	for (int i = 0; i < n; i++) {
		rc = spool_file_probe(im, &fi[i]);
		if (rc)
			return rc;
	}
	if (choose_time_base(im, fi, n) < 0)
		return import_nomem(im);
	for (int i = 0; i < n; i++) {
		if (fi[i].bad_code) {
			im->skipped_files++;
			continue;
		}
		good++;
		im->total += fi[i].size;
	}
	for (int i = 0; i < n; i++) {
		if (!fi[i].bad_code)
			continue;
		if (!good)
			return cs_error_set(
				im->err, fi[i].bad_code,
				n == 1 ? "cannot import '%s': %s"
				       : "no spool file to import: '%s': %s (and %d more)",
				fi[i].path, fi[i].bad_msg, n - 1);
		cs_strbuf_printf(warning, "skipped %" PRId64 " spool file%s: '%s': %s",
				 im->skipped_files, im->skipped_files > 1 ? "s" : "", fi[i].path,
				 fi[i].bad_msg);
		break;
	}
	return 0;
}

static int import_files(const char *const *paths, int n, const char *out_path,
			const cs_import_opts *opts, cs_import_stats *stats, cs_error *err,
			int from_dir)
{
	static const cs_import_opts no_opts;
	cs_strbuf warning = CS_STRBUF_INIT;
	cs_import_stats local_stats;
	struct importer im;
	struct file_info *fi = NULL;
	int rc;

	if (!opts)
		opts = &no_opts;
	if (!stats)
		stats = &local_stats;
	memset(stats, 0, sizeof(*stats));
	if (n <= 0 || !paths)
		return cs_error_set(err, CS_ERR_NOT_FOUND, "no spool files to import");
	if (!out_path)
		return cs_error_set(err, CS_ERR_INVALID, "no output file");

	memset(&im, 0, sizeof(im));
	im.out_path = out_path;
	im.from_dir = from_dir;
	im.err = err;
	im.st = stats;
	im.progress = opts->progress;
	im.progress_arg = opts->progress_arg;
	im.next_progress = PROGRESS_STEP;
	im.default_ids[STR_EMPTY] = im.default_ids[STR_UNKNOWN] = -1;
	for (size_t i = 0; opts->meta && opts->meta[i] && opts->meta[i + 1]; i += 2)
		if (!strcmp(opts->meta[i], "api"))
			im.keep_all_api = !strcmp(opts->meta[i + 1], "all");
	im.buf = malloc(READ_BUF_SIZE);
	im.sym = cs_symbolizer_new();
	fi = calloc((size_t)n, sizeof(*fi));
	if (!im.buf || !im.sym || !fi) {
		rc = import_nomem(&im);
		goto out;
	}
	for (int i = 0; i < n; i++)
		fi[i].path = paths[i];
	rc = probe_files(&im, fi, n, &warning);
	if (rc)
		goto out;

	rc = cs_writer_open(out_path, opts->overwrite, &im.w, err);
	if (rc < 0) {
		im.w = NULL;
		goto out;
	}
	for (int i = 0; i < n && !rc; i++) {
		if (fi[i].bad_code)
			continue;
		rc = import_file(&im, &fi[i]);
		stats->files++;
	}
	if (!rc)
		rc = write_processes(&im);
	if (!rc)
		rc = write_meta(&im, opts);
	if (rc)
		goto out;
	if (im.progress)
		im.progress(im.done, im.total, im.progress_arg);
	rc = cs_writer_finish(im.w, err);
	im.w = NULL;
	if (!rc && warning.len && err)
		cs_error_set(err, CS_OK, "%s", cs_strbuf_str(&warning));
out:
	if (im.w)
		cs_writer_abort(im.w);
	for (size_t i = 0; i < im.nprocs; i++)
		import_proc_free(im.procs[i]);
	free(im.procs);
	free(im.frames);
	cs_symbolizer_free(im.sym);
	free(im.buf);
	for (int i = 0; fi && i < n; i++) {
		for (size_t k = 0; k < fi[i].nsegs; k++)
			free(fi[i].segs[k].path);
		free(fi[i].segs);
	}
	free(fi);
	cs_strbuf_free(&warning);
	return rc;
}

int cs_import_files(const char *const *paths, int n, const char *out_path,
		    const cs_import_opts *opts, cs_import_stats *stats, cs_error *err)
{
	return import_files(paths, n, out_path, opts, stats, err, 0);
}

/* Spool files sort by pid, then by name ("<pid>.cuspool" before "<pid>-1.cuspool"). */
static int spool_name_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');
	unsigned long long px = strtoull(bx ? bx + 1 : x, NULL, 10);
	unsigned long long py = strtoull(by ? by + 1 : y, NULL, 10);

	if (px != py)
		return px < py ? -1 : 1;
	return strcmp(x, y);
}

int cs_import_is_spool_name(const char *name)
{
	size_t len = strlen(name), suffix = strlen(CS_SPOOL_SUFFIX);

	return len > suffix && strcmp(name + len - suffix, CS_SPOOL_SUFFIX) == 0;
}

int cs_import_dir_has_spool(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int found = 0;

	while (d && !found && (de = readdir(d)))
		found = cs_import_is_spool_name(de->d_name);
	if (d)
		closedir(d);
	return found;
}

int cs_import_dir(const char *dir, const char *out_path, const cs_import_opts *opts,
		  cs_import_stats *stats, cs_error *err)
{
	size_t n = 0, cap = 0;
	char **paths = NULL;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	d = opendir(dir);
	if (!d)
		return cs_error_set(err, errno == ENOENT ? CS_ERR_NOT_FOUND : CS_ERR_IO,
				    "cannot open '%s': %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *path;

		if (!cs_import_is_spool_name(de->d_name))
			continue;
		if (cs_grow((void **)&paths, &cap, n + 1, sizeof(*paths))) {
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			goto out;
		}
		path = malloc(strlen(dir) + len + 2);
		if (!path) {
			rc = cs_error_set(err, CS_ERR_NOMEM, "out of memory");
			goto out;
		}
		sprintf(path, "%s/%s", dir, de->d_name);
		paths[n++] = path;
	}
	if (!n) {
		rc = cs_error_set(err, CS_ERR_NOT_FOUND, "no spool files in '%s'", dir);
		goto out;
	}
	if (n > INT32_MAX) {
		rc = cs_error_set(err, CS_ERR_INVALID, "too many spool files in '%s'", dir);
		goto out;
	}
	cs_sort(paths, n, sizeof(*paths), spool_name_cmp);
	rc = import_files((const char *const *)paths, (int)n, out_path, opts, stats, err, 1);
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}
