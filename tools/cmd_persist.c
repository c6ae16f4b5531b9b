// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl persist: the persistent named regions of a tier. ls lists
 * them (KVTIER_IOC_REGION_LIST, persistent entries only), rm removes one
 * (KVTIER_IOC_REGION_UNLINK), pin and unpin set and clear
 * KVTIER_REGION_PINNED (KVTIER_IOC_REGION_SETFLAGS), all through libkvtier.
 * Names are checked here as the module checks them, so that a bad one is
 * a usage error with a reason rather than the kernel's EINVAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kvtier.h>

#include "ctl.h"

enum { OPT_TIER, OPT_OUTPUT, OPT_BYTES, OPT_NOHEADINGS, OPT_NR };

/* Why @name is not a region name the module accepts, or NULL. */
static const char *name_problem(const char *name)
{
	size_t n = strlen(name), i;

	if (!n)
		return "it is empty";
	if (n >= KVTIER_NAME_MAX)
		return "it is longer than 63 bytes";
	for (i = 0; i < n; i++) {
		if (name[i] == '/')
			return "it contains '/'";
		if (name[i] == ' ')
			return "it contains a space";
		if (name[i] < 0x21 || name[i] > 0x7e)
			return "it contains a byte that is not printable ASCII";
	}
	return NULL;
}

/* @name for a message: control and non-ASCII bytes as \xNN, at most 63. */
static const char *name_shown(const char *name, char *buf, size_t len)
{
	size_t o = 0, i;

	for (i = 0; name[i] && i < KVTIER_NAME_MAX - 1 && o + 5 < len; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch < 0x20 || ch > 0x7e)
			o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
		else
			buf[o++] = (char)ch;
	}
	buf[o] = '\0';
	if (name[i])
		snprintf(buf + o, len - o, "...");
	return buf;
}

/* Open /dev/kvtierN, or print why not and return EXIT_FAIL. */
static int open_tier(unsigned int id, struct kvtier_tier **tier)
{
	int ret = tier_check(id);

	if (ret)
		return ret;
	ret = kvtier_tier_open(id, tier);
	if (ret == -EACCES || ret == -EPERM)
		return fail("cannot open %s%u: %s (needs root or the kvtier group)",
			    KVTIER_DEV_PREFIX, id, strerror(-ret));
	if (ret)
		return fail("cannot open %s%u: %s", KVTIER_DEV_PREFIX, id,
			    strerror(-ret));
	return 0;
}

/* A failed KVTIER_IOC_REGION_LIST in words; returns EXIT_FAIL. */
static int list_error(unsigned int id, int err)
{
	if (err == -ENOTTY)
		return fail("kvtier%u: this kvtier module cannot list regions (older than kvtierctl)",
			    id);
	if (err == -ENODEV)
		return fail("kvtier%u has no namespace attached: its persistent regions are on it",
			    id);
	return fail("kvtier%u: listing regions: %s", id, strerror(-err));
}

/* Find named region @name of @tier in *@e; 0, -ENOENT or another -errno. */
static int find_region(struct kvtier_tier *tier, const char *name,
		       struct kvtier_region_entry *e)
{
	struct kvtier_region_entry *v;
	size_t n, i;
	int ret;

	ret = kvtier_region_list(tier, &v, &n);
	if (ret < 0)
		return ret;
	ret = -ENOENT;
	for (i = 0; i < n; i++) {
		if (!strncmp(v[i].name, name, KVTIER_NAME_MAX)) {
			*e = v[i];
			ret = 0;
			break;
		}
	}
	free(v);
	return ret;
}

/* --- ls ---------------------------------------------------------------- */

static bool tier_attached(unsigned int id)
{
	char backing[4096];

	return kvtier_tier_attr_get(id, "backing_dev", backing, sizeof(backing)) ||
	       strcmp(backing, "none");
}

static int by_name(const void *a, const void *b)
{
	const struct kvtier_region_entry *x = a, *y = b;

	return strncmp(x->name, y->name, KVTIER_NAME_MAX);
}

enum {
	PC_NAME, PC_SIZE, PC_NS, PC_RESIDENT, PC_OWNER, PC_MODE, PC_CREATED,
	PC_LAST_USED, PC_USERS, PC_PINNED, PC_SEALED, PC_NR
};

static const struct table_col persist_cols[PC_NR] = {
	[PC_NAME] = { "NAME", -4 },
	[PC_SIZE] = { "SIZE", 8, true },
	[PC_NS] = { "NS", 8, true },
	[PC_RESIDENT] = { "RESIDENT", 8, true },
	[PC_OWNER] = { "OWNER", -8 },
	[PC_MODE] = { "MODE", 4 },
	[PC_CREATED] = { "CREATED", -16 },
	[PC_LAST_USED] = { "LAST_USED", -16 },
	[PC_USERS] = { "USERS", 5 },
	[PC_PINNED] = { "PINNED", -6 },
	[PC_SEALED] = { "SEALED", -6 },
};

static const char *persist_cell(const void *row, size_t col, char *buf, size_t len)
{
	const struct kvtier_region_entry *e = row;

	switch (col) {
	case PC_NAME:
		return name_shown(e->name, buf, len);
	case PC_OWNER:
		return owner_name(e->owner, buf, len);
	case PC_MODE:
		snprintf(buf, len, "%04o", e->mode & 07777);
		return buf;
	case PC_CREATED:
		return fmt_time(buf, len, e->created);
	case PC_LAST_USED:
		return fmt_time(buf, len, e->last_used);
	case PC_USERS:
		snprintf(buf, len, "%u", e->users);
		return buf;
	case PC_PINNED:
		return e->flags & KVTIER_REGION_PINNED ? "yes" : "no";
	default:
		return e->flags & KVTIER_REGION_SEALED ? "yes" : "no";
	}
}

static uint64_t persist_size(const void *row, size_t col)
{
	const struct kvtier_region_entry *e = row;

	return col == PC_SIZE ? e->size : col == PC_NS ? e->namespace : e->resident;
}

static const struct table persist_table = {
	persist_cols, PC_NR, persist_cell, persist_size
};

static void print_entry_json(const struct kvtier_region_entry *e, bool comma)
{
	char name[KVTIER_NAME_MAX];
	bool first = true;

	snprintf(name, sizeof(name), "%.*s", KVTIER_NAME_MAX - 1, e->name);
	printf("%s{", comma ? "," : "");
	json_key_str(stdout, &first, "name", name);
	json_key_u64(stdout, &first, "size_bytes", e->size);
	json_key_u64(stdout, &first, "namespace_bytes", e->namespace);
	json_key_u64(stdout, &first, "resident_bytes", e->resident);
	json_key_u64(stdout, &first, "owner", e->owner);
	json_key_u64(stdout, &first, "mode", e->mode);
	json_key_s64(stdout, &first, "created", e->created);
	json_key_s64(stdout, &first, "last_used", e->last_used);
	json_key_u64(stdout, &first, "users", e->users);
	json_key_bool(stdout, &first, "pinned", e->flags & KVTIER_REGION_PINNED);
	json_key_bool(stdout, &first, "sealed", e->flags & KVTIER_REGION_SEALED);
	putchar('}');
}

static int persist_ls(const struct cmd *cmd, unsigned int id,
		      const struct table_view *view)
{
	struct table_view tv = *view;
	struct kvtier_region_entry *v;
	struct kvtier_tier *tier;
	int ret, total, width = 4;
	size_t n, i, keep = 0;

	ret = open_tier(id, &tier);
	if (ret)
		return ret;
	total = kvtier_region_list(tier, &v, &n);
	kvtier_tier_close(tier);
	if (total < 0)
		return list_error(id, total);
	if ((size_t)total > n)
		warn("kvtier%u has %d named regions; %s shows the first %zu",
		     id, total, cmd->name, n);
	for (i = 0; i < n; i++) {
		if (!(v[i].flags & KVTIER_OPEN_PERSISTENT))
			continue;
		v[i].name[KVTIER_NAME_MAX - 1] = '\0';
		if ((int)strlen(v[i].name) > width)
			width = (int)strlen(v[i].name);
		v[keep++] = v[i];
	}
	qsort(v, keep, sizeof(*v), by_name);
	if (!keep && !tier_attached(id))
		warn("kvtier%u has no namespace attached: persistent regions are listed while one is",
		     id);
	tv.width[PC_NAME] = -width;
	if (opt_json)
		putchar('[');
	else
		table_header(&tv, NULL);
	for (i = 0; i < keep; i++) {
		if (opt_json)
			print_entry_json(&v[i], i > 0);
		else
			table_row(&tv, &v[i], NULL);
	}
	if (opt_json)
		puts("]");
	free(v);
	return EXIT_OK;
}

/* --- rm, pin, unpin ----------------------------------------------------- */

/* A failed UNLINK or SETFLAGS of @name in words; returns EXIT_FAIL. */
static int region_error(struct kvtier_tier *tier, unsigned int id,
			const char *verb, const char *name, int err)
{
	struct kvtier_region_entry e;

	switch (err) {
	case -ENOENT:
		return fail("no region '%s' on kvtier%u", name, id);
	case -EPERM:
		/* Pinning is CAP_SYS_RESOURCE's, even for the owner. */
		if (!strcmp(verb, "pin"))
			return fail("cannot pin region '%s' on kvtier%u: only root (CAP_SYS_RESOURCE) may pin, as a pin exempts a region from reclaim at other users' expense",
				    name, id);
		return fail("not the owner of region '%s' on kvtier%u: only its owner or root (CAP_FOWNER) may %s it",
			    name, id, verb);
	case -EINVAL:
		/* The name and the bits were checked: the region's kind. */
		if (!find_region(tier, name, &e) && !(e.flags & KVTIER_OPEN_PERSISTENT))
			return fail("region '%s' on kvtier%u is not persistent (it lives in memory only)",
				    name, id);
		break;
	case -EIO:
		return fail("%s '%s': committing the change to kvtier%u's namespace failed: I/O error (see dmesg)",
			    verb, name, id);
	case -ENODEV:
		return fail("kvtier%u has no namespace attached: its persistent regions are on it",
			    id);
	case -ENOTTY:
		return fail("this kvtier module has no persistent regions (older than kvtierctl)");
	}
	return fail("%s '%s' on kvtier%u: %s", verb, name, id, strerror(-err));
}

static int persist_rm(unsigned int id, const char *name)
{
	struct kvtier_region_entry e;
	struct kvtier_tier *tier;
	int ret;

	ret = open_tier(id, &tier);
	if (ret)
		return ret;
	ret = find_region(tier, name, &e);
	if (ret == -ENOENT) {
		ret = fail("no region '%s' on kvtier%u", name, id);
	} else if (ret) {
		ret = list_error(id, ret);
	} else if (!(e.flags & KVTIER_OPEN_PERSISTENT)) {
		ret = fail("region '%s' on kvtier%u is not persistent: persist rm removes only persistent regions",
			   name, id);
	} else {
		ret = kvtier_region_unlink(tier, name);
		if (ret)
			ret = region_error(tier, id, "remove", name, ret);
		else if (e.users)
			warn("'%s' is still open (%u file%s): its bytes and namespace space are freed when the last one closes",
			     name, e.users, e.users == 1 ? "" : "s");
	}
	kvtier_tier_close(tier);
	return ret;
}

static int persist_setflags(unsigned int id, const char *name,
			    const char *verb)
{
	unsigned int set = 0, clear = 0;
	struct kvtier_tier *tier;
	int ret;

	if (!strcmp(verb, "pin"))
		set = KVTIER_REGION_PINNED;
	else if (!strcmp(verb, "unpin"))
		clear = KVTIER_REGION_PINNED;
	else
		set = KVTIER_REGION_SEALED;
	ret = open_tier(id, &tier);
	if (ret)
		return ret;
	ret = kvtier_region_setflags(tier, name, set, clear);
	if (ret == -EBUSY && set == KVTIER_REGION_SEALED)
		ret = fail("cannot seal '%s' on kvtier%u: files still have it open (close them first)",
			   name, id);
	else if (ret == -EROFS)
		ret = fail("kvtier%u is attached read-only: nothing on it can change", id);
	else if (ret)
		ret = region_error(tier, id, verb, name, ret);
	kvtier_tier_close(tier);
	return ret;
}

/* --- the command ------------------------------------------------------- */

int cmd_persist(const struct cmd *cmd, int argc, char **argv)
{
	const char *opt[OPT_NR] = { NULL };
	struct table_view view;
	unsigned int id = 0;
	const char *verb, *why;
	char shown[KVTIER_NAME_MAX * 4 + 4];
	int op, ret;

	op = parse_opts(cmd, argc, argv, "t:o:bn", opt);
	if (op < 0)
		return EXIT_USAGE;
	if (op >= argc)
		return usage_error(cmd, "persist: need ls, rm, pin, unpin or seal");
	verb = argv[op++];
	if (opt[OPT_TIER] && parse_tier(opt[OPT_TIER], &id))
		return usage_error(cmd, "persist: bad TIER '%s' (0..%d)",
				   opt[OPT_TIER], KVT_MAX_TIERS - 1);

	if (!strcmp(verb, "ls")) {
		if (argc - op == 1 && opt[OPT_TIER])
			return usage_error(cmd, "persist ls: give TIER once (operand or --tier)");
		if (argc - op == 1) {
			ret = tier_operand(cmd, argc, argv, op, &id);
			if (ret)
				return ret;
		} else if (argc - op > 1) {
			return usage_error(cmd, "persist ls: too many arguments");
		}
		ret = table_select(cmd, &persist_table, opt[OPT_OUTPUT],
				   opt[OPT_BYTES], opt[OPT_NOHEADINGS], &view);
		return ret ? ret : persist_ls(cmd, id, &view);
	}
	if (opt[OPT_OUTPUT] || opt[OPT_BYTES] || opt[OPT_NOHEADINGS])
		return usage_error(cmd, "persist %s: -o, -b and -n are options of ls", verb);
	if (strcmp(verb, "rm") && strcmp(verb, "pin") && strcmp(verb, "unpin") &&
	    strcmp(verb, "seal"))
		return usage_error(cmd, "persist: unknown verb '%s'", verb);
	if (opt_json)
		return usage_error(cmd, "persist %s has no --json output", verb);
	if (argc - op != 1)
		return usage_error(cmd, "persist %s: need one NAME", verb);
	why = name_problem(argv[op]);
	if (why)
		return usage_error(cmd, "persist %s: bad region name '%s': %s (names are 1 to 63 bytes of printable ASCII, no space or '/')",
				   verb, name_shown(argv[op], shown, sizeof(shown)), why);
	if (!strcmp(verb, "rm"))
		return persist_rm(id, argv[op]);
	return persist_setflags(id, argv[op], verb);
}
