// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl attach, detach, persist.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include <kvtier.h>

#include "ctl.h"

enum { OPT_FORCE, OPT_FORMAT, OPT_NR };

static void print_identify(const char *path, const struct kvt_nvme_id *id)
{
	char sz[32];
	uint64_t bytes = id->nsze_blocks * id->lba_bytes;

	printf("%s: NVMe namespace\n", path);
	printf("  model     %s\n", id->model);
	printf("  serial    %s\n", id->serial);
	printf("  firmware  %s\n", id->firmware);
	printf("  nsid      %u\n", id->nsid);
	printf("  lba       %u bytes + %u metadata (format %u)\n", id->lba_bytes,
	       id->meta_bytes, id->lbaf);
	printf("  capacity  %s (%llu bytes, %llu blocks)\n",
	       fmt_size(sz, sizeof(sz), bytes), (unsigned long long)bytes,
	       (unsigned long long)id->nsze_blocks);
}

/* Identify @path; a non-NVMe device is a problem bit, not an error. */
static void identify(const char *path, struct kvt_devcheck *c)
{
	struct kvt_nvme_id id;
	int ret = kvt_nvme_identify(path, &id);

	if (!ret)
		print_identify(path, &id);
	else if (ret == -ENOTTY)
		c->problems |= KVT_DEV_NOT_NVME;
	else
		warn("%s: NVMe identify failed: %s", path, strerror(-ret));
}

int cmd_attach(const struct cmd *cmd, int argc, char **argv)
{
	const char *opt[OPT_NR] = { NULL };
	struct kvt_devcheck c;
	const char *path;
	unsigned int id;
	int first, ret;

	first = parse_opts(cmd, argc, argv, "fF", opt);
	if (first < 0)
		return EXIT_USAGE;
	if (opt_json)
		return usage_error(cmd, "attach has no --json output");
	if (argc - first != 2 || parse_tier(argv[first], &id))
		return usage_error(cmd, "attach: need TIER (0..%d) and DEVICE",
				   KVT_MAX_TIERS - 1);
	if (opt[OPT_FORMAT])
		return fail("--format: the module has no on-namespace format yet; nothing written");
	path = argv[first + 1];
	ret = tier_check(id);
	if (!ret)
		ret = kvt_dev_is_block(path);
	if (ret)
		return ret;

	kvt_dev_check(path, &c);
	if (!(c.problems & KVT_DEV_UNREADABLE))
		identify(path, &c);
	fflush(stdout);		/* identify first, then the verdict */
	if (c.problems && !opt[OPT_FORCE]) {
		kvt_dev_report(path, &c, "");
		return fail("not attaching %s (--force overrides these checks)", path);
	}
	kvt_dev_report(path, &c, "warning: --force: ");

	ret = kvtier_attach(id, path);
	if (ret)
		return fail("attach %s to kvtier%u: %s", path, id, strerror(-ret));
	printf("kvtier%u: attached %s\n", id, path);
	return EXIT_OK;
}

int cmd_detach(const struct cmd *cmd, int argc, char **argv)
{
	unsigned int id;
	int ret;

	if (opt_json)
		return usage_error(cmd, "detach has no --json output");
	if (argc != 2 || parse_tier(argv[1], &id))
		return usage_error(cmd, "detach: need TIER (0..%d)", KVT_MAX_TIERS - 1);
	ret = tier_check(id);
	if (ret)
		return ret;
	ret = kvtier_detach(id);
	if (ret)
		return fail("detach kvtier%u: %s%s", id, strerror(-ret),
			    ret == -EBUSY ? " (the tier is open)" : "");
	return EXIT_OK;
}

int cmd_persist(const struct cmd *cmd, int argc, char **argv)
{
	static const char * const verbs[] = { "ls", "rm", "pin", "unpin" };
	size_t i;

	if (argc < 2)
		return usage_error(cmd, "persist: need ls, rm, pin or unpin");
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(argv[1], verbs[i]))
			return fail("persistent regions are not implemented by this module yet");
	return usage_error(cmd, "persist: unknown verb '%s'", argv[1]);
}
