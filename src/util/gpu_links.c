/* gpu_links.c - the PCIe links of the host's NVIDIA GPUs (include/cuscope/gpu_links.h). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cuscope/gpu_links.h"

/* The first line of a small text file, without its newline, into buf; 0, or -1. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	n = strlen(buf);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	return 0;
}

/* The "GPU UUID:" value of a driver information file into uuid; 0, or -1. */
static int info_uuid(const char *path, char *uuid, size_t size)
{
	FILE *f = fopen(path, "r");
	char line[512];
	int rc = -1;

	if (!f)
		return -1;
	while (rc && fgets(line, sizeof(line), f)) {
		char *v, *end;

		if (strncmp(line, "GPU UUID:", 9) != 0)
			continue;
		for (v = line + 9; *v && isspace((unsigned char)*v); v++)
			;
		for (end = v + strlen(v); end > v && isspace((unsigned char)end[-1]); end--)
			;
		*end = '\0';
		if (*v && strlen(v) < size) {
			memcpy(uuid, v, strlen(v) + 1);
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

char *cs_gpu_links_read(const char *proc_root, const char *sys_root)
{
	char path[4096], uuid[128], line[128];
	cJSON *arr = cJSON_CreateArray();
	struct dirent *de;
	char *out = NULL;
	DIR *d;

	if (!arr)
		return NULL;
	snprintf(path, sizeof(path), "%s/driver/nvidia/gpus", proc_root);
	d = opendir(path);
	while (d && (de = readdir(d)) != NULL) {
		double gts;
		long width;
		char *end;
		cJSON *o;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/driver/nvidia/gpus/%s/information", proc_root,
			 de->d_name);
		if (info_uuid(path, uuid, sizeof(uuid)))
			continue;
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/current_link_speed", sys_root,
			 de->d_name);
		if (read_line(path, line, sizeof(line)))
			continue;
		gts = strtod(line, &end); /* "32.0 GT/s PCIe" */
		if (end == line || gts <= 0 || gts > 1024 || !strstr(end, "GT/s"))
			continue;
		snprintf(path, sizeof(path), "%s/bus/pci/devices/%s/current_link_width", sys_root,
			 de->d_name);
		if (read_line(path, line, sizeof(line)))
			continue;
		width = strtol(line, &end, 10);
		if (end == line || width <= 0 || width > 64)
			continue;
		o = cJSON_CreateObject();
		if (!o || !cJSON_AddStringToObject(o, "uuid", uuid) ||
		    !cJSON_AddStringToObject(o, "bus", de->d_name) ||
		    !cJSON_AddNumberToObject(o, "gts", gts) ||
		    !cJSON_AddNumberToObject(o, "width", (double)width)) {
			cJSON_Delete(o);
			continue;
		}
		cJSON_AddItemToArray(arr, o);
	}
	if (d)
		closedir(d);
	if (cJSON_GetArraySize(arr) > 0)
		out = cJSON_PrintUnformatted(arr);
	cJSON_Delete(arr);
	return out;
}

double cs_gpu_link_bytes_per_s(const char *links_json, const char *uuid)
{
	cJSON *arr, *o;
	double bps = 0;

	if (!links_json || !uuid || !*uuid)
		return 0;
	arr = cJSON_Parse(links_json);
	cJSON_ArrayForEach(o, arr)
	{
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "uuid"),
			    *g = cJSON_GetObjectItemCaseSensitive(o, "gts"),
			    *w = cJSON_GetObjectItemCaseSensitive(o, "width");

		if (!cJSON_IsString(u) || strcmp(u->valuestring, uuid) != 0 || !cJSON_IsNumber(g) ||
		    !cJSON_IsNumber(w) || g->valuedouble <= 0 || w->valuedouble <= 0)
			continue;
		/* PCIe 3.0 and later: 128b/130b; 1.x and 2.x: 8b/10b */
		bps = g->valuedouble * 1e9 * w->valuedouble *
		      (g->valuedouble >= 8 ? 128.0 / 130.0 : 0.8) / 8;
		break;
	}
	cJSON_Delete(arr);
	return bps;
}
