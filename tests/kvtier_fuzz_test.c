// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile input: every ioctl of <linux/kvtier.h>, the sysfs knobs, the
 * module parameter and the on-namespace metadata, fuzzed with random and
 * boundary values from a seeded generator. The seed is printed; replay
 * with KVTIER_FUZZ_SEED=<seed> (KVTIER_FUZZ_ITERS sets the ioctl
 * iterations, default 20000; KVTIER_FUZZ_FLIPS the metadata iterations,
 * default 120).
 *
 * - ioctls: random and known command numbers on every kind of file (an
 *   unbound tier file, one bound to an unnamed, a named, a read-only bound
 *   named region, a regular file, /dev/null, a closed descriptor) with
 *   arguments that are NULL, kernel addresses, unmapped, read-only memory
 *   (for results), structures straddling into a guard page, misaligned,
 *   or valid memory holding random or boundary values (sizes 0, 1,
 *   PAGE_SIZE-1, huge; unterminated, traversal and format-string names;
 *   unknown flags). Only the errnos documented for that ioctl may come
 *   back (EFAULT alone for a bad pointer), and nothing changes: every call
 *   that succeeded is undone (unlink, unpin, unregister, close), and the
 *   region list, tier state and error, slots_used, resident_pages,
 *   pinned_pages, the GPU ranges and the victims' bytes are compared with
 *   their first snapshot every 500 calls.
 * - sysfs: every knob written (write(2) of exact byte counts: random
 *   bytes, embedded NULs, numbers at and around the bounds in decimal,
 *   hex and octal, signs, spaces, overlong strings) and judged against a
 *   model of kstrtouint and the documented range, granularity and
 *   watermark order: EINVAL exactly when the model refuses, the value
 *   unchanged after a refusal, the written value after a success (then
 *   restored). backing_dev and format get random paths (EINVAL, EBUSY,
 *   ENOENT and friends; the tier stays attached).
 * - hostile users: a victim process (its own uid, a private region it
 *   keeps checking, a pin) and four unprivileged users issuing random
 *   REGION_OPENs of each other's names with every flag, creates,
 *   mmap/munmap, pin/unpin, fadvise, pread/pwrite, fsync, unlink,
 *   setflags, list and random ioctls against each other at once, each
 *   for a kept number of operations: the victim's bytes and pin hold, the
 *   root victims above are intact, every ioctl errno is documented
 *   (KVTIER_FUZZ_HOSTILE_ITERS sets the operations per user).
 * - num_tiers at load: bad values fail the load with EINVAL and leave no
 *   module; good ones give that many devices.
 * - metadata: a tier with three persistent regions on a small loop
 *   device; each iteration restores the image, flips random bytes in the
 *   superblocks and checkpoint areas (sometimes resealing the
 *   superblock's CRC so the geometry checks are reached) or in a data
 *   page, and attaches: refused with EUCLEAN, EMEDIUMTYPE or EOPNOTSUPP
 *   and the image byte-identical, or attached with every page of every
 *   region either right or EIO.
 *
 * Runs as root in the test VM (tests/run-suite.sh); see kvtier_util.h.
 */
#include <ctype.h>
#include <grp.h>
#include <linux/kvtier.h>
#include <linux/kvtier_format.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"


/* xorshift64*: seeded, replayable. */
static unsigned long long rng_state;

static unsigned long long rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static unsigned long long below(unsigned long long n)
{
	return n ? rnd() % n : 0;
}

static int chance(int pct)
{
	return (int)below(100) < pct;
}

static unsigned long long env_num(const char *name, unsigned long long def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

/*
 * The seeds a fuzz test runs. make check is deterministic: each test runs
 * every seed that tests/fuzz-seeds.txt keeps for it (its default, and each
 * seed that ever found a bug, with the bug), for the iterations kept beside
 * it. KVTIER_FUZZ_SEED replays one seed; KVTIER_FUZZ_RANDOM=1 (make fuzz)
 * draws a fresh one. @iter_env, when set, overrides the iterations.
 * KVTIER_FUZZ_SEEDS names the list (tests/run-suite.sh sets it; else it is
 * found from the executable). A test with no kept seed, or a line that does
 * not parse, fails the test: never a run of nothing.
 */
#define MAX_RUNS	KVT_MAX_SEEDS

#define fuzz_run kvt_seed

static unsigned long long fuzz_seed(void)
{
	unsigned long long s = env_num("KVTIER_FUZZ_SEED", 0);

	if (!s)
		s = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
	return s ? s : 1;
}

static int fuzz_runs(struct __test_metadata *_metadata, const char *test,
		     const char *iter_env, unsigned long long def,
		     struct fuzz_run *runs)
{
	int n, i;

	(void)_metadata;
	if (env_num("KVTIER_FUZZ_SEED", 0) || getenv("KVTIER_FUZZ_RANDOM")) {
		runs[0].seed = fuzz_seed();
		runs[0].iters = env_num(iter_env, def);
		return 1;
	}
	n = kvt_kept_seeds(test, (struct kvt_seed *)runs);
	for (i = 0; i < n; i++)
		runs[i].iters = env_num(iter_env, runs[i].iters);
	return n;
}

/* A boundary-heavy 64-bit value around @ref (a size, an offset...). */
static unsigned long long edge(unsigned long long ref)
{
	static const unsigned long long fixed[] = {
		0, 1, 2, 4095, 4096, 4097, 8192, 65536, 1ULL << 31, 1ULL << 32,
		(1ULL << 32) - 1, 1ULL << 63, ~0ULL, ~0ULL - 4095, 0x7fffffffffffffffULL,
		0x7ffffffff000ULL,
	};

	switch (below(5)) {
	case 0:
		return fixed[below(sizeof(fixed) / sizeof(fixed[0]))];
	case 1:
		return ref + (below(3) - 1) * PAGE;
	case 2:
		return ref + below(3) - 1;
	case 3:
		return below(ref + 1) & ~(PAGE - 1);
	default:
		return rnd();
	}
}

/* ------------------------------------------------------------------ */
/* ioctls                                                              */

#define VU_LEN		(256 * 1024ULL)
#define VN_LEN		(256 * 1024ULL)
#define VP_LEN		(64 * 1024ULL)
#define VN_NAME		"kvt-fz-victim"
#define VP_NAME		"kvt-fz-keep"
#define SCRATCH		(1 * MiB)
#define MAX_SNAP	64

enum fd_kind { FD_UNBOUND, FD_UNNAMED, FD_NAMED, FD_NAMED_RO, FD_TIER_RDONLY,
	       FD_FILE, FD_NULL, FD_CLOSED, FD_KINDS };

static const char * const fd_names[] = {
	"unbound", "unnamed", "named", "named-ro", "tier-rdonly", "file",
	"/dev/null", "closed",
};

struct snapshot {
	unsigned int n;
	struct kvtier_region_entry e[MAX_SNAP];
	char state[32], error[32];
	long long slots_used, resident, pinned;
	int gpu_lines;
};

struct fz {
	int fd[FD_KINDS];
	int admin;
	unsigned char *map;	/* the unnamed victim, mapped */
	unsigned char *scratch, *ro, *unmapped;
	unsigned long long capacity;
	struct snapshot base;
	unsigned long long calls, ok, by_errno[256];
};

static int gpu_lines(void)
{
	char line[512];
	int n = -1;
	FILE *f = fopen("/sys/kernel/debug/kvtier/kvtier0/gpu_ranges", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct kvtier_region_entry *)a)->name,
		      ((const struct kvtier_region_entry *)b)->name);
}

static int snap(int admin, struct snapshot *s)
{
	struct kvtier_region_list l = { 0 };
	unsigned int i;

	memset(s, 0, sizeof(*s));
	l.entries = (uintptr_t)s->e;
	l.count = MAX_SNAP;
	if (ioctl(admin, KVTIER_IOC_REGION_LIST, &l))
		return -errno;
	s->n = l.count;
	if (s->n > MAX_SNAP)
		return -E2BIG;
	qsort(s->e, s->n, sizeof(s->e[0]), cmp_entry);
	for (i = 0; i < s->n; i++) {
		/* Times move; what a fuzzed call could change does not. */
		s->e[i].last_used = 0;
		s->e[i].created = 0;
	}
	kvt_tier_read(0, "state", s->state, sizeof(s->state));
	kvt_tier_read(0, "error", s->error, sizeof(s->error));
	s->slots_used = kvt_stat(0, "slots_used");
	s->resident = kvt_stat(0, "resident_pages");
	s->pinned = kvt_stat(0, "pinned_pages");
	s->gpu_lines = gpu_lines();
	return 0;
}

/* Where two snapshots differ, or NULL. */
static const char *snap_diff(const struct snapshot *a, const struct snapshot *b)
{
	static char why[256];
	unsigned int i;

	if (a->n != b->n)
		return "the number of named regions";
	for (i = 0; i < a->n; i++) {
		if (memcmp(&a->e[i], &b->e[i], sizeof(a->e[i]))) {
			snprintf(why, sizeof(why), "region entry '%.63s'", a->e[i].name);
			return why;
		}
	}
	if (strcmp(a->state, b->state))
		return "sysfs state";
	if (strcmp(a->error, b->error))
		return "sysfs error";
	if (a->slots_used != b->slots_used)
		return "slots_used";
	if (a->resident != b->resident)
		return "resident_pages";
	if (a->pinned != b->pinned)
		return "pinned_pages";
	if (a->gpu_lines != b->gpu_lines)
		return "gpu_ranges";
	return NULL;
}

/* The victims' bytes: -1 if all are right, else the kind of the bad one. */
static int victims_intact(struct fz *z)
{
	static unsigned char buf[VU_LEN];
	static const struct { int kind; unsigned long long len, seed; } v[] = {
		{ FD_UNNAMED, VU_LEN, 7 }, { FD_NAMED, VN_LEN, 8 },
		{ FD_NAMED_RO, VN_LEN, 8 },
	};
	unsigned int i;
	int fd;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (pread(z->fd[v[i].kind], buf, v[i].len, 0) != (ssize_t)v[i].len ||
		    kvt_check(buf, v[i].len, 0, v[i].seed) != -1)
			return v[i].kind;
	}
	if (kvt_check(z->map, VU_LEN, 0, 7) != -1)
		return FD_UNNAMED;
	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0 || kvt_bind_name(fd, VP_NAME, 0, 0, 0) ||
	    pread(fd, buf, VP_LEN, 0) != (ssize_t)VP_LEN ||
	    kvt_check(buf, VP_LEN, 0, 9) != -1) {
		if (fd >= 0)
			close(fd);
		return 100;
	}
	close(fd);
	return -1;
}

/* A random name: valid, from a small pool, or hostile. */
static void gen_name(char *name, int victims)
{
	static const char * const hostile[] = {
		"", "../../etc/passwd", "a/b", "%s%s%s%n", "%x%x%p", "name with space",
		"\x7f", "\xff\xfe", "-", ".", "..", "\t", "n\n",
	};
	static const char * const pool[] = { "fz0", "fz1", "fz-2" };
	unsigned int i, len;

	memset(name, 0, KVTIER_NAME_MAX);
	switch (below(victims ? 7 : 6)) {
	case 0:
		strcpy(name, hostile[below(sizeof(hostile) / sizeof(hostile[0]))]);
		break;
	case 1:
		strcpy(name, pool[below(3)]);
		break;
	case 2:		/* unterminated: 64 bytes, no NUL */
		for (i = 0; i < KVTIER_NAME_MAX; i++)
			name[i] = 'a' + below(26);
		break;
	case 3:		/* random bytes */
		len = below(KVTIER_NAME_MAX + 1);
		for (i = 0; i < len && i < KVTIER_NAME_MAX; i++)
			name[i] = (char)rnd();
		break;
	case 4:		/* valid, 1..63 printable */
	case 5:
		len = 1 + below(KVTIER_NAME_MAX - 1);
		name[0] = 'f';
		for (i = 1; i < len; i++) {
			do
				name[i] = 0x21 + below(0x5e);
			while (name[i] == '/');
		}
		break;
	default:
		strcpy(name, chance(50) ? VN_NAME : VP_NAME);
	}
}

static int victim_name(const char *name)
{
	return !strncmp(name, VN_NAME, KVTIER_NAME_MAX) ||
	       !strncmp(name, VP_NAME, KVTIER_NAME_MAX);
}

static unsigned int gen_flags(unsigned int known)
{
	switch (below(4)) {
	case 0:
		return 0;
	case 1:
		return (unsigned int)rnd();
	default:
		return (unsigned int)rnd() & known;
	}
}

static const unsigned int known_cmds[] = {
	KVTIER_IOC_TIER_INFO, KVTIER_IOC_REGION_CREATE, KVTIER_IOC_PIN,
	KVTIER_IOC_UNPIN, KVTIER_IOC_REGION_OPEN, KVTIER_IOC_REGION_UNLINK,
	KVTIER_IOC_REGION_LIST, KVTIER_IOC_REGION_SETFLAGS,
	KVTIER_IOC_REGION_INFO, KVTIER_IOC_GPU_REGISTER,
	KVTIER_IOC_GPU_UNREGISTER,
};
#define NR_KNOWN	(sizeof(known_cmds) / sizeof(known_cmds[0]))

/* Fill @a (the argument of @cmd) with random and boundary values. */
static void gen_arg(struct fz *z, unsigned int cmd, void *a, size_t size)
{
	unsigned char *b = a;
	size_t i;

	for (i = 0; i < size; i++)
		b[i] = chance(70) ? 0 : (unsigned char)rnd();
	if (chance(10))
		return;		/* raw bytes */
	switch (cmd) {
	case KVTIER_IOC_REGION_CREATE: {
		struct kvtier_region_create *c = a;

		c->size = edge(z->capacity);
		c->flags = chance(80) ? 0 : edge(1);
		break;
	}
	case KVTIER_IOC_PIN:
	case KVTIER_IOC_UNPIN: {
		struct kvtier_pin *p = a;

		p->offset = edge(VU_LEN);
		p->length = edge(VU_LEN);
		p->flags = chance(85) ? 0 : edge(1);
		break;
	}
	case KVTIER_IOC_REGION_OPEN: {
		struct kvtier_region_open *o = a;

		gen_name(o->name, 1);
		o->size = chance(30) ? VN_LEN : edge(VN_LEN);
		o->flags = gen_flags(0xf);
		if (chance(15))
			o->flags |= KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT;
		o->mode = chance(70) ? 0600 : (unsigned int)edge(0777);
		o->reserved[0] = chance(90) ? 0 : edge(1);
		o->reserved[1] = chance(90) ? 0 : edge(1);
		break;
	}
	case KVTIER_IOC_REGION_UNLINK:
		gen_name(a, 0);
		break;
	case KVTIER_IOC_REGION_LIST: {
		struct kvtier_region_list *l = a;

		switch (below(5)) {
		case 0:
			l->entries = 0;
			break;
		case 1:
			l->entries = 0xffffffff81000000ULL;
			break;
		case 2:
			l->entries = (uintptr_t)z->ro;
			break;
		case 3:	/* the last entry crosses into the guard page */
			l->entries = (uintptr_t)(z->scratch + SCRATCH - 60);
			break;
		default:
			l->entries = (uintptr_t)(z->scratch + below(64));
		}
		l->count = (unsigned int)(chance(50) ? below(8) : edge(4096));
		l->reserved = chance(85) ? 0 : (unsigned int)rnd();
		break;
	}
	case KVTIER_IOC_REGION_SETFLAGS: {
		struct kvtier_region_flags *f = a;

		gen_name(f->name, 1);
		f->set = gen_flags(KVTIER_REGION_PINNED);
		f->clear = gen_flags(KVTIER_REGION_PINNED);
		f->reserved = chance(90) ? 0 : edge(1);
		break;
	}
	case KVTIER_IOC_GPU_REGISTER:
	case KVTIER_IOC_GPU_UNREGISTER: {
		struct kvtier_gpu_range *g = a;

		switch (below(4)) {
		case 0:
			g->va = (uintptr_t)z->map + below(VU_LEN / PAGE) * PAGE;
			break;
		case 1:
			g->va = (uintptr_t)z->map + below(PAGE);
			break;
		default:
			g->va = edge(0x7f0000000000ULL);
		}
		g->length = chance(40) ? below(VU_LEN + 1) : edge(VU_LEN);
		g->mode = chance(80) ? 1 + below(2) : (unsigned int)edge(2);
		g->flags = chance(85) ? 0 : (unsigned int)rnd();
		memset(g->tenant, 0, sizeof(g->tenant));
		if (chance(50)) {
			size_t n = below(chance(80) ? 32 : 33);

			for (i = 0; i < n && i < sizeof(g->tenant); i++)
				g->tenant[i] = (char)(chance(90) ? 0x21 + below(0x5e) : rnd());
		}
		g->reserved[0] = chance(90) ? 0 : rnd();
		g->reserved[1] = chance(90) ? 0 : rnd();
		break;
	}
	}
}

/* Documented errnos of @cmd on a tier file. */
static int allowed(unsigned int cmd, int err)
{
	static const struct { unsigned int cmd; int errs[12]; } tab[] = {
		{ KVTIER_IOC_TIER_INFO, { EFAULT } },
		{ KVTIER_IOC_REGION_CREATE, { EFAULT, EINVAL, EEXIST, ENODEV, ENOSPC,
					      EDQUOT, ENOMEM } },
		{ KVTIER_IOC_PIN, { ENXIO, EINVAL, EDQUOT, ENOSPC, EIO, ENOMEM, ENOBUFS,
				     EFAULT } },
		{ KVTIER_IOC_UNPIN, { ENXIO, EINVAL, EFAULT } },
		{ KVTIER_IOC_REGION_OPEN, { EINVAL, EBUSY, ENODEV, ENOENT, EEXIST,
					    EACCES, ENOSPC, EDQUOT, EIO, EFAULT,
					    ENOMEM } },
		{ KVTIER_IOC_REGION_UNLINK, { EPERM, ENOENT, EINVAL, EFAULT, EIO } },
		{ KVTIER_IOC_REGION_LIST, { EINVAL, EFAULT, ENOMEM } },
		{ KVTIER_IOC_REGION_SETFLAGS, { EINVAL, ENOENT, EPERM, EIO, EFAULT } },
		{ KVTIER_IOC_REGION_INFO, { ENXIO, EFAULT } },
		{ KVTIER_IOC_GPU_REGISTER, { EINVAL, EEXIST, ENOSPC, EFAULT, ENOMEM } },
		{ KVTIER_IOC_GPU_UNREGISTER, { ENOENT, EINVAL, EFAULT } },
	};
	unsigned int i, j;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (tab[i].cmd != cmd)
			continue;
		for (j = 0; j < 12 && tab[i].errs[j]; j++)
			if (tab[i].errs[j] == err)
				return 1;
		return 0;
	}
	return err == ENOTTY;	/* not a kvtier ioctl */
}

static int is_known(unsigned int cmd)
{
	unsigned int i;

	for (i = 0; i < NR_KNOWN; i++)
		if (known_cmds[i] == cmd)
			return 1;
	return 0;
}

/* Reopen the kind of file @k fresh (it got bound, or is the closed one). */
static int reopen(struct fz *z, int k)
{
	if (z->fd[k] >= 0)
		close(z->fd[k]);
	z->fd[k] = kvt_tier_open(0, k == FD_TIER_RDONLY ? O_RDONLY : O_RDWR);
	return z->fd[k];
}

/*
 * Undo what a successful call did. Returns NULL, or why the success
 * itself is wrong.
 */
static const char *undo(struct fz *z, int k, unsigned int cmd, const void *a)
{
	const struct kvtier_region_open *o = a;
	struct kvtier_gpu_range g;
	struct kvtier_region_flags f;

	switch (cmd) {
	case KVTIER_IOC_REGION_CREATE:
		if (k != FD_UNBOUND && k != FD_TIER_RDONLY)
			return "REGION_CREATE succeeded on a bound file";
		return reopen(z, k) < 0 ? "reopen" : NULL;
	case KVTIER_IOC_REGION_OPEN:
		if (k != FD_UNBOUND && k != FD_TIER_RDONLY)
			return "REGION_OPEN succeeded on a bound file";
		if (!victim_name(o->name) && kvt_unlink_name(z->admin, o->name))
			return "could not unlink a name the fuzzer created";
		return reopen(z, k) < 0 ? "reopen" : NULL;
	case KVTIER_IOC_REGION_UNLINK:
		return "REGION_UNLINK succeeded: no fuzzer name should exist";
	case KVTIER_IOC_REGION_SETFLAGS:
		memset(&f, 0, sizeof(f));
		strcpy(f.name, VP_NAME);
		f.clear = KVTIER_REGION_PINNED;
		if (strncmp(((const struct kvtier_region_flags *)a)->name, VP_NAME,
			    KVTIER_NAME_MAX))
			return "SETFLAGS succeeded on a region that is not persistent";
		return ioctl(z->admin, KVTIER_IOC_REGION_SETFLAGS, &f) ?
			"could not restore the flags" : NULL;
	case KVTIER_IOC_PIN:
		return ioctl(z->fd[k], KVTIER_IOC_UNPIN, a) ? "could not unpin" : NULL;
	case KVTIER_IOC_GPU_REGISTER:
		memcpy(&g, a, sizeof(g));
		return ioctl(z->fd[k], KVTIER_IOC_GPU_UNREGISTER, &g) ?
			"could not unregister" : NULL;
	case KVTIER_IOC_GPU_UNREGISTER:
		return "GPU_UNREGISTER succeeded: nothing stays registered";
	}
	return NULL;
}

FIXTURE(fz) {
	struct fz z;
};

FIXTURE_SETUP(fz)
{
	struct kvtier_region_create c = { .size = VU_LEN };
	struct kvtier_tier_info ti;
	struct fz *z = &self->z;
	unsigned char *buf;
	unsigned char *g;
	int i, fd;

	for (i = 0; i < FD_KINDS; i++)
		z->fd[i] = -1;
	z->admin = -1;
	if (kvt_missing())
		SKIP(return, "%s", kvt_missing());
	ASSERT_FALSE(kvt_loaded());
	ASSERT_EQ(0, kvt_load(""));
	ASSERT_EQ(0, kvt_tier_write(0, "format", kvt_ns("KVTIER_NS0")));
	ASSERT_EQ(0, kvt_knob(0, "host_budget_mb", 64));
	z->admin = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(z->admin, 0);
	ASSERT_EQ(0, ioctl(z->admin, KVTIER_IOC_TIER_INFO, &ti));
	z->capacity = ti.capacity_bytes;

	buf = malloc(VU_LEN);
	ASSERT_NE(NULL, buf);
	z->fd[FD_UNBOUND] = kvt_tier_open(0, O_RDWR);
	z->fd[FD_TIER_RDONLY] = kvt_tier_open(0, O_RDONLY);
	z->fd[FD_UNNAMED] = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, ioctl(z->fd[FD_UNNAMED], KVTIER_IOC_REGION_CREATE, &c));
	kvt_fill(buf, VU_LEN, 0, 7);
	ASSERT_EQ((ssize_t)VU_LEN, pwrite(z->fd[FD_UNNAMED], buf, VU_LEN, 0));
	z->map = mmap(NULL, VU_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
		      z->fd[FD_UNNAMED], 0);
	ASSERT_NE(MAP_FAILED, z->map);

	z->fd[FD_NAMED] = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, kvt_bind_name(z->fd[FD_NAMED], VN_NAME, VN_LEN,
			       KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL, 0644));
	kvt_fill(buf, VN_LEN, 0, 8);
	ASSERT_EQ((ssize_t)VN_LEN, pwrite(z->fd[FD_NAMED], buf, VN_LEN, 0));
	z->fd[FD_NAMED_RO] = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, kvt_bind_name(z->fd[FD_NAMED_RO], VN_NAME, 0, KVTIER_OPEN_RDONLY, 0));

	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, kvt_bind_name(fd, VP_NAME, VP_LEN, KVTIER_OPEN_CREATE |
			       KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT, 0600));
	kvt_fill(buf, VP_LEN, 0, 9);
	ASSERT_EQ((ssize_t)VP_LEN, pwrite(fd, buf, VP_LEN, 0));
	ASSERT_EQ(0, fsync(fd));
	close(fd);
	free(buf);

	z->fd[FD_FILE] = open("/tmp/kvt-fuzz-file", O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	z->fd[FD_NULL] = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* A number that names no file (high: reopening never reuses it). */
	z->fd[FD_CLOSED] = 1000;
	ASSERT_EQ(-1, fcntl(z->fd[FD_CLOSED], F_GETFD));
	for (i = 0; i < FD_KINDS; i++)
		ASSERT_GE(z->fd[i], 0);

	/* guard | scratch | guard | read-only page | unmapped page */
	g = mmap(NULL, SCRATCH + 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, g);
	z->scratch = g + PAGE;
	ASSERT_EQ(0, mprotect(z->scratch, SCRATCH, PROT_READ | PROT_WRITE));
	z->ro = g + PAGE + SCRATCH + PAGE;
	ASSERT_EQ(0, mprotect(z->ro, PAGE, PROT_READ | PROT_WRITE));
	memset(z->ro, 0, PAGE);
	ASSERT_EQ(0, mprotect(z->ro, PAGE, PROT_READ));
	z->unmapped = z->ro + PAGE;
	ASSERT_EQ(0, munmap(z->unmapped, PAGE));
}

FIXTURE_TEARDOWN_PARENT(fz)
{
	int fd;

	if (!kvt_loaded())
		return;
	fd = kvt_tier_open(0, O_RDWR);
	if (fd >= 0) {
		kvt_unlink_name(fd, VN_NAME);
		kvt_unlink_name(fd, VP_NAME);
		close(fd);
	}
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_stat(0, "resident_pages"));
	EXPECT_EQ(0, kvt_unload());
}

/* The last calls, printed when something goes wrong. */
struct call {
	unsigned long long iter;
	int kind, ret, err;
	unsigned int cmd;
	const char *argk;
	unsigned char arg[128];
	size_t size;
};

#define RING	16

static void dump_calls(struct __test_metadata *_metadata, const struct call *r,
		       unsigned long long n)
{
	unsigned long long i;
	char hex[2 * 128 + 1];
	size_t j;

	for (i = n > RING ? n - RING : 0; i < n; i++) {
		const struct call *c = &r[i % RING];

		for (j = 0; j < c->size && j < 128; j++)
			sprintf(hex + 2 * j, "%02x", c->arg[j]);
		hex[2 * j] = '\0';
		TH_LOG("call %llu: fd %s cmd 0x%08x arg %s -> %d (%s) [%s]", c->iter,
		       fd_names[c->kind], c->cmd, c->argk, c->ret,
		       c->ret ? strerror(c->err) : "ok", hex);
	}
}

/* One seed's @iters random ioctls; the region list etc. checked every 500. */
static void fuzz_ioctls(struct __test_metadata *_metadata, struct fz *z,
			unsigned long long seed, unsigned long long iters)
{
	struct snapshot now;
	static struct call ring[RING];
	unsigned long long it;
	const char *why;
	unsigned int cmd, size;
	unsigned char a[4096];
	void *p;
	int k, ret, err, bad_ptr;

	rng_state = seed;
	TH_LOG("seed %llu, %llu iterations (replay: KVTIER_FUZZ_SEED=%llu KVTIER_FUZZ_ITERS=%llu)",
	       seed, iters, seed, iters);
	ASSERT_EQ(-1, victims_intact(z));
	ASSERT_EQ(0, snap(z->admin, &z->base));
	ASSERT_EQ(2U, z->base.n);

	for (it = 0; it < iters; it++) {
		struct call *c = &ring[it % RING];

		k = below(FD_KINDS);
		if (k == FD_CLOSED && chance(80))
			k = FD_UNBOUND;
		if (chance(85)) {
			cmd = known_cmds[below(NR_KNOWN)];
		} else {
			/* Our magic, any number, direction and size. */
			cmd = _IOC(below(4), KVTIER_IOC_MAGIC,
				   chance(50) ? below(16) : below(256), below(1 << 14));
		}
		size = _IOC_SIZE(cmd);
		if (size > sizeof(a))
			size = sizeof(a);
		memset(a, 0, sizeof(a));
		gen_arg(z, cmd, a, size);

		bad_ptr = 1;
		switch (below(12)) {
		case 0:
			p = NULL;
			c->argk = "NULL";
			break;
		case 1:
			p = (void *)0xffffffff81000000ULL;
			c->argk = "kernel";
			break;
		case 2:
			p = z->unmapped;
			c->argk = "unmapped";
			break;
		case 3:
			/* Readable copy of the argument, not writable. */
			mprotect(z->ro, PAGE, PROT_READ | PROT_WRITE);
			memcpy(z->ro, a, size);
			mprotect(z->ro, PAGE, PROT_READ);
			p = z->ro;
			c->argk = "read-only";
			bad_ptr = -1;	/* bad only for results */
			break;
		case 4:
			/* Straddles into the guard page. */
			p = z->scratch + SCRATCH - (size > 1 ? size / 2 : 0);
			memcpy(p, a, size / 2);
			c->argk = "straddling";
			bad_ptr = size > 1;
			break;
		case 5:
			p = (void *)(uintptr_t)rnd();
			c->argk = "random";
			bad_ptr = 0;	/* anything may be there */
			break;
		default:
			p = z->scratch + SCRATCH / 2 + below(8);
			memcpy(p, a, size);
			c->argk = "valid";
			bad_ptr = 0;
		}
		if (bad_ptr < 0)	/* results only: a pure _IOR */
			bad_ptr = _IOC_DIR(cmd) == _IOC_READ;

		ret = ioctl(z->fd[k], cmd, p);
		err = ret ? errno : 0;
		c->iter = it;
		c->kind = k;
		c->cmd = cmd;
		c->ret = ret;
		c->err = err;
		c->size = size;
		memcpy(c->arg, a, size < 128 ? size : 128);
		z->calls++;
		if (!ret) {
			z->ok++;
		} else if (err < 256) {
			z->by_errno[err]++;
		}

		why = NULL;
		if (k == FD_CLOSED) {
			if (!ret || err != EBADF)
				why = "a closed descriptor did not give EBADF";
		} else if (k == FD_FILE || k == FD_NULL) {
			if (!ret || err != ENOTTY)
				why = "a file that is no tier did not give ENOTTY";
		} else if (!is_known(cmd)) {
			if (!ret || err != ENOTTY)
				why = "an unknown command did not give ENOTTY";
		} else if (ret && !allowed(cmd, err)) {
			why = "an undocumented errno";
		} else if (bad_ptr && !(ret && (err == EFAULT ||
			  (cmd == KVTIER_IOC_REGION_INFO && err == ENXIO)))) {
			/* LIST copies the argument in first: its entries may be bad too. */
			why = "a bad pointer did not give EFAULT";
		} else if (!ret) {
			/* What succeeded read its argument where it pointed. */
			memcpy(a, p, size);
			if (cmd == KVTIER_IOC_REGION_LIST && p == z->ro)
				why = "REGION_LIST wrote its result to read-only memory";
			else
				why = undo(z, k, cmd, a);
		}
		if (why) {
			dump_calls(_metadata, ring, it + 1);
			TH_LOG("iteration %llu (seed %llu): %s", it, seed, why);
			ASSERT_TRUE(0);
		}
		if (it % 500 == 499 || it + 1 == iters) {
			ASSERT_EQ(0, snap(z->admin, &now));
			why = snap_diff(&z->base, &now);
			if (why) {
				dump_calls(_metadata, ring, it + 1);
				TH_LOG("after iteration %llu (seed %llu): %s changed", it, seed, why);
				ASSERT_TRUE(0);
			}
			ret = victims_intact(z);
			if (ret != -1) {
				dump_calls(_metadata, ring, it + 1);
				TH_LOG("after iteration %llu (seed %llu): the bytes of victim %d changed",
				       it, seed, ret);
				ASSERT_TRUE(0);
			}
		}
	}
}

TEST_F_TIMEOUT(fz, ioctls, 1200)
{
	struct fuzz_run runs[MAX_RUNS];
	struct fz *z = &self->z;
	int n, k;

	n = fuzz_runs(_metadata, "ioctls", "KVTIER_FUZZ_ITERS", 20000, runs);
	ASSERT_LT(0, n);
	for (k = 0; k < n; k++)
		fuzz_ioctls(_metadata, z, runs[k].seed, runs[k].iters);
	TH_LOG("%llu calls, %llu succeeded (undone); EFAULT %llu EINVAL %llu ENOTTY %llu ENOENT %llu ENXIO %llu EBADF %llu EEXIST %llu EBUSY %llu EACCES %llu",
	       z->calls, z->ok, z->by_errno[EFAULT], z->by_errno[EINVAL],
	       z->by_errno[ENOTTY], z->by_errno[ENOENT], z->by_errno[ENXIO],
	       z->by_errno[EBADF], z->by_errno[EEXIST], z->by_errno[EBUSY],
	       z->by_errno[EACCES]);
	munmap(z->map, VU_LEN);
	for (k = 0; k < FD_KINDS; k++)
		if (k != FD_CLOSED)
			close(z->fd[k]);
	close(z->admin);
}

/* ------------------------------------------------------------------ */
/* hostile users                                                       */

#define HU_GID		4242		/* the udev rule's "kvtier" group */
#define HU_VICTIM	4101		/* uid of the victim process */
#define HU_ATTACKERS	4		/* uids HU_VICTIM + 1 ... */
#define HU_LEN		(2 * MiB)
#define HU_PIN		(256 * 1024ULL)
#define HU_SEED		61
#define HU_SLOTS	4
#define HU_SECONDS	240		/* the bound on one run's wall time */

static const char * const hu_names[] = {
	"victim:kv", "shared:a", "shared:b", "own:x", "own:y", VN_NAME, VP_NAME,
};

struct hu_shared {
	volatile int stop;		/* set by the test when attackers are done */
	volatile long long rounds;	/* victim verification rounds */
};

/*
 * In a forked child: let go of what the test (root) holds - its files and
 * its mapping of the unnamed victim - and become @uid in the kvtier group.
 */
static void hu_become(struct fz *z, uid_t uid)
{
	gid_t g = HU_GID;
	int k;

	munmap(z->map, VU_LEN);
	for (k = 0; k < FD_KINDS; k++)
		if (k != FD_CLOSED)
			close(z->fd[k]);
	close(z->admin);
	if (kvt_become(uid, uid, &g, 1))
		_exit(99);
}

/*
 * The victim: a private region (0600) of a pattern it keeps checking, by
 * its mapping and by pread, with its first HU_PIN bytes pinned, until the
 * test says stop; then once more from the namespace. Exit status: 0, or
 * where it saw wrong bytes or lost its pin.
 */
static int hu_victim(struct fz *z, struct hu_shared *sh)
{
	static unsigned char buf[HU_LEN];
	struct kvtier_pin pin = { .offset = 0, .length = HU_PIN };
	struct kvtier_region_info ri;
	unsigned char *p;
	int fd;

	hu_become(z, HU_VICTIM);
	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0 || kvt_bind_name(fd, "victim:kv", HU_LEN,
				KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL, 0600))
		return 1;
	p = mmap(NULL, HU_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 2;
	kvt_fill(p, HU_LEN, 0, HU_SEED);
	if (fsync(fd) || ioctl(fd, KVTIER_IOC_PIN, &pin))
		return 3;
	sh->rounds = 1;		/* ready */
	while (!sh->stop) {
		if (kvt_check(p, HU_LEN, 0, HU_SEED) != -1)
			return 4;
		if (pread(fd, buf, HU_LEN, 0) != (ssize_t)HU_LEN ||
		    kvt_check(buf, HU_LEN, 0, HU_SEED) != -1)
			return 5;
		if (kvt_region_info(fd, &ri) || ri.pinned < HU_PIN)
			return 6;
		sh->rounds++;
	}
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) ||
	    kvt_check(p, HU_LEN, 0, HU_SEED) != -1)
		return 7;
	munmap(p, HU_LEN);
	close(fd);
	return 0;
}

struct hu_map {
	unsigned char *p;
	size_t len;
	int writable;
};

/*
 * One attacker: @iters random operations on its own files - REGION_OPEN
 * of the others' names with every flag, creates, mmap/munmap, pin/unpin,
 * fadvise, pread/pwrite, fsync, unlink, setflags, list, random ioctls -
 * and every ioctl's errno must be one it documents. Exit status: 0, or
 * 10 + the operation that returned an undocumented errno.
 */
static int hu_attacker(struct fz *z, unsigned int who, unsigned long long seed,
		       unsigned long long iters)
{
	static unsigned char buf[256 * 1024];
	static unsigned char arg[256];
	struct hu_map maps[HU_SLOTS] = { 0 };
	int fd[HU_SLOTS], op, k, j, ret, err;
	unsigned long long it;

	hu_become(z, HU_VICTIM + 1 + who);
	rng_state = seed ^ (0x9e3779b97f4a7c15ULL * (who + 1));
	for (k = 0; k < HU_SLOTS; k++)
		fd[k] = kvt_tier_open(0, O_RDWR);
	for (it = 0; it < iters; it++) {
		struct kvtier_region_open o = { 0 };
		struct kvtier_pin pn = { 0 };
		unsigned int cmd = 0;

		k = below(HU_SLOTS);
		op = below(13);
		ret = 0;
		switch (op) {
		case 0:		/* a fresh file */
			if (maps[k].p)
				munmap(maps[k].p, maps[k].len);
			maps[k].p = NULL;
			close(fd[k]);
			fd[k] = kvt_tier_open(0, chance(80) ? O_RDWR : O_RDONLY);
			break;
		case 1:		/* bind by name, any flags */
			strcpy(o.name, hu_names[below(sizeof(hu_names) / sizeof(hu_names[0]))]);
			o.size = chance(70) ? (1 + below(HU_LEN / PAGE)) * PAGE : edge(HU_LEN);
			o.flags = (unsigned int)below(32);
			o.mode = chance(50) ? 0666 : (unsigned int)below(01000);
			cmd = KVTIER_IOC_REGION_OPEN;
			ret = ioctl(fd[k], cmd, &o);
			break;
		case 2: {
			struct kvtier_region_create c = {
				.size = chance(90) ? (1 + below(64)) * PAGE : edge(z->capacity),
			};

			cmd = KVTIER_IOC_REGION_CREATE;
			ret = ioctl(fd[k], cmd, &c);
			break;
		}
		case 3:		/* map, and write through it if we may */
			if (maps[k].p) {
				munmap(maps[k].p, maps[k].len);
				maps[k].p = NULL;
				break;
			}
			maps[k].len = (1 + below(64)) * PAGE;
			maps[k].writable = 1;
			maps[k].p = mmap(NULL, maps[k].len, PROT_READ | PROT_WRITE,
					 MAP_SHARED, fd[k], 0);
			if (maps[k].p == MAP_FAILED) {
				maps[k].writable = 0;
				maps[k].p = mmap(NULL, maps[k].len, PROT_READ,
						 MAP_SHARED, fd[k], 0);
			}
			if (maps[k].p == MAP_FAILED) {
				maps[k].p = NULL;
				break;
			}
			for (j = 0; j < 8; j++) {
				unsigned char *at = maps[k].p + below(maps[k].len);

				if (maps[k].writable && chance(50))
					kvt_store_or_sigbus(at, (unsigned char)rnd());
				else
					kvt_touch_or_sigbus(at);
			}
			break;
		case 4:
		case 5:
			pn.offset = chance(80) ? below(64) * PAGE : edge(HU_LEN);
			pn.length = chance(80) ? (1 + below(64)) * PAGE : edge(HU_LEN);
			cmd = op == 4 ? KVTIER_IOC_PIN : KVTIER_IOC_UNPIN;
			ret = ioctl(fd[k], cmd, &pn);
			break;
		case 6: {
			static const int adv[] = {
				POSIX_FADV_NORMAL, POSIX_FADV_WILLNEED,
				POSIX_FADV_DONTNEED, POSIX_FADV_SEQUENTIAL,
			};

			posix_fadvise(fd[k], below(64) * PAGE,
				      chance(20) ? 0 : (1 + below(64)) * PAGE,
				      adv[below(4)]);
			break;
		}
		case 7:
			if (chance(50)) {
				kvt_fill(buf, sizeof(buf), 0, rnd());
				if (pwrite(fd[k], buf, 1 + below(sizeof(buf)), below(64) * PAGE) < 0)
					(void)errno;
			} else if (pread(fd[k], buf, 1 + below(sizeof(buf)), below(64) * PAGE) < 0) {
				(void)errno;
			}
			break;
		case 8:
			if (fsync(fd[k]))
				(void)errno;
			break;
		case 9: {
			struct kvtier_region_name n = { 0 };

			strcpy(n.name, hu_names[below(sizeof(hu_names) / sizeof(hu_names[0]))]);
			cmd = KVTIER_IOC_REGION_UNLINK;
			ret = ioctl(fd[k], cmd, &n);
			break;
		}
		case 10: {
			struct kvtier_region_flags f = { 0 };

			strcpy(f.name, hu_names[below(sizeof(hu_names) / sizeof(hu_names[0]))]);
			f.set = chance(50) ? KVTIER_REGION_PINNED : 0;
			f.clear = f.set ? 0 : KVTIER_REGION_PINNED;
			cmd = KVTIER_IOC_REGION_SETFLAGS;
			ret = ioctl(fd[k], cmd, &f);
			break;
		}
		case 11: {
			struct kvtier_region_entry e[8];
			struct kvtier_region_list l = {
				.entries = (uintptr_t)e, .count = below(9),
			};

			cmd = KVTIER_IOC_REGION_LIST;
			ret = ioctl(fd[k], cmd, &l);
			break;
		}
		default:	/* any known command, random bytes */
			cmd = known_cmds[below(sizeof(known_cmds) / sizeof(known_cmds[0]))];
			gen_arg(z, cmd, arg, _IOC_SIZE(cmd) < sizeof(arg) ?
				_IOC_SIZE(cmd) : sizeof(arg));
			ret = ioctl(fd[k], cmd, arg);
			break;
		}
		err = errno;
		if (cmd && ret && !allowed(cmd, err)) {
			fprintf(stderr, "# attacker %u op %d (iteration %llu): ioctl 0x%x: %s\n",
				who, op, it, cmd, strerror(err));
			return 10 + op;
		}
	}
	for (k = 0; k < HU_SLOTS; k++) {
		if (maps[k].p)
			munmap(maps[k].p, maps[k].len);
		close(fd[k]);
	}
	return 0;
}

/* Remove every named region the attackers left behind. */
static void hu_cleanup(int admin)
{
	unsigned int i;

	for (i = 0; i < sizeof(hu_names) / sizeof(hu_names[0]); i++)
		if (!victim_name(hu_names[i]))
			kvt_unlink_name(admin, hu_names[i]);
}

/*
 * Several unprivileged users at once against one victim process and the
 * fixture's root-owned victims: the victim's bytes and pin hold, the
 * root victims are intact, every errno is documented, and the guest's
 * kernel log stays clean (tests/run-suite.sh checks it).
 */
static void fuzz_hostile(struct __test_metadata *_metadata, struct fz *z,
			 unsigned long long seed, unsigned long long iters)
{
	struct hu_shared *sh;
	pid_t victim, att[HU_ATTACKERS];
	long long t0 = kvt_now_ms();
	int status, i;

	TH_LOG("seed %llu, %d attackers x %llu operations (replay: KVTIER_FUZZ_SEED=%llu KVTIER_FUZZ_HOSTILE_ITERS=%llu)",
	       seed, HU_ATTACKERS, iters, seed, iters);
	sh = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	victim = fork();
	ASSERT_GE(victim, 0);
	if (!victim)
		_exit(hu_victim(z, sh));
	while (!sh->rounds && waitpid(victim, &status, WNOHANG) == 0)
		usleep(10000);
	ASSERT_NE(0, sh->rounds);
	for (i = 0; i < HU_ATTACKERS; i++) {
		att[i] = fork();
		ASSERT_GE(att[i], 0);
		if (!att[i])
			_exit(hu_attacker(z, i, seed, iters));
	}
	for (i = 0; i < HU_ATTACKERS; i++) {
		ASSERT_EQ(att[i], waitpid(att[i], &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	sh->stop = 1;
	ASSERT_EQ(victim, waitpid(victim, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	TH_LOG("victim checked its region %lld times; %lld ms", sh->rounds,
	       kvt_now_ms() - t0);
	EXPECT_LT(kvt_now_ms() - t0, HU_SECONDS * 1000LL);
	EXPECT_EQ(-1, victims_intact(z));
	/* Nobody else could unlink it. */
	ASSERT_EQ(0, kvt_unlink_name(z->admin, "victim:kv"));
	hu_cleanup(z->admin);
	munmap(sh, PAGE);
}

TEST_F_TIMEOUT(fz, hostile_users, 900)
{
	struct fuzz_run runs[MAX_RUNS];
	struct fz *z = &self->z;
	int n, k;

	ASSERT_EQ(0, chown("/dev/kvtier0", 0, HU_GID));
	ASSERT_EQ(0, chmod("/dev/kvtier0", 0660));
	n = fuzz_runs(_metadata, "hostile_users", "KVTIER_FUZZ_HOSTILE_ITERS", 6000, runs);
	ASSERT_LT(0, n);
	for (k = 0; k < n; k++)
		fuzz_hostile(_metadata, z, runs[k].seed, runs[k].iters);
	munmap(z->map, VU_LEN);
	for (k = 0; k < FD_KINDS; k++)
		if (k != FD_CLOSED)
			close(z->fd[k]);
	close(z->admin);
}

/* ------------------------------------------------------------------ */
/* sysfs                                                               */

struct knob {
	const char *name;
	unsigned long long min, max, align;	/* max 0: total RAM in MiB */
};

static const struct knob knobs[] = {
	{ "host_budget_mb", 1, 0, 1 },
	{ "watermark_high", 1, 100, 1 },
	{ "watermark_low", 0, 99, 1 },
	{ "dirty_background_pct", 0, 99, 1 },
	{ "readahead_kb", 0, 1024, 4 },
	{ "writeback_batch_kb", 4, 65536, 4 },
	{ "max_inflight_kb", 4, 1048576, 4 },
	{ "pin_budget_mb", 0, 0, 1 },
	{ "user_pin_mb", 0, 0, 1 },
	{ "discard", 0, 1, 1 },
	{ "checksum", 0, 1, 1 },
	{ "user_quota_mb", 0, 2147483647, 1 },
	{ "max_regions", 0, 2147483647, 1 },
	{ "user_max_regions", 0, 2147483647, 1 },
};
#define NR_KNOBS	(sizeof(knobs) / sizeof(knobs[0]))

static unsigned long long ram_mb(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb / 1024;
}

/*
 * kstrtouint(s, 0) as sysfs hands it the bytes: up to the first NUL, an
 * optional '+', 0x for hex, 0 for octal, digits, one optional newline.
 * 0 and *v, or -1.
 */
static int model_parse(const unsigned char *b, size_t n, unsigned long long *v)
{
	unsigned long long x = 0;
	unsigned int base = 10, d, digits = 0;
	size_t i = 0, end = 0;

	while (end < n && b[end])
		end++;
	if (i < end && b[i] == '+')
		i++;
	if (i + 2 < end + 0 && b[i] == '0' && (b[i + 1] | 0x20) == 'x' &&
	    isxdigit(b[i + 2])) {
		base = 16;
		i += 2;
	} else if (i < end && b[i] == '0') {
		base = 8;
	}
	for (; i < end; i++, digits++) {
		if (b[i] >= '0' && b[i] <= '9')
			d = b[i] - '0';
		else if (base == 16 && isxdigit(b[i]))
			d = (b[i] | 0x20) - 'a' + 10;
		else
			break;
		if (d >= base)
			return -1;
		if (x > (0xffffffffULL - d) / base)
			return -1;	/* beyond u32 */
		x = x * base + d;
	}
	if (!digits)
		return -1;
	if (i < end && b[i] == '\n')
		i++;
	if (i != end)
		return -1;
	*v = x;
	return 0;
}

static int gen_value(unsigned char *b, size_t room, const struct knob *k,
		     unsigned long long max)
{
	static const char * const odd[] = {
		"", "\n", " ", "-1", "-0", "+", "0x", "0x\n", "00", "0\n\n", " 1", "1 ",
		"1\n ", "1e3", "１", "0b1", "08", "0X1f", "+0x10", "4294967296",
		"4294967295", "18446744073709551616", "nan", "inf", "\t4",
	};
	unsigned long long v;
	size_t n = 0, i;

	switch (below(8)) {
	case 0: {
		const char *o = odd[below(sizeof(odd) / sizeof(odd[0]))];

		n = strlen(o);
		memcpy(b, o, n);
		break;
	}
	case 1:		/* random bytes, NULs included */
		n = below(32);
		for (i = 0; i < n; i++)
			b[i] = (unsigned char)rnd();
		break;
	case 2:		/* overlong */
		n = 4000 + below(room - 4000);
		memset(b, '0', n);
		b[n - 1] = '1' + below(9);
		break;
	default: {	/* a number at or around a bound */
		static const char * const fmt[] = { "%llu", "%llu\n", "0x%llx", "0%llo",
						    "+%llu", "%llu\n\n", "%llu%c" };
		unsigned long long cand[] = {
			k->min, max, rnd() % (max + 2), k->align, 2 * k->align, 1, 0,
			50, 75, 90,
		};
		unsigned int f = below(sizeof(fmt) / sizeof(fmt[0]));

		v = cand[below(sizeof(cand) / sizeof(cand[0]))];
		v += below(3) - 1;
		if (f == 6) {
			/* a valid number followed by a NUL and junk */
			n = snprintf((char *)b, room, "%llu", v);
			b[n++] = '\0';
			n += snprintf((char *)b + n, room - n, "junk");
		} else {
			n = snprintf((char *)b, room, fmt[f], v);
		}
	}
	}
	return (int)n;
}

static long long knob_value(const char *name)
{
	return kvt_tier_num(0, name);
}

/* One seed's @iters knob writes, then 300 random backing_dev/format paths. */
static void fuzz_sysfs(struct __test_metadata *_metadata,
		       unsigned long long seed, unsigned int iters)
{
	unsigned long long mem = ram_mb(), v, max;
	unsigned int i, refused = 0;
	static unsigned char b[8192];
	char path[128], was_s[64], now_s[64];
	long long was, now, hi, lo;
	ssize_t r;
	int fd, n, j, expect_ok, err;

	rng_state = seed ^ 0x5157f5;
	TH_LOG("seed %llu, %u writes; total RAM %llu MiB (replay: KVTIER_FUZZ_SEED=%llu KVTIER_FUZZ_SYSFS_ITERS=%u)",
	       seed, iters, mem, seed, iters);
	for (i = 0; i < iters; i++) {
		const struct knob *k = &knobs[below(NR_KNOBS)];

		max = k->max ? k->max : mem;
		n = gen_value(b, sizeof(b) - 1, k, max);
		was = knob_value(k->name);
		hi = knob_value("watermark_high");
		lo = knob_value("watermark_low");
		expect_ok = !model_parse(b, n, &v) && v >= k->min && v <= max &&
			    v % k->align == 0;
		if (expect_ok && !strcmp(k->name, "watermark_low") && (long long)v >= hi)
			expect_ok = 0;
		if (expect_ok && !strcmp(k->name, "watermark_high") && (long long)v <= lo)
			expect_ok = 0;
		fd = open(kvt_attr(path, sizeof(path), 0, k->name), O_WRONLY | O_CLOEXEC);
		ASSERT_GE(fd, 0);
		r = write(fd, b, n);
		err = errno;
		close(fd);
		now = knob_value(k->name);
		if (n == 0) {
			ASSERT_EQ(was, now);
			continue;
		}
		if (n >= 4096) {
			/* Longer than a sysfs write takes: refused or a valid value. */
			if (r < 0) {
				ASSERT_TRUE(err == EINVAL || err == E2BIG);
				ASSERT_EQ(was, now);
				refused++;
			} else {
				ASSERT_GE(now, (long long)k->min);
				ASSERT_LE(now, (long long)max);
			}
		} else if (expect_ok != (r == n)) {
			TH_LOG("write %d: %s <- %d bytes '%.*s': returned %zd (%s), model says %s",
			       i, k->name, n, n < 64 ? n : 64, b, r, r < 0 ? strerror(err) : "ok",
			       expect_ok ? "valid" : "invalid");
			ASSERT_TRUE(0);
		} else if (r < 0) {
			ASSERT_EQ(EINVAL, err);
			ASSERT_EQ(was, now);
			refused++;
		} else {
			ASSERT_EQ((long long)v, now);
		}
		if (now != was) {
			snprintf(was_s, sizeof(was_s), "%lld", was);
			/* Restore (the watermarks in an order that keeps low < high). */
			if (kvt_tier_write(0, k->name, was_s)) {
				snprintf(now_s, sizeof(now_s), "%lld", hi);
				kvt_tier_write(0, "watermark_high", now_s);
				snprintf(now_s, sizeof(now_s), "%lld", lo);
				kvt_tier_write(0, "watermark_low", now_s);
				ASSERT_EQ(0, kvt_tier_write(0, k->name, was_s));
			}
		}
	}
	TH_LOG("%u of %u writes refused", refused, iters);

	/* backing_dev and format: random paths, the tier stays attached. */
	for (i = 0; i < 300; i++) {
		const char *attr = chance(50) ? "backing_dev" : "format";
		char p[300];
		struct stat st;

		switch (below(4)) {
		case 0:
			n = below(256);
			for (j = 0; j < n; j++)
				p[j] = (char)rnd();
			break;
		case 1:
			n = snprintf(p, sizeof(p), "%s", chance(50) ? " none\n" : "none");
			break;
		default:
			n = snprintf(p, sizeof(p), "/dev/%s%llx", chance(50) ? "nvme" : "../", rnd());
		}
		p[n] = '\0';
		if (n && strcmp(p, "none") && strcmp(p, " none\n") && !stat(p, &st))
			continue;	/* never a path that exists */
		fd = open(kvt_attr(path, sizeof(path), 0, attr), O_WRONLY | O_CLOEXEC);
		ASSERT_GE(fd, 0);
		r = write(fd, p, n);
		err = errno;
		close(fd);
		if (n && *p)
			ASSERT_EQ(-1, r);
		if (r < 0 && err != EBUSY && err != EINVAL && err != ENOENT &&
		    err != ENAMETOOLONG && err != ENOTDIR) {
			TH_LOG("%s <- '%s': %s", attr, p, strerror(err));
			ASSERT_TRUE(0);
		}
		ASSERT_EQ(0, kvt_tier_read(0, "state", now_s, sizeof(now_s)));
		ASSERT_STREQ("attached", now_s);
	}
}

TEST_F_TIMEOUT(fz, sysfs_knobs, 600)
{
	struct fuzz_run runs[MAX_RUNS];
	struct fz *z = &self->z;
	int n, k;

	n = fuzz_runs(_metadata, "sysfs_knobs", "KVTIER_FUZZ_SYSFS_ITERS", 3000, runs);
	ASSERT_LT(0, n);
	/* No region may be evicted by a budget change: nothing resident. */
	munmap(z->map, VU_LEN);
	for (k = 0; k < FD_KINDS; k++)
		if (k != FD_CLOSED)
			close(z->fd[k]);
	ASSERT_EQ(0, kvt_unlink_name(z->admin, VN_NAME));
	for (k = 0; k < n; k++)
		fuzz_sysfs(_metadata, runs[k].seed, runs[k].iters);
	close(z->admin);
}

/* ------------------------------------------------------------------ */
/* module parameter                                                    */

TEST(num_tiers_at_load)
{
	static const struct { const char *param; int tiers; } cases[] = {
		{ "num_tiers=0", 0 }, { "num_tiers=65", 0 }, { "num_tiers=-1", 0 },
		{ "num_tiers=abc", 0 }, { "num_tiers=", 0 }, { "num_tiers", 0 },
		{ "num_tiers=1x", 0 }, { "num_tiers=4294967297", 0 },
		{ "num_tiers=99999999999999999999999", 0 }, { "num_tiers= 2", 0 },
		{ "num_tiers=1", 1 }, { "num_tiers=64", 64 }, { "num_tiers=0x3", 3 },
		{ "num_tiers=2\n", 2 }, { "num_tiers=+2", 2 }, { "num_tiers=010", 8 },
	};
	unsigned int i;
	char dev[32];
	int ret;

	if (!getenv("KVTIER_KO"))
		SKIP(return, "KVTIER_KO not set");
	ASSERT_FALSE(kvt_loaded());
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ret = kvt_load(cases[i].param);
		if (!cases[i].tiers) {
			if (!ret) {
				TH_LOG("'%s' loaded", cases[i].param);
				kvt_unload();
			}
			ASSERT_EQ(-EINVAL, ret);
			ASSERT_FALSE(kvt_loaded());
			ASSERT_FALSE(kvt_exists("/dev/kvtier0"));
			continue;
		}
		if (ret)
			TH_LOG("'%s': %s", cases[i].param, strerror(-ret));
		ASSERT_EQ(0, ret);
		snprintf(dev, sizeof(dev), "/dev/kvtier%d", cases[i].tiers - 1);
		ASSERT_TRUE(kvt_exists(dev));
		snprintf(dev, sizeof(dev), "/dev/kvtier%d", cases[i].tiers);
		ASSERT_FALSE(kvt_exists(dev));
		ASSERT_EQ(0, kvt_read("/sys/module/kvtier/parameters/num_tiers", dev, sizeof(dev)));
		ASSERT_EQ(cases[i].tiers, atoi(dev));
		ASSERT_EQ(0, kvt_unload());
	}
	/* An unknown parameter is ignored with a log line, as for any module. */
	ret = kvt_load("kvtier_no_such_param=1");
	TH_LOG("an unknown parameter: %s", ret ? strerror(-ret) : "loaded");
	if (!ret) {
		ASSERT_EQ(0, kvt_unload());
	}
}

/* ------------------------------------------------------------------ */
/* on-namespace metadata                                               */

#define IMG		"/tmp/kvt-fuzz.img"
#define IMG_SIZE	(16 * MiB)

static const struct { const char *name; unsigned long long len, seed; } pregions[] = {
	{ "p-small", 64 * 1024, 41 }, { "p-mid", 512 * 1024, 42 }, { "p-big", 1 * MiB, 43 },
};
#define NR_PREG		(sizeof(pregions) / sizeof(pregions[0]))

/* 0 if @len bytes at @p are all zero. */
static int memchr_inv0(const unsigned char *p, size_t len)
{
	while (len--)
		if (*p++)
			return 1;
	return 0;
}

/*
 * The image file is on the guest's tmpfs behind a buffered loop device, so
 * a shared mapping of it is the very page cache the loop device reads and
 * writes: copying an image in or out is a memcpy. (pwrite of 16 MiB, a
 * kernel copy that TCG emulates slowly, took most of the test's time.)
 */
static unsigned char *img_map(void)
{
	int fd = open(IMG, O_RDWR | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, IMG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The golden image of the metadata fuzz, and buffers for each flip. */
struct flips {
	char dev[32];
	unsigned char *map;	/* the image file, mapped shared */
	unsigned char *golden, *img, *after;
	struct kvtier_disk_super sb;
	unsigned long long meta_end;
};

/*
 * One seed's @iters flips of the golden image, each attached. A region
 * whose CRCs a flip of the checkpoint areas or the data slots (version 4:
 * its CRC run) damaged is refused (EUCLEAN): counted, never read.
 */
static void fuzz_flips(struct __test_metadata *_metadata, struct flips *fl,
		       unsigned long long seed, unsigned long long iters)
{
	unsigned char *img = fl->img, page[PAGE];
	unsigned long long it, off;
	unsigned int i, refused = 0, attached = 0, eio_pages = 0, fallbacks = 0, lost = 0, r;
	int older, fd, ret, nflip, mode, j;

	rng_state = seed ^ 0xf11b5;
	TH_LOG("seed %llu, %llu flips (replay: KVTIER_FUZZ_SEED=%llu KVTIER_FUZZ_FLIPS=%llu)",
	       seed, iters, seed, iters);
	for (it = 0; it < iters; it++) {
		memcpy(img, fl->golden, IMG_SIZE);
		mode = below(10);
		nflip = 1 + below(4);
		for (j = 0; j < nflip; j++) {
			if (mode < 3)		/* superblock copies */
				off = below(2 * KVTIER_BLOCK_SIZE);
			else if (mode < 5)	/* superblock header fields */
				off = below(2) * KVTIER_BLOCK_SIZE + below(sizeof(fl->sb));
			else if (mode < 8)	/* checkpoint areas */
				off = 2 * KVTIER_BLOCK_SIZE +
				      below(fl->meta_end - 2 * KVTIER_BLOCK_SIZE);
			else			/* the data slots */
				off = fl->meta_end + below(2 * MiB);
			img[off] ^= 1 << below(8);
		}
		if (mode == 3 || mode == 4) {
			/* Reseal both copies: the checks behind the CRC see it. */
			kvt_super_seal(img);
			kvt_super_seal(img + KVTIER_BLOCK_SIZE);
		}
		memcpy(fl->map, img, IMG_SIZE);
		ret = kvt_tier_write(0, "backing_dev", fl->dev);
		if (ret) {
			if (ret != -EUCLEAN && ret != -EMEDIUMTYPE && ret != -EOPNOTSUPP) {
				TH_LOG("flip %llu (mode %d): attach gave %s", it, mode, strerror(-ret));
				ASSERT_TRUE(0);
			}
			memcpy(fl->after, fl->map, IMG_SIZE);
			if (memcmp(img, fl->after, IMG_SIZE)) {
				TH_LOG("flip %llu (mode %d): a refused attach wrote to the device", it, mode);
				ASSERT_TRUE(0);
			}
			refused++;
			continue;
		}
		attached++;
		/*
		 * A damaged newest checkpoint falls back to the previous
		 * generation: regions or pages synced since may be missing
		 * there (zeros), never other bytes.
		 */
		older = kvt_stat(0, "generation") != (long long)le64toh(fl->sb.generation);
		if (older)
			fallbacks++;
		for (i = 0; i < NR_PREG; i++) {
			fd = kvt_tier_open(0, O_RDWR);
			ASSERT_GE(fd, 0);
			ret = kvt_bind_name(fd, pregions[i].name, 0, 0, 0);
			if (ret) {
				close(fd);
				if (older)
					continue;
				if (ret == -EUCLEAN && mode >= 5) {
					lost++;
					continue;
				}
				TH_LOG("flip %llu (mode %d): region %s not found after attach",
				       it, mode, pregions[i].name);
				ASSERT_TRUE(0);
			}
			for (off = 0; off < pregions[i].len; off += PAGE) {
				ssize_t n = pread(fd, page, PAGE, off);

				if (n < 0 && errno == EIO) {
					eio_pages++;
					continue;
				}
				ASSERT_EQ((ssize_t)PAGE, n);
				if (older && !memchr_inv0(page, PAGE))
					continue;
				if (kvt_check(page, PAGE, off, pregions[i].seed) != -1) {
					TH_LOG("flip %llu (mode %d): %s page %llu has wrong bytes",
					       it, mode, pregions[i].name, off / PAGE);
					ASSERT_TRUE(0);
				}
			}
			close(fd);
		}
		r = kvt_tier_write(0, "backing_dev", "none");
		ASSERT_TRUE(r == 0 || (int)r == -EIO);
	}
	TH_LOG("%llu flips: %u refused (device untouched), %u attached (%u at the previous generation; %u pages EIO, %u regions with damaged CRCs refused, none wrong)",
	       iters, refused, attached, fallbacks, eio_pages, lost);
}

TEST_F_TIMEOUT(fz, metadata_flips, 1200)
{
	struct fuzz_run runs[MAX_RUNS];
	struct fz *z = &self->z;
	struct flips fl;
	unsigned int i;
	int lfd, fd, j, n;

	n = fuzz_runs(_metadata, "metadata_flips", "KVTIER_FUZZ_FLIPS", 120, runs);
	ASSERT_LT(0, n);
	/* The fixture's tier on NS0 is not used here. */
	munmap(z->map, VU_LEN);
	for (j = 0; j < FD_KINDS; j++)
		if (j != FD_CLOSED)
			close(z->fd[j]);
	ASSERT_EQ(0, kvt_unlink_name(z->admin, VN_NAME));
	close(z->admin);
	ASSERT_EQ(0, system("modprobe -q loop"));
	lfd = kvt_loop_attach(IMG, IMG_SIZE, fl.dev, sizeof(fl.dev));
	ASSERT_GE(lfd, 0);
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	ASSERT_EQ(0, kvt_tier_write(0, "format", fl.dev));
	for (i = 0; i < NR_PREG; i++) {
		unsigned char *buf = malloc(pregions[i].len);

		fd = kvt_tier_open(0, O_RDWR);
		ASSERT_EQ(0, kvt_bind_name(fd, pregions[i].name, pregions[i].len,
				       KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT, 0644));
		kvt_fill(buf, pregions[i].len, 0, pregions[i].seed);
		ASSERT_EQ((ssize_t)pregions[i].len, pwrite(fd, buf, pregions[i].len, 0));
		ASSERT_EQ(0, fsync(fd));
		close(fd);
		free(buf);
	}
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
	fl.golden = malloc(IMG_SIZE);
	fl.img = malloc(IMG_SIZE);
	fl.after = malloc(IMG_SIZE);
	ASSERT_NE(NULL, fl.golden);
	ASSERT_NE(NULL, fl.img);
	ASSERT_NE(NULL, fl.after);
	fl.map = img_map();
	ASSERT_NE(NULL, fl.map);
	memcpy(fl.golden, fl.map, IMG_SIZE);
	ASSERT_EQ(0, kvt_super_read(IMG, &fl.sb, NULL));
	fl.meta_end = le64toh(fl.sb.data_start) * KVTIER_BLOCK_SIZE;
	TH_LOG("image: data_start block %llu, generation %llu",
	       (unsigned long long)le64toh(fl.sb.data_start),
	       (unsigned long long)le64toh(fl.sb.generation));
	for (j = 0; j < n; j++)
		fuzz_flips(_metadata, &fl, runs[j].seed, runs[j].iters);
	munmap(fl.map, IMG_SIZE);
	ioctl(lfd, LOOP_CLR_FD, 0);
	close(lfd);
	unlink(IMG);
	free(fl.golden);
	free(fl.img);
	free(fl.after);
	/* The teardown detaches tier 0: give it NS0 back. */
	ASSERT_EQ(0, kvt_tier_write(0, "backing_dev", kvt_ns("KVTIER_NS0")));
}

TEST_HARNESS_MAIN
