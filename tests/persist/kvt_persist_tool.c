// SPDX-License-Identifier: GPL-2.0
/*
 * kvt_persist_tool - the guest (and host) side of kvtier's multi-boot
 * persistence tests (tests/persist/run.sh). Not a kselftest: each boot of
 * those tests runs a few of its subcommands, and the host runs the image
 * ones between boots.
 *
 * In the guest (as root; KVTIER_KO names kvtier.ko, as for the kselftests):
 *   load [PARAMS]                  insmod KVTIER_KO with PARAMS
 *   unload                         rmmod kvtier
 *   attach DEV [ERRNO-NAME]        write DEV to kvtier0/backing_dev; expect
 *                                  success, or the named errno (EUCLEAN,
 *                                  EMEDIUMTYPE, ...)
 *   detach                         write "none" to backing_dev
 *   write NAME SIZE SEED [--mmap]  create persistent region NAME of SIZE
 *                                  bytes, fill it with the page pattern of
 *                                  SEED (pwrite, or stores into a mapping),
 *                                  fsync (msync), close
 *   verify NAME SIZE SEED [--mmap|--pread|--both] [--bad PAGE]
 *                                  open NAME by name (flags 0, size 0) and
 *                                  check every byte; page PAGE must fail
 *                                  (EIO from pread, SIGBUS from a mapping)
 *                                  and be counted in checksum_errors
 *   crash DIR BOOT SEED [--final | --freeze POINT]
 *                                  crash-consistency boot (see below)
 *   scale-attach DEV MAX_S MAX_MIB [REGIONS]
 *                                  attach DEV; it must take at most MAX_S
 *                                  seconds and MAX_MIB of kernel memory
 *                                  (/proc/meminfo before and after), and
 *                                  its checkpoint buffer 1 MiB and the
 *                                  records of REGIONS (0) regions
 *   scale-write N BIG SEED         create and fill (pwrite, no fsync) N
 *                                  persistent regions scale-0000...: the
 *                                  first BIG bytes, the others 4 KiB to
 *                                  4 MiB (scale_size())
 *   scale-verify N BIG SEED        exactly those N regions are listed, and
 *                                  every byte reads back
 *   scale-commit MIB               on the scale namespace: write a persistent
 *                                  region of MIB MiB in 1 MiB pwrites, fsync
 *                                  after each, print the commits' time per
 *                                  MiB (debugfs latency), read it back,
 *                                  unlink it
 *   latency-row NAME DESC          print the count and average of debugfs
 *                                  latency row NAME
 *
 * On the host, on a raw image file:
 *   find IMAGE SEED PAGE           print the byte offset of every block
 *                                  that holds page PAGE of the SEED pattern
 *   flip IMAGE OFFSET LEN          invert LEN bytes at byte OFFSET
 *   ckpt-flip IMAGE OFFSET         invert 8 bytes at OFFSET of the first
 *                                  block of both checkpoint areas (the
 *                                  layout read from a valid superblock);
 *                                  fails unless both copies' checkpoints
 *                                  extend past those bytes
 *
 * Guest subcommands print one TAP-style line per check ("ok - ..." or
 * "not ok - ...", diagnostics as "# ..."), also appended to the file
 * $KVT_CHECKS when that is set, and exit 0 when all passed, 1 otherwise,
 * 2 on bad usage.
 *
 * The page pattern: every 4096-byte page starts with a 32-byte header
 * (magic "KVTPRST1", page index, seed, a checksum of the three) followed
 * by words that depend on the byte offset and the seed (kvt_pattern()), so
 * a page read back from the wrong slot, a stale or a zero page is caught,
 * and the host can find a page in a raw image by its first 24 bytes.
 *
 * crash: boot BOOT of a series in one image whose bookkeeping lives in DIR
 * (on the writable 9p share, whose writes reach the host before they
 * return). Loads the module, attaches the first namespace (formatting it on
 * boot 0), then verifies what the previous boot left against the state
 * that boot started from (DIR/state-<BOOT-1>) and the journals its workers
 * wrote (DIR/journal-<BOOT-1>-<W>), writes DIR/state-<BOOT> from what it
 * found, creates DIR/started-<BOOT> and runs NWORKERS worker processes on
 * NREGIONS persistent regions until the host kills the VM (or exits 3
 * after CRASH_CAP_S seconds). A worker journals each step before it
 * starts ("start R G", "create R G SIZE", "unlink R") and after it
 * completed ("synced R G" after fsync or msync returned, "created R",
 * "unlinked R"); "synced" is also printed on the console. Page contents
 * encode (region, page, generation) with a self-check. With --final it
 * only verifies, then detaches, attaches again and verifies that nothing
 * changed. With --freeze it arms crash point POINT (debugfs freeze_at:
 * ckpt-area, ckpt-super) before the workload starts, and creates
 * DIR/frozen-<BOOT> once a commit has stopped there: the host cuts the
 * power then, rather than after a random delay.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kvtier_util.h"

#define PG		((uint64_t)4096)
#define MIB		((uint64_t)1 << 20)
#define SCALE_COMMIT_SEED	0x5eedc0de
#define TIER_DEV	"/dev/kvtier0"

static int failures;
static FILE *checks_log;	/* $KVT_CHECKS: a copy of checks and diagnostics */

static void out(const char *prefix, const char *fmt, va_list ap)
{
	va_list aq;

	va_copy(aq, ap);
	printf("%s", prefix);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	if (checks_log) {
		fprintf(checks_log, "%s", prefix);
		vfprintf(checks_log, fmt, aq);
		fprintf(checks_log, "\n");
		fflush(checks_log);
	}
	va_end(aq);
}

static void check(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out(ok ? "ok - " : "not ok - ", fmt, ap);
	va_end(ap);
	if (!ok)
		failures++;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	out("# ", fmt, ap);
	va_end(ap);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	switch (*end) {
	case 'G':
		v <<= 10;
		/* fall through */
	case 'M':
		v <<= 10;
		/* fall through */
	case 'K':
		v <<= 10;
		end++;
		break;
	}
	if (!*end)
		return v;
bad:
	fprintf(stderr, "kvt_persist_tool: bad number '%s'\n", s);
	exit(2);
}

static const char *errname(int e)
{
	static char buf[32];

	switch (e) {
	case 0: return "success";
	case EUCLEAN: return "EUCLEAN";
	case EMEDIUMTYPE: return "EMEDIUMTYPE";
	case EIO: return "EIO";
	case EBADMSG: return "EBADMSG";
	case EINVAL: return "EINVAL";
	case EBUSY: return "EBUSY";
	case ENOENT: return "ENOENT";
	case EEXIST: return "EEXIST";
	case ENOSPC: return "ENOSPC";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENODEV: return "ENODEV";
	case ENOMEM: return "ENOMEM";
	}
	snprintf(buf, sizeof(buf), "errno %d", e);
	return buf;
}

static int errnum(const char *name)
{
	static const int all[] = { EUCLEAN, EMEDIUMTYPE, EIO, EBADMSG, EINVAL,
				   EBUSY, ENOENT, EEXIST, ENOSPC, EOPNOTSUPP,
				   ENODEV, ENOMEM };
	size_t i;

	if (!strcmp(name, "ok") || !strcmp(name, "0"))
		return 0;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!strcmp(name, errname(all[i])))
			return all[i];
	fprintf(stderr, "kvt_persist_tool: unknown errno name %s\n", name);
	exit(2);
}

/* ---- the tier ---------------------------------------------------------- */

static int tier_attach(const char *dev)
{
	return kvt_tier_write(0, "backing_dev", dev);
}

/* A fresh file of tier 0 bound to region @name; fd or -errno. */
static int region_open(const char *name, uint64_t size, unsigned int flags)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = 0600 };
	int fd, e;

	fd = open(TIER_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(ro.name, sizeof(ro.name), "%s", name);
	if (ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro)) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int region_unlink(const char *name)
{
	struct kvtier_region_name rn = { { 0 } };
	int fd, ret = 0;

	fd = open(TIER_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(rn.name, sizeof(rn.name), "%s", name);
	if (ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn))
		ret = -errno;
	close(fd);
	return ret;
}

/* The tier's named regions, malloc()ed into *@out; count or -errno. */
static int region_list(struct kvtier_region_entry **out)
{
	struct kvtier_region_list rl = { 0 };
	struct kvtier_region_entry *e = NULL;
	unsigned int room = 16;
	int fd, ret;

	fd = open(TIER_DEV, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		free(e);
		e = calloc(room, sizeof(*e));
		if (!e) {
			ret = -ENOMEM;
			break;
		}
		rl.entries = (uintptr_t)e;
		rl.count = room;
		if (ioctl(fd, KVTIER_IOC_REGION_LIST, &rl)) {
			ret = -errno;
			break;
		}
		if (rl.count <= room) {
			ret = rl.count;
			break;
		}
		room = rl.count;
	}
	close(fd);
	if (ret < 0) {
		free(e);
		e = NULL;
	}
	*out = e;
	return ret;
}

/* ---- the reboot/corruption page pattern --------------------------------- */

static const char pat_magic[8] = { 'K', 'V', 'T', 'P', 'R', 'S', 'T', '1' };

static KVT_FAST void pat_fill(void *page, uint64_t index, uint64_t seed)
{
	uint64_t *w = page;

	memcpy(w, pat_magic, 8);
	w[1] = index;
	w[2] = seed;
	w[3] = mix(w[0] ^ mix(index ^ mix(seed)));
	kvt_fill(w + 4, PG - 32, index * PG + 32, seed);
}

/* 0 if @page is page @index of pattern @seed. */
static KVT_FAST int pat_check(const void *page, uint64_t index, uint64_t seed)
{
	static uint64_t want[PG / 8];

	pat_fill(want, index, seed);
	return memcmp(page, want, PG) ? -1 : 0;
}

static void describe_page(const void *page)
{
	const uint64_t *w = page;
	size_t i;

	for (i = 0; i < PG / 8 && !w[i]; i++)
		;
	if (i == PG / 8) {
		diag("  it reads as zeros");
		return;
	}
	if (!memcmp(w, pat_magic, 8))
		diag("  its header names page %" PRIu64 " seed %#" PRIx64, w[1], w[2]);
	else
		diag("  no pattern header: %016" PRIx64 " %016" PRIx64, w[0], w[1]);
}

static int cmd_write(int argc, char **argv)
{
	const char *name;
	uint64_t size, seed, p, np;
	bool use_mmap = false;
	double t0, t1;
	char *buf;
	int fd, i;

	if (argc < 3)
		return 2;
	name = argv[0];
	size = num(argv[1]);
	seed = num(argv[2]);
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--mmap"))
			use_mmap = true;
		else
			return 2;
	}
	np = size / PG;
	fd = region_open(name, size,
			 KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT);
	check(fd >= 0, "create persistent region %s of %" PRIu64 " MiB (%s)",
	      name, (uint64_t)(size / MiB), errname(fd < 0 ? -fd : 0));
	if (fd < 0)
		return 1;
	t0 = now();
	if (use_mmap) {
		buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		check(buf != MAP_FAILED, "map %s (%s)", name,
		      errname(buf == MAP_FAILED ? errno : 0));
		if (buf == MAP_FAILED)
			return 1;
		for (p = 0; p < np; p++)
			pat_fill(buf + p * PG, p, seed);
		i = msync(buf, size, MS_SYNC);
		check(!i, "msync(MS_SYNC) of %s (%s)", name, errname(i ? errno : 0));
		munmap(buf, size);
	} else {
		const uint64_t chunk = 256;	/* pages per pwrite */
		bool ok = true;

		buf = aligned_alloc(PG, chunk * PG);
		if (!buf)
			return 1;
		for (p = 0; p < np && ok; p += chunk) {
			uint64_t n = np - p < chunk ? np - p : chunk, k;
			ssize_t w;

			for (k = 0; k < n; k++)
				pat_fill(buf + k * PG, p + k, seed);
			w = pwrite(fd, buf, n * PG, p * PG);
			if (w != (ssize_t)(n * PG)) {
				ok = false;
				diag("pwrite at page %" PRIu64 ": %zd (%s)", p, w,
				     errname(w < 0 ? errno : 0));
			}
		}
		free(buf);
		check(ok, "pwrite %" PRIu64 " pages of %s", np, name);
	}
	t1 = now();
	i = fsync(fd);
	check(!i, "fsync %s (%s)", name, errname(i ? errno : 0));
	diag("wrote %" PRIu64 " MiB in %.1f s, fsync %.1f s", (uint64_t)(size / MiB), t1 - t0,
	     now() - t1);
	close(fd);
	return failures ? 1 : 0;
}

static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void on_sigbus(int sig)
{
	(void)sig;
	if (bus_armed)
		siglongjmp(bus_jmp, 1);
	_exit(99);
}

/* Copy a page out of a mapping; -1 if reading it raised SIGBUS. */
static int copy_mapped(void *dst, const void *src)
{
	if (sigsetjmp(bus_jmp, 1)) {
		bus_armed = 0;
		return -1;
	}
	bus_armed = 1;
	memcpy(dst, src, PG);
	bus_armed = 0;
	return 0;
}

static int cmd_verify(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_sigbus };
	bool via_pread = true, via_mmap = false;
	long long csum0, csum1, bad = -1;
	uint64_t size, seed, p, np;
	unsigned long wrong, eio, sigbus;
	struct kvtier_region_entry *e;
	char *map = NULL, errbuf[64];
	const char *name;
	double t0;
	void *pg;
	int fd, i, n;
	bool listed = false;

	if (argc < 3)
		return 2;
	name = argv[0];
	size = num(argv[1]);
	seed = num(argv[2]);
	for (i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--mmap")) {
			via_mmap = true;
			via_pread = false;
		} else if (!strcmp(argv[i], "--pread")) {
			via_pread = true;
			via_mmap = false;
		} else if (!strcmp(argv[i], "--both")) {
			via_pread = via_mmap = true;
		} else if (!strcmp(argv[i], "--bad") && i + 1 < argc) {
			bad = (long long)num(argv[++i]);
		} else {
			return 2;
		}
	}
	np = size / PG;
	sigaction(SIGBUS, &sa, NULL);

	n = region_list(&e);
	for (i = 0; i < n; i++) {
		if (strcmp(e[i].name, name))
			continue;
		listed = true;
		check(e[i].size == size && (e[i].flags & KVTIER_OPEN_PERSISTENT),
		      "%s is listed, persistent, %" PRIu64 " MiB (size %llu, flags %#x)",
		      name, (uint64_t)(size / MiB), (unsigned long long)e[i].size, e[i].flags);
	}
	if (!listed)
		check(false, "%s is listed (list: %s, %d regions)", name,
		      errname(n < 0 ? -n : 0), n);
	free(e);

	fd = region_open(name, 0, 0);
	check(fd >= 0, "open %s by name (%s)", name, errname(fd < 0 ? -fd : 0));
	if (fd < 0)
		return 1;
	pg = aligned_alloc(PG, PG);
	csum0 = kvt_stat(0, "checksum_errors");
	if (via_mmap) {
		map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
		check(map != MAP_FAILED, "map %s (%s)", name,
		      errname(map == MAP_FAILED ? errno : 0));
		if (map == MAP_FAILED)
			return 1;
		t0 = now();
		wrong = sigbus = 0;
		for (p = 0; p < np; p++) {
			if (copy_mapped(pg, map + p * PG)) {
				if ((long long)p != bad && sigbus++ < 5)
					diag("page %" PRIu64 ": SIGBUS", p);
				continue;
			}
			if ((long long)p == bad) {
				diag("page %" PRIu64 " (corrupted) read without SIGBUS", p);
				describe_page(pg);
				wrong++;
			} else if (pat_check(pg, p, seed)) {
				if (wrong++ < 5) {
					diag("page %" PRIu64 ": wrong bytes", p);
					describe_page(pg);
				}
			}
		}
		if (bad >= 0) {
			/* Twice: a failed read is retried, and fails again. */
			for (i = 0; i < 2; i++)
				check(copy_mapped(pg, map + bad * PG) == -1,
				      "mapped read of corrupted page %lld raises SIGBUS (%s try)",
				      bad, i ? "second" : "first");
		}
		check(!wrong && !sigbus,
		      "every%s page of %s reads back through a mapping (%lu wrong, %lu SIGBUS) [%.1f s]",
		      bad >= 0 ? " other" : "", name, wrong, sigbus, now() - t0);
		munmap(map, size);
	}
	if (via_pread) {
		t0 = now();
		wrong = eio = 0;
		for (p = 0; p < np; p++) {
			ssize_t r = pread(fd, pg, PG, p * PG);

			if ((long long)p == bad) {
				check(r < 0 && errno == EIO,
				      "pread of corrupted page %lld fails with EIO (%zd, %s)",
				      bad, r, errname(r < 0 ? errno : 0));
				continue;
			}
			if (r != (ssize_t)PG) {
				if (eio++ < 5)
					diag("page %" PRIu64 ": pread %zd (%s)", p, r,
					     errname(r < 0 ? errno : 0));
				continue;
			}
			if (pat_check(pg, p, seed) && wrong++ < 5) {
				diag("page %" PRIu64 ": wrong bytes", p);
				describe_page(pg);
			}
		}
		check(!wrong && !eio,
		      "every%s page of %s reads back with pread (%lu wrong, %lu failed) [%.1f s]",
		      bad >= 0 ? " other" : "", name, wrong, eio, now() - t0);
	}
	csum1 = kvt_stat(0, "checksum_errors");
	if (bad >= 0) {
		check(csum1 > csum0 && csum0 >= 0,
		      "checksum_errors counted the corrupted page (%lld -> %lld)",
		      csum0, csum1);
		n = kvt_tier_read(0, "error", errbuf, sizeof(errbuf));
		check(!n && atoll(errbuf) == -EBADMSG,
		      "kvtier0/error is %d (EBADMSG): '%s'", -EBADMSG,
		      n ? errname(-n) : errbuf);
	} else {
		check(csum1 == csum0, "no checksum errors (%lld -> %lld)", csum0, csum1);
	}
	free(pg);
	close(fd);
	return failures ? 1 : 0;
}

/* ---- the crash-consistency workload ------------------------------------ */

#define NREGIONS	4
#define NWORKERS	2	/* worker w owns regions w, w + NWORKERS, ... */
#define CRASH_CAP_S	90	/* a workload the host did not kill ends here */
#define CRASH_BUDGET_MB	8	/* host pool: evictions write back mid-gen */

static const char crash_magic[8] = { 'K', 'V', 'T', 'C', 'R', 'S', 'H', '1' };

/*
 * What a page of a region reads as (in the state files too): zeros, the
 * generation that wrote it, a torn page (V_TORN | a hash of its bytes),
 * bytes that are no valid page, or a read error.
 */
#define V_ZERO		0ULL
#define V_TORN		(1ULL << 62)
#define V_BAD		(~0ULL - 1)
#define V_EIO		(~0ULL)

static bool is_gen(uint64_t v)
{
	return v && v < V_TORN;
}

static bool is_torn(uint64_t v)
{
	return v >= V_TORN && v < V_BAD;
}

static uint64_t torn_val(const void *buf)
{
	const uint64_t *w = buf;
	uint64_t h = 0;
	unsigned int i;

	for (i = 0; i < PG / 8; i++)
		h = mix(h ^ w[i]);
	return V_TORN | (h & (V_TORN - 1));
}

static void crash_name(char *buf, size_t len, int r)
{
	snprintf(buf, len, "crash%d", r);
}

static KVT_FAST uint64_t body_word(int r, uint64_t page, uint64_t gen, unsigned int i)
{
	return mix(gen * 0x100000001b3ULL ^ ((uint64_t)r << 56) ^ (page << 20) ^ i);
}

/* Word @i of page @page of region @r as generation @gen writes it. */
static uint64_t crash_word(int r, uint64_t page, uint64_t gen, unsigned int i)
{
	uint64_t w1 = (uint64_t)r << 32 | (uint32_t)page, w0;

	switch (i) {
	case 0:
		memcpy(&w0, crash_magic, 8);
		return w0;
	case 1:
		return w1;
	case 2:
		return gen;
	case 3:
		return mix(w1 ^ mix(gen));
	}
	return body_word(r, page, gen, i);
}

static KVT_FAST void crash_fill(void *dst, int r, uint64_t page, uint64_t gen)
{
	uint64_t *w = dst;
	unsigned int i;

	memcpy(w, crash_magic, 8);
	w[1] = (uint64_t)r << 32 | (uint32_t)page;
	w[2] = gen;
	w[3] = mix(w[1] ^ mix(gen));
	for (i = 4; i < PG / 8; i++)
		w[i] = body_word(r, page, gen, i);
}

/*
 * What @buf holds for page @page of region @r: V_ZERO, V_BAD, or the
 * generation that wrote it. A self-consistent page of another region or
 * page index is V_BAD too (*@misplaced is set).
 */
static KVT_FAST uint64_t crash_decode(const void *buf, int r, uint64_t page,
				      bool *misplaced)
{
	const uint64_t *w = buf;
	uint64_t gen;
	unsigned int i;
	int pr;
	uint32_t pp;

	*misplaced = false;
	for (i = 0; i < PG / 8 && !w[i]; i++)
		;
	if (i == PG / 8)
		return V_ZERO;
	if (memcmp(w, crash_magic, 8))
		return V_BAD;
	gen = w[2];
	if (w[3] != mix(w[1] ^ mix(gen)) || !is_gen(gen))
		return V_BAD;
	pr = (int)(w[1] >> 32);
	pp = (uint32_t)w[1];
	for (i = 4; i < PG / 8; i++)
		if (w[i] != body_word(pr, pp, gen, i))
			return V_BAD;
	if (pr != r || pp != (uint32_t)page) {
		*misplaced = true;
		return V_BAD;
	}
	return gen;
}

/* Does generation @gen of region @r (of @np pages) write page @p? */
static bool gen_writes(int r, uint64_t gen, uint64_t p, uint64_t np)
{
	uint64_t h = mix((uint64_t)r * 1000003 ^ gen), a, len, stride;

	switch (h % 10) {
	case 0: case 1: case 2: case 3:		/* the whole region */
		return true;
	case 4: case 5: case 6:			/* every stride-th page */
		stride = 2 + (h >> 8) % 5;
		return p % stride == (h >> 16) % stride;
	default:				/* one run of pages */
		a = (h >> 8) % np;
		len = 1 + (h >> 32) % (np / 2 + 1);
		return p >= a && p < a + len;
	}
}

/* Generation @gen of region @r writes through a mapping (else pwrite). */
static bool gen_mapped(int r, uint64_t gen)
{
	return (mix((uint64_t)r * 1000003 ^ gen) >> 40) & 1;
}

/* One possible durable state of a region. */
struct world {
	bool exists;
	uint64_t size;
	uint64_t *base;		/* value each page had at boot start, or NULL */
	uint64_t *min;		/* lowest acceptable value (synced) per page */
	uint64_t *gens;		/* generations started in this incarnation */
	size_t ngens, room;
	const char *what;	/* for messages */
};

struct region_model {
	struct world *w[64];	/* possible now, oldest first; last is current */
	int n;
};

static struct world *world_new(bool exists, uint64_t size, const char *what)
{
	struct world *w = calloc(1, sizeof(*w));

	if (!w)
		abort();
	w->exists = exists;
	w->size = exists ? size : 0;
	w->what = what;
	if (exists) {
		w->min = calloc(size / PG, sizeof(uint64_t));
		if (!w->min)
			abort();
	}
	return w;
}

static void world_free(struct world *w)
{
	if (!w)
		return;
	free(w->base);
	free(w->min);
	free(w->gens);
	free(w);
}

static void model_push(struct region_model *m, struct world *w)
{
	if (m->n == (int)(sizeof(m->w) / sizeof(m->w[0]))) {
		world_free(m->w[0]);
		memmove(m->w, m->w + 1, (m->n - 1) * sizeof(m->w[0]));
		m->n--;
	}
	m->w[m->n++] = w;
}

/* A commit: only the current state can be durable from now on. */
static void model_commit(struct region_model *m)
{
	int i;

	for (i = 0; i < m->n - 1; i++)
		world_free(m->w[i]);
	if (m->n > 1)
		m->w[0] = m->w[m->n - 1];
	m->n = m->n ? 1 : 0;
}

static struct world *model_cur(struct region_model *m)
{
	return m->w[m->n - 1];
}

struct crash_state {
	bool exists[NREGIONS];
	bool recreate[NREGIONS];	/* the workload starts it over */
	uint64_t size[NREGIONS];
	uint64_t nextgen[NREGIONS];
	uint64_t *val[NREGIONS];	/* per page, at boot start */
};

static int write_file(const char *path, const void *buf, size_t len)
{
	char tmp[4200];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len || fsync(fd)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return rename(tmp, path) ? -errno : 0;
}

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	buf = malloc(st.st_size + 1);
	if (!buf || read(fd, buf, st.st_size) != st.st_size) {
		close(fd);
		free(buf);
		return NULL;
	}
	close(fd);
	buf[st.st_size] = '\0';
	*len = st.st_size;
	return buf;
}

static int state_save(const char *dir, int boot, const struct crash_state *s)
{
	char path[4096], *txt;
	size_t len = 0, room = 4096;
	int r, ret;

	txt = malloc(room);
	if (!txt)
		return -ENOMEM;
	len += snprintf(txt + len, room - len, "kvtcrash-state 1 boot %d\n", boot);
	for (r = 0; r < NREGIONS; r++) {
		len += snprintf(txt + len, room - len,
				"region %d exists %d size %" PRIu64 " nextgen %" PRIu64 " recreate %d\n",
				r, s->exists[r], s->size[r], s->nextgen[r], s->recreate[r]);
		if (!s->exists[r])
			continue;
		snprintf(path, sizeof(path), "%s/state-%d-region%d.bin", dir, boot, r);
		ret = write_file(path, s->val[r], s->size[r] / PG * sizeof(uint64_t));
		if (ret) {
			free(txt);
			return ret;
		}
	}
	snprintf(path, sizeof(path), "%s/state-%d", dir, boot);
	ret = write_file(path, txt, len);
	free(txt);
	return ret;
}

static int state_load(const char *dir, int boot, struct crash_state *s)
{
	char path[4096], *txt, *line;
	size_t len, vlen;
	int r, b, ex, dm;
	uint64_t size, ng;

	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/state-%d", dir, boot);
	txt = read_file(path, &len);
	if (!txt)
		return -ENOENT;
	if (sscanf(txt, "kvtcrash-state 1 boot %d", &b) != 1 || b != boot) {
		free(txt);
		return -EINVAL;
	}
	for (line = strtok(txt, "\n"); line; line = strtok(NULL, "\n")) {
		if (sscanf(line, "region %d exists %d size %" SCNu64 " nextgen %" SCNu64 " recreate %d",
			   &r, &ex, &size, &ng, &dm) != 5 || r < 0 || r >= NREGIONS)
			continue;
		s->exists[r] = ex;
		s->size[r] = size;
		s->nextgen[r] = ng;
		s->recreate[r] = dm;
		if (!ex)
			continue;
		snprintf(path, sizeof(path), "%s/state-%d-region%d.bin", dir, boot, r);
		s->val[r] = read_file(path, &vlen);
		if (!s->val[r] || vlen != size / PG * sizeof(uint64_t)) {
			free(txt);
			return -EINVAL;
		}
	}
	free(txt);
	return 0;
}

struct replay_stats {
	unsigned int events, synced, created, unlinked, started;
};

/*
 * Replay the journal of one worker of the previous boot into the models
 * of its regions. A line without its newline (cut by the kill) is
 * ignored: the step it announces never began.
 */
static void replay_journal(const char *path, struct region_model *model,
			   struct crash_state *st, struct replay_stats *rs)
{
	char *txt, *line, *next, op[16];
	uint64_t g, size, np, p;
	struct world *w;
	size_t len;
	int r, i, nf;

	txt = read_file(path, &len);
	if (!txt)
		return;
	for (line = txt; line && *line; line = next) {
		next = strchr(line, '\n');
		if (!next)
			break;		/* torn last line */
		*next++ = '\0';
		g = size = 0;
		nf = sscanf(line, "%15s %d %" SCNu64 " %" SCNu64, op, &r, &g, &size);
		if (nf < 2 || r < 0 || r >= NREGIONS)
			continue;
		rs->events++;
		if (g >= st->nextgen[r])
			st->nextgen[r] = g + 1;
		if (!strcmp(op, "create") && nf == 4) {
			model_push(&model[r], world_new(true, size, "created in the previous boot"));
		} else if (!strcmp(op, "created")) {
			rs->created++;
			for (i = r % NWORKERS; i < NREGIONS; i += NWORKERS)
				model_commit(&model[i]);
		} else if (!strcmp(op, "start") && nf >= 3) {
			rs->started++;
			w = model_cur(&model[r]);
			if (!w->exists)
				continue;
			if (w->ngens == w->room) {
				w->room = w->room ? 2 * w->room : 16;
				w->gens = realloc(w->gens, w->room * sizeof(uint64_t));
				if (!w->gens)
					abort();
			}
			w->gens[w->ngens++] = g;
		} else if (!strcmp(op, "synced") && nf >= 3) {
			rs->synced++;
			w = model_cur(&model[r]);
			if (w->exists) {
				np = w->size / PG;
				for (p = 0; p < np; p++)
					if (gen_writes(r, g, p, np))
						w->min[p] = g;
			}
			for (i = r % NWORKERS; i < NREGIONS; i += NWORKERS)
				model_commit(&model[i]);
		} else if (!strcmp(op, "unlink")) {
			model_push(&model[r], world_new(false, 0, "unlinked in the previous boot"));
		} else if (!strcmp(op, "unlinked")) {
			rs->unlinked++;
		}
	}
	free(txt);
}

/*
 * A page that a write through a mapping was filling when write-back took
 * its snapshot (legitimate for a generation not yet synced): every word
 * comes from an acceptable value of the page, and some from a mapped
 * generation of this world.
 */
static bool torn_ok(const struct world *w, int r, uint64_t p, const uint64_t *wd)
{
	uint64_t np = w->size / PG, g;
	bool matched[PG / 8] = { false }, mapped = false, used;
	unsigned int i, left = PG / 8;
	size_t k;

	if (!w->min[p])
		for (i = 0; i < PG / 8; i++)
			if (!wd[i]) {
				matched[i] = true;
				left--;
			}
	for (k = 0; k <= w->ngens && left; k++) {
		if (k < w->ngens) {
			g = w->gens[k];
			if (!gen_writes(r, g, p, np))
				continue;
		} else {
			if (!w->base || !is_gen(w->base[p]))
				continue;
			g = w->base[p];
		}
		if (g < w->min[p])
			continue;
		used = false;
		for (i = 0; i < PG / 8; i++)
			if (!matched[i] && wd[i] == crash_word(r, p, g, i)) {
				matched[i] = true;
				left--;
				used = true;
			}
		if (used && k < w->ngens && gen_mapped(r, g))
			mapped = true;
	}
	return !left && mapped;
}

/*
 * Is value @v (bytes @pg) an acceptable content of page @p in world @w of
 * region @r? EIO is judged by the caller.
 */
static bool page_ok(const struct world *w, int r, uint64_t p, uint64_t v,
		    const void *pg)
{
	uint64_t np = w->size / PG;
	size_t i;

	if (v == V_EIO)
		return true;
	if (v == V_BAD) {
		/* Torn at boot start and untouched since, or torn now. */
		if (w->base && is_torn(w->base[p]) && torn_val(pg) == w->base[p])
			return true;
		return torn_ok(w, r, p, pg);
	}
	if (w->base && v == w->base[p] && v >= w->min[p])
		return true;
	if (v == V_ZERO)
		return w->min[p] == 0;
	if (v < w->min[p])
		return false;
	for (i = 0; i < w->ngens; i++)
		if (w->gens[i] == v && gen_writes(r, v, p, np))
			return true;
	return false;
}

static bool page_fails(const struct world *w, int r, uint64_t p, uint64_t v,
		       const void *pg)
{
	return !page_ok(w, r, p, v, pg) || (v == V_EIO && w->min[p]);
}

static const char *vstr(uint64_t v, char *buf, size_t len)
{
	if (v == V_ZERO)
		snprintf(buf, len, "zeros");
	else if (v == V_EIO)
		snprintf(buf, len, "EIO");
	else if (v == V_BAD)
		snprintf(buf, len, "wrong bytes");
	else if (is_torn(v))
		snprintf(buf, len, "torn page");
	else
		snprintf(buf, len, "gen %" PRIu64, v);
	return buf;
}

/*
 * Read every page of region @r into @data and its value into @val (V_* or
 * the generation); counts misplaced pages. Returns 0 or -errno of the open.
 */
static int read_region(int r, uint64_t size, uint64_t *val, char *data,
		       unsigned int *misplaced)
{
	char name[KVTIER_NAME_MAX];
	uint64_t p, np = size / PG;
	bool mis;
	int fd;

	crash_name(name, sizeof(name), r);
	fd = region_open(name, 0, 0);
	if (fd < 0)
		return fd;
	*misplaced = 0;
	for (p = 0; p < np; p++) {
		ssize_t n = pread(fd, data + p * PG, PG, p * PG);

		if (n != (ssize_t)PG) {
			val[p] = V_EIO;
			continue;
		}
		val[p] = crash_decode(data + p * PG, r, p, &mis);
		if (mis)
			(*misplaced)++;
	}
	close(fd);
	return 0;
}

/*
 * Check what the namespace holds against the models; fill @now with what
 * was found. Returns true if every region matches one of its worlds.
 */
static bool crash_verify(struct region_model *model, struct crash_state *now,
			 unsigned long *pages_checked)
{
	struct kvtier_region_entry *e;
	bool all_ok = true;
	int n, i, r, k;
	char vb[2][32];

	n = region_list(&e);
	if (n < 0) {
		diag("region list: %s", errname(-n));
		return false;
	}
	for (i = 0; i < n; i++) {
		if (strncmp(e[i].name, "crash", 5) || atoi(e[i].name + 5) < 0 ||
		    atoi(e[i].name + 5) >= NREGIONS) {
			diag("unexpected region '%s' on the namespace", e[i].name);
			all_ok = false;
		} else if (!(e[i].flags & KVTIER_OPEN_PERSISTENT)) {
			diag("region '%s' is not persistent (flags %#x)", e[i].name,
			     e[i].flags);
			all_ok = false;
		}
	}
	for (r = 0; r < NREGIONS; r++) {
		char name[KVTIER_NAME_MAX], *data = NULL;
		struct region_model *m = &model[r];
		unsigned int misplaced = 0;
		uint64_t size = 0, np = 0, p;
		bool found = false, matched = false;
		struct world *w = NULL;
		int best = -1;
		unsigned long best_bad = ~0UL;

		crash_name(name, sizeof(name), r);
		for (i = 0; i < n; i++)
			if (!strcmp(e[i].name, name)) {
				found = true;
				size = e[i].size;
			}
		now->exists[r] = found;
		now->size[r] = size;
		now->recreate[r] = false;
		free(now->val[r]);
		now->val[r] = NULL;
		if (found) {
			np = size / PG;
			now->val[r] = calloc(np ? np : 1, sizeof(uint64_t));
			data = malloc(np ? np * PG : 1);
			if (!now->val[r] || !data)
				abort();
			k = read_region(r, size, now->val[r], data, &misplaced);
			if (k) {
				diag("%s is listed but opening it fails: %s", name, errname(-k));
				all_ok = false;
				now->recreate[r] = true;
				free(data);
				continue;
			}
			*pages_checked += np;
		}
		/* Which possible world is it? */
		for (k = 0; k < m->n && !matched; k++) {
			unsigned long bad = 0;

			w = m->w[k];
			if (w->exists != found || (found && w->size != size))
				continue;
			for (p = 0; p < np; p++)
				if (page_fails(w, r, p, now->val[r][p], data + p * PG))
					bad++;
			if (!bad)
				matched = true;
			else if (bad < best_bad) {
				best_bad = bad;
				best = k;
			}
		}
		if (!matched) {
			all_ok = false;
			now->recreate[r] = found;
			diag("%s: %s, %" PRIu64 " KiB; matches none of the %d possible states:",
			     name, found ? "exists" : "absent", size / 1024, m->n);
			for (k = 0; k < m->n; k++)
				diag("  %s, %" PRIu64 " KiB (%s; %zu gens started)",
				     m->w[k]->exists ? "exists" : "absent",
				     m->w[k]->size / 1024, m->w[k]->what, m->w[k]->ngens);
			if (best >= 0) {
				unsigned int shown = 0;

				w = m->w[best];
				for (p = 0; p < np && shown < 8; p++) {
					uint64_t v = now->val[r][p];

					if (!page_fails(w, r, p, v, data + p * PG))
						continue;
					shown++;
					diag("  page %" PRIu64 ": %s, synced at least %s%s",
					     p, vstr(v, vb[0], sizeof(vb[0])),
					     vstr(w->min[p], vb[1], sizeof(vb[1])),
					     w->base && w->base[p] == v ? " (its boot-start value)" : "");
				}
				diag("  %lu bad pages against the closest state (%s), %u misplaced",
				     best_bad, w->what, misplaced);
			}
		} else {
			for (p = 0; p < np; p++) {
				uint64_t v = now->val[r][p];

				if (v == V_EIO) {
					diag("note: %s page %" PRIu64 " (not synced) reads as EIO",
					     name, p);
					now->recreate[r] = true;
				} else if (v == V_BAD) {
					/* Accepted as torn: remember its bytes' hash. */
					now->val[r][p] = torn_val(data + p * PG);
					if (!w->base || w->base[p] != now->val[r][p])
						diag("note: %s page %" PRIu64 " is torn by a mapped write "
						     "that was not synced (allowed)", name, p);
					now->recreate[r] = true;
				}
			}
		}
		free(data);
	}
	free(e);
	return all_ok;
}

static int journal_fd = -1;

static void journal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void journal(const char *fmt, ...)
{
	char line[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	if (write(journal_fd, line, n) != n) {
		fprintf(stderr, "kvt-crash: journal write failed: %s\n", strerror(errno));
		exit(1);
	}
}

#define WFAIL(...) do { \
	fprintf(stderr, "kvt-crash: worker %d: ", w); \
	fprintf(stderr, __VA_ARGS__); \
	fprintf(stderr, ": %s\n", errname(errno)); \
	exit(1); \
} while (0)

/* One worker of the workload: regions w, w + NWORKERS, ... until killed. */
static void crash_worker(int w, const char *dir, int boot, uint64_t seed,
			 const struct crash_state *st)
{
	uint64_t rng = mix(seed ^ (uint64_t)(w + 1) * 0x51ed2701ULL);
	uint64_t nextgen[NREGIONS], size[NREGIONS], g, p, np;
	int fd[NREGIONS], r, mine[NREGIONS], nmine = 0, i, e;
	bool exists[NREGIONS];
	char path[4096], name[KVTIER_NAME_MAX];
	char *buf = aligned_alloc(PG, 64 * PG), *map;
	double t0 = now();

	snprintf(path, sizeof(path), "%s/journal-%d-%d", dir, boot, w);
	journal_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (journal_fd < 0 || !buf)
		WFAIL("open %s", path);
	for (r = w; r < NREGIONS; r += NWORKERS) {
		mine[nmine++] = r;
		nextgen[r] = st->nextgen[r];
		size[r] = st->size[r];
		exists[r] = st->exists[r];
		fd[r] = -1;
		crash_name(name, sizeof(name), r);
		if (exists[r] && st->recreate[r]) {
			/* Start over with a region whose contents are unknown. */
			journal("unlink %d", r);
			if (region_unlink(name))
				WFAIL("unlink %s", name);
			journal("unlinked %d", r);
			exists[r] = false;
		}
	}
	while (now() - t0 < CRASH_CAP_S) {
		uint64_t x;

		rng = mix(rng);
		r = mine[rng % nmine];
		x = (rng >> 16) % 100;
		crash_name(name, sizeof(name), r);
		if (!exists[r]) {
			g = nextgen[r]++;
			size[r] = (1 + (rng >> 32) % 4) * MiB;
			journal("create %d %" PRIu64 " %" PRIu64, r, g, size[r]);
			fd[r] = region_open(name, size[r], KVTIER_OPEN_CREATE |
					    KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT);
			if (fd[r] < 0) {
				errno = -fd[r];
				WFAIL("create %s", name);
			}
			journal("created %d", r);
			exists[r] = true;
			continue;
		}
		if (x < 6) {
			if (fd[r] >= 0)
				close(fd[r]);
			fd[r] = -1;
			journal("unlink %d", r);
			if (region_unlink(name))
				WFAIL("unlink %s", name);
			journal("unlinked %d", r);
			exists[r] = false;
			continue;
		}
		if (x < 12 && fd[r] >= 0) {	/* reopen by name */
			close(fd[r]);
			fd[r] = -1;
		}
		if (fd[r] < 0) {
			fd[r] = region_open(name, 0, 0);
			if (fd[r] < 0) {
				errno = -fd[r];
				WFAIL("open %s", name);
			}
		}
		g = nextgen[r]++;
		np = size[r] / PG;
		journal("start %d %" PRIu64, r, g);
		if (gen_mapped(r, g)) {
			map = mmap(NULL, size[r], PROT_READ | PROT_WRITE, MAP_SHARED, fd[r], 0);
			if (map == MAP_FAILED)
				WFAIL("mmap %s", name);
			for (p = 0; p < np; p++)
				if (gen_writes(r, g, p, np))
					crash_fill(map + p * PG, r, p, g);
			e = msync(map, size[r], MS_SYNC);
			if (e)
				WFAIL("msync %s gen %" PRIu64, name, g);
			munmap(map, size[r]);
		} else {
			for (p = 0; p < np;) {
				uint64_t n = 0;

				while (p + n < np && n < 64 && gen_writes(r, g, p + n, np)) {
					crash_fill(buf + n * PG, r, p + n, g);
					n++;
				}
				if (!n) {
					p++;
					continue;
				}
				if (pwrite(fd[r], buf, n * PG, p * PG) != (ssize_t)(n * PG))
					WFAIL("pwrite %s gen %" PRIu64, name, g);
				p += n;
			}
			if (fsync(fd[r]))
				WFAIL("fsync %s gen %" PRIu64, name, g);
		}
		journal("synced %d %" PRIu64, r, g);
		printf("kvt-crash: synced %s %" PRIu64 "\n", name, g);
		fflush(stdout);
	}
	for (i = 0; i < nmine; i++)
		if (fd[mine[i]] >= 0)
			close(fd[mine[i]]);
	exit(3);
}

static int crash_attach(const char *dev, const char *what)
{
	int ret = tier_attach(dev);

	check(!ret, "%s: attach %s (%s)", what, dev, errname(-ret));
	if (!ret) {
		ret = kvt_knob(0, "host_budget_mb", CRASH_BUDGET_MB);
		if (ret)
			diag("host_budget_mb=%d: %s", CRASH_BUDGET_MB, errname(-ret));
	}
	return ret;
}

#define FREEZE_AT	"/sys/kernel/debug/kvtier/kvtier0/freeze_at"

/* Write @txt to the existing file @path. Returns 0 or -errno. */
static int write_text(const char *path, const char *txt)
{
	ssize_t len = (ssize_t)strlen(txt), n;
	int fd = open(path, O_WRONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	n = write(fd, txt, len);
	err = errno;
	close(fd);
	return n == len ? 0 : n < 0 ? -err : -EIO;
}

/*
 * Wait until a commit stops at crash point @point, then tell the host
 * (DIR/frozen-BOOT). Returns 0, or 1 when none did within CRASH_CAP_S.
 */
static int crash_wait_frozen(const char *dir, int boot, const char *point)
{
	char want[64], path[4096], got[64];
	double t0 = now();
	ssize_t n;
	int fd;

	snprintf(want, sizeof(want), "frozen %s\n", point);
	while (now() - t0 < CRASH_CAP_S) {
		fd = open(FREEZE_AT, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, got, sizeof(got) - 1);
		if (fd >= 0)
			close(fd);
		got[n > 0 ? n : 0] = '\0';
		if (!strcmp(got, want)) {
			snprintf(path, sizeof(path), "%s/frozen-%d", dir, boot);
			if (write_file(path, "", 0))
				fprintf(stderr, "kvt-crash: cannot create %s\n", path);
			printf("kvt-crash: boot %d: a commit stopped at %s after %.1f s\n",
			       boot, point, now() - t0);
			fflush(stdout);
			return 0;
		}
		usleep(20000);
	}
	fprintf(stderr, "kvt-crash: boot %d: no commit reached crash point %s in %d s (freeze_at: %s)\n",
		boot, point, CRASH_CAP_S, got);
	return 1;
}

static int cmd_crash(int argc, char **argv)
{
	struct region_model model[NREGIONS];
	struct crash_state prev, cur;
	struct replay_stats rs = { 0 };
	unsigned long pages = 0;
	const char *dir, *dev;
	bool final = false, ok;
	char path[4096], what[64];
	uint64_t seed;
	const char *freeze = NULL;
	int boot, r, w, ret, st;
	pid_t pids[NWORKERS];
	double t0 = now();

	memset(model, 0, sizeof(model));
	if (argc < 3)
		return 2;
	dir = argv[0];
	boot = (int)num(argv[1]);
	seed = num(argv[2]);
	if (argc == 4 && !strcmp(argv[3], "--final"))
		final = true;
	else if (argc == 5 && !strcmp(argv[3], "--freeze"))
		freeze = argv[4];
	else if (argc != 3)
		return 2;
	dev = kvt_ns("KVTIER_NS0");
	if (!dev) {
		check(false, "boot %d: KVTIER_NS0 names a block device", boot);
		return 1;
	}
	snprintf(what, sizeof(what), "boot %d", boot);
	ret = kvt_load("");
	if (ret) {
		check(false, "%s: load kvtier.ko (%s)", what, errname(-ret));
		return 1;
	}
	if (crash_attach(dev, what))
		return 1;

	memset(&cur, 0, sizeof(cur));
	if (boot == 0) {
		memset(&prev, 0, sizeof(prev));
		for (r = 0; r < NREGIONS; r++)
			prev.nextgen[r] = 1;
	} else {
		ret = state_load(dir, boot - 1, &prev);
		if (ret) {
			check(false, "%s: state of boot %d in %s (%s)", what, boot - 1,
			      dir, errname(-ret));
			return 1;
		}
	}
	for (r = 0; r < NREGIONS; r++) {
		struct world *wd = world_new(prev.exists[r], prev.size[r],
					     "as the previous boot found it");

		if (prev.exists[r]) {
			uint64_t p, np = prev.size[r] / PG;

			wd->base = malloc(np * sizeof(uint64_t));
			if (!wd->base)
				abort();
			memcpy(wd->base, prev.val[r], np * sizeof(uint64_t));
			for (p = 0; p < np; p++)
				wd->min[p] = is_gen(prev.val[r][p]) ? prev.val[r][p] : 0;
		}
		model_push(&model[r], wd);
		cur.nextgen[r] = prev.nextgen[r];
	}
	if (boot > 0)
		for (w = 0; w < NWORKERS; w++) {
			snprintf(path, sizeof(path), "%s/journal-%d-%d", dir, boot - 1, w);
			replay_journal(path, model, &prev, &rs);
		}
	for (r = 0; r < NREGIONS; r++)
		cur.nextgen[r] = prev.nextgen[r];
	ok = crash_verify(model, &cur, &pages);
	check(ok, "%s: every region and page is as synced before the cut or newer "
	      "(%lu pages; previous boot: %u synced, %u created, %u unlinked) [%.1f s]",
	      what, pages, rs.synced, rs.created, rs.unlinked, now() - t0);
	for (r = 0; r < NREGIONS; r++) {
		uint64_t p, lo = ~0ULL, hi = 0, zero = 0;

		if (!cur.exists[r])
			continue;
		for (p = 0; p < cur.size[r] / PG; p++) {
			uint64_t v = cur.val[r][p];

			if (v == V_ZERO)
				zero++;
			else if (is_gen(v)) {
				lo = v < lo ? v : lo;
				hi = v > hi ? v : hi;
			}
		}
		if (hi)
			diag("crash%d: %" PRIu64 " KiB, gens %" PRIu64 "..%" PRIu64
			     ", %" PRIu64 " zero pages", r, cur.size[r] / 1024, lo, hi, zero);
		else
			diag("crash%d: %" PRIu64 " KiB, all zero", r, cur.size[r] / 1024);
	}
	ret = state_save(dir, boot, &cur);
	if (ret) {
		check(false, "%s: save state in %s (%s)", what, dir, errname(-ret));
		return 1;
	}

	if (final) {
		struct region_model again[NREGIONS];
		struct crash_state after;
		unsigned long pages2 = 0;

		memset(again, 0, sizeof(again));
		ret = tier_attach("none");
		check(!ret, "%s: detach (%s)", what, errname(-ret));
		if (ret)
			return 1;
		if (crash_attach(dev, what))
			return 1;
		memset(&after, 0, sizeof(after));
		for (r = 0; r < NREGIONS; r++) {
			struct world *wd = world_new(cur.exists[r], cur.size[r],
						     "before the detach");

			if (cur.exists[r]) {
				uint64_t p, np = cur.size[r] / PG;

				wd->base = malloc(np * sizeof(uint64_t));
				if (!wd->base)
					abort();
				memcpy(wd->base, cur.val[r], np * sizeof(uint64_t));
				for (p = 0; p < np; p++)
					wd->min[p] = is_gen(cur.val[r][p]) ? cur.val[r][p] : 0;
			}
			model_push(&again[r], wd);
		}
		ok = crash_verify(again, &after, &pages2);
		check(ok, "%s: after detach and attach every region reads the same (%lu pages)",
		      what, pages2);
		ret = tier_attach("none");
		check(!ret, "%s: detach (%s)", what, errname(-ret));
		ret = kvt_unload();
		check(!ret, "%s: unload kvtier (%s)", what, errname(-ret));
		return failures ? 1 : 0;
	}

	if (freeze) {
		ret = write_text(FREEZE_AT, freeze);
		check(!ret, "%s: arm crash point %s (%s)", what, freeze, errname(-ret));
		if (ret)
			return 1;
	}
	fflush(stdout);
	for (w = 0; w < NWORKERS; w++) {
		pids[w] = fork();
		if (pids[w] < 0) {
			check(false, "%s: fork", what);
			return 1;
		}
		if (!pids[w])
			crash_worker(w, dir, boot, seed, &cur);
	}
	snprintf(path, sizeof(path), "%s/started-%d", dir, boot);
	ret = write_file(path, "", 0);
	printf("kvt-crash: boot %d: workload started (seed %" PRIu64 ")\n", boot, seed);
	fflush(stdout);
	if (ret)
		fprintf(stderr, "kvt-crash: cannot create %s: %s\n", path, errname(-ret));
	if (freeze && crash_wait_frozen(dir, boot, freeze))
		return 1;
	/* Only the host's kill ends a healthy workload. */
	ret = 0;
	for (w = 0; w < NWORKERS; w++) {
		if (waitpid(pids[w], &st, 0) < 0)
			continue;
		fprintf(stderr, "kvt-crash: worker %d ended (status %#x) before the cut\n",
			w, st);
		ret = 1;
	}
	return ret ? 1 : 3;
}

/* ---- host side: raw images --------------------------------------------- */

static int cmd_find(int argc, char **argv)
{
	uint64_t seed, page, off = 0, want[3];
	char *blk;
	int fd, found = 0;
	ssize_t n;

	if (argc != 3)
		return 2;
	seed = num(argv[1]);
	page = num(argv[2]);
	memcpy(&want[0], pat_magic, 8);
	want[1] = page;
	want[2] = seed;
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[0]);
		return 1;
	}
	blk = malloc(MiB);
	while ((n = pread(fd, blk, MiB, off)) > 0) {
		ssize_t i;

		for (i = 0; i + (ssize_t)PG <= n; i += PG)
			if (!memcmp(blk + i, want, sizeof(want))) {
				printf("%" PRIu64 "\n", off + i);
				found++;
			}
		off += n;
	}
	free(blk);
	close(fd);
	return found ? 0 : 1;
}

static int flip_bytes(const char *img, uint64_t off, uint64_t len)
{
	unsigned char buf[4096];
	uint64_t i;
	int fd;

	if (len > sizeof(buf))
		return -EINVAL;
	fd = open(img, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (pread(fd, buf, len, off) != (ssize_t)len) {
		close(fd);
		return -EIO;
	}
	for (i = 0; i < len; i++)
		buf[i] ^= 0xff;
	if (pwrite(fd, buf, len, off) != (ssize_t)len || fsync(fd)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

static int cmd_flip(int argc, char **argv)
{
	int ret;

	if (argc != 3)
		return 2;
	ret = flip_bytes(argv[0], num(argv[1]), num(argv[2]));
	if (ret)
		fprintf(stderr, "flip %s: %s\n", argv[0], strerror(-ret));
	return ret ? 1 : 0;
}

static int cmd_ckpt_flip(int argc, char **argv)
{
	struct kvtier_disk_super sb[2];
	uint64_t off, meta_start = 0, meta_blocks = 0;
	int fd, i, ret;

	if (argc != 2)
		return 2;
	off = num(argv[1]);
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[0]);
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (pread(fd, &sb[i], sizeof(sb[i]), i * PG) != sizeof(sb[i]))
			memset(&sb[i], 0, sizeof(sb[i]));
		if (le64toh(sb[i].magic) == KVTIER_SB_MAGIC && le64toh(sb[i].meta_blocks)) {
			meta_start = le64toh(sb[i].meta_start);
			meta_blocks = le64toh(sb[i].meta_blocks);
		}
	}
	close(fd);
	if (!meta_blocks || off + 8 > PG) {
		fprintf(stderr, "ckpt-flip: no kvtier superblock in %s\n", argv[0]);
		return 1;
	}
	/*
	 * Bytes past a checkpoint's end are never read: damage there proves
	 * nothing. Each copy names one area (the two never name the same).
	 */
	for (i = 0; i < 2; i++) {
		if (le64toh(sb[i].ckpt_bytes) < off + 8) {
			fprintf(stderr, "ckpt-flip: the checkpoint of superblock copy %d holds %" PRIu64 " bytes, not past byte %" PRIu64 "\n",
				i, (uint64_t)le64toh(sb[i].ckpt_bytes), off + 8);
			return 1;
		}
	}
	for (i = 0; i < 2; i++) {
		ret = flip_bytes(argv[0], (meta_start + i * meta_blocks) * PG + off, 8);
		if (ret) {
			fprintf(stderr, "ckpt-flip: %s\n", strerror(-ret));
			return 1;
		}
		printf("%" PRIu64 "\n", (meta_start + i * meta_blocks) * PG + off);
	}
	return 0;
}

/* ---- scale: many regions on a multi-TiB namespace ---------------------- */

/*
 * Size of region @i of a scale set: region 0 is @big bytes, the others
 * 4 KiB to 4 MiB (2^0..2^9 pages, log-uniform, plus up to as much again),
 * from @seed.
 */
static uint64_t scale_size(int i, uint64_t seed, uint64_t big)
{
	uint64_t r = mix(seed + (uint64_t)i), pages;

	if (!i)
		return big;
	pages = (uint64_t)1 << (r % 10);
	return (pages + (r >> 8) % pages) * PG;
}

static void scale_name(char *buf, size_t len, int i)
{
	snprintf(buf, len, "scale-%04d", i);
}

/* MemAvailable, Slab and VmallocUsed of /proc/meminfo, in KiB. */
struct meminfo {
	long long avail, slab, vmalloc;
};

static int meminfo_read(struct meminfo *m)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -errno;
	m->avail = m->slab = m->vmalloc = -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "MemAvailable: %lld", &m->avail);
		sscanf(line, "Slab: %lld", &m->slab);
		sscanf(line, "VmallocUsed: %lld", &m->vmalloc);
	}
	fclose(f);
	return m->avail < 0 || m->slab < 0 || m->vmalloc < 0 ? -EIO : 0;
}

/*
 * scale-attach DEV MAX_S MAX_MIB [REGIONS]: attach DEV, timing it and
 * measuring the kernel memory it took (MemAvailable, Slab and VmallocUsed before and
 * after, the page cache dropped first so reclaimable memory does not move
 * MemAvailable); the attach must take at most MAX_S seconds and MAX_MIB
 * of memory.
 */
/*
 * sysfs metadata (the module's own count of its metadata memory) against
 * what the attach took from slab and vmalloc (@kib): within a factor of
 * 1.5 when the attach loaded enough (4 MiB) for the kernel's figures to
 * say something.
 */
static void scale_meta_check(long long kib, unsigned long long regions)
{
	/* 1 MiB of page records, the header and region records whole. */
	unsigned long long head = (64 + 128 * regions + 4095) / 4096 * 4096;
	unsigned long long m[6];
	int n = kvt_meta_read(0, m);

	check(n == 6, "sysfs metadata has 6 columns (%d)", n);
	if (n != 6)
		return;
	diag("sysfs metadata %llu KiB: regions %llu, page maps %llu, CRCs %llu, allocator %llu, buffer %llu KiB",
	     m[0] >> 10, m[1] >> 10, m[2] >> 10, m[3] >> 10, m[4] >> 10, m[5] >> 10);
	/*
	 * The attach read the checkpoint's page records through the buffer,
	 * a MiB at a time, whatever their number; the journal it replayed is
	 * empty after a clean detach.
	 */
	check(m[5] <= (1 << 20) + head,
	      "the checkpoint buffer (%llu KiB) is at most 1 MiB and the records of %llu regions (%llu KiB)",
	      m[5] >> 10, regions, head >> 10);
	if (kib < 4096)
		return;
	check((m[0] >> 10) * 3 >= (unsigned long long)kib * 2 &&
	      (m[0] >> 10) * 2 <= (unsigned long long)kib * 3,
	      "sysfs metadata (%llu KiB) within a factor of 1.5 of the slab and vmalloc the attach took (%lld KiB)",
	      m[0] >> 10, kib);
}

/*
 * Every region is closed, its pages out of the pool: wait up to 10 s for
 * their page maps to leave memory, and check they did.
 */
static void scale_maps_dropped(void)
{
	unsigned long long m[6] = { 0 };
	int n = 0, i;

	for (i = 0; i < 100; i++) {
		n = kvt_meta_read(0, m);
		if (n == 6 && !m[2] && !m[3])
			break;
		usleep(100000);
	}
	diag("after opening every region: sysfs metadata %llu KiB: regions %llu, page maps %llu, CRCs %llu, allocator %llu, buffer %llu KiB",
	     m[0] >> 10, m[1] >> 10, m[2] >> 10, m[3] >> 10, m[4] >> 10, m[5] >> 10);
	check(n == 6 && !m[2] && !m[3],
	      "no page map in memory once every region is closed (page maps %llu, CRCs %llu bytes)",
	      m[2], m[3]);
}

/*
 * Region 0 (the big one) open, read and out of the pool: what its map
 * costs in kernel memory (sysfs metadata, page maps and CRCs), per page.
 * Issue 17's bound for an open region: its CRCs (4 bytes a page, in
 * 256-byte chunks of 62 pages) plus its extents; a map of an entry per
 * page would cost about 9 bytes a page more (kmod/mapext.c). No other
 * map is in memory yet: region 0 is the first one scale-verify opens.
 */
static void scale_open_map(uint64_t pages)
{
	unsigned long long m[6];
	int n = kvt_meta_read(0, m);

	check(n == 6, "sysfs metadata has 6 columns (%d)", n);
	if (n != 6)
		return;
	diag("region 0 open, %" PRIu64 " pages on the namespace: page maps %llu, CRCs %llu bytes (%.2f and %.2f bytes a page)",
	     pages, m[2], m[3], (double)m[2] / (double)pages,
	     (double)m[3] / (double)pages);
	check(m[3] * 100 <= pages * 420,
	      "an open region's CRCs take at most 4.2 bytes a page (%.2f)",
	      (double)m[3] / (double)pages);
	check(m[2] * 4 <= pages,
	      "an open region's map takes at most a quarter of a byte a page (%.2f): extents",
	      (double)m[2] / (double)pages);
}

static int cmd_scale_attach(int argc, char **argv)
{
	struct meminfo a, b;
	double t0, t;
	long long took;
	int ret;

	if (argc != 3 && argc != 4)
		return 2;
	sync();
	write_file("/proc/sys/vm/drop_caches", "3\n", 2);
	ret = meminfo_read(&a);
	check(!ret, "read /proc/meminfo (%s)", errname(-ret));
	t0 = now();
	ret = tier_attach(argv[0]);
	t = now() - t0;
	check(!ret, "attach %s (%s)", argv[0], errname(-ret));
	if (ret || meminfo_read(&b))
		return 1;
	took = a.avail - b.avail;
	diag("attach took %.2f s; MemAvailable %+lld KiB, Slab %+lld KiB, VmallocUsed %+lld KiB",
	     t, -took, b.slab - a.slab, b.vmalloc - a.vmalloc);
	check(t <= (double)num(argv[1]), "attach within %s s (%.2f s)", argv[1], t);
	scale_meta_check(b.slab - a.slab + b.vmalloc - a.vmalloc,
			 argc == 4 ? num(argv[3]) : 0);
	check(took <= (long long)num(argv[2]) * 1024 &&
	      b.slab - a.slab + b.vmalloc - a.vmalloc <= (long long)num(argv[2]) * 1024,
	      "attach took at most %s MiB of memory (%lld KiB available less, slab and vmalloc %+lld KiB)",
	      argv[2], took, b.slab - a.slab + b.vmalloc - a.vmalloc);
	return failures ? 1 : 0;
}

/*
 * scale-write N BIG SEED: create the persistent regions scale-0000 ...
 * (N of them, scale_size() bytes each) and fill them with the page
 * pattern of SEED + i by pwrite. No fsync: the detach that follows writes
 * them back and makes them durable in one commit.
 */
static int cmd_scale_write(int argc, char **argv)
{
	const uint64_t chunk = 256;	/* pages per pwrite */
	uint64_t big, seed, total = 0;
	int n, i, fd, bad = 0;
	char name[KVTIER_NAME_MAX];
	double t0 = now();
	char *buf;

	if (argc != 3)
		return 2;
	n = (int)num(argv[0]);
	big = num(argv[1]);
	seed = num(argv[2]);
	buf = aligned_alloc(PG, chunk * PG);
	if (!buf)
		return 1;
	for (i = 0; i < n && bad < 5; i++) {
		uint64_t size = scale_size(i, seed, big), np = size / PG, p, k;

		scale_name(name, sizeof(name), i);
		fd = region_open(name, size, KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
					     KVTIER_OPEN_PERSISTENT);
		if (fd < 0) {
			diag("create %s of %" PRIu64 " bytes: %s", name, size, errname(-fd));
			bad++;
			continue;
		}
		for (p = 0; p < np; p += chunk) {
			uint64_t c = np - p < chunk ? np - p : chunk;

			for (k = 0; k < c; k++)
				pat_fill(buf + k * PG, p + k, seed + (uint64_t)i);
			if (pwrite(fd, buf, c * PG, p * PG) != (ssize_t)(c * PG)) {
				diag("pwrite %s at page %" PRIu64 ": %s", name, p, errname(errno));
				bad++;
				break;
			}
		}
		close(fd);
		total += size;
	}
	free(buf);
	check(!bad && i == n, "create and write %d persistent regions, %" PRIu64 " MiB in all",
	      n, (uint64_t)(total / MiB));
	diag("wrote %" PRIu64 " MiB in %.1f s", (uint64_t)(total / MiB), now() - t0);
	return failures ? 1 : 0;
}

/*
 * scale-verify N BIG SEED: the tier names exactly the N regions of
 * scale-write, each of its size, and every page of each reads back (pread)
 * with its pattern. Each region's pages are then dropped from the pool
 * (DONTNEED) and it is closed: once all are, no page map may be left in
 * memory (sysfs metadata's page maps and CRCs columns 0, within 10 s):
 * opening every region costs nothing after it. Region 0, the big one,
 * open and out of the pool, has its map's memory checked against issue
 * 17's bound first (scale_open_map()).
 */
/*
 * The count and the sum (ns) of row @row of debugfs latency ("NAME c0 ..
 * cN-1 sum"). Returns 0, or -ENOENT when there is no such row.
 */
static int latency_row(const char *row, uint64_t *count, uint64_t *sum_ns)
{
	FILE *f = fopen("/sys/kernel/debug/kvtier/kvtier0/latency", "re");
	char line[2048], *tok, *save;
	size_t len = strlen(row);
	uint64_t v[64];
	int n, ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		if (strncmp(line, row, len) || line[len] != ' ')
			continue;
		n = 0;
		for (tok = strtok_r(line + len, " \n", &save); tok && n < 64;
		     tok = strtok_r(NULL, " \n", &save))
			v[n++] = strtoull(tok, NULL, 10);
		if (n < 2)
			break;
		*sum_ns = v[n - 1];
		for (*count = 0; --n > 0;)
			*count += v[n - 1];
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * latency-row NAME DESC: print how many events debugfs latency row NAME
 * counted and their average, as "DESC: N, X ms each".
 */
static int cmd_latency_row(int argc, char **argv)
{
	uint64_t count, sum;
	int ret;

	if (argc != 2)
		return 2;
	ret = latency_row(argv[0], &count, &sum);
	check(!ret, "debugfs latency has row %s (%s)", argv[0], errname(-ret));
	if (ret)
		return 1;
	diag("%s: %" PRIu64 ", %.2f ms each", argv[1], count,
	     count ? (double)sum / 1e6 / (double)count : 0.0);
	return 0;
}

/*
 * scale-commit MIB: the cost of commits on a namespace that holds the
 * scale regions. Write persistent region scale-commit in 1 MiB pwrites,
 * each followed by fsync (its write-back, then a commit), and print the
 * commits' time from debugfs latency (commit_journal, commit_checkpoint)
 * per MiB written, next to the fsyncs' wall time; then read every byte
 * back and unlink the region.
 */
static int cmd_scale_commit(int argc, char **argv)
{
	uint64_t mib, i, p, jc0, js0, cc0, cs0, jc, js, cc, cs;
	const uint64_t per = MIB / PG;
	double t_sync = 0, t0;
	int fd, ret, bad = 0;
	char *buf;

	if (argc != 1)
		return 2;
	mib = num(argv[0]);
	if (!mib)
		return 2;
	buf = aligned_alloc(PG, MIB);
	if (!buf)
		return 1;
	ret = latency_row("commit_journal", &jc0, &js0);
	if (!ret)
		ret = latency_row("commit_checkpoint", &cc0, &cs0);
	check(!ret, "debugfs latency has the commit rows (%s)", errname(-ret));
	fd = region_open("scale-commit", mib * MIB,
			 KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT);
	check(fd >= 0, "create persistent region scale-commit of %" PRIu64 " MiB (%s)",
	      mib, errname(fd < 0 ? -fd : 0));
	if (ret || fd < 0) {
		free(buf);
		return 1;
	}
	for (i = 0; i < mib && !bad; i++) {
		for (p = 0; p < per; p++)
			pat_fill(buf + p * PG, i * per + p, SCALE_COMMIT_SEED);
		if (pwrite(fd, buf, MIB, (off_t)(i * MIB)) != (ssize_t)MIB) {
			diag("pwrite at MiB %" PRIu64 ": %s", i, errname(errno));
			bad++;
			break;
		}
		t0 = now();
		if (fsync(fd)) {
			diag("fsync at MiB %" PRIu64 ": %s", i, errname(errno));
			bad++;
		}
		t_sync += now() - t0;
	}
	check(!bad, "write %" PRIu64 " MiB, fsync after each", mib);
	ret = latency_row("commit_journal", &jc, &js);
	if (!ret)
		ret = latency_row("commit_checkpoint", &cc, &cs);
	if (!ret && !bad) {
		jc -= jc0, js -= js0, cc -= cc0, cs -= cs0;
		diag("%" PRIu64 " MiB in %" PRIu64 " fsyncs: %" PRIu64 " journal commits (%.2f ms each), %"
		     PRIu64 " checkpoints (%.2f ms each); commit time %.2f ms per MiB written, fsync %.2f ms per MiB (write-back and commit)",
		     mib, mib, jc, jc ? (double)js / 1e6 / (double)jc : 0.0, cc,
		     cc ? (double)cs / 1e6 / (double)cc : 0.0,
		     (double)(js + cs) / 1e6 / (double)mib, t_sync * 1e3 / (double)mib);
		check(jc + cc >= mib, "every fsync committed (%" PRIu64 " commits for %" PRIu64 " fsyncs)",
		      jc + cc, mib);
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	for (i = 0; i < mib && !bad; i++) {
		if (pread(fd, buf, MIB, (off_t)(i * MIB)) != (ssize_t)MIB) {
			bad++;
			break;
		}
		for (p = 0; p < per; p++)
			bad += pat_check(buf + p * PG, i * per + p, SCALE_COMMIT_SEED) != 0;
	}
	check(!bad, "scale-commit reads back every byte (%d bad pages or errors)", bad);
	close(fd);
	ret = region_unlink("scale-commit");
	check(!ret, "unlink scale-commit (%s)", errname(-ret));
	free(buf);
	return failures ? 1 : 0;
}

static int cmd_scale_verify(int argc, char **argv)
{
	const uint64_t chunk = 256;
	struct kvtier_region_entry *e;
	uint64_t big, seed, total = 0, wrong = 0;
	int n, i, j, fd, listed, bad = 0;
	char name[KVTIER_NAME_MAX];
	double t0 = now();
	char *buf;

	if (argc != 3)
		return 2;
	n = (int)num(argv[0]);
	big = num(argv[1]);
	seed = num(argv[2]);
	listed = region_list(&e);
	check(listed == n, "the tier lists %d regions (%d)", n, listed);
	for (i = 0; i < listed && i < n; i++) {
		scale_name(name, sizeof(name), i);
		for (j = 0; j < listed && strcmp(e[j].name, name); j++)
			;
		if (j == listed || e[j].size != scale_size(i, seed, big) ||
		    !(e[j].flags & KVTIER_OPEN_PERSISTENT)) {
			diag("%s: %s", name, j == listed ? "not listed" : "wrong size or flags");
			bad++;
		}
	}
	free(e);
	check(!bad, "every region listed with its size, persistent");
	buf = aligned_alloc(PG, chunk * PG);
	if (!buf)
		return 1;
	bad = 0;
	for (i = 0; i < n && bad < 5; i++) {
		uint64_t size = scale_size(i, seed, big), np = size / PG, p, k;

		scale_name(name, sizeof(name), i);
		fd = region_open(name, 0, 0);
		if (fd < 0) {
			diag("open %s: %s", name, errname(-fd));
			bad++;
			continue;
		}
		for (p = 0; p < np; p += chunk) {
			uint64_t c = np - p < chunk ? np - p : chunk;

			if (pread(fd, buf, c * PG, p * PG) != (ssize_t)(c * PG)) {
				diag("pread %s at page %" PRIu64 ": %s", name, p, errname(errno));
				bad++;
				break;
			}
			for (k = 0; k < c; k++) {
				if (pat_check(buf + k * PG, p + k, seed + (uint64_t)i)) {
					if (!wrong++)
						diag("%s: page %" PRIu64 " is wrong", name, p + k);
				}
			}
		}
		if (posix_fadvise(fd, 0, size, POSIX_FADV_DONTNEED)) {
			diag("DONTNEED %s: %s", name, errname(errno));
			bad++;
		}
		if (!i)
			scale_open_map(np);
		close(fd);
		total += size;
	}
	free(buf);
	check(!bad && !wrong && i == n,
	      "every byte of %d regions (%" PRIu64 " MiB) reads back (%" PRIu64 " pages wrong)",
	      n, (uint64_t)(total / MiB), wrong);
	diag("verified %" PRIu64 " MiB in %.1f s", (uint64_t)(total / MiB), now() - t0);
	scale_maps_dropped();
	return failures ? 1 : 0;
}

/* ---- main -------------------------------------------------------------- */

static int cmd_simple(const char *cmd, int argc, char **argv)
{
	int ret, want;

	if (!strcmp(cmd, "load")) {
		ret = kvt_load(argc ? argv[0] : "");
		check(!ret, "load %s %s (%s)", getenv("KVTIER_KO") ?: "(KVTIER_KO unset)",
		      argc ? argv[0] : "", errname(-ret));
	} else if (!strcmp(cmd, "unload")) {
		ret = kvt_unload();
		check(!ret, "unload kvtier (%s)", errname(-ret));
	} else if (!strcmp(cmd, "detach")) {
		ret = tier_attach("none");
		check(!ret, "detach (%s)", errname(-ret));
	} else if (!strcmp(cmd, "attach") && argc >= 1) {
		want = argc > 1 ? errnum(argv[1]) : 0;
		ret = tier_attach(argv[0]);
		check(-ret == want, "attach %s: %s (expected %s)", argv[0],
		      errname(-ret), errname(want));
	} else {
		return 2;
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("KVT_CHECKS")) {
		checks_log = fopen(getenv("KVT_CHECKS"), "ae");
		if (!checks_log)
			perror(getenv("KVT_CHECKS"));
	}
	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "write"))
		ret = cmd_write(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "verify"))
		ret = cmd_verify(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "crash"))
		ret = cmd_crash(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "find"))
		ret = cmd_find(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "flip"))
		ret = cmd_flip(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "ckpt-flip"))
		ret = cmd_ckpt_flip(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "scale-attach"))
		ret = cmd_scale_attach(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "scale-write"))
		ret = cmd_scale_write(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "scale-verify"))
		ret = cmd_scale_verify(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "scale-commit"))
		ret = cmd_scale_commit(argc - 2, argv + 2);
	else if (!strcmp(argv[1], "latency-row"))
		ret = cmd_latency_row(argc - 2, argv + 2);
	else
		ret = cmd_simple(argv[1], argc - 2, argv + 2);
	if (ret != 2)
		return ret;
usage:
	fprintf(stderr, "usage: see the comment at the top of tests/persist/kvt_persist_tool.c\n");
	return 2;
}
