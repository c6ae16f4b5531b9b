// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl status and regions.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include <kvtier.h>

#include "ctl.h"

struct tier_status {
	unsigned int id;
	char state[32], backing[4096];
	bool have_error, is_nvme;
	char lease[256];		/* sysfs lease, "" if the module has none */
	long error;			/* sticky first error, -errno or 0 */
	struct kvt_nvme_id nvme;
	bool have_topo;			/* NVMe and libnvme knows it */
	struct kvt_nvme_topo topo;
	uint32_t block;
	uint64_t capacity, used, resident, budget_mb, pinned;
	/* sysfs metadata: total, regions, page maps, CRCs, allocator, buffer */
	bool have_meta;
	uint64_t meta[6];
	/* sysfs upgrade: the attached namespace's format version; 0 unknown */
	unsigned int format_version;
	/* Its kvtierfs mounts (this mount namespace's): point, read-only */
	unsigned int nr_mounts;
	struct {
		char point[4096];
		bool ro;
	} mounts[8];
};

/* The metadata columns, in order (Documentation/ABI/testing/sysfs-class-kvtier). */
static const char *const meta_names[6] = {
	"total", "regions", "page_maps", "crcs", "allocator", "buffer",
};

/* sysfs metadata; absent on a module before it, malformed is not shown. */
static void read_meta(struct tier_status *t)
{
	char buf[256], end;

	t->have_meta = !kvtier_tier_attr_get(t->id, "metadata", buf, sizeof(buf)) &&
		       sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
			      " %" SCNu64 " %" SCNu64 " %c", &t->meta[0], &t->meta[1],
			      &t->meta[2], &t->meta[3], &t->meta[4], &t->meta[5],
			      &end) == 6;
}

/* Bytes pinned: the sysfs attribute, else the regions' sum, else 0. */
static uint64_t pinned_bytes(unsigned int id)
{
	struct kvt_regions rs;
	uint64_t sum = 0;
	size_t i;

	if (!tier_attr_u64(id, "pinned", &sum))
		return sum;
	if (tier_regions(id, &rs))
		return 0;
	for (i = 0; i < rs.n; i++)
		sum += rs.r[i].pinned;
	kvt_regions_free(&rs);
	return sum;
}

/* The namespace's format version: 1 to 5; 0 detached, or an older module. */
static void read_format(struct tier_status *t)
{
	char buf[16];

	if (kvtier_tier_attr_get(t->id, "upgrade", buf, sizeof(buf)))
		return;
	if (buf[0] >= '1' && buf[0] <= '9' && !buf[1])
		t->format_version = (unsigned int)(buf[0] - '0');
}

/* /proc/self/mounts escapes space, tab, newline and backslash as \ooo. */
static void unescape_mount(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* The tier's kvtierfs mounts, from /proc/self/mounts (up to 8 shown). */
static void read_mounts(struct tier_status *t)
{
	char src[64], alt[64], *line = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(src, sizeof(src), "kvtier%u", t->id);
	snprintf(alt, sizeof(alt), "/dev/kvtier%u", t->id);
	f = fopen("/proc/self/mounts", "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		char *dev = strtok(line, " "), *point = strtok(NULL, " ");
		char *type = strtok(NULL, " "), *opts = strtok(NULL, " ");

		if (!opts || strcmp(type, "kvtierfs") ||
		    (strcmp(dev, src) && strcmp(dev, alt)) ||
		    t->nr_mounts == sizeof(t->mounts) / sizeof(t->mounts[0]))
			continue;
		unescape_mount(point);
		snprintf(t->mounts[t->nr_mounts].point,
			 sizeof(t->mounts[t->nr_mounts].point), "%s", point);
		t->mounts[t->nr_mounts++].ro = !strncmp(opts, "ro", 2) &&
					      (opts[2] == ',' || !opts[2]);
	}
	free(line);
	fclose(f);
}

static void read_error(struct tier_status *t)
{
	char buf[32], *end;

	if (kvtier_tier_attr_get(t->id, "error", buf, sizeof(buf)))
		return;
	t->error = strtol(buf, &end, 10);
	t->have_error = *buf && !*end;
}

/* The block size from KVTIER_IOC_TIER_INFO; 0 when the tier won't open. */
static uint32_t block_size(unsigned int id)
{
	struct kvtier_tier_info info;
	struct kvtier_tier *tier;
	int ret;

	if (kvtier_tier_open(id, &tier))
		return 0;
	ret = kvtier_tier_info(tier, &info);
	kvtier_tier_close(tier);
	return ret ? 0 : info.logical_block_size;
}

static int read_status(unsigned int id, struct tier_status *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->id = id;
	ret = kvtier_tier_attr_get(id, "backing_dev", t->backing, sizeof(t->backing));
	if (ret)
		return ret;
	if (kvtier_tier_attr_get(id, "state", t->state, sizeof(t->state)))
		snprintf(t->state, sizeof(t->state), "%s",
			 strcmp(t->backing, "none") ? "attached" : "detached");
	read_error(t);
	if (kvtier_tier_attr_get(id, "lease", t->lease, sizeof(t->lease)))
		t->lease[0] = '\0';
	tier_attr_u64(id, "capacity", &t->capacity);
	tier_attr_u64(id, "used", &t->used);
	tier_attr_u64(id, "resident", &t->resident);
	tier_attr_u64(id, "host_budget_mb", &t->budget_mb);
	t->pinned = pinned_bytes(id);
	read_meta(t);
	read_format(t);
	read_mounts(t);
	t->block = block_size(id);
	t->is_nvme = strcmp(t->backing, "none") &&
		     !kvt_nvme_identify(t->backing, &t->nvme);
	t->have_topo = t->is_nvme && !kvt_nvme_topology(t->backing, &t->topo);
	return 0;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* Fabrics namespaces: the subsystem, each path, a missing redundancy. */
static void print_fabric(const struct kvt_nvme_topo *topo)
{
	const char *why = kvt_nvme_single_path(topo);
	unsigned int i;

	printf("\n  subsystem %s", topo->subsysnqn);
	for (i = 0; i < topo->npaths; i++)
		printf("\n  path      %s %s %s %s", topo->path[i].ctrl,
		       topo->path[i].transport,
		       *topo->path[i].address ? topo->path[i].address : "-",
		       topo->path[i].state);
	if (why)
		printf("\n  paths     no redundancy: %s", why);
}

static void print_status(const struct tier_status *t)
{
	char a[32], b[32];

	printf("kvtier%u: %s\n", t->id, t->state);
	printf("  device    %s", t->backing);
	if (t->is_nvme)
		printf(" (%s, serial %s, nsid %u)", t->nvme.model, t->nvme.serial,
		       t->nvme.nsid);
	if (t->have_topo && kvt_nvme_is_fabrics(&t->topo))
		print_fabric(&t->topo);
	printf("\n  capacity  %-9s used %s (%.1f%%)\n",
	       fmt_size(a, sizeof(a), t->capacity), fmt_size(b, sizeof(b), t->used),
	       pct(t->used, t->capacity));
	printf("  budget    %-9s resident %s (%.1f%%)\n",
	       fmt_size(a, sizeof(a), t->budget_mb << 20),
	       fmt_size(b, sizeof(b), t->resident), pct(t->resident, t->budget_mb << 20));
	printf("  pinned    %s\n", fmt_size(a, sizeof(a), t->pinned));
	if (t->format_version == 1)
		printf("  format    version 1: a checkpoint per commit (kvtierctl upgrade %u gives it the journal of version 2)\n",
		       t->id);
	else if (t->format_version == 2)
		printf("  format    version 2: commits go to a journal\n");
	else if (t->format_version == 3)
		printf("  format    version 3: commits go to a journal, pages mapped by extents\n");
	else if (t->format_version == 4)
		printf("  format    version 4: commits go to a journal, pages mapped by extents, CRCs in runs of their own (kvtierctl upgrade %u gives it version 5's files that grow)\n",
		       t->id);
	else if (t->format_version)
		printf("  format    version %u: commits go to a journal, pages mapped by extents, CRCs in runs of their own, sizes in bytes\n",
		       t->format_version);
	if (t->have_meta) {
		char c[32], d[32], e[32], f[32];

		printf("  metadata  %-9s regions %s, page maps %s, CRCs %s, allocator %s, buffer %s\n",
		       fmt_size(a, sizeof(a), t->meta[0]), fmt_size(b, sizeof(b), t->meta[1]),
		       fmt_size(c, sizeof(c), t->meta[2]), fmt_size(d, sizeof(d), t->meta[3]),
		       fmt_size(e, sizeof(e), t->meta[4]), fmt_size(f, sizeof(f), t->meta[5]));
	}
	if (t->lease[0] && strcmp(t->lease, "detached"))
		printf("  lease     %s\n", t->lease);
	for (unsigned int i = 0; i < t->nr_mounts; i++)
		printf("  mounted   %s (kvtierfs%s)\n", t->mounts[i].point,
		       t->mounts[i].ro ? ", ro" : "");
	if (t->have_error)
		printf("  error     %ld%s%s\n", t->error, t->error ? " " : "",
		       t->error ? strerror((int)-t->error) : "");
}

/*
 * "subsysnqn", "fabrics", "multipath_redundant" and "paths" (objects with
 * ctrl, transport, address, state, ctrl_loss_tmo); null when unknown.
 */
static void print_topo_json(const struct tier_status *t, bool *first)
{
	const struct kvt_nvme_topo *topo = &t->topo;
	unsigned int i;

	if (!t->have_topo) {
		json_key_null(stdout, first, "subsysnqn");
		json_key_null(stdout, first, "fabrics");
		json_key_null(stdout, first, "multipath_redundant");
		json_key_null(stdout, first, "paths");
		return;
	}
	json_key_str(stdout, first, "subsysnqn", topo->subsysnqn);
	json_key_bool(stdout, first, "fabrics", kvt_nvme_is_fabrics(topo));
	json_key_bool(stdout, first, "multipath_redundant", !kvt_nvme_single_path(topo));
	fputs(",\"paths\":[", stdout);
	for (i = 0; i < topo->npaths; i++) {
		const struct kvt_nvme_path *p = &topo->path[i];
		bool f = true;

		if (i)
			putchar(',');
		putchar('{');
		json_key_str(stdout, &f, "ctrl", p->ctrl);
		json_key_str(stdout, &f, "transport", p->transport);
		json_key_str(stdout, &f, "address", p->address);
		json_key_str(stdout, &f, "state", p->state);
		if (*p->ctrl_loss_tmo)
			json_key_str(stdout, &f, "ctrl_loss_tmo", p->ctrl_loss_tmo);
		else
			json_key_null(stdout, &f, "ctrl_loss_tmo");
		putchar('}');
	}
	putchar(']');
}

static void print_status_json(const struct tier_status *t)
{
	bool first = true;

	putchar('{');
	json_key_u64(stdout, &first, "tier", t->id);
	json_key_str(stdout, &first, "state", t->state);
	json_key_str(stdout, &first, "backing_dev", t->backing);
	if (t->is_nvme) {
		json_key_str(stdout, &first, "model", t->nvme.model);
		json_key_str(stdout, &first, "serial", t->nvme.serial);
	} else {
		json_key_null(stdout, &first, "model");
		json_key_null(stdout, &first, "serial");
	}
	print_topo_json(t, &first);
	json_key_u64(stdout, &first, "capacity_bytes", t->capacity);
	json_key_u64(stdout, &first, "logical_block_size", t->block);
	json_key_u64(stdout, &first, "used_bytes", t->used);
	json_key_u64(stdout, &first, "host_budget_mb", t->budget_mb);
	json_key_u64(stdout, &first, "resident_bytes", t->resident);
	json_key_u64(stdout, &first, "pinned_bytes", t->pinned);
	if (t->have_meta) {
		bool f = true;
		unsigned int i;

		fputs(",\"metadata_bytes\":{", stdout);
		for (i = 0; i < 6; i++)
			json_key_u64(stdout, &f, meta_names[i], t->meta[i]);
		putchar('}');
	} else {
		json_key_null(stdout, &first, "metadata_bytes");
	}
	if (t->format_version)
		json_key_u64(stdout, &first, "format_version", t->format_version);
	else
		json_key_null(stdout, &first, "format_version");
	if (t->lease[0] && strcmp(t->lease, "detached"))
		json_key_str(stdout, &first, "lease", t->lease);
	else
		json_key_null(stdout, &first, "lease");
	if (t->have_error)
		printf(",\"error\":%ld", t->error);
	else
		json_key_null(stdout, &first, "error");
	fputs(",\"mounts\":[", stdout);
	for (unsigned int i = 0; i < t->nr_mounts; i++) {
		bool f = true;

		if (i)
			putchar(',');
		putchar('{');
		json_key_str(stdout, &f, "path", t->mounts[i].point);
		json_key_bool(stdout, &f, "read_only", t->mounts[i].ro);
		putchar('}');
	}
	putchar(']');
	putchar('}');
}

/* The tiers [*first, *last) that status shows. */
static int status_range(const struct cmd *cmd, int argc, char **argv, int op,
			unsigned int *first, unsigned int *last)
{
	int ret;

	if (argc - op == 1) {
		ret = tier_operand(cmd, argc, argv, op, first);
		if (!ret)
			ret = tier_check(*first);
		*last = *first + 1;
		return ret;
	}
	if (argc - op > 1)
		return usage_error(cmd, "status: too many arguments");
	*first = 0;
	if (read_num_tiers(last))
		return fail("the kvtier module is not loaded");
	return 0;
}

int cmd_status(const struct cmd *cmd, int argc, char **argv)
{
	unsigned int id, first, last;
	struct tier_status *t;
	int op, ret;

	op = parse_opts(cmd, argc, argv, "", NULL);
	if (op < 0)
		return EXIT_USAGE;
	ret = status_range(cmd, argc, argv, op, &first, &last);
	if (ret)
		return ret;
	t = malloc(sizeof(*t));
	if (!t)
		return fail("out of memory");
	if (opt_json)
		putchar('[');
	for (id = first; id < last && !ret; id++) {
		ret = read_status(id, t);
		if (ret)
			break;
		if (opt_json) {
			if (id != first)
				putchar(',');
			print_status_json(t);
		} else {
			print_status(t);
		}
	}
	if (opt_json)
		puts("]");
	free(t);
	return ret ? fail("kvtier%u: %s", id, strerror(-ret)) : EXIT_OK;
}

/* --- regions --------------------------------------------------------- */

const char *owner_name(uint64_t uid, char *buf, size_t len)
{
	struct passwd *pw = getpwuid((uid_t)uid);

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%llu", (unsigned long long)uid);
	return buf;
}

enum {
	RC_ID, RC_NAME, RC_OWNER, RC_SIZE, RC_RESIDENT, RC_DIRTY, RC_NS,
	RC_PINNED, RC_GPU, RC_FAULTS, RC_REFAULTS, RC_IDLE_MS, RC_NR
};

static const struct table_col region_cols[RC_NR] = {
	[RC_ID] = { "ID", 6 },
	[RC_NAME] = { "NAME", -16 },
	[RC_OWNER] = { "OWNER", -8 },
	[RC_SIZE] = { "SIZE", 8, true },
	[RC_RESIDENT] = { "RESIDENT", 8, true },
	[RC_DIRTY] = { "DIRTY", 8, true },
	[RC_NS] = { "NS", 8, true },
	[RC_PINNED] = { "PINNED", 8, true },
	[RC_GPU] = { "GPU", 8, true },
	[RC_FAULTS] = { "FAULTS", 10 },
	[RC_REFAULTS] = { "REFAULTS", 9 },
	[RC_IDLE_MS] = { "IDLE_MS", 9 },
};

static const char *region_cell(const void *row, size_t col, char *buf, size_t len)
{
	const struct kvt_region *r = row;
	uint64_t v;

	switch (col) {
	case RC_NAME:
		return r->name;
	case RC_OWNER:
		return owner_name(r->owner, buf, len);
	case RC_ID:
		v = r->id;
		break;
	case RC_FAULTS:
		v = r->faults;
		break;
	case RC_REFAULTS:
		v = r->refaults;
		break;
	default:
		v = r->idle_ms;
		break;
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static uint64_t region_size(const void *row, size_t col)
{
	const struct kvt_region *r = row;

	switch (col) {
	case RC_SIZE:
		return r->size;
	case RC_RESIDENT:
		return r->resident;
	case RC_DIRTY:
		return r->dirty;
	case RC_NS:
		return r->ns;
	case RC_PINNED:
		return r->pinned;
	default:
		return r->have_gpu_bytes ? r->gpu_bytes : TABLE_NONE;
	}
}

const struct table regions_table = {
	region_cols, RC_NR, region_cell, region_size
};

static void print_region_json(const struct kvt_region *r, bool comma)
{
	bool first = true;

	printf("%s{", comma ? "," : "");
	json_key_str(stdout, &first, "kind", "region");
	json_key_u64(stdout, &first, "id", r->id);
	json_key_str(stdout, &first, "name", r->name);
	json_key_u64(stdout, &first, "owner", r->owner);
	json_key_u64(stdout, &first, "size_bytes", r->size);
	json_key_u64(stdout, &first, "resident_bytes", r->resident);
	json_key_u64(stdout, &first, "dirty_bytes", r->dirty);
	json_key_u64(stdout, &first, "namespace_bytes", r->ns);
	json_key_u64(stdout, &first, "pinned_bytes", r->pinned);
	json_key_u64(stdout, &first, "faults", r->faults);
	json_key_u64(stdout, &first, "refaults", r->refaults);
	json_key_u64(stdout, &first, "idle_ms", r->idle_ms);
	if (r->have_gpu_bytes)
		json_key_u64(stdout, &first, "gpu_bytes", r->gpu_bytes);
	else
		json_key_null(stdout, &first, "gpu_bytes");
	putchar('}');
}

/* --- GPU ranges (debugfs gpu_ranges) ------------------------------------ */

static void print_gpu_header(void)
{
	printf("%6s %8s %-18s %8s %-7s %-40s %-16s %6s\n", "ID", "PID", "VA",
	       "LENGTH", "MODE", "GPU", "TENANT", "REGION");
}

static void print_gpu_row(const struct kvt_gpu_range *g, bool bytes)
{
	char va[24], len[32], region[24];

	snprintf(va, sizeof(va), "0x%llx", (unsigned long long)g->va);
	if (g->have_region)
		snprintf(region, sizeof(region), "%llu",
			 (unsigned long long)g->region);
	else
		snprintf(region, sizeof(region), "-");
	if (bytes)
		snprintf(len, sizeof(len), "%llu", (unsigned long long)g->length);
	else
		fmt_size(len, sizeof(len), g->length);
	printf("%6llu %8llu %-18s %8s %-7s %-40s %-16s %6s\n",
	       (unsigned long long)g->id, (unsigned long long)g->pid, va,
	       len, g->mode, g->gpu,
	       g->tenant[0] ? g->tenant : "-", region);
}

static void print_gpu_json(const struct kvt_gpu_range *g, bool comma)
{
	bool first = true;

	printf("%s{", comma ? "," : "");
	json_key_str(stdout, &first, "kind", "gpu");
	json_key_u64(stdout, &first, "id", g->id);
	json_key_u64(stdout, &first, "pid", g->pid);
	json_key_u64(stdout, &first, "va", g->va);
	json_key_u64(stdout, &first, "length_bytes", g->length);
	json_key_str(stdout, &first, "mode", g->mode);
	json_key_str(stdout, &first, "gpu", g->gpu);
	json_key_str(stdout, &first, "tenant", g->tenant);
	if (g->have_region)
		json_key_u64(stdout, &first, "region", g->region);
	else
		json_key_null(stdout, &first, "region");
	putchar('}');
}

/*
 * The regions, then the GPU ranges: both files are read before anything
 * is printed, so a bad file prints nothing but the error. No gpu_ranges
 * file is an older module: no GPU table.
 */
int cmd_regions(const struct cmd *cmd, int argc, char **argv)
{
	struct kvt_gpu_ranges gs;
	struct kvt_regions rs;
	unsigned int id;
	int op, ret;
	size_t i;

	const char *opt[3] = { NULL };
	struct table_view v;

	op = parse_opts(cmd, argc, argv, "o:bn", opt);
	if (op < 0)
		return EXIT_USAGE;
	ret = table_select(cmd, &regions_table, opt[0], opt[1], opt[2], &v);
	if (!ret)
		ret = tier_operand(cmd, argc, argv, op, &id);
	if (!ret)
		ret = tier_check(id);
	if (ret)
		return ret;
	ret = tier_regions(id, &rs);
	if (ret)
		return debugfs_error(id, "regions", ret);
	ret = tier_gpu_ranges(id, &gs);
	if (ret && ret != -ENOENT) {
		kvt_regions_free(&rs);
		return debugfs_error(id, "gpu_ranges", ret);
	}
	if (opt_json) {
		putchar('[');
		for (i = 0; i < rs.n; i++)
			print_region_json(&rs.r[i], i > 0);
		for (i = 0; i < gs.n; i++)
			print_gpu_json(&gs.g[i], rs.n + i > 0);
		puts("]");
	} else {
		table_header(&v, NULL);
		for (i = 0; i < rs.n; i++)
			table_row(&v, &rs.r[i], NULL);
		/* For scripts (-o, -n) one table; --json has both. */
		if (gs.n && !opt[0] && !v.noheadings) {
			puts("\nGPU ranges");
			print_gpu_header();
			for (i = 0; i < gs.n; i++)
				print_gpu_row(&gs.g[i], v.bytes);
		}
	}
	kvt_gpu_ranges_free(&gs);
	kvt_regions_free(&rs);
	return EXIT_OK;
}
