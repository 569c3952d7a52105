/*
 * cmd_calibrate.c - `cuscope calibrate`: what recording costs a kernel launch on this machine, as
 * calibrate.c measures it (and `record` after the program), or with --host-speed the host-speed
 * probe `record` runs before and after the program (host_probe.c).
 */
#include <limits.h>
#include <stdlib.h>

#include "cli.h"

#ifdef CUSCOPE_HAVE_RECORD

static const char calibrate_usage[] =
	"usage: cuscope calibrate [options]\n"
	"\n"
	"Measure what recording adds to a kernel launch on this machine, and its parts: loops of\n"
	"launches of an empty kernel on GPU 0, in turn in a process without a profiler and in one\n"
	"with cuscope's injection library switched between CUPTI attached and idle, CUPTI's kernel\n"
	"records alone, everything with the API callbacks returning at once, and everything\n"
	"'cuscope record' records. 'cuscope record' makes the same measurement after the program\n"
	"ends and keeps it in the trace ('cuscope info' shows it; launch-starvation's cost is net\n"
	"of it).\n"
	"\n"
	"options:\n"
	"      --rounds N       rounds of the five loops (default 9, at most 64)\n"
	"      --launches N     launches per loop (default 10000)\n"
	"      --no-backtrace   measure recording without host call stacks\n"
	"      --host-speed     measure only the host's speed, as 'cuscope record' does before\n"
	"                       and after the program: a fixed CPU workload and launches of an\n"
	"                       empty kernel without a profiler (see 'cuscope info', 'gate')\n"
	"  -f, --format FORMAT  text (default) or json\n"
	"  -h, --help           show this help\n"
	"\n"
	"Development options of the injection library are taken from CUSCOPE_RECORD_EXTRA, as by\n"
	"'cuscope record'.\n";

/* calibrate --host-speed: the probe record runs before and after the program, alone. */
static int host_speed_main(enum cli_format fmt)
{
	struct cli_host_probe p;
	char *json;
	cJSON *j;
	int rc;

	cli_host_probe(&p, 1);
	json = cli_host_probe_json(&p, NULL);
	j = json ? cJSON_Parse(json) : NULL;
	free(json);
	if (!j) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	if (fmt == CLI_FORMAT_JSON) {
		rc = cli_json_print(j);
	} else {
		printf("CPU work:     %.1f ns per 1000 steps (spread %.1f%%)\n", p.cpu_ns,
		       100 * p.cpu_spread);
		if (p.launch_ns > 0)
			printf("bare launch:  %.3f us on %s (spread %.1f%%)\n", p.launch_ns / 1e3,
			       p.device, 100 * p.launch_spread);
		else
			printf("bare launch:  not measured: %s\n", p.why);
		rc = CLI_EXIT_OK;
	}
	cJSON_Delete(j);
	return cli_finish_output(rc);
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"rounds", required_argument, NULL, 'R'},
		{"launches", required_argument, NULL, 'L'},
		{"no-backtrace", no_argument, NULL, 'N'},
		{"format", required_argument, NULL, 'f'},
		{"host-speed", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct cli_calibrate_opts o = {.rounds = CLI_CALIBRATE_ROUNDS,
				       .launches = CLI_CALIBRATE_LAUNCHES,
				       .progress = "measuring what recording costs a launch"};
	enum cli_format fmt = CLI_FORMAT_TEXT;
	int64_t v;
	int c, backtrace = 1, rc, host_speed = 0;
	char lib[PATH_MAX], why[300], *options;
	const char *tmp = getenv("TMPDIR");
	cJSON *j;

	while ((c = cli_getopt(argc, argv, "f:h", longopts)) != -1) {
		switch (c) {
		case 'R':
			if (cli_parse_int("calibrate", "--rounds", optarg, 1, CLI_CALIBRATE_MAX_ROUNDS, &v))
				return CLI_EXIT_USAGE;
			o.rounds = (int)v;
			break;
		case 'L':
			if (cli_parse_int("calibrate", "--launches", optarg, 256, 10000000, &v))
				return CLI_EXIT_USAGE;
			o.launches = (int)v;
			break;
		case 'N':
			backtrace = 0;
			break;
		case 'H':
			host_speed = 1;
			break;
		case 'f':
			if (cli_parse_format("calibrate", optarg, &fmt))
				return CLI_EXIT_USAGE;
			break;
		case 'h':
			fputs(calibrate_usage, stdout);
			return cli_finish_output(CLI_EXIT_OK);
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("calibrate", "unexpected argument '%s'", argv[optind]);
	if (host_speed)
		return host_speed_main(fmt);
	if (cli_find_inject_lib(lib, sizeof(lib)))
		return CLI_EXIT_USAGE;
	/* a minute to start and warm up, and 20 us per launch (five times a slow one) */
	o.timeout_s = 60 + 5.0 * o.rounds * o.launches * 20e-6;
	options = cli_record_options(backtrace);
	if (!options) {
		cli_error("out of memory");
		return CLI_EXIT_USAGE;
	}
	o.lib = lib;
	o.options = options;
	o.tmp_dir = tmp && *tmp ? tmp : "/tmp";
	j = cli_calibrate(&o, why, sizeof(why));
	free(options);
	if (!j) {
		cli_error("cannot measure the cost of recording: %s", why);
		return CLI_EXIT_USAGE;
	}
	if (fmt == CLI_FORMAT_JSON) {
		rc = cli_json_print(j);
	} else {
		cli_calibrate_print(j);
		rc = CLI_EXIT_OK;
	}
	cJSON_Delete(j);
	return cli_finish_output(rc);
}

#endif
