/*
 * fuzz_files.c - the fuzz targets' directory and input file (fuzz_files.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz_files.h"

static char dir[4096];
char fuzz_in_path[4200], fuzz_out_path[4200];

static void remove_dir(void)
{
	unlink(fuzz_in_path);
	unlink(fuzz_out_path);
	rmdir(dir);
}

void fuzz_files_init(const char *name, const char *in_name, const char *out_name)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");

	snprintf(dir, sizeof dir, "%s/cuscope-fuzz-%s-XXXXXX", base && *base ? base : "/tmp", name);
	if (!mkdtemp(dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	snprintf(fuzz_in_path, sizeof fuzz_in_path, "%s/%s", dir, in_name);
	snprintf(fuzz_out_path, sizeof fuzz_out_path, "%s/%s", dir, out_name);
	atexit(remove_dir);
}

void fuzz_files_write(const uint8_t *data, size_t size)
{
	FILE *f = fopen(fuzz_in_path, "wb");
	int ok = f && fwrite(data, 1, size, f) == size;

	if (!f || fclose(f) != 0 || !ok) {
		perror("fuzz: write");
		abort();
	}
}
