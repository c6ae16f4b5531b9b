/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kvtierctl internals shared by its source files. See kvtierctl(8).
 *
 *   kvtierctl.c   command table, usage, option helpers, main()
 *   sysfs.c       /sys/class/kvtier and module parameters
 *   debugfs.c     the parsers of the debugfs files (one per format)
 *   metrics.c     snapshots, interval rates, percentiles, warnings
 *   json.c        JSON output helpers
 *   nvme.c        NVMe identify (libnvme)
 *   devcheck.c    is a block device safe to give to a tier (libblkid), and
 *                 the kvtier format it may already hold
 *   conf.c        kvtier.conf(5) and its fragments
 *   cmd_metrics.c Prometheus text (kvtierctl metrics)
 *   cmd_*.c       one file per command group
 */
#ifndef KVTIERCTL_CTL_H
#define KVTIERCTL_CTL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvtier.h"

/* Exit status of every command: documented in kvtierctl(8). */
#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2

#define KVT_MAX_TIERS	64

/* --- kvtierctl.c: command plumbing ------------------------------------ */

struct cmd {
	const char *name;
	const char *args;	/* synopsis after the name */
	const char *help;	/* one line */
	const char *options;	/* option lines for `COMMAND --help`, or NULL */
	int (*run)(const struct cmd *cmd, int argc, char **argv);
};

extern bool opt_json;	/* --json, before or after the command */

/* Print @cmd's usage and the message to stderr; returns EXIT_USAGE. */
int usage_error(const struct cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print "kvtierctl: message" to stderr; returns EXIT_FAIL. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Parse the options common to the commands: --json/-j, and those in
 * @shortopts (each with an argument) into @vals (one per character).
 * Returns the index of the first operand, or -1 after a usage error.
 */
int parse_opts(const struct cmd *cmd, int argc, char **argv,
	       const char *shortopts, const char **vals);
int parse_tier(const char *s, unsigned int *id);
/* Decimal digits only, no sign, no spaces; fits 64 bits. */
int parse_u64(const char *s, uint64_t *v);
/* Seconds: a positive decimal number, at most one hour. */
int parse_interval(const char *s, double *secs);
/* The TIER operand of a command taking [TIER]: default 0. */
int tier_operand(const struct cmd *cmd, int argc, char **argv, int first,
		 unsigned int *id);

/* --- cmd_set.c: the knobs kvtierctl knows ---------------------------- */

struct knob {
	const char *name;
	uint64_t min, max;	/* max 0: the machine's RAM in MiB */
	uint64_t align;
	bool detached;		/* changes only while the tier is detached */
};

extern const struct knob knobs[];
extern const size_t nr_knobs;
const struct knob *find_knob(const char *name);
/* Parse @val for @k into @v: 0, or -EINVAL with the reason in @why. */
int knob_value(const struct knob *k, const char *val, uint64_t *v,
	       char *why, size_t len);

/* --- cmd_attach.c ---------------------------------------------------- */

/* Explain the kernel's refusal @err to attach (or format) @path. */
int attach_error(unsigned int id, const char *path, bool format, int err);

/* --- conf.c: kvtier.conf(5) ------------------------------------------ */

#define KVT_CONF_PATH		"/etc/kvtier/kvtier.conf"
#define KVT_CONF_MAX_FILES	128
#define KVT_CONF_MAX_KNOBS	32

/* A value and where it was said (file:line, for errors). */
struct kvt_conf_item {
	char *value;		/* NULL: not set */
	const char *file;
	unsigned int line;
	uint64_t num;		/* a knob's value, parsed */
	bool valid;		/* ... and in its range */
};

struct kvt_conf_tier {
	bool present;
	struct kvt_conf_item at;	/* its first [kvtierN] line */
	struct kvt_conf_item device, nqn, nsid;
	struct kvt_conf_item knob[KVT_CONF_MAX_KNOBS];	/* by index in knobs[] */
};

struct kvt_conf {
	struct kvt_conf_tier tier[KVT_MAX_TIERS];
	unsigned int errors;
	const char *files[KVT_CONF_MAX_FILES];
	unsigned int nfiles;
};

/*
 * Read @path and @path.d/<name>.conf (either may be missing, not both):
 * 0, or -errno after printing each error as "FILE:LINE: why".
 */
int kvt_conf_read(struct kvt_conf *c, const char *path);
void kvt_conf_free(struct kvt_conf *c);

/* --- sysfs.c ------------------------------------------------------------ */

int tier_attr_u64(unsigned int id, const char *attr, uint64_t *v);
int read_num_tiers(unsigned int *n);
/* 0 if tier @id exists; else prints why and returns EXIT_FAIL. */
int tier_check(unsigned int id);
/* Explain a failed read of debugfs @file of tier @id; returns EXIT_FAIL. */
int debugfs_error(unsigned int id, const char *file, int err);
/* Open a debugfs file of tier @id ("stats", "latency", ...), or NULL. */
FILE *tier_debugfs_open(unsigned int id, const char *file);

/* --- debugfs.c: one parser per file format -------------------------- */

#define KVT_STATS_MAX		128
#define KVT_NAME_LEN		48
#define KVT_HIST_MAX		8
#define KVT_BUCKETS_MAX		64

struct kvt_stats {
	size_t n;
	struct {
		char name[KVT_NAME_LEN];
		uint64_t value;
	} e[KVT_STATS_MAX];
};

struct kvt_hist {
	char name[KVT_NAME_LEN];
	uint64_t c[KVT_BUCKETS_MAX];
	uint64_t sum;		/* of what is counted (ns, pages), when has_sum */
	bool has_sum;		/* version 2 of the file */
};

/* `latency` and `io` share one shape: "buckets N" and named rows. */
struct kvt_histset {
	unsigned int buckets;
	size_t n;
	struct kvt_hist h[KVT_HIST_MAX];
};

#define KVT_REGION_NAME	256

struct kvt_region {
	uint64_t id;
	char name[KVT_REGION_NAME];	/* "-" when unnamed */
	uint64_t owner;
	uint64_t size, resident, dirty, ns, pinned;
	uint64_t faults, refaults, idle_ms;
	uint64_t gpu_bytes;		/* bytes registered as HMM GPU ranges */
	bool have_gpu_bytes;		/* the module has the gpu_bytes column */
};

struct kvt_regions {
	size_t n;
	struct kvt_region *r;
};

/* One line of debugfs gpu_ranges (KVTIER_IOC_GPU_REGISTER). */
#define KVT_GPU_MODE_LEN	16
#define KVT_GPU_NAME_LEN	64
#define KVT_TENANT_LEN		32

struct kvt_gpu_range {
	uint64_t id, pid, va, length;
	char mode[KVT_GPU_MODE_LEN];	/* "hmm", "managed" */
	char gpu[KVT_GPU_NAME_LEN];	/* "GPU-<uuid>" */
	char tenant[KVT_TENANT_LEN];	/* "" when the file says "-" */
	bool have_region;		/* false for "-" (managed ranges) */
	uint64_t region;
};

struct kvt_gpu_ranges {
	size_t n;
	struct kvt_gpu_range *g;
};

int kvt_stats_parse(FILE *f, struct kvt_stats *s);
bool kvt_stats_get(const struct kvt_stats *s, const char *name, uint64_t *v);
int kvt_histset_parse(FILE *f, const char *magic, struct kvt_histset *hs);
const struct kvt_hist *kvt_histset_get(const struct kvt_histset *hs,
				       const char *name);
int kvt_regions_parse(FILE *f, struct kvt_regions *rs);
void kvt_regions_free(struct kvt_regions *rs);
int kvt_gpu_ranges_parse(FILE *f, struct kvt_gpu_ranges *gs);
void kvt_gpu_ranges_free(struct kvt_gpu_ranges *gs);

/* Read tier @id's file: 0, -ENOENT when the module has no such file. */
int tier_stats(unsigned int id, struct kvt_stats *s);
int tier_latency(unsigned int id, struct kvt_histset *hs);
int tier_io(unsigned int id, struct kvt_histset *hs);
int tier_regions(unsigned int id, struct kvt_regions *rs);
int tier_gpu_ranges(unsigned int id, struct kvt_gpu_ranges *gs);

/* --- metrics.c ---------------------------------------------------------- */

struct kvt_sample {
	double t;			/* CLOCK_MONOTONIC seconds */
	struct kvt_stats stats;
	bool have_latency, have_io;
	struct kvt_histset latency, io;
	uint64_t capacity, used;
};

/* Rates over one interval; a NaN field is unknown (printed as "-"). */
struct kvt_rates {
	double secs;
	double faults, major_pct, read_mb, wb_mb, refaults;
	double p50_us, p99_us;		/* bucket upper bounds */
	bool p50_open, p99_open;	/* in the last, unbounded bucket */
};

int kvt_sample_take(unsigned int id, struct kvt_sample *s);
void kvt_rates_compute(const struct kvt_sample *a, const struct kvt_sample *b,
		       struct kvt_rates *r);
/*
 * Median size in bytes of the bios of io row @name ("read", "write")
 * issued between @a and @b; 0 when there were none or no io file.
 */
uint64_t kvt_io_median(const struct kvt_sample *a, const struct kvt_sample *b,
		       const char *name);
void kvt_rates_print_header(FILE *f);
void kvt_rates_print(FILE *f, const struct kvt_rates *r);
void kvt_rates_print_json(FILE *f, unsigned int id, double time,
			  const struct kvt_rates *r);

/* Warnings in words for `top`: bits of enum kvt_warning. */
enum kvt_warning {
	KVT_WARN_REFAULT = 1 << 0,
	KVT_WARN_P99 = 1 << 1,
	KVT_WARN_FULL = 1 << 2,
};
unsigned int kvt_warnings(const struct kvt_rates *now,
			  const struct kvt_rates *prev,
			  const struct kvt_sample *s);
const char *kvt_warning_text(enum kvt_warning w);

/* "512.0M"-style size of @bytes in @buf (binary units). */
const char *fmt_size(char *buf, size_t len, uint64_t bytes);
/* "2026-11-30 05:12" in local time, or "-" for 0 (never). */
const char *fmt_time(char *buf, size_t len, int64_t secs);
double now_secs(void);
/* Sleep @secs; returns early (false) when *@stop becomes true. */
bool sleep_interruptible(double secs, volatile sig_atomic_t *stop);

/* --- json.c ------------------------------------------------------------- */

void json_str(FILE *f, const char *s);
void json_key_str(FILE *f, bool *first, const char *key, const char *val);
void json_key_u64(FILE *f, bool *first, const char *key, uint64_t v);
void json_key_s64(FILE *f, bool *first, const char *key, int64_t v);
void json_key_bool(FILE *f, bool *first, const char *key, bool v);
void json_key_num(FILE *f, bool *first, const char *key, double v);
void json_key_null(FILE *f, bool *first, const char *key);

/* --- nvme.c ------------------------------------------------------------- */

struct kvt_nvme_id {
	char model[41], serial[21], firmware[9];
	uint32_t nsid;
	unsigned int lbaf;		/* index of the LBA format in use */
	unsigned int lba_bytes, meta_bytes;
	uint64_t nsze_blocks;
};

/*
 * Identify the NVMe namespace behind block device @path: -ENOTTY when it
 * is not NVMe, another -errno when identify failed.
 */
int kvt_nvme_identify(const char *path, struct kvt_nvme_id *id);

/* One controller through which the namespace is reached. */
struct kvt_nvme_path {
	char ctrl[32];			/* "nvme3" */
	char transport[16];		/* pcie, tcp, rdma, fc, loop */
	char address[256];		/* "traddr=127.0.0.1,trsvcid=4420" */
	char state[32];			/* live, connecting, resetting, ... */
	char ctrl_loss_tmo[16];		/* seconds, "off", "" (not fabrics) */
};

#define KVT_NVME_MAX_PATHS	16

struct kvt_nvme_topo {
	char subsysnqn[256];
	bool multipath;			/* the device is a multipath head */
	bool more_paths;		/* more than KVT_NVME_MAX_PATHS */
	unsigned int npaths;
	struct kvt_nvme_path path[KVT_NVME_MAX_PATHS];
};

/*
 * The subsystem and controllers of the NVMe namespace behind block device
 * @path (libnvme's scan of sysfs): 0, -ENOENT when libnvme does not know
 * it, another -errno.
 */
int kvt_nvme_topology(const char *path, struct kvt_nvme_topo *t);
/*
 * The block device ("/dev/nvmeXnY") of namespace @nsid (0: the only one)
 * of the subsystem whose NQN is @nqn: 0; -ENOENT, no such subsystem;
 * -ENODEV, it has no such namespace; -EEXIST, several and @nsid is 0.
 */
int kvt_nvme_find(const char *nqn, uint32_t nsid, char *dev, size_t len);
/* Some path uses a fabrics transport (not PCIe). */
bool kvt_nvme_is_fabrics(const struct kvt_nvme_topo *t);
/* Why a failure of one path loses the namespace, or NULL (redundant). */
const char *kvt_nvme_single_path(const struct kvt_nvme_topo *t);

/* --- devcheck.c ----------------------------------------------------------- */

#define KVT_MIN_DEVICE_BYTES	(16ULL << 20)

/* What attach refuses, one bit each; see kvtierctl(8). */
enum kvt_dev_problem {
	KVT_DEV_NOT_NVME = 1 << 0,
	KVT_DEV_MOUNTED = 1 << 1,
	KVT_DEV_IN_USE = 1 << 2,
	KVT_DEV_SIGNATURE = 1 << 3,
	KVT_DEV_TOO_SMALL = 1 << 4,
	KVT_DEV_UNREADABLE = 1 << 5,
};

/* What the first blocks say about a kvtier format on the device. */
enum kvt_format_state {
	KVT_FORMAT_NONE,		/* no kvtier superblock magic */
	KVT_FORMAT_OK,			/* a superblock copy with a valid CRC */
	KVT_FORMAT_DAMAGED,		/* the magic, but no valid copy */
	KVT_FORMAT_NEWER,		/* a newer version or unknown features */
};

struct kvt_format {
	enum kvt_format_state state;
	uint32_t version;
	uint64_t generation;
	int64_t format_time, commit_time;
	int64_t nr_regions;		/* -1: the checkpoint did not say */
	int journal_pending;		/* v2: commits after it in the journal */
	/* The ownership lease (RO_COMPAT_LEASE): -1 none, else KVTIER_LEASE_*, 2 damaged */
	int lease_state;
	char lease_host[65];
	uint32_t lease_tier, lease_interval_ms;
	int64_t lease_renewed;
};

struct kvt_devcheck {
	unsigned int problems;		/* enum kvt_dev_problem bits */
	uint64_t bytes;
	char mountpoint[4096];
	char signature[64];		/* e.g. "an ext4 signature" */
	int error;			/* -errno of an unreadable device */
	struct kvt_format kvtier;	/* unless the device is unreadable */
};

/*
 * Is @path a block device at all: 0, or prints why and returns EXIT_FAIL.
 */
int kvt_dev_is_block(const char *path);
/* Run every check on block device @path; never refuses by itself. */
void kvt_dev_check(const char *path, struct kvt_devcheck *c);
/* Print one line per problem in @c->problems, prefixed by @prefix. */
void kvt_dev_report(const char *path, const struct kvt_devcheck *c,
		    const char *prefix);
/* Read the kvtier superblocks (and checkpoint header) of @path. */
int kvt_format_probe(const char *path, struct kvt_format *f);
/* "a kvtier format (version 1, 3 persistent regions, ...)" in @buf. */
const char *kvt_format_describe(char *buf, size_t len, const struct kvt_format *f);

/* --- table.c: lsblk-style tables --------------------------------------- */

#define TABLE_MAX_COLS	32

struct table_col {
	const char *name;	/* header, and the name -o takes */
	int width;		/* minimum; negative: left-aligned */
	bool size;		/* bytes: "64.0M", or the number with --bytes */
	bool extra;		/* only shown when -o names it */
};

struct table {
	const struct table_col *cols;
	size_t n;
	/* Text of column @col of @row (may use @buf); for !size columns. */
	const char *(*cell)(const void *row, size_t col, char *buf, size_t len);
	/* Bytes of column @col of @row, TABLE_NONE for "-"; size columns. */
	uint64_t (*size)(const void *row, size_t col);
};

#define TABLE_NONE	UINT64_MAX

struct table_view {
	const struct table *t;
	size_t cols[TABLE_MAX_COLS], n;	/* shown, in order */
	int width[TABLE_MAX_COLS];	/* per column of t (callers may widen) */
	bool bytes, noheadings;
};

/*
 * The columns of @t that @list ("NAME,SIZE", any case; NULL: all but the
 * extra ones) picks, with --bytes and --noheadings. A bad list is a usage
 * error naming the columns (returns EXIT_USAGE).
 */
int table_select(const struct cmd *cmd, const struct table *t,
		 const char *list, bool bytes, bool noheadings,
		 struct table_view *v);
void table_header(const struct table_view *v, const char *lead);
void table_row(const struct table_view *v, const void *row, const char *lead);

/* --- cmd_status.c: shared with top ------------------------------------ */

/* The columns of regions (and of top's region lines). */
extern const struct table regions_table;
/* The login name of @uid, else the number. */
const char *owner_name(uint64_t uid, char *buf, size_t len);

/* --- commands ----------------------------------------------------------- */

int cmd_apply(const struct cmd *cmd, int argc, char **argv);
int cmd_metrics(const struct cmd *cmd, int argc, char **argv);
int cmd_attach(const struct cmd *cmd, int argc, char **argv);
int cmd_detach(const struct cmd *cmd, int argc, char **argv);
int cmd_upgrade(const struct cmd *cmd, int argc, char **argv);
int cmd_status(const struct cmd *cmd, int argc, char **argv);
int cmd_stat(const struct cmd *cmd, int argc, char **argv);
int cmd_top(const struct cmd *cmd, int argc, char **argv);
int cmd_regions(const struct cmd *cmd, int argc, char **argv);
int cmd_set(const struct cmd *cmd, int argc, char **argv);
int cmd_get(const struct cmd *cmd, int argc, char **argv);
int cmd_persist(const struct cmd *cmd, int argc, char **argv);
int cmd_gpu(const struct cmd *cmd, int argc, char **argv);

#endif /* KVTIERCTL_CTL_H */
