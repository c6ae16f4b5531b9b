// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: operate kvtier tiers. See kvtierctl(8).
 *
 * Exit status: 0 success, 1 the operation failed, 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <kvtier.h>

#include "ctl.h"

bool opt_json;

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const struct cmd cmds[] = {
	{ "status", "[TIER]", "show each tier: device, capacity, budget, state",
	  "options:\n"
	  "  -j, --json           a JSON array, one object per tier\n",
	  cmd_status },
	{ "attach", "[--force] [--format [--yes]] TIER DEVICE",
	  "identify DEVICE, check it is unused, attach it as TIER's namespace",
	  "options:\n"
	  "  -f, --force          attach even a non-NVMe, mounted-looking, signed\n"
	  "                       or small device (the kernel's own checks stay)\n"
	  "  -F, --format         write a fresh kvtier format first, destroying\n"
	  "                       what DEVICE holds (never a device in use);\n"
	  "                       asks for confirmation on a terminal\n"
	  "  -y, --yes            with --format: do not ask (needed when stdin\n"
	  "                       is not a terminal)\n",
	  cmd_attach },
	{ "detach", "TIER", "detach TIER's namespace", NULL, cmd_detach },
	{ "upgrade", "TIER",
	  "upgrade TIER's attached namespace to format version 5, in place",
	  "A version-1 namespace (a full checkpoint per commit) gets the journal\n"
	  "of version 2 in a free run of its data slots, a version-2 one the\n"
	  "extent-mapped checkpoints of version 3, their CRC sections in two more\n"
	  "runs, a version-3 one version 4's CRC runs, each region's CRCs in\n"
	  "data slots of its own, and a version-4 one version 5's sizes in bytes\n"
	  "(kvtierfs files are made and grow); its regions stay. Modules older\n"
	  "than the new version no longer attach it afterwards.\n",
	  cmd_upgrade },
	{ "stat", "[TIER] [INTERVAL [COUNT]]  (TIER: kvtierN or /dev/kvtierN)",
	  "rates per interval: faults, major %, MB/s, refaults, fault latency",
	  "INTERVAL seconds per line (default 1; decimals allowed), COUNT lines\n"
	  "(default: until interrupted), as vmstat takes them.\n"
	  "options:\n"
	  "  -i, --interval SECS  the interval as an option; then TIER may be a number\n"
	  "  -c, --count N        the count as an option\n"
	  "  -j, --json           one JSON object per line, with \"time\" (epoch s)\n",
	  cmd_stat },
	{ "top", "[TIER] [INTERVAL [COUNT]]  (TIER: kvtierN or /dev/kvtierN)",
	  "live full-screen view of a tier and its regions, with warnings",
	  "INTERVAL seconds per frame (default 2), COUNT frames (default: until q\n"
	  "or Ctrl-C).\n"
	  "options:\n"
	  "  -i, --interval SECS  the interval as an option; then TIER may be a number\n"
	  "  -c, --count N        the count as an option\n",
	  cmd_top },
	{ "regions", "[-o COLUMNS] [-b] [-n] [TIER]",
	  "list the regions of a tier (debugfs, root)",
	  "options:\n"
	  "  -j, --json           a JSON array, one object per region and GPU range\n"
	  "  -o, --output LIST    the columns to show, in order (ID,NAME,OWNER,SIZE,\n"
	  "                       RESIDENT,DIRTY,NS,PINNED,GPU,FAULTS,REFAULTS,IDLE_MS);\n"
	  "                       the GPU ranges table is left out\n"
	  "  -b, --bytes          sizes in bytes, not 64.0M\n"
	  "  -n, --noheadings     no header line (and no GPU ranges table)\n",
	  cmd_regions },
	{ "set", "TIER KNOB VALUE", "validate VALUE and write the knob",
	  "knobs (VALUE: decimal; checked before writing, exit 2 if bad):\n"
	  "  host_budget_mb       1..RAM in MiB\n"
	  "  watermark_high       1..100, above watermark_low\n"
	  "  watermark_low        0..99, below watermark_high\n"
	  "  dirty_background_pct 0 (off)..99, dirty share that starts write-back\n"
	  "  readahead_kb         0..1024, multiple of 4\n"
	  "  writeback_batch_kb   4..65536, multiple of 4\n"
	  "  max_inflight_kb      4..1048576, multiple of 4\n"
	  "  discard              0 or 1\n"
	  "  checksum             0 or 1\n"
	  "  pin_budget_mb        0..RAM in MiB\n"
	  "  user_pin_mb          0 (no per-user bound)..RAM in MiB\n"
	  "  user_quota_mb        0 (unlimited)..2147483647\n"
	  "  max_regions          0 (unlimited)..2147483647 regions in the tier\n"
	  "  user_max_regions     0 (unlimited)..2147483647 regions per user\n"
	  "  read_only            0 or 1, only while detached (next attach read-only)\n"
	  "  lease_interval_ms    100..60000, only while detached (ownership lease renewal)\n"
	  "  format_version       1 to 4, only while detached (version a format writes)\n"
	  "units, defaults and effects: kvtier-pool(7), kvtier-io(7)\n",
	  cmd_set },
	{ "apply", "[--dry-run] [--config FILE] [--wait SECONDS] [--detach]",
	  "make the tiers match kvtier.conf(5): load, set knobs, attach",
	  "options:\n"
	  "  -n, --dry-run        print the changes, make none\n"
	  "  -C, --config FILE    FILE and FILE.d/*.conf (default\n"
	  "                       /etc/kvtier/kvtier.conf and kvtier.conf.d/)\n"
	  "  -w, --wait SECONDS   wait up to SECONDS for the devices to appear\n"
	  "  -d, --detach         detach the configured tiers instead (shutdown)\n",
	  cmd_apply },
	{ "metrics", "[--textfile DIR] [TIER]",
	  "counters, gauges and histograms in the Prometheus text format",
	  "options:\n"
	  "  -T, --textfile DIR   write DIR/kvtier.prom atomically (node_exporter's\n"
	  "                       textfile collector) instead of stdout\n",
	  cmd_metrics },
	{ "get", "TIER [KNOB...]", "read knobs back (all of them by default)",
	  "options:\n"
	  "  -j, --json           one object, knob: value\n",
	  cmd_get },
	{ "persist", "ls [-o COLUMNS] [-b] [-n] [TIER] | rm|pin|unpin|seal [-t TIER] NAME",
	  "persistent regions: list, remove, pin against reclaim, unpin, seal",
	  "verbs:\n"
	  "  ls [TIER]            the tier's persistent regions (default tier 0)\n"
	  "  rm NAME              remove one (its bytes go when its last user does)\n"
	  "  pin NAME             never reclaim it when the namespace is full\n"
	  "  unpin NAME           let it be reclaimed again, least recently used first\n"
	  "  seal NAME            make it immutable for good (read-only binds only;\n"
	  "                       no file may have it open)\n"
	  "options:\n"
	  "  -t, --tier N         the tier (default 0)\n"
	  "  -o, --output LIST    ls: the columns, in order (NAME,SIZE,NS,RESIDENT,\n"
	  "                       OWNER,MODE,CREATED,LAST_USED,USERS,PINNED,SEALED)\n"
	  "  -b, --bytes          ls: sizes in bytes\n"
	  "  -n, --noheadings     ls: no header line\n"
	  "  -j, --json           ls: a JSON array, one object per region\n",
	  cmd_persist },
	{ "gpu", "[TIER]",
	  "which GPU modes (hmm, managed, offload) this host allows, and why",
	  "From the kernel's configuration, the NVIDIA kernel modules, each CUDA\n"
	  "device's pageable memory access (libcuda.so.1, when installed) and\n"
	  "TIER (default 0).\n"
	  "options:\n"
	  "  -j, --json           one object: the evidence and the verdicts\n",
	  cmd_gpu },
};

static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "kvtierctl: %s", prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	return EXIT_FAIL;
}

void warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

static void usage_cmd(FILE *f, const struct cmd *c)
{
	fprintf(f, "usage: kvtierctl %s %s\n  %s\n", c->name, c->args, c->help);
	if (c->options)
		fputs(c->options, f);
	fprintf(f, "  -h, --help           this text\n");
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: kvtierctl [--json] COMMAND [ARGS]\n"
		"       kvtierctl --version\n\ncommands:\n");
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\nTIER is N, kvtierN or /dev/kvtierN. `kvtierctl COMMAND --help` for one command.\n"
		"Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

int usage_error(const struct cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
	/* One line and a hint, as coreutils do: the usage is a --help away. */
	if (cmd)
		fprintf(stderr, "Try 'kvtierctl %s --help'.\n", cmd->name);
	else
		fprintf(stderr, "Try 'kvtierctl --help'.\n");
	return EXIT_USAGE;
}

/*
 * Long names of the option letters commands may use. A letter may mean
 * two things (-n: apply's --dry-run, the tables' --noheadings, as lsblk
 * has it): then its entries name the commands they belong to.
 */
static const struct {
	struct option opt;
	const char *only;	/* the command it belongs to, or NULL: any */
} all_opts[] = {
	{ { "json", no_argument, NULL, 'j' }, NULL },
	{ { "force", no_argument, NULL, 'f' }, NULL },
	{ { "format", no_argument, NULL, 'F' }, NULL },
	{ { "yes", no_argument, NULL, 'y' }, NULL },
	{ { "tier", required_argument, NULL, 't' }, NULL },
	{ { "interval", required_argument, NULL, 'i' }, NULL },
	{ { "count", required_argument, NULL, 'c' }, NULL },
	{ { "dry-run", no_argument, NULL, 'n' }, "apply" },
	{ { "noheadings", no_argument, NULL, 'n' }, NULL },
	{ { "output", required_argument, NULL, 'o' }, NULL },
	{ { "bytes", no_argument, NULL, 'b' }, NULL },
	{ { "config", required_argument, NULL, 'C' }, NULL },
	{ { "detach", no_argument, NULL, 'd' }, NULL },
	{ { "wait", required_argument, NULL, 'w' }, NULL },
	{ { "textfile", required_argument, NULL, 'T' }, NULL },
};

/* The struct option of letter @c for @cmd. */
static const struct option *opt_of(const struct cmd *cmd, char c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(all_opts); i++)
		if (all_opts[i].opt.val == c &&
		    (!all_opts[i].only || !strcmp(all_opts[i].only, cmd->name)))
			return &all_opts[i].opt;
	return NULL;
}

/* Index of option letter *@p among the letters (not ':') of @spec. */
static size_t letter_index(const char *spec, const char *p)
{
	size_t i = 0;

	for (; spec < p; spec++)
		if (*spec != ':')
			i++;
	return i;
}

int parse_opts(const struct cmd *cmd, int argc, char **argv,
	       const char *spec, const char **vals)
{
	struct option longopts[ARRAY_SIZE(all_opts) + 1] = { 0 };
	char shortopts[32] = "j";
	size_t n = 0;
	const char *p;
	int c;

	longopts[n++] = all_opts[0].opt;
	for (p = spec; *p; p++) {
		if (*p == ':')
			continue;
		longopts[n++] = *opt_of(cmd, *p);
		strncat(shortopts, p, p[1] == ':' ? 2 : 1);
	}
	optind = 0;	/* glibc: start afresh (main() used getopt too) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (c == 'j') {
			opt_json = true;
			continue;
		}
		p = c == '?' || c == ':' ? NULL : strchr(spec, c);
		if (!p) {
			usage_error(cmd, "%s: bad option or missing value: '%s'",
				    cmd->name, argv[optind - 1]);
			return -1;
		}
		vals[letter_index(spec, p)] = optarg ? optarg : "1";
	}
	return optind;
}

/* A tier as 0, kvtier0 or /dev/kvtier0. */
int parse_tier(const char *s, unsigned int *id)
{
	uint64_t v;

	if (s && !strncmp(s, "/dev/", 5))
		s += 5;
	if (s && !strncmp(s, "kvtier", 6))
		s += 6;
	if (parse_u64(s, &v) || v >= KVT_MAX_TIERS)
		return -EINVAL;
	*id = (unsigned int)v;
	return 0;
}

int parse_u64(const char *s, uint64_t *v)
{
	unsigned long long x;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

int parse_interval(const char *s, double *secs)
{
	char *end;
	double v;

	if (!s || !*s || (*s != '.' && (*s < '0' || *s > '9')))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < 0.01 || v > 3600)
		return -EINVAL;
	*secs = v;
	return 0;
}

int tier_operand(const struct cmd *cmd, int argc, char **argv, int first,
		 unsigned int *id)
{
	*id = 0;
	if (argc - first > 1)
		return usage_error(cmd, "%s: too many arguments", cmd->name);
	if (argc - first == 1 && parse_tier(argv[first], id))
		return usage_error(cmd, "%s: bad TIER '%s' (0..%d)", cmd->name,
				   argv[first], KVT_MAX_TIERS - 1);
	return 0;
}

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(name, cmds[i].name))
			return &cmds[i];
	return NULL;
}

/* --help anywhere among a command's arguments (before a lone "--"). */
static bool wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *cmd;
	int c;

	/* "+": stop at the command name; its arguments are its own. */
	while ((c = getopt_long(argc, argv, "+jhV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			opt_json = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			/* Both halves: a tool and a library from two installs. */
			printf("kvtierctl %s, libkvtier %s\n", KVTIER_VERSION,
			       kvtier_version());
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'kvtierctl --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind >= argc)
		return usage_error(NULL, "no command");
	cmd = find_cmd(argv[optind]);
	if (!cmd)
		return usage_error(NULL, "unknown command '%s'", argv[optind]);
	argc -= optind;
	argv += optind;
	if (wants_help(argc, argv)) {
		usage_cmd(stdout, cmd);
		return EXIT_OK;
	}
	return cmd->run(cmd, argc, argv);
}
