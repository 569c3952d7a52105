/*
 * format.c - output helpers of the cuscope commands: wall-clock times, the width of the terminal,
 * JSON printed on stdout and the colour decision (units, tables and JSON items are in src/util:
 * units.c, table.c, json.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* Split ns since the epoch into seconds and milliseconds, flooring for times before 1970. */
static void split_epoch_ns(int64_t ns, time_t *sec, int *msec)
{
	int64_t s = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		s--;
	}
	*sec = (time_t)s;
	*msec = (int)(rem / 1000000);
}

char *cli_fmt_walltime(char *buf, size_t size, int64_t ns)
{
	struct tm tm;
	time_t sec;
	int msec;
	char date[32], zone[16];

	split_epoch_ns(ns, &sec, &msec);
	if (!localtime_r(&sec, &tm)) {
		snprintf(buf, size, "-");
		return buf;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	snprintf(buf, size, "%s.%03d %s", date, msec, zone);
	return buf;
}

char *cli_fmt_walltime_iso(char *buf, size_t size, int64_t ns)
{
	struct tm tm;
	time_t sec;
	int msec;
	char date[32];

	split_epoch_ns(ns, &sec, &msec);
	if (!gmtime_r(&sec, &tm)) {
		snprintf(buf, size, "-");
		return buf;
	}
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03dZ", date, msec);
	return buf;
}

int cli_output_width(int requested)
{
	struct winsize ws;
	const char *columns;

	if (requested >= 0)
		return requested;
	if (!isatty(STDOUT_FILENO))
		return 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	columns = getenv("COLUMNS");
	if (columns && atoi(columns) > 0)
		return atoi(columns);
	return 80;
}

/* ---- JSON ---- */

int cli_json_fprint(FILE *f, const cJSON *root)
{
	char *text = cJSON_Print(root);

	if (!text) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	fputs(text, f);
	fputc('\n', f);
	cJSON_free(text);
	return CLI_EXIT_OK;
}

int cli_json_print(const cJSON *root)
{
	return cli_json_fprint(stdout, root);
}

int cli_use_color(int no_color_opt)
{
	const char *env = getenv("NO_COLOR");

	return !no_color_opt && !(env && *env) && isatty(STDOUT_FILENO);
}
