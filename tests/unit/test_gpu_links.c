/*
 * test_gpu_links.c - the GPUs' PCIe links that `record` stores in META gpu_links
 * (cuscope/gpu_links.h): read from a fake /proc and /sys tree (a GPU with its link, one without a
 * sysfs entry, one with a link speed that is not one, one the driver lists without a UUID), and the
 * bandwidth read back.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cuscope/gpu_links.h"
#include "testutil.h"

static void mkdirs(const char *root, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	ck_assert_int_eq(tu_write_file(path, text, strlen(text)), 0);
}

static void gpu(const char *root, const char *bus, const char *uuid, const char *speed,
		const char *width)
{
	char rel[512], text[512];

	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s", bus);
	mkdirs(root, rel);
	snprintf(rel, sizeof(rel), "proc/driver/nvidia/gpus/%s/information", bus);
	if (uuid)
		snprintf(text, sizeof(text),
			 "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nGPU UUID: \t %s\nVideo BIOS: \t "
			 "96.00.99.00.01\nBus Location: \t %s\n",
			 uuid, bus);
	else
		snprintf(text, sizeof(text), "Model: \t\t NVIDIA H200\n");
	put(root, rel, text);
	if (!speed)
		return;
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s", bus);
	mkdirs(root, rel);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/current_link_speed", bus);
	put(root, rel, speed);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/current_link_width", bus);
	put(root, rel, width);
}

START_TEST(test_read_links)
{
	char *root = tu_tmpdir(), proc[4096], sys[4096], *json;
	cJSON *arr, *o;

	gpu(root, "0000:18:00.0", "GPU-aaaa", "32.0 GT/s PCIe\n", "16\n");
	gpu(root, "0000:2a:00.0", "GPU-bbbb", "5.0 GT/s PCIe\n", "8\n");
	gpu(root, "0000:3b:00.0", "GPU-cccc", NULL, NULL);	     /* no sysfs entry */
	gpu(root, "0000:4c:00.0", "GPU-dddd", "Unknown\n", "16\n");  /* no speed */
	gpu(root, "0000:5d:00.0", NULL, "32.0 GT/s PCIe\n", "16\n"); /* no UUID */
	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(sys, sizeof(sys), "%s/sys", root);
	json = cs_gpu_links_read(proc, sys);
	ck_assert_ptr_nonnull(json);
	arr = cJSON_Parse(json);
	ck_assert(cJSON_IsArray(arr));
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	cJSON_ArrayForEach(o, arr)
	{
		const char *u = cJSON_GetObjectItem(o, "uuid")->valuestring;

		ck_assert(!strcmp(u, "GPU-aaaa") || !strcmp(u, "GPU-bbbb"));
		ck_assert_str_eq(cJSON_GetObjectItem(o, "bus")->valuestring,
				 !strcmp(u, "GPU-aaaa") ? "0000:18:00.0" : "0000:2a:00.0");
	}
	cJSON_Delete(arr);
	/* PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s; 2.0 x8: 5 x 8 x 8/10 / 8 */
	ck_assert_double_eq_tol(cs_gpu_link_bytes_per_s(json, "GPU-aaaa"),
				32e9 * 16 * 128 / 130 / 8, 1);
	ck_assert_double_eq_tol(cs_gpu_link_bytes_per_s(json, "GPU-bbbb"), 4e9, 1);
	ck_assert(cs_gpu_link_bytes_per_s(json, "GPU-cccc") == 0);
	ck_assert(cs_gpu_link_bytes_per_s(json, "") == 0);
	ck_assert(cs_gpu_link_bytes_per_s(json, NULL) == 0);
	free(json);
	free(root);
}
END_TEST

START_TEST(test_nothing_to_read)
{
	char *root = tu_tmpdir();

	/* no driver directory: nothing, and no empty array stored */
	ck_assert_ptr_null(cs_gpu_links_read(root, root));
	ck_assert_ptr_null(cs_gpu_links_read("/nonexistent-cuscope", "/nonexistent-cuscope"));
	free(root);
}
END_TEST

START_TEST(test_bad_values)
{
	static const char *const bad[] = {
		NULL,
		"",
		"not json",
		"{\"uuid\":\"GPU-aaaa\",\"gts\":32,\"width\":16}", /* an object, not an array */
		"[{\"uuid\":\"GPU-aaaa\",\"gts\":\"32\",\"width\":16}]",
		"[{\"uuid\":\"GPU-aaaa\",\"gts\":-1,\"width\":16}]",
		"[{\"uuid\":\"GPU-aaaa\",\"gts\":32,\"width\":0}]",
		"[{\"gts\":32,\"width\":16}]",
		"[1, null, \"x\"]",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(cs_gpu_link_bytes_per_s(bad[i], "GPU-aaaa") == 0, "value %zu", i);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpu_links");
	TCase *tc = tcase_create("gpu_links");

	tcase_add_test(tc, test_read_links);
	tcase_add_test(tc, test_nothing_to_read);
	tcase_add_test(tc, test_bad_values);
	suite_add_tcase(s, tc);
	return tu_run_suite(s);
}
