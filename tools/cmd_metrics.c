// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl metrics: every tier's counters, gauges and histograms in the
 * Prometheus text exposition format (version 0.0.4), on stdout or, with
 * --textfile DIR, in DIR/kvtier.prom for node_exporter's textfile
 * collector (written to a temporary file and renamed, so a scrape never
 * sees half of it).
 *
 * Counters and gauges come from sysfs through libkvtier (no root needed);
 * the histograms from debugfs, when it can be read (root).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kvtier.h>

#include "ctl.h"

enum { OPT_TEXTFILE, OPT_NR };

#define TEXTFILE_NAME	"kvtier.prom"

/* What one tier shows. */
struct tier_metrics {
	unsigned int id;
	char device[1024];	/* backing_dev: a path or "none" */
	int64_t error;		/* the sticky error, a negative errno or 0 */
	struct kvtier_stat *st;
	size_t nst;
	bool have_hists;
	struct kvt_histset latency, io;
};

/* A family from the stats of libkvtier: name, type, help, then samples. */
struct stat_family {
	const char *name, *type, *help;
	const char *label;	/* the label that tells its samples apart */
	struct { const char *stat, *value; } samples[4];
};

static const struct stat_family stat_families[] = {
	{ "kvtier_faults_total", "counter",
	  "Page faults served, by kind: minor (the page was resident), major (read from the namespace), zero_fill (never written).",
	  "kind", { { "faults_minor", "minor" }, { "faults_major", "major" },
		    { "faults_zero_fill", "zero_fill" } } },
	{ "kvtier_refaults_total", "counter",
	  "Major faults on pages evicted shortly before: the pool is smaller than the working set.",
	  NULL, { { "refaults", NULL } } },
	{ "kvtier_evicted_pages_total", "counter",
	  "Pages evicted from the host pool, clean (no write needed) or dirty (written back first).",
	  "kind", { { "evictions_clean", "clean" }, { "evictions_dirty", "dirty" } } },
	{ "kvtier_written_pages_total", "counter", "Pages written back to the namespace.",
	  NULL, { { "writeback_pages", NULL } } },
	{ "kvtier_written_bytes_total", "counter", "Bytes written back to the namespace.",
	  NULL, { { "writeback_bytes", NULL } } },
	{ "kvtier_read_pages_total", "counter", "Pages read from the namespace.",
	  NULL, { { "read_pages", NULL } } },
	{ "kvtier_read_bytes_total", "counter", "Bytes read from the namespace.",
	  NULL, { { "read_bytes", NULL } } },
	{ "kvtier_readahead_pages_total", "counter", "Pages read ahead of a fault.",
	  NULL, { { "readahead_pages", NULL } } },
	{ "kvtier_prefetched_pages_total", "counter",
	  "Pages read by WILLNEED advice (fadvise, madvise, libkvtier prefetch).",
	  NULL, { { "prefetch_pages", NULL } } },
	{ "kvtier_budget_stalls_total", "counter",
	  "Times a fault or a write waited for the pool to make room.",
	  NULL, { { "budget_stalls", NULL } } },
	{ "kvtier_checksum_errors_total", "counter",
	  "Pages read back whose CRC did not match (the access failed with EIO or SIGBUS).",
	  NULL, { { "checksum_errors", NULL } } },
	{ "kvtier_io_errors_total", "counter", "Failed namespace I/Os.",
	  NULL, { { "io_errors", NULL } } },
	{ "kvtier_inflight_bytes", "gauge", "Bytes of namespace I/O submitted and not completed.",
	  NULL, { { "inflight_bytes", NULL } } },
	{ "kvtier_background_written_pages_total", "counter",
	  "Pages written back ahead of eviction by background write-back (dirty_background_pct); also in kvtier_written_pages_total.",
	  NULL, { { "writeback_background", NULL } } },
	{ "kvtier_unchecked_written_pages_total", "counter",
	  "Pages of non-persistent regions written back without a CRC32C (checksum 0).",
	  NULL, { { "writeback_unchecked", NULL } } },
	{ "kvtier_direct_read_pages_total", "counter",
	  "Pages pread read from the namespace straight into the caller's buffer; also in kvtier_read_pages_total.",
	  NULL, { { "direct_read_pages", NULL } } },
	{ "kvtier_reused_pages_total", "counter",
	  "Pages the pool took from its spares (evicted pages) instead of the page allocator.",
	  NULL, { { "pages_reused", NULL } } },
	{ "kvtier_resident_bytes", "gauge", "Host memory charged to the tier's budget.",
	  NULL, { { "resident_bytes", NULL } } },
	{ "kvtier_pinned_bytes", "gauge", "Host memory pinned in the pool.",
	  NULL, { { "pinned_bytes", NULL } } },
	{ "kvtier_budget_bytes", "gauge", "The host memory budget (host_budget_mb).",
	  NULL, { { "budget_bytes", NULL } } },
	{ "kvtier_used_bytes", "gauge", "Namespace bytes holding written-back pages.",
	  NULL, { { "used_bytes", NULL } } },
	{ "kvtier_capacity_bytes", "gauge", "Bytes of the attached namespace (0 when detached).",
	  NULL, { { "capacity_bytes", NULL } } },
};

/* A histogram family from debugfs. */
struct hist_family {
	const char *name, *help, *label;
	bool io;		/* from "io" (bio pages), else "latency" (us) */
	struct { const char *row, *value; } rows[3];
};

static const struct hist_family hist_families[] = {
	{ "kvtier_fault_duration_seconds",
	  "Time the module took to serve a page fault, by kind (since attach).",
	  "kind", false, { { "fault_minor", "minor" }, { "fault_major", "major" },
			   { "fault_zero", "zero_fill" } } },
	{ "kvtier_io_duration_seconds",
	  "Time from a bio's submission to the namespace to its completion (since attach).",
	  "op", false, { { "read", "read" }, { "write", "write" } } },
	{ "kvtier_bio_size_bytes", "Sizes of the bios issued to the namespace (since attach).",
	  "op", true, { { "read", "read" }, { "write", "write" } } },
	{ "kvtier_commit_duration_seconds",
	  "Time a commit of persistent regions took, by what it wrote: a journal transaction or a checkpoint (since attach).",
	  "kind", false, { { "commit_journal", "journal" },
			   { "commit_checkpoint", "checkpoint" } } },
};

/* A label value as the format escapes it: backslash, quote, newline. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/*
 * `{tier="0"`, with @label `,label="value"`, with @le `,le="..."`, then
 * `}`. The device is not a label of the counters: they count across
 * attaches, and a series per device would start high at each attach
 * (kvtier_tier_info has it, for joins).
 */
static void put_labels(FILE *f, const struct tier_metrics *t, const char *label,
		       const char *value, const char *le)
{
	fprintf(f, "{tier=\"%u\"", t->id);
	if (label) {
		fprintf(f, ",%s=\"", label);
		put_label(f, value);
		fputc('"', f);
	}
	if (le)
		fprintf(f, ",le=\"%s\"", le);
	fputc('}', f);
}

static bool stat_of(const struct tier_metrics *t, const char *name, int64_t *v)
{
	size_t i;

	for (i = 0; i < t->nst; i++) {
		if (!strcmp(t->st[i].name, name)) {
			*v = t->st[i].value;
			return true;
		}
	}
	return false;
}

static void put_header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_stat_family(FILE *f, const struct stat_family *fam,
			    const struct tier_metrics *ts, unsigned int n)
{
	unsigned int i, s;
	int64_t v;

	put_header(f, fam->name, fam->type, fam->help);
	for (i = 0; i < n; i++) {
		for (s = 0; s < 4 && fam->samples[s].stat; s++) {
			if (!stat_of(&ts[i], fam->samples[s].stat, &v))
				continue;
			fputs(fam->name, f);
			put_labels(f, &ts[i], fam->label, fam->samples[s].value, NULL);
			fprintf(f, " %lld\n", (long long)v);
		}
	}
}

/*
 * The upper bound of bucket @b of @nb as "le": latency bucket 0 is below
 * 1 us and bucket i below 2^i us; io bucket i holds 2^i to 2^(i+1) - 1
 * pages. The last bucket is unbounded.
 */
static void bucket_le(char *buf, size_t len, bool io, unsigned int b, unsigned int nb,
		      long page)
{
	unsigned long long us = 1ULL << b;

	if (b == nb - 1 || b >= 40)
		snprintf(buf, len, "+Inf");
	else if (io)
		snprintf(buf, len, "%llu", ((2ULL << b) - 1) * (unsigned long long)page);
	else	/* exact: 2^b microseconds in seconds */
		snprintf(buf, len, "%llu.%06llu", us / 1000000, us % 1000000);
}

static void put_hist_family(FILE *f, const struct hist_family *fam,
			    const struct tier_metrics *ts, unsigned int n)
{
	const struct kvt_hist *h;
	long page = sysconf(_SC_PAGESIZE);
	unsigned int i, r, b;
	uint64_t cum;
	char le[32];

	put_header(f, fam->name, "histogram", fam->help);
	for (i = 0; i < n; i++) {
		if (!ts[i].have_hists)
			continue;
		for (r = 0; r < 3 && fam->rows[r].row; r++) {
			h = kvt_histset_get(fam->io ? &ts[i].io : &ts[i].latency,
					    fam->rows[r].row);
			if (!h || !h->has_sum)
				continue;	/* an older module: no sums */
			cum = 0;
			for (b = 0; b < (fam->io ? ts[i].io.buckets : ts[i].latency.buckets); b++) {
				cum += h->c[b];
				bucket_le(le, sizeof(le), fam->io, b,
					  fam->io ? ts[i].io.buckets : ts[i].latency.buckets, page);
				fprintf(f, "%s_bucket", fam->name);
				put_labels(f, &ts[i], fam->label, fam->rows[r].value, le);
				fprintf(f, " %llu\n", (unsigned long long)cum);
			}
			fprintf(f, "%s_sum", fam->name);
			put_labels(f, &ts[i], fam->label, fam->rows[r].value, NULL);
			if (fam->io)
				fprintf(f, " %llu\n", (unsigned long long)h->sum * (unsigned long long)page);
			else
				fprintf(f, " %.9f\n", (double)h->sum / 1e9);
			fprintf(f, "%s_count", fam->name);
			put_labels(f, &ts[i], fam->label, fam->rows[r].value, NULL);
			fprintf(f, " %llu\n", (unsigned long long)cum);
		}
	}
}

/* Everything about tier @id; 0, or -errno when its stats cannot be read. */
static int collect(unsigned int id, struct tier_metrics *t)
{
	char buf[64];
	int ret;

	memset(t, 0, sizeof(*t));
	t->id = id;
	if (kvtier_tier_attr_get(id, "backing_dev", t->device, sizeof(t->device)))
		snprintf(t->device, sizeof(t->device), "none");
	if (!kvtier_tier_attr_get(id, "error", buf, sizeof(buf)))
		t->error = strtoll(buf, NULL, 10);
	ret = kvtier_tier_stats(id, &t->st, &t->nst);
	if (ret)
		return ret;
	t->have_hists = !tier_latency(id, &t->latency) && !tier_io(id, &t->io);
	return 0;
}

static void put_all(FILE *f, const struct tier_metrics *ts, unsigned int n, bool loaded)
{
	unsigned int i;
	bool hists = false;

	put_header(f, "kvtier_module_loaded", "gauge",
		   "1 when the kvtier module is loaded (its tiers follow), else 0.");
	fprintf(f, "kvtier_module_loaded %d\n", loaded);
	put_header(f, "kvtier_tier_info", "gauge",
		   "1 for each tier, labelled with its attached device (none when detached).");
	for (i = 0; i < n; i++) {
		fputs("kvtier_tier_info", f);
		put_labels(f, &ts[i], "device", ts[i].device, NULL);
		fputs(" 1\n", f);
	}
	put_header(f, "kvtier_attached", "gauge", "1 when the tier has a namespace attached.");
	for (i = 0; i < n; i++) {
		fputs("kvtier_attached", f);
		put_labels(f, &ts[i], NULL, NULL, NULL);
		fprintf(f, " %d\n", strcmp(ts[i].device, "none") != 0);
	}
	put_header(f, "kvtier_error", "gauge",
		   "The tier's first I/O error since attach as a positive errno: 0 none, 5 EIO, 74 EBADMSG.");
	for (i = 0; i < n; i++) {
		fputs("kvtier_error", f);
		put_labels(f, &ts[i], NULL, NULL, NULL);
		fprintf(f, " %lld\n", (long long)(ts[i].error < 0 ? -ts[i].error : ts[i].error));
	}
	for (i = 0; i < sizeof(stat_families) / sizeof(stat_families[0]); i++)
		put_stat_family(f, &stat_families[i], ts, n);
	for (i = 0; i < n; i++)
		hists |= ts[i].have_hists;
	if (!hists && n) {
		fputs("# kvtier: no histograms: /sys/kernel/debug/kvtier cannot be read (debugfs needs root and must be mounted)\n", f);
		return;
	}
	for (i = 0; i < sizeof(hist_families) / sizeof(hist_families[0]); i++)
		put_hist_family(f, &hist_families[i], ts, n);
}

/* Flush @f and check it took everything: 0 or -errno. */
static int finish(FILE *f)
{
	if (fflush(f) || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/*
 * DIR/kvtier.prom, through a temporary file in DIR (mkstemp: never one
 * that exists, never through a link) and rename(2), mode 0644 whatever
 * the umask, for node_exporter to read.
 */
static int write_textfile(const char *dir, const struct tier_metrics *ts,
			  unsigned int n, bool loaded)
{
	char tmp[4096], path[4096];
	int fd, ret;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, TEXTFILE_NAME) >= sizeof(path) ||
	    (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, TEXTFILE_NAME) >= sizeof(tmp))
		return fail("--textfile: %s: %s", dir, strerror(ENAMETOOLONG));
	fd = mkstemp(tmp);
	if (fd < 0)
		return fail("--textfile: %s: %s", tmp, strerror(errno));
	f = fdopen(fd, "w");
	if (!f || fchmod(fd, 0644)) {
		ret = -errno;
		if (f)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return fail("--textfile: %s: %s", tmp, strerror(-ret));
	}
	put_all(f, ts, n, loaded);
	ret = finish(f);
	if (!ret && fsync(fd))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return fail("--textfile: %s: %s", path, strerror(-ret));
	}
	return EXIT_OK;
}

int cmd_metrics(const struct cmd *cmd, int argc, char **argv)
{
	const char *opt[OPT_NR] = { NULL };
	struct tier_metrics *ts = NULL;
	unsigned int i, n = 0, have = 0, id = 0;
	bool loaded, one;
	int first, ret = EXIT_OK, err;

	first = parse_opts(cmd, argc, argv, "T:", opt);
	if (first < 0)
		return EXIT_USAGE;
	if (opt_json)
		return usage_error(cmd, "metrics has no --json output (it is Prometheus text)");
	one = argc > first;
	if (one && tier_operand(cmd, argc, argv, first, &id))
		return EXIT_USAGE;
	loaded = !read_num_tiers(&have);
	if (one && (ret = tier_check(id)))
		return ret;
	ts = calloc(have ? have : 1, sizeof(*ts));
	if (!ts)
		return fail("metrics: %s", strerror(ENOMEM));
	for (i = one ? id : 0; i < (one ? id + 1 : have); i++) {
		err = collect(i, &ts[n]);
		if (err) {
			ret = fail("kvtier%u: cannot read its counters: %s%s", i, strerror(-err),
				   err == -ENOENT ? " (a module older than /sys/class/kvtier/kvtierN/stat?)" : "");
			continue;
		}
		n++;
	}
	/* A tier that failed is left out, not the others (exit 1 still). */
	if (opt[OPT_TEXTFILE]) {
		err = write_textfile(opt[OPT_TEXTFILE], ts, n, loaded);
	} else {
		put_all(stdout, ts, n, loaded);
		err = finish(stdout) ? fail("metrics: standard output: %s", strerror(errno ? errno : EIO)) : 0;
	}
	if (err)
		ret = err;
	for (i = 0; i < n; i++)
		free(ts[i].st);
	free(ts);
	return ret;
}
