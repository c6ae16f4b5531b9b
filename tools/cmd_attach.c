// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl attach (and attach --format), detach.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <kvtier.h>
#include <linux/kvtier_format.h>

#include "ctl.h"

enum { OPT_FORCE, OPT_FORMAT, OPT_YES, OPT_NR };

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

/*
 * Where the namespace is reached: the subsystem, each controller (path)
 * with its transport, address and state. On a fabrics namespace, a
 * warning when one lost path loses the namespace.
 */
static void print_topology(const char *path)
{
	struct kvt_nvme_topo t;
	const char *why;
	unsigned int i;
	int ret = kvt_nvme_topology(path, &t);

	if (ret) {
		if (ret != -ENOENT)
			warn("%s: NVMe topology scan failed: %s", path, strerror(-ret));
		return;
	}
	printf("  subsystem %s\n", t.subsysnqn);
	for (i = 0; i < t.npaths; i++) {
		const struct kvt_nvme_path *p = &t.path[i];

		printf("  path      %s %s %s %s", p->ctrl, p->transport,
		       *p->address ? p->address : "-", p->state);
		if (*p->ctrl_loss_tmo)
			printf(" ctrl_loss_tmo %s", p->ctrl_loss_tmo);
		putchar('\n');
	}
	if (t.more_paths)
		printf("  path      ... (more than %d)\n", KVT_NVME_MAX_PATHS);
	if (!kvt_nvme_is_fabrics(&t))
		return;
	why = kvt_nvme_single_path(&t);
	fflush(stdout);
	if (why)
		warn("%s: fabrics namespace without multipath redundancy: %s; when it is lost for longer than ctrl_loss_tmo, accesses to pages that are not resident fail (SIGBUS, EIO)",
		     path, why);
}

/* Identify @path; a non-NVMe device is a problem bit, not an error. */
static void identify(const char *path, struct kvt_devcheck *c)
{
	struct kvt_nvme_id id;
	int ret = kvt_nvme_identify(path, &id);

	if (!ret) {
		print_identify(path, &id);
		print_topology(path);
	} else if (ret == -ENOTTY) {
		c->problems |= KVT_DEV_NOT_NVME;
	} else {
		warn("%s: NVMe identify failed: %s", path, strerror(-ret));
	}
}

/* The tier must be detached: the kernel's EBUSY would not say why. */
static int tier_free(unsigned int id)
{
	char backing[4096];

	if (kvtier_tier_attr_get(id, "backing_dev", backing, sizeof(backing)) ||
	    !strcmp(backing, "none"))
		return 0;
	return fail("kvtier%u already has %s attached; detach it first (kvtierctl detach %u)",
		    id, backing, id);
}

/* Does the running module have the format attribute? */
static bool has_format_attr(unsigned int id)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/class/kvtier/kvtier%u/format", id);
	return !stat(path, &st);
}

/* What --format is about to destroy, on stderr; nothing for a blank device. */
static void report_destroy(const char *path, const struct kvt_devcheck *c)
{
	char what[160];

	if (c->kvtier.state != KVT_FORMAT_NONE)
		fprintf(stderr, "kvtierctl: --format: destroying %s on %s\n",
			kvt_format_describe(what, sizeof(what), &c->kvtier), path);
	if (c->signature[0])
		fprintf(stderr, "kvtierctl: --format: destroying %s on %s\n",
			c->signature, path);
}

/* Ask on the terminal whether to format @path; true for "y" or "yes". */
static bool confirm_format(const char *path, unsigned int id)
{
	char line[16];

	fprintf(stderr, "kvtierctl: format %s for kvtier%u, destroying everything on it? [y/N] ",
		path, id);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	line[strcspn(line, "\n")] = '\0';
	return !strcasecmp(line, "y") || !strcasecmp(line, "yes");
}

/* The kernel refused backing_dev or format: say why in its terms. */
int attach_error(unsigned int id, const char *path, bool format, int err)
{
	const char *op = format ? "format" : "attach";
	const char *to = format ? "for" : "to";
	struct kvt_format f;

	switch (err) {
	case -EMEDIUMTYPE:
		return fail("%s holds a foreign signature or data (see dmesg); use attach --format to destroy it",
			    path);
	case -EUCLEAN:
		return fail("damaged kvtier metadata on %s: see dmesg; attach --format to start over (loses all persistent regions)",
			    path);
	case -EOPNOTSUPP:
		return fail("%s has a newer kvtier format than this module", path);
	case -ENOSPC:
		return fail("%s is too small for a kvtier namespace", path);
	case -EBUSY:
		if (!format && !kvt_format_probe(path, &f) &&
		    f.lease_state == KVTIER_LEASE_HELD)
			return fail("%s %s %s kvtier%u: the namespace is attached read-write elsewhere: its ownership lease is held by host %s (kvtier%u) and renewed every %u ms; detach it there, or attach it read-only (kvtierctl set %u read_only 1)",
				    op, path, to, id, f.lease_host, f.lease_tier,
				    f.lease_interval_ms, id);
		return fail("%s %s %s kvtier%u: the device is claimed by someone else (a mount, md/dm, another tier) or the tier is busy",
			    op, path, to, id);
	case -EIO:
		return fail("%s %s %s kvtier%u: I/O error on the device (see dmesg)",
			    op, path, to, id);
	case -EACCES:
	case -EPERM:
		return fail("%s %s %s kvtier%u: %s (needs root)", op, path, to, id,
			    strerror(-err));
	}
	return fail("%s %s %s kvtier%u: %s", op, path, to, id, strerror(-err));
}

int cmd_attach(const struct cmd *cmd, int argc, char **argv)
{
	const unsigned int in_use = KVT_DEV_MOUNTED | KVT_DEV_IN_USE;
	const char *opt[OPT_NR] = { NULL };
	struct kvt_devcheck c;
	char what[160];
	const char *path;
	unsigned int id;
	bool format;
	int first, ret;

	first = parse_opts(cmd, argc, argv, "fFy", opt);
	if (first < 0)
		return EXIT_USAGE;
	if (opt_json)
		return usage_error(cmd, "attach has no --json output");
	if (argc - first != 2 || parse_tier(argv[first], &id))
		return usage_error(cmd, "attach: need TIER (0..%d) and DEVICE",
				   KVT_MAX_TIERS - 1);
	format = opt[OPT_FORMAT];
	if (opt[OPT_YES] && !format)
		return usage_error(cmd, "attach: --yes only goes with --format");
	/* Scripts say --yes; a prompt nobody can answer would only hang. */
	if (format && !opt[OPT_YES] && !isatty(STDIN_FILENO))
		return usage_error(cmd, "attach --format: stdin is not a terminal to confirm on; pass --yes (nothing written)");
	path = argv[first + 1];
	ret = tier_check(id);
	if (!ret && format && !has_format_attr(id))
		ret = fail("--format: this kvtier module has no format attribute (it predates persistent regions); nothing written");
	if (!ret)
		ret = kvt_dev_is_block(path);
	if (!ret)
		ret = tier_free(id);
	if (ret)
		return ret;

	kvt_dev_check(path, &c);
	if (!(c.problems & KVT_DEV_UNREADABLE))
		identify(path, &c);
	if (c.kvtier.state != KVT_FORMAT_NONE)
		printf("%s: holds %s\n", path,
		       kvt_format_describe(what, sizeof(what), &c.kvtier));
	fflush(stdout);		/* identify first, then the verdict */
	/* What --format destroys is reported below, not refused. */
	if (format)
		c.problems &= ~KVT_DEV_SIGNATURE;
	if (format && (c.problems & in_use)) {
		kvt_dev_report(path, &c, "");
		return fail("not formatting %s: a device in use is never formatted (not even with --force)",
			    path);
	}
	if (c.problems && !opt[OPT_FORCE]) {
		kvt_dev_report(path, &c, "");
		return fail("not %s %s (--force overrides these checks)",
			    format ? "formatting" : "attaching", path);
	}
	kvt_dev_report(path, &c, "warning: --force: ");

	if (format) {
		report_destroy(path, &c);
		if (!opt[OPT_YES] && !confirm_format(path, id))
			return fail("not formatting %s: not confirmed", path);
		ret = kvtier_format(id, path);
	} else {
		ret = kvtier_attach(id, path);
	}
	if (ret)
		return attach_error(id, path, format, ret);
	printf("kvtier%u: %s %s\n", id, format ? "formatted and attached" : "attached",
	       path);
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
			    ret == -EBUSY ? " (the tier is open, or has named regions that are not persistent)" : "");
	return EXIT_OK;
}

/* What format version @v adds, for the line upgrade prints. */
static const char *version_says(const char *v)
{
	switch (*v) {
	case '5':
		return "commits go to a journal, pages mapped by extents, CRCs in runs of their own, sizes in bytes: kvtierfs files are made and grow";
	case '4':
		return "commits go to a journal, pages mapped by extents, CRCs in runs of their own; the loaded module knows no version 5";
	default:
		return "commits go to a journal, pages mapped by extents; the loaded module knows no version 4";
	}
}

/*
 * upgrade TIER: the attached namespace to format version 5, the newest,
 * in place (sysfs upgrade; Documentation/kvtier-format.rst, "Upgrade from
 * version 1" to "from version 4"): a version at a time. A module that
 * knows only an older version (EINVAL for 5, then 4) gets the newest it
 * knows.
 */
int cmd_upgrade(const struct cmd *cmd, int argc, char **argv)
{
	static const char *const newest[] = { "5", "4", "3" };
	const char *to = newest[0];
	char was[32], now[32];
	unsigned int id, i;
	bool moved;
	int ret;

	if (opt_json)
		return usage_error(cmd, "upgrade has no --json output");
	if (argc != 2 || parse_tier(argv[1], &id))
		return usage_error(cmd, "upgrade: need TIER (0..%d)", KVT_MAX_TIERS - 1);
	ret = tier_check(id);
	if (ret)
		return ret;
	ret = kvtier_tier_attr_get(id, "upgrade", was, sizeof(was));
	if (ret == -ENOENT)
		return fail("upgrade kvtier%u: the loaded kvtier module cannot upgrade a namespace (no upgrade attribute)",
			    id);
	if (ret)
		return fail("upgrade kvtier%u: reading its format version: %s", id, strerror(-ret));
	if (!strcmp(was, "none"))
		return fail("upgrade kvtier%u: no namespace attached", id);
	if (!strcmp(was, newest[0])) {
		printf("kvtier%u: the namespace is format version %s already\n", id, was);
		return EXIT_OK;
	}
	/* An older module refuses a version it does not know: the next. */
	for (i = 0; i < sizeof(newest) / sizeof(newest[0]); i++) {
		to = newest[i];
		if (strcmp(was, to) >= 0 && strlen(was) == 1) {
			printf("kvtier%u: the namespace is format version %s, the newest the loaded module knows\n",
			       id, was);
			return EXIT_OK;
		}
		ret = kvtier_tier_attr_set(id, "upgrade", to);
		if (ret != -EINVAL)
			break;
	}
	if (ret) {
		/* A failed step may have left an earlier version (2 from 1). */
		moved = !kvtier_tier_attr_get(id, "upgrade", now, sizeof(now)) &&
			strcmp(now, was) && strcmp(now, "none");
		if (moved)
			printf("kvtier%u: upgraded the namespace from format version %s to %s\n",
			       id, was, now);
		return fail("upgrade kvtier%u from format version %s to %s: %s%s", id,
			    moved ? now : was, to, strerror(-ret),
			    ret == -EINVAL ? " (the loaded kvtier module knows no newer version: an older module)" :
			    ret == -ENOSPC ? " (no free run of data slots that long for the journal or the CRC sections: free some space)" :
			    ret == -EROFS ? " (attached read-only)" :
			    ret == -EBUSY ? " (another host took the namespace's lease)" :
			    moved ? " (see dmesg)" : " (see dmesg; the namespace is still as it was)");
	}
	printf("kvtier%u: upgraded the namespace from format version %s to %s (%s)\n",
	       id, was, to, version_says(to));
	return EXIT_OK;
}
