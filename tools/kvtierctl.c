// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: operate kvtier tiers. See kvtierctl(8).
 *
 * Exit status: 0 success, 1 the operation failed, 2 bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kvtier.h>

#define EXIT_FAIL	1
#define EXIT_USAGE	2

struct cmd {
	const char *name;
	const char *args;
	const char *help;
	int (*run)(int argc, char **argv);
};

static bool opt_json;

static int parse_tier(const char *s, unsigned int *id)
{
	unsigned long v;
	char *end;

	errno = 0;
	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	v = strtoul(s, &end, 10);
	if (errno || *end || v >= 64)
		return -EINVAL;
	*id = (unsigned int)v;
	return 0;
}

static int read_num_tiers(unsigned int *n)
{
	FILE *f = fopen("/sys/module/kvtier/parameters/num_tiers", "re");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%u", n) == 1;
	fclose(f);
	return ok ? 0 : -EIO;
}

static int read_backing(unsigned int id, char *buf, size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/kvtier/kvtier%u/backing_dev", id);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Print one tier's status; returns 0 or -errno. */
static int status_one(unsigned int id, bool first)
{
	struct kvtier_tier_info info;
	struct kvtier_tier *tier;
	char backing[4096];
	int ret;

	ret = read_backing(id, backing, sizeof(backing));
	if (ret)
		return ret;
	ret = kvtier_tier_open(id, &tier);
	if (ret)
		return ret;
	ret = kvtier_tier_info(tier, &info);
	kvtier_tier_close(tier);
	if (ret)
		return ret;

	if (opt_json) {
		/* backing_dev is a path the administrator chose: escape it. */
		printf("%s{\"tier\":%u,\"state\":\"%s\",\"backing_dev\":\"", first ? "" : ",",
		       id, info.flags & KVTIER_TIER_ATTACHED ? "attached" : "detached");
		for (const char *p = backing; *p; p++) {
			if (*p == '"' || *p == '\\')
				printf("\\%c", *p);
			else if ((unsigned char)*p < 0x20)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
		printf("\",\"capacity_bytes\":%llu,\"logical_block_size\":%u}",
		       (unsigned long long)info.capacity_bytes, info.logical_block_size);
	} else {
		printf("kvtier%u: %s backing_dev=%s capacity=%llu bytes block=%u\n",
		       id, info.flags & KVTIER_TIER_ATTACHED ? "attached" : "detached",
		       backing, (unsigned long long)info.capacity_bytes,
		       info.logical_block_size);
	}
	return 0;
}

static int cmd_status(int argc, char **argv)
{
	unsigned int id, first = 0, last;
	int ret;

	if (argc > 2)
		return -EINVAL;
	if (argc == 2) {
		if (parse_tier(argv[1], &id))
			return -EINVAL;
		first = id;
		last = id + 1;
	} else {
		ret = read_num_tiers(&last);
		if (ret) {
			fprintf(stderr, "kvtierctl: kvtier module not loaded: %s\n",
				strerror(-ret));
			return EXIT_FAIL;
		}
	}
	if (opt_json)
		printf("[");
	for (id = first; id < last; id++) {
		ret = status_one(id, id == first);
		if (ret) {
			if (opt_json)
				printf("]\n");
			fprintf(stderr, "kvtierctl: kvtier%u: %s\n", id, strerror(-ret));
			return EXIT_FAIL;
		}
	}
	if (opt_json)
		printf("]\n");
	return 0;
}

static int cmd_attach(int argc, char **argv)
{
	unsigned int id;
	int ret;

	if (argc != 3 || parse_tier(argv[1], &id))
		return -EINVAL;
	ret = kvtier_attach(id, argv[2]);
	if (ret) {
		fprintf(stderr, "kvtierctl: attach %s to kvtier%u: %s\n",
			argv[2], id, strerror(-ret));
		return EXIT_FAIL;
	}
	return 0;
}

static int cmd_detach(int argc, char **argv)
{
	unsigned int id;
	int ret;

	if (argc != 2 || parse_tier(argv[1], &id))
		return -EINVAL;
	ret = kvtier_detach(id);
	if (ret) {
		fprintf(stderr, "kvtierctl: detach kvtier%u: %s\n", id, strerror(-ret));
		return EXIT_FAIL;
	}
	return 0;
}

static const struct cmd cmds[] = {
	{ "status", "[TIER]", "show each tier's state, namespace and capacity", cmd_status },
	{ "attach", "TIER DEVICE", "attach block device DEVICE as TIER's namespace", cmd_attach },
	{ "detach", "TIER", "detach TIER's namespace", cmd_detach },
};

static void usage(FILE *f, const struct cmd *only)
{
	size_t i;

	if (only) {
		fprintf(f, "usage: kvtierctl [--json] %s %s\n  %s\n", only->name,
			only->args, only->help);
		return;
	}
	fprintf(f, "usage: kvtierctl [--json] COMMAND [ARGS]\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %-12s %s\n", cmds[i].name, cmds[i].args, cmds[i].help);
	fprintf(f, "\nTIER is N of /dev/kvtierN. `kvtierctl COMMAND --help` for one command.\n"
		"Exit status: 0 success, 1 failure, 2 bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cmd *cmd = NULL;
	size_t i;
	int c, ret;

	/* "+": stop at the command name; its arguments are its own. */
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			opt_json = true;
			break;
		case 'h':
			usage(stdout, NULL);
			return 0;
		default:
			usage(stderr, NULL);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr, NULL);
		return EXIT_USAGE;
	}
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[optind], cmds[i].name))
			cmd = &cmds[i];
	if (!cmd) {
		fprintf(stderr, "kvtierctl: unknown command '%s'\n", argv[optind]);
		usage(stderr, NULL);
		return EXIT_USAGE;
	}
	for (c = optind + 1; c < argc; c++) {
		if (!strcmp(argv[c], "--help") || !strcmp(argv[c], "-h")) {
			usage(stdout, cmd);
			return 0;
		}
	}
	ret = cmd->run(argc - optind, argv + optind);
	if (ret < 0) {
		usage(stderr, cmd);
		return EXIT_USAGE;
	}
	return ret;
}
