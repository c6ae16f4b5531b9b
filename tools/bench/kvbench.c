// SPDX-License-Identifier: GPL-2.0
/*
 * kvbench - KV-cache-shaped memory workloads against kvtier, anonymous
 * memory (swap) and a mapped file (page cache).
 *
 * The same program, the same access pattern and the same clock run against
 * each memory target; only how the memory is obtained differs:
 *
 *   --target kvtier:/dev/kvtier0   mmap(MAP_SHARED) of a fresh fd of a tier
 *   --target anon                  anonymous mmap (the runner confines the
 *                                  process to a memory cgroup with swap)
 *   --target file:/mnt/x/kv.bin    mmap(MAP_SHARED) of a file (page cache)
 *
 * The reuse workloads (kvtier only) work on one persistent named region
 * across a module reload: persist writes and fsyncs it, drop writes it
 * back and drops it from host memory (the fallback when the runner cannot
 * reload the module), restore-mmap/-pread/-fault time reading it back and
 * verify every byte; unlink removes it.
 *
 * Output: CSV rows, one per workload, with a fixed header (--header prints
 * it). Documentation/performance.rst explains every column and workload.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/io_uring.h>
#include <linux/kvtier.h>

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

#define MIB (1024.0 * 1024.0)
#define PAGE 4096UL

static const char header[] =
	"system,workload,model,ratio,nseq,ctx_tokens,mib,seconds,gbps,tokens_s,"
	"units,p50_us,p99_us,p999_us,mean_us,minflt,majflt,us_per_fault,"
	"mod_major,mod_major_p50_us,mod_major_p99_us,mod_minor,mod_minor_p50_us,"
	"mod_minor_p99_us,mod_read_mib,mod_write_mib,cpu_s,dev_read_mib,"
	"dev_read_ios,dev_write_mib,dev_write_ios,dev_queue_s,note";

/* --- model shape ----------------------------------------------------------- */

struct shape {
	const char *name;
	unsigned int layers, kv_heads, head_dim, dtype_bytes, block_tokens;
};

static const struct shape presets[] = {
	{ "llama-3.1-8b", 32, 8, 128, 2, 16 },
	{ "llama-70b", 80, 8, 128, 2, 16 },	/* 70B-class GQA (Llama-3.1-70B) */
};

static struct shape shp;
/* one token, one layer, K and V */
static size_t tok_layer_bytes(void)
{
	return (size_t)shp.kv_heads * shp.head_dim * shp.dtype_bytes * 2;
}

/* one token, all layers */
static size_t tok_bytes(void)
{
	return tok_layer_bytes() * shp.layers;
}

/* one layer's K and V of one block: the access unit of the paged cache */
static size_t unit_bytes(void)
{
	return tok_layer_bytes() * shp.block_tokens;
}

/* --- options ---------------------------------------------------------------- */

static struct {
	char target[256];
	char system[64];
	char dev[64];		/* the namespace's name in /sys/block */
	size_t budget;		/* bytes */
	double ratio;
	unsigned int nseq;
	unsigned int steps;
	unsigned int tokens;
	unsigned int prefixes;
	double zipf;
	size_t restore;		/* bytes; 0: budget / 2 */
	size_t stride;
	unsigned int seed;
	int tiny;
	const char *cdf;	/* append latency quantiles here */
	char name[KVTIER_NAME_MAX];	/* reuse: the persistent region */
	size_t chunk;		/* reuse, pwrite, pread: bytes per call */
	unsigned int qd;	/* pread-uring, pwrite-uring: requests in flight */
	const char *note;	/* reuse: appended to the note column */
} opt = {
	.system = "",
	.budget = 64UL << 20,
	.ratio = 2,
	.nseq = 4,
	.steps = 3,
	.tokens = 256,
	.prefixes = 16,
	.zipf = 1.0,
	.stride = 64,
	.seed = 1,
	.name = "kvbench-reuse",
	.chunk = 1UL << 20,
	.qd = 32,
};

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "kvbench: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* --- clock and latency samples ------------------------------------------- */

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * Per-access latencies in ns (saturated at 2^32-1). Bounded memory: past
 * LAT_CAP samples it keeps a uniform reservoir, so the process's own
 * footprint (charged to the same memory cgroup) stays at 1 MiB.
 */
#define LAT_CAP (1U << 18)
struct lat {
	uint32_t *v;
	size_t n;
	uint64_t seen, sum_ns;
};

static void lat_init(struct lat *l)
{
	l->v = malloc(LAT_CAP * sizeof(*l->v));
	if (!l->v)
		die("out of memory");
	l->n = 0;
	l->seen = 0;
	l->sum_ns = 0;
}

static void lat_add(struct lat *l, uint64_t ns)
{
	uint32_t x = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;

	l->seen++;
	l->sum_ns += ns;
	if (l->n < LAT_CAP) {
		l->v[l->n++] = x;
	} else {
		uint64_t j = rnd() % l->seen;

		if (j < LAT_CAP)
			l->v[j] = x;
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static double lat_pct(struct lat *l, double p)
{
	size_t i;

	if (!l->n)
		return 0;
	i = (size_t)ceil(p / 100.0 * (double)l->n);
	if (i > 0)
		i--;
	if (i >= l->n)
		i = l->n - 1;
	return l->v[i] / 1000.0;
}

/* --- the target ------------------------------------------------------------ */

enum kind { T_KVTIER, T_ANON, T_FILE };

static enum kind kind;
static const char *tpath;

struct map {
	char *p;
	size_t len;
	int fd;
};

static void map_new(struct map *m, size_t len)
{
	int flags = MAP_SHARED;

	m->len = len;
	m->fd = -1;
	if (kind == T_KVTIER) {
		m->fd = open(tpath, O_RDWR | O_CLOEXEC);
		if (m->fd < 0)
			die("open %s: %s", tpath, strerror(errno));
	} else if (kind == T_FILE) {
		m->fd = open(tpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (m->fd < 0)
			die("open %s: %s", tpath, strerror(errno));
		if (ftruncate(m->fd, (off_t)len))
			die("ftruncate %s: %s", tpath, strerror(errno));
	} else {
		flags = MAP_PRIVATE | MAP_ANONYMOUS;
	}
	m->p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, m->fd, 0);
	if (m->p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	/* No huge pages for anon either: every system works in 4 KiB pages. */
	if (kind == T_ANON)
		madvise(m->p, len, MADV_NOHUGEPAGE);
}

static void map_free(struct map *m)
{
	munmap(m->p, m->len);
	if (m->fd >= 0)
		close(m->fd);
	if (kind == T_FILE)
		unlink(tpath);
}

/* Make the mapping durable where that means something (not for anon). */
static void map_sync(struct map *m)
{
	if (kind == T_KVTIER) {
		if (fsync(m->fd))
			die("fsync: %s", strerror(errno));
	} else if (kind == T_FILE) {
		if (msync(m->p, m->len, MS_SYNC))
			die("msync: %s", strerror(errno));
	}
}

/*
 * Push the whole mapping out of host memory onto the namespace: kvtier
 * writes back and drops (FADV_DONTNEED); swap and page cache by
 * MADV_PAGEOUT (after msync for the file, whose dirty pages reclaim would
 * otherwise skip). Returns the fraction still resident per mincore().
 */
static double resident(struct map *m)
{
	size_t n = m->len / PAGE, i, res = 0;
	unsigned char *vec = malloc(n);

	if (!vec || mincore(m->p, m->len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		res += vec[i] & 1;
	free(vec);
	return (double)res / (double)n;
}

/*
 * Anonymous pages that MADV_PAGEOUT sent to swap stay in the swap cache
 * until their write completes and reclaim passes again: repeat (up to 50
 * times, 100 ms apart) until under 1 % is resident.
 */
static double map_evict(struct map *m)
{
	double res;
	int i;

	if (kind == T_KVTIER) {
		if (posix_fadvise(m->fd, 0, (off_t)m->len, POSIX_FADV_DONTNEED))
			die("fadvise DONTNEED: %s", strerror(errno));
		return resident(m);
	}
	map_sync(m);
	for (i = 0; i < 50; i++) {
		if (madvise(m->p, m->len, MADV_PAGEOUT))
			die("madvise PAGEOUT: %s", strerror(errno));
		if (kind == T_FILE)
			posix_fadvise(m->fd, 0, (off_t)m->len, POSIX_FADV_DONTNEED);
		res = resident(m);
		if (res >= 0 && res < 0.01)
			break;
		usleep(100000);
	}
	return res;
}

/* --- touching memory ------------------------------------------------------- */

static volatile uint64_t sink;

/* Read one 8-byte word every opt.stride bytes of [p, p + len). */
static inline void rd(const char *p, size_t len)
{
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < len; i += opt.stride)
		s += *(const volatile uint64_t *)(p + i);
	sink += s;
}

/* Write the whole range (KV is produced in full). */
static inline void wr(char *p, size_t len, unsigned int v)
{
	memset(p, (int)(v | 1), len);
}

/* --- module statistics (kvtier only) -------------------------------------- */

#define HBUCKETS 26
struct modstat {
	int ok;
	uint64_t major[HBUCKETS], minor[HBUCKETS];
	uint64_t read_bytes, write_bytes;
};

static char dbgdir[512];

static int read_hist_line(const char *line, const char *name, uint64_t *h)
{
	size_t l = strlen(name);
	const char *s = line + l;
	char *end;
	int i;

	if (strncmp(line, name, l) || line[l] != ' ')
		return 0;
	for (i = 0; i < HBUCKETS; i++) {
		h[i] = strtoull(s, &end, 10);
		if (end == s)
			return 0;
		s = end;
	}
	return 1;
}

static void mod_read(struct modstat *ms)
{
	char path[544], line[1024];
	FILE *f;

	memset(ms, 0, sizeof(*ms));
	if (kind != T_KVTIER || !dbgdir[0])
		return;
	snprintf(path, sizeof(path), "%s/latency", dbgdir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		read_hist_line(line, "fault_major", ms->major);
		read_hist_line(line, "fault_minor", ms->minor);
	}
	fclose(f);
	snprintf(path, sizeof(path), "%s/stats", dbgdir);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "read_bytes %llu", &v) == 1)
			ms->read_bytes = v;
		else if (sscanf(line, "writeback_bytes %llu", &v) == 1)
			ms->write_bytes = v;
	}
	fclose(f);
	ms->ok = 1;
}

/* Percentile of a histogram: the upper bound of the crossing bucket, µs. */
static double hist_pct(const uint64_t *h, double p, uint64_t *total)
{
	uint64_t n = 0, c = 0;
	int i;

	for (i = 0; i < HBUCKETS; i++)
		n += h[i];
	*total = n;
	if (!n)
		return 0;
	for (i = 0; i < HBUCKETS; i++) {
		c += h[i];
		if ((double)c >= p / 100.0 * (double)n)
			return (double)(1UL << i);
	}
	return (double)(1UL << (HBUCKETS - 1));
}

/* --- the whole guest: CPU time and the device's own counters --------------- */

/*
 * What a run cost the machine, not only this process: CPU time of every
 * CPU (kworkers, interrupts and the block layer included) from /proc/stat,
 * and what the namespace itself saw from /sys/block/<dev>/stat: sectors
 * and requests (after merging) each way, and the time requests spent in
 * flight summed over requests (time_in_queue), whose delta over the
 * elapsed time is the mean number in flight. The same counters are read
 * around fio's jobs (tests/bench/snap.sh), so every row is measured alike.
 */
struct sysstat {
	int cpu_ok, dev_ok;
	uint64_t cpu_ticks;	/* non-idle, USER_HZ, all CPUs */
	uint64_t rd_ios, rd_sectors, wr_ios, wr_sectors, queue_ms;
};

static void sys_read(struct sysstat *s)
{
	unsigned long long v[10] = { 0 }, d[11];
	char path[128];
	FILE *f;

	memset(s, 0, sizeof(*s));
	f = fopen("/proc/stat", "r");
	if (f) {
		/* user nice system idle iowait irq softirq steal guest guest_nice */
		if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu",
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
			   &v[7]) == 8) {
			s->cpu_ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
			s->cpu_ok = 1;
		}
		fclose(f);
	}
	if (!opt.dev[0])
		return;
	snprintf(path, sizeof(path), "/sys/block/%s/stat", opt.dev);
	f = fopen(path, "r");
	if (!f)
		die("open %s: %s", path, strerror(errno));
	/* reads merges sectors ticks, writes ..., in_flight io_ticks queue */
	if (fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &d[0], &d[1], &d[2], &d[3], &d[4], &d[5], &d[6], &d[7],
		   &d[8], &d[9], &d[10]) != 11)
		die("%s: unexpected contents", path);
	fclose(f);
	s->rd_ios = d[0];
	s->rd_sectors = d[2];
	s->wr_ios = d[4];
	s->wr_sectors = d[6];
	s->queue_ms = d[10];
	s->dev_ok = 1;
}

/* The columns cpu_s .. dev_queue_s of the run between @a and @b. */
static void sys_print(const struct sysstat *a, const struct sysstat *b)
{
	if (a->cpu_ok && b->cpu_ok)
		printf("%.2f,", (double)(b->cpu_ticks - a->cpu_ticks) /
		       (double)sysconf(_SC_CLK_TCK));
	else
		printf(",");
	if (a->dev_ok && b->dev_ok)
		printf("%.1f,%llu,%.1f,%llu,%.3f,",
		       (double)(b->rd_sectors - a->rd_sectors) * 512 / MIB,
		       (unsigned long long)(b->rd_ios - a->rd_ios),
		       (double)(b->wr_sectors - a->wr_sectors) * 512 / MIB,
		       (unsigned long long)(b->wr_ios - a->wr_ios),
		       (double)(b->queue_ms - a->queue_ms) / 1000);
	else
		printf(",,,,,");
}

/* --- one measured run -------------------------------------------------------- */

struct run {
	const char *workload;
	double ratio;
	unsigned int nseq, ctx;
	size_t region;
	struct lat lat;
	struct modstat m0;
	struct sysstat s0;
	struct rusage r0;
	uint64_t t0;
	uint64_t bytes, tokens;
	char note[256];
};

static void run_begin(struct run *r, const char *workload)
{
	memset(r, 0, sizeof(*r));
	r->workload = workload;
	lat_init(&r->lat);
}

/* Start the clock (after the untimed setup). */
static void run_start(struct run *r)
{
	mod_read(&r->m0);
	sys_read(&r->s0);
	getrusage(RUSAGE_SELF, &r->r0);
	r->t0 = now_ns();
}

/*
 * Append the latency distribution of a run to opt.cdf as "system workload
 * ratio nseq quantile latency_us" lines: 200 evenly spaced quantiles plus
 * the tail (99.5, 99.9, 99.99 %), for the plots.
 */
static void write_cdf(struct run *r)
{
	static const double tail[] = { 99.5, 99.9, 99.99 };
	FILE *f = fopen(opt.cdf, "a");
	unsigned int i;

	if (!f)
		die("open %s: %s", opt.cdf, strerror(errno));
	for (i = 1; i < 200; i++)
		fprintf(f, "%s %s %.2f %u %.3f %.3f\n", opt.system, r->workload,
			r->ratio, r->nseq, i / 200.0, lat_pct(&r->lat, i / 2.0));
	for (i = 0; i < 3; i++)
		fprintf(f, "%s %s %.2f %u %.5f %.3f\n", opt.system, r->workload,
			r->ratio, r->nseq, tail[i] / 100, lat_pct(&r->lat, tail[i]));
	fclose(f);
}

static void run_end(struct run *r)
{
	uint64_t t1 = now_ns();
	struct rusage r1;
	struct modstat m1;
	struct sysstat s1;
	double secs = (double)(t1 - r->t0) / 1e9;
	long minf, majf;

	getrusage(RUSAGE_SELF, &r1);
	sys_read(&s1);
	mod_read(&m1);
	minf = r1.ru_minflt - r->r0.ru_minflt;
	majf = r1.ru_majflt - r->r0.ru_majflt;
	qsort(r->lat.v, r->lat.n, sizeof(*r->lat.v), cmp_u32);
	if (opt.cdf && r->lat.n)
		write_cdf(r);

	printf("%s,%s,%s,%.2f,%u,%u,%.1f,%.3f,%.4f,", opt.system, r->workload,
	       shp.name, r->ratio, r->nseq, r->ctx, (double)r->region / MIB,
	       secs, (double)r->bytes / secs / 1e9);
	if (r->tokens)
		printf("%.1f,", (double)r->tokens / secs);
	else
		printf(",");
	printf("%llu,%.1f,%.1f,%.1f,%.2f,%ld,%ld,",
	       (unsigned long long)r->lat.seen, lat_pct(&r->lat, 50),
	       lat_pct(&r->lat, 99), lat_pct(&r->lat, 99.9),
	       r->lat.seen ? (double)r->lat.sum_ns / 1e3 / (double)r->lat.seen : 0,
	       minf, majf);
	if (minf + majf)
		printf("%.2f,", secs * 1e6 / (double)(minf + majf));
	else
		printf(",");
	if (m1.ok && r->m0.ok) {
		uint64_t d[HBUCKETS], n;
		double p50, p99;
		int i;

		for (i = 0; i < HBUCKETS; i++)
			d[i] = m1.major[i] - r->m0.major[i];
		p50 = hist_pct(d, 50, &n);
		p99 = hist_pct(d, 99, &n);
		printf("%llu,%.0f,%.0f,", (unsigned long long)n, p50, p99);
		for (i = 0; i < HBUCKETS; i++)
			d[i] = m1.minor[i] - r->m0.minor[i];
		p50 = hist_pct(d, 50, &n);
		p99 = hist_pct(d, 99, &n);
		printf("%llu,%.0f,%.0f,", (unsigned long long)n, p50, p99);
		printf("%.1f,%.1f,", (double)(m1.read_bytes - r->m0.read_bytes) / MIB,
		       (double)(m1.write_bytes - r->m0.write_bytes) / MIB);
	} else {
		printf(",,,,,,,,");
	}
	sys_print(&r->s0, &s1);
	printf("%s\n", r->note);
	fflush(stdout);
	free(r->lat.v);
}

/* --- workloads --------------------------------------------------------------- */

/*
 * Cold restore: a sequence's KV (opt.restore bytes, contiguous) is written,
 * made durable and pushed out of host memory; then read back in order, one
 * unit (one layer's K/V of one block, 64 KiB for both presets) per sample.
 */
static void wl_restore(void)
{
	size_t u = unit_bytes(), len = opt.restore ? opt.restore : opt.budget / 2;
	struct run r;
	struct map m;
	double res;
	size_t off;

	len = len / u * u;
	run_begin(&r, "restore");
	r.region = len;
	r.nseq = 1;
	r.ctx = (unsigned int)(len / tok_bytes());
	r.ratio = (double)len / (double)opt.budget;
	map_new(&m, len);
	for (off = 0; off < len; off += u)
		wr(m.p + off, u, (unsigned int)(off / u));
	res = map_evict(&m);
	run_start(&r);
	for (off = 0; off < len; off += u) {
		uint64_t t = now_ns();

		rd(m.p + off, u);
		lat_add(&r.lat, now_ns() - t);
	}
	r.bytes = len;
	snprintf(r.note, sizeof(r.note), "resident after evict %.0f%%",
		 res < 0 ? -1 : res * 100);
	run_end(&r);
	map_free(&m);
}

/* The explicit path's bytes: word i of byte offset o (v: the run). */
static inline uint64_t xpattern(size_t o, unsigned int v)
{
	return ((uint64_t)o * 0x9e3779b97f4a7c15ULL) ^ v;
}

static void xfill(char *p, size_t len, size_t off, unsigned int v)
{
	size_t i;

	for (i = 0; i < len; i += 8)
		*(uint64_t *)(p + i) = xpattern(off + i, v);
}

/*
 * pwrite (@write) or pread [0, len) of @fd in opt.chunk calls from or into
 * @buf; one latency sample per call in @r, if given.
 */
static void xio(int fd, char *buf, size_t len, struct run *r, int write)
{
	const char *what = write ? "pwrite" : "pread";
	size_t off;

	for (off = 0; off < len; ) {
		size_t n = len - off < opt.chunk ? len - off : opt.chunk;
		uint64_t t = now_ns();
		ssize_t got = write ? pwrite(fd, buf + off, n, (off_t)off) :
				      pread(fd, buf + off, n, (off_t)off);

		if (got <= 0)
			die("%s at %zu: %s", what, off,
			    got ? strerror(errno) : write ? "0 bytes" : "EOF");
		if (r)
			lat_add(&r->lat, now_ns() - t);
		off += (size_t)got;
	}
}

static char *xbuf(size_t len)
{
	char *buf;

	if (kind == T_ANON)
		die("pwrite and pread need a kvtier or file target");
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	return buf;
}

/* An io_uring instance's rings, mapped by hand (no liburing needed). */
struct uring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void *uring_map(int fd, size_t len, off_t what)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, fd, what);

	if (p == MAP_FAILED)
		die("io_uring mmap: %s", strerror(errno));
	return p;
}

static void uring_init(struct uring *q, unsigned int entries)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	q->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (q->fd < 0)
		die("io_uring_setup: %s", strerror(errno));
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = uring_map(q->fd, sq_len, IORING_OFF_SQ_RING);
	cq = p.features & IORING_FEAT_SINGLE_MMAP ? sq :
	     uring_map(q->fd, cq_len, IORING_OFF_CQ_RING);
	q->sqes = uring_map(q->fd, p.sq_entries * sizeof(struct io_uring_sqe),
			    IORING_OFF_SQES);
	q->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	q->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	q->sq_array = (unsigned int *)(sq + p.sq_off.array);
	q->cq_head = (unsigned int *)(cq + p.cq_off.head);
	q->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	q->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	q->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/*
 * Queue a read (a write, with @write) of @n bytes at @off of @fd into (from)
 * @buf, submitted later.
 */
static void uring_rw(struct uring *q, int write, int fd, char *buf, size_t n,
		     size_t off)
{
	unsigned int tail = *q->sq_tail, idx = tail & *q->sq_mask;
	struct io_uring_sqe *sqe = &q->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = write ? IORING_OP_WRITE : IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = (unsigned int)n;
	sqe->off = off;
	sqe->user_data = n;
	q->sq_array[idx] = idx;
	__atomic_store_n(q->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/*
 * Submit the @submit requests queued, all of them (io_uring_enter() may
 * take fewer than asked, and a completion already in the ring must not
 * stop the submission: the requests left in the ring would never be
 * issued), then wait for one completion; its result.
 */
static int uring_reap(struct uring *q, unsigned int submit)
{
	unsigned int head;
	long ret;
	int res;

	while (submit) {
		ret = syscall(__NR_io_uring_enter, q->fd, submit, 0, 0, NULL, 0);
		if (ret < 0 && errno != EINTR && errno != EAGAIN)
			die("io_uring_enter: %s", strerror(errno));
		if (!ret)
			die("io_uring_enter: none of %u requests submitted", submit);
		if (ret > 0)
			submit -= (unsigned int)ret;
	}
	for (;;) {
		head = *q->cq_head;
		if (head != __atomic_load_n(q->cq_tail, __ATOMIC_ACQUIRE))
			break;
		if (syscall(__NR_io_uring_enter, q->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 && errno != EINTR)
			die("io_uring_enter: %s", strerror(errno));
	}
	res = q->cqes[head & *q->cq_mask].res;
	if (res != (int)q->cqes[head & *q->cq_mask].user_data)
		die("io_uring request: %s", res < 0 ? strerror(-res) : "short");
	__atomic_store_n(q->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/*
 * pread (pwrite, with @write) [0, len) of @fd into (from) @buf through
 * io_uring, opt.chunk a request, opt.qd of them in flight from this one
 * thread.
 */
static void xio_uring(int fd, char *buf, size_t len, int write)
{
	unsigned int inflight = 0, queued = 0;
	struct uring q;
	size_t off = 0;

	uring_init(&q, opt.qd);
	while (off < len || inflight) {
		while (off < len && inflight < opt.qd) {
			size_t n = len - off < opt.chunk ? len - off : opt.chunk;

			uring_rw(&q, write, fd, buf + off, n, off);
			off += n;
			inflight++;
			queued++;
		}
		uring_reap(&q, queued);
		queued = 0;
		inflight--;
	}
	close(q.fd);
}

/*
 * The explicit path, written: opt.restore bytes (budget / 2) by pwrite in
 * opt.chunk pieces from a user buffer, then fsync; both timed (one sample
 * per chunk, the fsync in the total). PW_DIRECT (pwrite-direct): the file
 * is O_DIRECT, each call writes its chunk through. PW_URING (pwrite-uring):
 * io_uring writes, opt.qd in flight from this thread, then fsync.
 */
enum { PW_PLAIN, PW_DIRECT, PW_URING };

static void wl_pwrite(int how)
{
	static const char *const names[] = { "pwrite", "pwrite-direct",
					     "pwrite-uring" };
	size_t len = (opt.restore ? opt.restore : opt.budget / 2) / PAGE * PAGE;
	char *buf = xbuf(len);
	struct run r;
	struct map m;

	run_begin(&r, names[how]);
	r.region = len;
	r.nseq = 1;
	r.ratio = (double)len / (double)opt.budget;
	map_new(&m, len);
	if (how == PW_DIRECT &&
	    fcntl(m.fd, F_SETFL, fcntl(m.fd, F_GETFL) | O_DIRECT))
		die("O_DIRECT: %s", strerror(errno));
	xfill(buf, len, 0, 1);
	run_start(&r);
	if (how == PW_URING)
		xio_uring(m.fd, buf, len, 1);
	else
		xio(m.fd, buf, len, &r, 1);
	map_sync(&m);
	r.bytes = len;
	if (how == PW_URING)
		snprintf(r.note, sizeof(r.note), "io_uring writes of %zu KiB, %u in flight, + fsync",
			 opt.chunk >> 10, opt.qd);
	else
		snprintf(r.note, sizeof(r.note), "pwrite %zu KiB chunks%s + fsync",
			 opt.chunk >> 10, how == PW_DIRECT ? " O_DIRECT" : "");
	run_end(&r);
	map_free(&m);
	munmap(buf, len);
}

/*
 * The explicit path, read back cold: opt.restore bytes written by pwrite
 * and fsync (untimed), pushed out of host memory, then read by pread in
 * opt.chunk pieces into a user buffer (faulted in before the clock), one
 * sample per chunk; every byte is checked afterwards, untimed.
 */
static void wl_pread(int uring)
{
	size_t len = (opt.restore ? opt.restore : opt.budget / 2) / PAGE * PAGE;
	char *buf = xbuf(len);
	struct run r;
	struct map m;
	double res;
	size_t off;

	run_begin(&r, uring ? "pread-uring" : "pread");
	r.region = len;
	r.nseq = 1;
	r.ratio = (double)len / (double)opt.budget;
	map_new(&m, len);
	xfill(buf, len, 0, 2);
	xio(m.fd, buf, len, NULL, 1);
	map_sync(&m);
	res = map_evict(&m);
	memset(buf, 0, len);
	run_start(&r);
	if (uring)
		xio_uring(m.fd, buf, len, 0);
	else
		xio(m.fd, buf, len, &r, 0);
	r.bytes = len;
	if (uring)
		snprintf(r.note, sizeof(r.note), "io_uring reads of %zu KiB, %u in flight; resident after evict %.0f%%; verified",
			 opt.chunk >> 10, opt.qd, res < 0 ? -1 : res * 100);
	else
		snprintf(r.note, sizeof(r.note), "pread %zu KiB chunks; resident after evict %.0f%%; verified",
			 opt.chunk >> 10, res < 0 ? -1 : res * 100);
	run_end(&r);
	for (off = 0; off < len; off += 8)
		if (*(uint64_t *)(buf + off) != xpattern(off, 2))
			die("pread: wrong bytes at offset %zu", off);
	map_free(&m);
	munmap(buf, len);
}

/*
 * Decode scan over a paged cache laid out per layer (as vLLM does): layer
 * l holds, for each sequence s, its blocks contiguously. Per generated
 * token, for every layer and every sequence: read that sequence's K/V of
 * the layer for all its tokens, then append one token's K/V (one sample).
 * The working set is opt.ratio times the budget.
 */
static void wl_decode(void)
{
	size_t tl = tok_layer_bytes(), u = unit_bytes();
	size_t ws = (size_t)(opt.ratio * (double)opt.budget);
	unsigned int ctx, maxb, *len, s, l, step, warm = 1;
	size_t seqbytes, region;
	struct run r;
	struct map m;

	ctx = (unsigned int)(ws / (opt.nseq * tok_bytes()));
	ctx = ctx / shp.block_tokens * shp.block_tokens;
	if (ctx < shp.block_tokens)
		ctx = shp.block_tokens;
	maxb = (ctx + warm + opt.steps + shp.block_tokens - 1) / shp.block_tokens;
	seqbytes = (size_t)maxb * u;
	region = seqbytes * opt.nseq * shp.layers;
	len = calloc(opt.nseq, sizeof(*len));
	if (!len)
		die("out of memory");

	run_begin(&r, "decode");
	r.ratio = opt.ratio;
	r.nseq = opt.nseq;
	r.ctx = ctx;
	r.region = (size_t)ctx * opt.nseq * tok_bytes();
	map_new(&m, region);
	/* prefill: every sequence's KV, layer by layer */
	for (l = 0; l < shp.layers; l++)
		for (s = 0; s < opt.nseq; s++)
			wr(m.p + ((size_t)l * opt.nseq + s) * seqbytes,
			   (size_t)ctx * tl, s);
	for (s = 0; s < opt.nseq; s++)
		len[s] = ctx;

	for (step = 0; step < warm + opt.steps; step++) {
		if (step == warm)
			run_start(&r);
		for (l = 0; l < shp.layers; l++) {
			for (s = 0; s < opt.nseq; s++) {
				char *base = m.p + ((size_t)l * opt.nseq + s) * seqbytes;
				uint64_t t = now_ns();

				rd(base, (size_t)len[s] * tl);
				wr(base + (size_t)len[s] * tl, tl, step);
				if (step >= warm) {
					lat_add(&r.lat, now_ns() - t);
					r.bytes += (size_t)(len[s] + 1) * tl;
				}
			}
		}
		for (s = 0; s < opt.nseq; s++)
			len[s]++;
		if (step >= warm)
			r.tokens += opt.nseq;
	}
	snprintf(r.note, sizeof(r.note), "steps %u after %u warm-up", opt.steps, warm);
	run_end(&r);
	map_free(&m);
	free(len);
}

/*
 * Many-sequence churn: opt.prefixes shared prompt prefixes, picked with a
 * Zipf(opt.zipf) popularity; opt.nseq sequences in flight, each on one
 * prefix plus its own blocks. Round robin, one token per turn: read the
 * prefix's and its own K/V of every layer, append one token. A sequence
 * that reaches its random length finishes; its slot's blocks are reused by
 * the next sequence (an engine's block allocator: no system call). The
 * prefixes take three quarters of the working set, the private blocks the
 * rest; opt.tokens tokens are generated in all.
 */
static void wl_churn(void)
{
	size_t tl = tok_layer_bytes(), u = unit_bytes();
	size_t ws = (size_t)(opt.ratio * (double)opt.budget);
	unsigned int P = opt.prefixes, S = opt.nseq, pre_tok, priv_tok;
	unsigned int *pfx, *len, *goal, s, l, i, done = 0, finished = 0;
	size_t pre_bytes, priv_bytes, priv_base;
	double *cdf, z = 0;
	struct run r;
	struct map m;

	pre_tok = (unsigned int)(ws * 3 / 4 / ((size_t)P * tok_bytes()));
	pre_tok = pre_tok / shp.block_tokens * shp.block_tokens;
	if (pre_tok < shp.block_tokens)
		pre_tok = shp.block_tokens;
	priv_tok = (unsigned int)(ws / 4 / ((size_t)S * tok_bytes()));
	priv_tok = priv_tok / shp.block_tokens * shp.block_tokens;
	if (priv_tok < shp.block_tokens)
		priv_tok = shp.block_tokens;
	pre_bytes = (size_t)pre_tok * tl;
	priv_bytes = (size_t)priv_tok * tl;
	priv_base = pre_bytes * P * shp.layers;
	(void)u;

	cdf = calloc(P, sizeof(*cdf));
	pfx = calloc(S, sizeof(*pfx));
	len = calloc(S, sizeof(*len));
	goal = calloc(S, sizeof(*goal));
	if (!cdf || !pfx || !len || !goal)
		die("out of memory");
	for (i = 0; i < P; i++)
		z += 1.0 / pow(i + 1, opt.zipf);
	for (i = 0; i < P; i++)
		cdf[i] = (i ? cdf[i - 1] : 0) + 1.0 / pow(i + 1, opt.zipf) / z;

	run_begin(&r, "churn");
	r.ratio = opt.ratio;
	r.nseq = S;
	r.ctx = pre_tok;
	r.region = priv_base + priv_bytes * S * shp.layers;
	map_new(&m, r.region);
	/* prefill the prefixes (the shared prompts) */
	for (l = 0; l < shp.layers; l++)
		for (i = 0; i < P; i++)
			wr(m.p + ((size_t)l * P + i) * pre_bytes, pre_bytes, i);

#define NEWSEQ(s) do {							\
		double x = (double)(rnd() % 1000000) / 1e6;		\
		unsigned int k = 0;					\
		while (k + 1 < P && cdf[k] < x)				\
			k++;						\
		pfx[s] = k;						\
		len[s] = 0;						\
		goal[s] = 1 + (unsigned int)(rnd() % (priv_tok - 1));	\
	} while (0)

	for (s = 0; s < S; s++)
		NEWSEQ(s);
	run_start(&r);
	for (s = 0; done < opt.tokens; s = (s + 1) % S) {
		for (l = 0; l < shp.layers; l++) {
			char *pp = m.p + ((size_t)l * P + pfx[s]) * pre_bytes;
			char *own = m.p + priv_base +
				    ((size_t)l * S + s) * priv_bytes;
			uint64_t t = now_ns();

			rd(pp, pre_bytes);
			rd(own, (size_t)len[s] * tl);
			wr(own + (size_t)len[s] * tl, tl, done);
			lat_add(&r.lat, now_ns() - t);
			r.bytes += pre_bytes + (size_t)(len[s] + 1) * tl;
		}
		done++;
		if (++len[s] >= goal[s]) {
			finished++;
			NEWSEQ(s);
		}
	}
#undef NEWSEQ
	r.tokens = done;
	snprintf(r.note, sizeof(r.note),
		 "%u prefixes x %u tok, zipf %.1f, %u finished", P, pre_tok,
		 opt.zipf, finished);
	run_end(&r);
	map_free(&m);
	free(cdf);
	free(pfx);
	free(len);
	free(goal);
}

/*
 * Write-back: prefill of many long prompts, opt.ratio times the budget of
 * new KV written in order as fast as the CPU produces it (one sample per
 * unit), then made durable (fsync for kvtier, msync for the file; anon
 * memory has no such step). Throughput includes the final sync.
 */
static void wl_writeback(void)
{
	size_t u = unit_bytes(), len = (size_t)(opt.ratio * (double)opt.budget);
	uint64_t tw;
	struct run r;
	struct map m;
	size_t off;

	len = len / u * u;
	run_begin(&r, "writeback");
	r.ratio = opt.ratio;
	r.region = len;
	r.nseq = 1;
	r.ctx = (unsigned int)(len / tok_bytes());
	map_new(&m, len);
	run_start(&r);
	for (off = 0; off < len; off += u) {
		uint64_t t = now_ns();

		wr(m.p + off, u, (unsigned int)(off / u));
		lat_add(&r.lat, now_ns() - t);
	}
	tw = now_ns();
	map_sync(&m);
	r.bytes = len;
	snprintf(r.note, sizeof(r.note), "sync %.3f s of the total",
		 (double)(now_ns() - tw) / 1e9);
	run_end(&r);
	map_free(&m);
}

/*
 * Hot path, per 4 KiB page (one sample per page), on a region of a quarter
 * of the budget (it fits):
 *   hot-first  first touch: write one byte per page of a fresh mapping
 *              (anon: allocation fault; kvtier: zero-fill fault plus
 *              page_mkwrite; file: page cache allocation plus mkwrite);
 *   hot-remap  kvtier and file only: unmap, map the same pages again and
 *              read one word per page: minor faults on resident pages
 *              (with fault-around);
 *   hot-mapped read one word per page of the mapped, resident pages: no
 *              fault at all (what a resident page costs).
 */
static void wl_hot(void)
{
	size_t len = opt.budget / 4 / PAGE * PAGE, off;
	struct run r;
	struct map m;
	int pass;

	map_new(&m, len);
	for (pass = 0; pass < 3; pass++) {
		static const char *const names[] = { "hot-first", "hot-remap", "hot-mapped" };

		if (pass == 1) {
			if (kind == T_ANON)
				continue;
			munmap(m.p, len);
			m.p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m.fd, 0);
			if (m.p == MAP_FAILED)
				die("mmap again: %s", strerror(errno));
		}
		run_begin(&r, names[pass]);
		r.region = len;
		r.ratio = (double)len / (double)opt.budget;
		r.nseq = 1;
		run_start(&r);
		for (off = 0; off < len; off += PAGE) {
			uint64_t t = now_ns();

			if (pass == 0)
				m.p[off] = 1;
			else
				sink += *(volatile uint64_t *)(m.p + off);
			lat_add(&r.lat, now_ns() - t);
		}
		r.bytes = len;
		snprintf(r.note, sizeof(r.note), "per 4 KiB page");
		run_end(&r);
	}
	map_free(&m);
}

/* --- reuse: a persistent region across a module reload -------------------- */

/*
 * The pattern: every 8-byte word depends on the seed, its page and its
 * place in the page, so a zero page, a stale page or a page at the wrong
 * index all fail the check.
 */
static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline uint64_t page_key(size_t page)
{
	return mix64((uint64_t)opt.seed * 0x9e3779b97f4a7c15ULL + page + 1);
}

/* Fill n pages at p, which are the region's pages first .. first + n - 1. */
static void pattern_fill(char *p, size_t first, size_t n)
{
	size_t pg, i;

	for (pg = 0; pg < n; pg++) {
		uint64_t *w = (uint64_t *)(p + pg * PAGE), k = page_key(first + pg);

		for (i = 0; i < PAGE / 8; i++)
			w[i] = k ^ (i * 0xd6e8feb86659fd93ULL);
	}
}

/* Pages of [p, p + len) that differ from the pattern; *first: the first. */
static size_t pattern_check(const char *p, size_t len, size_t *first)
{
	size_t pg, i, bad = 0;

	*first = (size_t)-1;
	for (pg = 0; pg < len / PAGE; pg++) {
		const uint64_t *w = (const uint64_t *)(p + pg * PAGE);
		uint64_t k = page_key(pg), d = 0;

		for (i = 0; i < PAGE / 8; i++)
			d |= w[i] ^ (k ^ (i * 0xd6e8feb86659fd93ULL));
		if (d) {
			if (!bad)
				*first = pg;
			bad++;
		}
	}
	return bad;
}

static size_t reuse_len(void)
{
	size_t len = opt.restore ? opt.restore : opt.budget / 2;

	return (len + PAGE - 1) / PAGE * PAGE;
}

/* An fd of the tier bound to the region (created with CREATE). */
static int region_open(size_t len, unsigned int flags)
{
	struct kvtier_region_open ro;
	int fd = open(tpath, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("open %s: %s", tpath, strerror(errno));
	memset(&ro, 0, sizeof(ro));
	snprintf(ro.name, sizeof(ro.name), "%s", opt.name);
	ro.size = len;
	ro.flags = flags;
	ro.mode = 0600;
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro))
		return close(fd), -errno;
	return fd;
}

/*
 * The region's entry in KVTIER_IOC_REGION_LIST; returns 0 if it is not
 * listed (the module does not know it).
 */
static int region_entry(struct kvtier_region_entry *out)
{
	struct kvtier_region_entry *e = NULL;
	struct kvtier_region_list rl;
	unsigned int room = 64, i;
	int fd = open(tpath, O_RDWR | O_CLOEXEC), found = 0;

	if (fd < 0)
		die("open %s: %s", tpath, strerror(errno));
	for (;;) {
		free(e);
		e = calloc(room, sizeof(*e));
		if (!e)
			die("out of memory");
		memset(&rl, 0, sizeof(rl));
		rl.entries = (uintptr_t)e;
		rl.count = room;
		if (ioctl(fd, KVTIER_IOC_REGION_LIST, &rl))
			die("KVTIER_IOC_REGION_LIST: %s", strerror(errno));
		if (rl.count <= room)
			break;
		room = rl.count;
	}
	for (i = 0; i < rl.count; i++) {
		if (!strncmp(e[i].name, opt.name, sizeof(e[i].name))) {
			*out = e[i];
			found = 1;
			break;
		}
	}
	free(e);
	close(fd);
	return found;
}

/* Before a restore: the region must be known, persistent and not resident. */
static void reuse_cold(size_t len)
{
	struct kvtier_region_entry e;

	if (!region_entry(&e))
		die("region %s is not listed: it did not persist", opt.name);
	if (!(e.flags & KVTIER_OPEN_PERSISTENT))
		die("region %s is not persistent (flags %#x)", opt.name, e.flags);
	if (e.size != len)
		die("region %s: size %llu, expected %zu", opt.name,
		    (unsigned long long)e.size, len);
	if (e.resident)
		die("region %s: %llu bytes resident before the restore: not cold",
		    opt.name, (unsigned long long)e.resident);
	if (e.namespace < len)
		die("region %s: only %llu of %zu bytes on the namespace", opt.name,
		    (unsigned long long)e.namespace, len);
}

static void reuse_note(struct run *r, const char *fmt, ...)
{
	size_t n = strlen(r->note);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->note + n, sizeof(r->note) - n, fmt, ap);
	va_end(ap);
}

static void reuse_verify(const char *what, const char *p, size_t len)
{
	size_t first, bad = pattern_check(p, len, &first);

	if (bad)
		die("%s: %zu of %zu pages restored WRONG (first: page %zu)", what,
		    bad, len / PAGE, first);
}

static void reuse_run(struct run *r, const char *workload, size_t len)
{
	run_begin(r, workload);
	r->region = len;
	r->nseq = 1;
	r->ctx = (unsigned int)(len / tok_bytes());
	r->ratio = (double)len / (double)opt.budget;
	r->bytes = len;
}

static int region_unlink(void)
{
	struct kvtier_region_name rn;
	int fd = open(tpath, O_RDWR | O_CLOEXEC), ret = 0;

	if (fd < 0)
		die("open %s: %s", tpath, strerror(errno));
	memset(&rn, 0, sizeof(rn));
	snprintf(rn.name, sizeof(rn.name), "%s", opt.name);
	if (ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn))
		ret = -errno;
	close(fd);
	return ret;
}

/* unlink: remove the region (the runner's cleanup). */
static void wl_unlink(void)
{
	int ret = region_unlink();

	if (ret)
		die("unlink region %s: %s", opt.name, strerror(-ret));
}

/*
 * persist: create the persistent region (replacing one of the same name),
 * write the pattern through mmap and fsync it. Timed: the writes and the
 * fsync (one sample per 4 KiB page written, the fsync apart).
 */
static void wl_persist(void)
{
	size_t len = reuse_len(), off;
	uint64_t tw;
	struct run r;
	char *p;
	int fd;

	fd = region_open(len, KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
			 KVTIER_OPEN_PERSISTENT);
	if (fd == -EEXIST) {
		wl_unlink();
		fd = region_open(len, KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
				 KVTIER_OPEN_PERSISTENT);
	}
	if (fd < 0)
		die("KVTIER_IOC_REGION_OPEN %s CREATE|PERSISTENT %zu bytes: %s",
		    opt.name, len, strerror(-fd));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	reuse_run(&r, "reuse-persist", len);
	run_start(&r);
	for (off = 0; off < len; off += 64 * PAGE) {
		size_t n = len - off < 64 * PAGE ? len - off : 64 * PAGE;
		uint64_t t = now_ns();

		pattern_fill(p + off, off / PAGE, n / PAGE);
		lat_add(&r.lat, now_ns() - t);
	}
	tw = now_ns();
	if (fsync(fd))
		die("fsync: %s", strerror(errno));
	reuse_note(&r, "write+fsync; fsync %.3f s; seed %u",
		   (double)(now_ns() - tw) / 1e9, opt.seed);
	if (opt.note)
		reuse_note(&r, "; %s", opt.note);
	run_end(&r);
	/* what was written is what a restore must find */
	reuse_verify("persist (before the drop)", p, len);
	munmap(p, len);
	close(fd);
}

/*
 * drop: write the region back and drop it from host memory with
 * POSIX_FADV_DONTNEED, until REGION_LIST shows 0 bytes resident (the
 * runner's fallback when it cannot unload and reload the module).
 */
static void wl_drop(void)
{
	size_t len = reuse_len();
	struct kvtier_region_entry e;
	int fd, i;

	fd = region_open(len, 0);
	if (fd < 0)
		die("KVTIER_IOC_REGION_OPEN %s: %s", opt.name, strerror(-fd));
	for (i = 0; i < 50; i++) {
		if (posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_DONTNEED))
			die("fadvise DONTNEED: %s", strerror(errno));
		if (region_entry(&e) && !e.resident)
			break;
		usleep(100000);
	}
	close(fd);
	if (!region_entry(&e))
		die("region %s vanished", opt.name);
	if (e.resident)
		die("region %s: %llu bytes still resident after DONTNEED",
		    opt.name, (unsigned long long)e.resident);
	fprintf(stderr, "kvbench: drop: %s: 0 bytes resident, %llu on the namespace\n",
		opt.name, (unsigned long long)e.namespace);
}

/*
 * restore-mmap: posix_fadvise(WILLNEED) over the whole region, then touch
 * every page through the mapping in order (one 8-byte read per page, one
 * sample per page). restore-fault: the same without the fadvise (the fault
 * path and its readahead alone). Every byte is verified afterwards,
 * untimed.
 */
static void reuse_mmap(int willneed)
{
	size_t len = reuse_len(), off;
	uint64_t tf = 0;
	struct run r;
	char *p;
	int fd;

	reuse_cold(len);
	fd = region_open(len, 0);
	if (fd < 0)
		die("KVTIER_IOC_REGION_OPEN %s: %s", opt.name, strerror(-fd));
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	reuse_run(&r, willneed ? "restore-mmap" : "restore-fault", len);
	run_start(&r);
	if (willneed) {
		if (posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_WILLNEED))
			die("fadvise WILLNEED: %s", strerror(errno));
		tf = now_ns() - r.t0;
	}
	for (off = 0; off < len; off += PAGE) {
		uint64_t t = now_ns();

		sink += *(const volatile uint64_t *)(p + off);
		lat_add(&r.lat, now_ns() - t);
	}
	if (willneed)
		reuse_note(&r, "fadvise WILLNEED %.0f us then ", (double)tf / 1e3);
	reuse_note(&r, "touch per 4 KiB page; resident before 0; verified");
	if (opt.note)
		reuse_note(&r, "; %s", opt.note);
	run_end(&r);
	reuse_verify(r.workload, p, len);
	munmap(p, len);
	close(fd);
}

/*
 * restore-pread: pread the region in opt.chunk pieces into a user buffer
 * of the region's size (faulted in before the clock starts), one sample
 * per chunk; the buffer is verified afterwards, untimed.
 */
static void wl_restore_pread(void)
{
	size_t len = reuse_len();
	struct run r;
	char *buf;
	int fd;

	reuse_cold(len);
	fd = region_open(len, 0);
	if (fd < 0)
		die("KVTIER_IOC_REGION_OPEN %s: %s", opt.name, strerror(-fd));
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (buf == MAP_FAILED)
		die("mmap %zu bytes: %s", len, strerror(errno));
	memset(buf, 0, len);
	reuse_run(&r, "restore-pread", len);
	run_start(&r);
	xio(fd, buf, len, &r, 0);
	reuse_note(&r, "pread %zu KiB chunks into a %zu MiB buffer; resident before 0; verified",
		   opt.chunk >> 10, len >> 20);
	if (opt.note)
		reuse_note(&r, "; %s", opt.note);
	run_end(&r);
	reuse_verify(r.workload, buf, len);
	munmap(buf, len);
	close(fd);
}

/* --- main -------------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
"usage: kvbench --target kvtier:/dev/kvtierN|anon|file:PATH [options] WORKLOAD...\n"
"       kvbench --header\n"
"workloads: restore decode churn writeback hot pwrite pwrite-direct pread\n"
"           pread-uring pwrite-uring all\n"
"  kvtier only, one persistent region across a module reload:\n"
"           persist drop restore-mmap restore-pread restore-fault unlink\n"
"  --model NAME        llama-3.1-8b (default) or llama-70b\n"
"  --layers N --kv-heads N --head-dim N --dtype-bytes N --block-tokens N\n"
"                      override the preset's shape\n"
"  --budget-mb N       the host budget B the ratios refer to (64)\n"
"  --ratio X           working set / budget for decode, churn, writeback (2)\n"
"  --nseq N            concurrent sequences for decode and churn (4)\n"
"  --steps N           timed decode steps (tokens per sequence) (3)\n"
"  --tokens N          tokens generated by churn (256)\n"
"  --prefixes N        shared prefixes for churn (16)\n"
"  --zipf S            Zipf exponent of prefix popularity (1.0)\n"
"  --restore-mb N      size of the restored sequence (budget / 2)\n"
"  --stride N          bytes between 8-byte reads of KV (64)\n"
"  --system NAME       first CSV column (default: the target kind)\n"
"  --cdf FILE          append each run's latency quantiles to FILE\n"
"  --tiny              smallest useful run (steps 1, tokens 16)\n"
"  --seed N            also the reuse pattern's seed\n"
"  --name NAME         reuse: the persistent region's name (kvbench-reuse)\n"
"  --chunk-kb N        reuse, pwrite(-direct), pread: chunk of each call (1024)\n"
"  --qd N              pread-uring, pwrite-uring: requests in flight (32)\n"
"  --note TEXT         reuse: appended to the note column\n"
"  --dev NAME          the namespace in /sys/block (nvme0n1): its reads,\n"
"                      writes and queue time go to the dev_* columns\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "target", 1, 0, 't' }, { "model", 1, 0, 'm' },
		{ "layers", 1, 0, 'L' }, { "kv-heads", 1, 0, 'H' },
		{ "head-dim", 1, 0, 'D' }, { "dtype-bytes", 1, 0, 'B' },
		{ "block-tokens", 1, 0, 'K' }, { "budget-mb", 1, 0, 'b' },
		{ "ratio", 1, 0, 'r' }, { "nseq", 1, 0, 'n' },
		{ "steps", 1, 0, 's' }, { "tokens", 1, 0, 'T' },
		{ "prefixes", 1, 0, 'P' }, { "zipf", 1, 0, 'z' },
		{ "restore-mb", 1, 0, 'R' }, { "stride", 1, 0, 'S' },
		{ "system", 1, 0, 'y' }, { "tiny", 0, 0, 'i' },
		{ "seed", 1, 0, 'e' }, { "header", 0, 0, 'h' },
		{ "cdf", 1, 0, 'c' }, { "name", 1, 0, 'N' },
		{ "chunk-kb", 1, 0, 'C' }, { "note", 1, 0, 'o' },
		{ "dev", 1, 0, 'd' }, { "qd", 1, 0, 'Q' },
		{ "help", 0, 0, '?' }, { 0, 0, 0, 0 }
	};
	int c, i, all = 0;

	shp = presets[0];
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 't': snprintf(opt.target, sizeof(opt.target), "%s", optarg); break;
		case 'm':
			for (i = 0; i < (int)(sizeof(presets) / sizeof(presets[0])); i++)
				if (!strcmp(optarg, presets[i].name))
					break;
			if (i == (int)(sizeof(presets) / sizeof(presets[0])))
				die("unknown model %s", optarg);
			shp = presets[i];
			break;
		case 'L': shp.layers = (unsigned int)atoi(optarg); shp.name = "custom"; break;
		case 'H': shp.kv_heads = (unsigned int)atoi(optarg); shp.name = "custom"; break;
		case 'D': shp.head_dim = (unsigned int)atoi(optarg); shp.name = "custom"; break;
		case 'B': shp.dtype_bytes = (unsigned int)atoi(optarg); shp.name = "custom"; break;
		case 'K': shp.block_tokens = (unsigned int)atoi(optarg); shp.name = "custom"; break;
		case 'b': opt.budget = (size_t)atol(optarg) << 20; break;
		case 'r': opt.ratio = atof(optarg); break;
		case 'n': opt.nseq = (unsigned int)atoi(optarg); break;
		case 's': opt.steps = (unsigned int)atoi(optarg); break;
		case 'T': opt.tokens = (unsigned int)atoi(optarg); break;
		case 'P': opt.prefixes = (unsigned int)atoi(optarg); break;
		case 'z': opt.zipf = atof(optarg); break;
		case 'R': opt.restore = (size_t)atol(optarg) << 20; break;
		case 'S': opt.stride = (size_t)atol(optarg); break;
		case 'y': snprintf(opt.system, sizeof(opt.system), "%s", optarg); break;
		case 'i': opt.tiny = 1; break;
		case 'e': opt.seed = (unsigned int)atoi(optarg); break;
		case 'c': opt.cdf = optarg; break;
		case 'N': snprintf(opt.name, sizeof(opt.name), "%s", optarg); break;
		case 'C': opt.chunk = (size_t)atol(optarg) << 10; break;
		case 'o': opt.note = optarg; break;
		case 'Q': opt.qd = (unsigned int)atoi(optarg); break;
		case 'd':
			/* A name, or a path whose last part is the name. */
			snprintf(opt.dev, sizeof(opt.dev), "%s",
				 strrchr(optarg, '/') ? strrchr(optarg, '/') + 1 : optarg);
			break;
		case 'h': puts(header); return 0;
		default: usage();
		}
	}
	if (!opt.target[0] || optind >= argc)
		usage();
	if (!shp.layers || !shp.kv_heads || !shp.head_dim || !shp.dtype_bytes ||
	    !shp.block_tokens || !opt.budget || opt.ratio <= 0 || !opt.nseq ||
	    !opt.prefixes || opt.stride < 8 || opt.stride % 8 ||
	    opt.stride > tok_layer_bytes() || !opt.chunk || !opt.name[0] ||
	    !opt.qd || opt.qd > 4096)
		die("bad shape or option value");
	if (opt.tiny) {
		opt.steps = 1;
		opt.tokens = 16;
	}
	rng_state ^= (uint64_t)opt.seed * 0x9e3779b97f4a7c15ULL;
	if (opt.dev[0]) {
		struct sysstat s;

		sys_read(&s);	/* a wrong --dev ends here, before any work */
	}

	if (!strncmp(opt.target, "kvtier:", 7)) {
		const char *b;

		kind = T_KVTIER;
		tpath = opt.target + 7;
		b = strrchr(tpath, '/');
		snprintf(dbgdir, sizeof(dbgdir), "/sys/kernel/debug/kvtier/%.64s",
			 b ? b + 1 : tpath);
	} else if (!strcmp(opt.target, "anon")) {
		kind = T_ANON;
	} else if (!strncmp(opt.target, "file:", 5)) {
		kind = T_FILE;
		tpath = opt.target + 5;
	} else {
		die("bad --target %s", opt.target);
	}
	if (!opt.system[0])
		snprintf(opt.system, sizeof(opt.system), "%s",
			 kind == T_KVTIER ? "kvtier" : kind == T_ANON ? "swap" : "pagecache");

	for (i = optind; i < argc; i++)
		if (!strcmp(argv[i], "all"))
			all = 1;
	for (i = optind; i < argc; i++) {
		const char *w = argv[i];

		if (!strcmp(w, "all"))
			continue;
		if (!strcmp(w, "restore"))
			wl_restore();
		else if (!strcmp(w, "decode"))
			wl_decode();
		else if (!strcmp(w, "churn"))
			wl_churn();
		else if (!strcmp(w, "writeback"))
			wl_writeback();
		else if (!strcmp(w, "hot"))
			wl_hot();
		else if (!strcmp(w, "pwrite"))
			wl_pwrite(PW_PLAIN);
		else if (!strcmp(w, "pwrite-direct"))
			wl_pwrite(PW_DIRECT);
		else if (!strcmp(w, "pwrite-uring"))
			wl_pwrite(PW_URING);
		else if (!strcmp(w, "pread"))
			wl_pread(0);
		else if (!strcmp(w, "pread-uring"))
			wl_pread(1);
		else if (kind == T_KVTIER && !strcmp(w, "persist"))
			wl_persist();
		else if (kind == T_KVTIER && !strcmp(w, "drop"))
			wl_drop();
		else if (kind == T_KVTIER && !strcmp(w, "unlink"))
			wl_unlink();
		else if (kind == T_KVTIER && !strcmp(w, "restore-mmap"))
			reuse_mmap(1);
		else if (kind == T_KVTIER && !strcmp(w, "restore-fault"))
			reuse_mmap(0);
		else if (kind == T_KVTIER && !strcmp(w, "restore-pread"))
			wl_restore_pread();
		else
			die("unknown workload %s", w);
	}
	if (all) {
		wl_hot();
		wl_restore();
		wl_decode();
		wl_churn();
		wl_writeback();
	}
	return 0;
}
