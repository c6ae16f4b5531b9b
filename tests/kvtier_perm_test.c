// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile users: an unprivileged user cannot administer a tier (attach,
 * detach, format, knobs, debugfs), reaches /dev/kvtierN only through its
 * group (as the udev rule installs it), cannot open or read another user's
 * private region by any path, and cannot take more of the tier than the
 * user_quota_mb knob allows (EDQUOT), own more regions than user_max_regions,
 * unpin another's pins or pin more than user_pin_mb.
 *
 * Runs as root in the test VM (tests/run-suite.sh); each unprivileged step
 * runs in a forked child that drops to the test's uids and groups.
 */
#include <grp.h>
#include <linux/kvtier.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define KVT_GID	4242		/* stands in for the udev rule's "kvtier" group */
#define ALICE	4001
#define BOB	4002
#define SYSFS	"/sys/class/kvtier/kvtier0/"

/* Run @fn(@arg) as @uid with primary group @uid and, if @in_group, KVT_GID. */
static int as_user(uid_t uid, bool in_group, int (*fn)(void *), void *arg)
{
	static const gid_t groups[1] = { KVT_GID };

	return kvt_as_user(uid, uid, groups, in_group ? 1 : 0, fn, arg);
}

static int create_region(int fd, unsigned long long size)
{
	struct kvtier_region_create rc = { .size = size };

	return ioctl(fd, KVTIER_IOC_REGION_CREATE, &rc) ? -errno : 0;
}

/* open(O_WRONLY) of @path fails with EACCES: the write never happens. */
static bool write_refused(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EACCES;
}

/* What 60-kvtier.rules does: group kvtier, mode 0660. */
KVT_TIER_FIXTURE("", 16, ,
		 ASSERT_EQ(0, chown("/dev/kvtier0", 0, KVT_GID));
		 ASSERT_EQ(0, chmod("/dev/kvtier0", 0660)), );

static int admin_refused(void *arg)
{
	static const char * const attrs[] = {
		"backing_dev", "format", "host_budget_mb", "watermark_high",
		"readahead_kb", "pin_budget_mb", "checksum", "user_quota_mb",
	};
	unsigned int i;
	int fd;

	(void)arg;
	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		char path[128];

		snprintf(path, sizeof(path), SYSFS "%s", attrs[i]);
		if (!write_refused(path))
			return 10 + i;
	}
	/* debugfs (stats, regions, gpu_ranges) is root's. */
	fd = open("/sys/kernel/debug/kvtier/kvtier0/regions", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 || (errno != EACCES && errno != EPERM))
		return 2;
	/* Unloading or loading modules needs CAP_SYS_MODULE. */
	if (!syscall(__NR_delete_module, "kvtier", O_NONBLOCK) || errno != EPERM)
		return 3;
	return 0;
}

/* Knobs, attach, detach and format are root's; nothing changes. */
TEST_F_TIMEOUT(tier, unprivileged_cannot_administer, 300)
{
	char before[256], after[256];

	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", before, sizeof(before)));
	ASSERT_EQ(0, as_user(ALICE, true, admin_refused, NULL));
	ASSERT_EQ(0, kvt_tier_read(0, "backing_dev", after, sizeof(after)));
	ASSERT_STREQ(before, after);
	ASSERT_EQ(16, kvt_tier_num(0, "host_budget_mb"));
	ASSERT_EQ(0, kvt_tier_num(0, "user_quota_mb"));
	ASSERT_TRUE(kvt_loaded());
}

static int use_device(void *arg)
{
	bool expect_ok = *(bool *)arg;
	unsigned char *p;
	int fd = kvt_tier_open(0, O_RDWR);

	if (!expect_ok)
		return fd < 0 && errno == EACCES ? 0 : 1;
	if (fd < 0)
		return 2;
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 3;
	kvt_fill(p, MiB, 0, 21);
	if (posix_fadvise(fd, 0, MiB, POSIX_FADV_DONTNEED))
		return 4;
	if (kvt_check(p, MiB, 0, 21) != -1)
		return 5;
	return 0;
}

/* /dev/kvtier0 is usable through its group only. */
TEST_F_TIMEOUT(tier, device_through_group_only, 300)
{
	bool ok = false;

	ASSERT_EQ(0, as_user(ALICE, false, use_device, &ok));
	ok = true;
	ASSERT_EQ(0, as_user(ALICE, true, use_device, &ok));
}

/* A named region as_user() creates (CREATE|EXCL) and writes a page of. */
struct new_region {
	const char *name;
	unsigned int mode;
	unsigned long long seed;
};

static int creates_region(void *arg)
{
	const struct new_region *nr = arg;
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned char buf[PAGE];

	if (fd < 0 || kvt_bind_name(fd, nr->name, MiB,
				KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL, nr->mode))
		return 1;
	kvt_fill(buf, PAGE, 0, nr->seed);
	if (pwrite(fd, buf, PAGE, 0) != (ssize_t)PAGE)
		return 2;
	/* The named region outlives this process (until unlinked). */
	return 0;
}

static int bob_tries(void *arg)
{
	struct kvtier_region_name rn = { .name = "alice:private" };
	struct kvtier_region_entry e[8];
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = 8 };
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned char buf[PAGE];
	unsigned int i;

	(void)arg;
	if (fd < 0)
		return 1;
	if (kvt_bind_name(fd, "alice:private", 0, 0, 0) != -EACCES)
		return 2;
	if (kvt_bind_name(fd, "alice:private", 0, KVTIER_OPEN_RDONLY, 0) != -EACCES)
		return 3;
	/* A refused bind leaves the file unbound: nothing to read or map. */
	if (pread(fd, buf, PAGE, 0) != -1 || errno != ENXIO)
		return 4;
	if (mmap(NULL, PAGE, PROT_READ, MAP_SHARED, fd, PAGE) != MAP_FAILED)
		return 5;
	if (!ioctl(fd, KVTIER_IOC_REGION_UNLINK, &rn) || errno != EPERM)
		return 6;
	/* The list does not even name it. */
	if (ioctl(fd, KVTIER_IOC_REGION_LIST, &rl))
		return 7;
	for (i = 0; i < rl.count && i < 8; i++)
		if (!strcmp(e[i].name, "alice:private"))
			return 8;
	/* Same name with CREATE: it exists and is not Bob's. */
	if (kvt_bind_name(fd, "alice:private", MiB, KVTIER_OPEN_CREATE, 0600) != -EEXIST)
		return 9;
	/* Asking for another user's region: the mode still says no. */
	if (kvt_bind_name(fd, "alice:private", MiB, KVTIER_OPEN_CREATE |
			  KVTIER_OPEN_SHARED, 0600) != -EACCES)
		return 10;
	close(fd);
	return 0;
}

/* Another user's 0600 region: no bind, no bytes, no unlink. */
TEST_F_TIMEOUT(tier, private_region_stays_private, 300)
{
	struct kvtier_region_name rn = { .name = "alice:private" };
	struct new_region private = { "alice:private", 0600, 22 };
	unsigned char buf[PAGE];
	int fd;

	ASSERT_EQ(0, as_user(ALICE, true, creates_region, &private));
	ASSERT_EQ(0, as_user(BOB, true, bob_tries, NULL));
	/* Alice's bytes are intact; root may read them. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, kvt_bind_name(fd, "alice:private", 0, KVTIER_OPEN_RDONLY, 0));
	ASSERT_EQ((ssize_t)PAGE, pread(fd, buf, PAGE, 0));
	ASSERT_EQ(-1, kvt_check(buf, PAGE, 0, 22));
	close(fd);
	ASSERT_EQ(0, ioctl(self->fd, KVTIER_IOC_REGION_UNLINK, &rn));
}

struct mmap_racer {
	int fd;
	volatile bool stop;
};

/* Shared read-only mappings of racer->fd, as fast as they come. */
static void *mmap_loop(void *arg)
{
	struct mmap_racer *mr = arg;
	void *p;

	while (!mr->stop) {
		p = mmap(NULL, PAGE, PROT_READ, MAP_SHARED, mr->fd, 0);
		if (p != MAP_FAILED)
			munmap(p, PAGE);
	}
	return NULL;
}

/*
 * Bob may read "alice:shared". For 3 s: a fresh O_RDWR file, a thread
 * mapping it, and a read-only bind of the region in the middle of those
 * mmap() calls. Before the fix the bind switched the file's f_mapping
 * between mmap's temporary writable count on the file's own mapping and
 * its release on the region's, and each such race took one writable
 * mapping's worth from the region.
 */
static int bob_races_binds(void *arg)
{
	long long end = kvt_now_ms() + 3000;
	unsigned int *binds = arg;
	struct mmap_racer mr;
	pthread_t t;

	while (kvt_now_ms() < end) {
		mr.fd = kvt_tier_open(0, O_RDWR);
		mr.stop = false;
		if (mr.fd < 0 || pthread_create(&t, NULL, mmap_loop, &mr))
			return 1;
		if (!kvt_bind_name(mr.fd, "alice:shared", 0, KVTIER_OPEN_RDONLY, 0))
			(*binds)++;
		mr.stop = true;
		pthread_join(t, NULL);
		close(mr.fd);
	}
	return *binds ? 0 : 2;
}

static int alice_maps(void *arg)
{
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned char *p;

	if (fd < 0 || kvt_bind_name(fd, "alice:shared", MiB, KVTIER_OPEN_CREATE,
				    0644))
		return 1;
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return errno == EPERM ? 2 : 3;
	kvt_fill(p, MiB, 0, *(int *)arg);
	if (posix_fadvise(fd, 0, MiB, POSIX_FADV_DONTNEED) ||
	    kvt_check(p, MiB, 0, *(int *)arg) != -1)
		return 4;
	munmap(p, MiB);
	close(fd);
	return 0;
}

/*
 * A reader racing binds against mmap() on its own files cannot make the
 * owner's writable mappings of the region fail (EPERM), and the bytes stay.
 */
TEST_F_TIMEOUT(tier, bind_racing_mmap_keeps_owner_writable, 300)
{
	unsigned int binds = 0;
	int seed = 24;

	ASSERT_EQ(0, as_user(ALICE, true, alice_maps, &seed));
	/* Counted in the child's copy; the exit status says if any bound. */
	ASSERT_EQ(0, as_user(BOB, true, bob_races_binds, &binds));
	seed = 25;
	ASSERT_EQ(0, as_user(ALICE, true, alice_maps, &seed));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "alice:shared"));
}

/* Names REGION_LIST gives the caller, in @names (room for 8). */
static int listed(char names[8][KVTIER_NAME_MAX])
{
	struct kvtier_region_entry e[8];
	struct kvtier_region_list rl = { .entries = (unsigned long)e, .count = 8 };
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned int i;

	if (fd < 0 || ioctl(fd, KVTIER_IOC_REGION_LIST, &rl))
		return -1;
	close(fd);
	for (i = 0; i < rl.count && i < 8; i++)
		memcpy(names[i], e[i].name, KVTIER_NAME_MAX);
	return rl.count;
}

static bool has_name(char names[8][KVTIER_NAME_MAX], int n, const char *name)
{
	int i;

	for (i = 0; i < n && i < 8; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static int alice_opens_squatted(void *arg)
{
	char names[8][KVTIER_NAME_MAX];
	unsigned char buf[PAGE];
	int fd = kvt_tier_open(0, O_RDWR);
	int n;

	(void)arg;
	if (fd < 0)
		return 1;
	/* Her engine's "my region": refused, not bound to Bob's bytes. */
	if (kvt_bind_name(fd, "alice:kv", MiB, KVTIER_OPEN_CREATE, 0600) != -EEXIST)
		return 2;
	if (pread(fd, buf, PAGE, 0) != -1 || errno != ENXIO)
		return 3;
	/* SHARED without CREATE, or with EXCL, means nothing: EINVAL. */
	if (kvt_bind_name(fd, "alice:kv", 0, KVTIER_OPEN_SHARED, 0) != -EINVAL ||
	    kvt_bind_name(fd, "alice:kv", MiB, KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL |
			  KVTIER_OPEN_SHARED, 0600) != -EINVAL)
		return 4;
	/* Asked for explicitly, Bob's 0666 region opens, with his bytes. */
	if (kvt_bind_name(fd, "alice:kv", MiB, KVTIER_OPEN_CREATE |
			  KVTIER_OPEN_SHARED, 0600))
		return 5;
	if (pread(fd, buf, PAGE, 0) != (ssize_t)PAGE || kvt_check(buf, PAGE, 0, 26) != -1)
		return 6;
	close(fd);
	/* Her own private region, then CREATE again: hers, so it opens. */
	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0 || kvt_bind_name(fd, "alice:mine", MiB, KVTIER_OPEN_CREATE, 0600))
		return 7;
	close(fd);
	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0 || kvt_bind_name(fd, "alice:mine", MiB, KVTIER_OPEN_CREATE, 0600))
		return 8;
	close(fd);
	/* She lists her own and Bob's 0666 one. */
	n = listed(names);
	if (n != 2 || !has_name(names, n, "alice:kv") || !has_name(names, n, "alice:mine"))
		return 9;
	return 0;
}

static int bob_lists(void *arg)
{
	char names[8][KVTIER_NAME_MAX];
	int n = listed(names);

	(void)arg;
	/* His own; not Alice's 0600 one. */
	return n == 1 && has_name(names, n, "alice:kv") ? 0 : 1;
}

/*
 * Names are one namespace per tier: CREATE without EXCL does not take a
 * region another user made first (the shm_open squat) unless the caller
 * asks for SHARED, and REGION_LIST shows only what the caller may open.
 */
TEST_F_TIMEOUT(tier, names_resist_squatting, 300)
{
	/* Bob squats the name Alice's engine will ask for, 0666. */
	struct new_region squat = { "alice:kv", 0666, 26 };
	char names[8][KVTIER_NAME_MAX];

	ASSERT_EQ(0, as_user(BOB, true, creates_region, &squat));
	ASSERT_EQ(0, as_user(ALICE, true, alice_opens_squatted, NULL));
	ASSERT_EQ(0, as_user(BOB, true, bob_lists, NULL));
	/* Root sees every region. */
	ASSERT_EQ(2, listed(names));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "alice:kv"));
	ASSERT_EQ(0, kvt_unlink_name(self->fd, "alice:mine"));
}

static int alice_quota(void *arg)
{
	int a = kvt_tier_open(0, O_RDWR);
	int b = kvt_tier_open(0, O_RDWR);
	int c = kvt_tier_open(0, O_RDWR);
	unsigned char *p;

	(void)arg;
	if (a < 0 || b < 0 || c < 0)
		return 1;
	/* 4 + 4 MiB fit an 8 MiB quota exactly. */
	p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
	if (p == MAP_FAILED)
		return 2;
	if (create_region(b, 4 * MiB))
		return 3;
	/* One more page by any path: EDQUOT, and the file stays unbound. */
	if (mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, c, 0) != MAP_FAILED ||
	    errno != EDQUOT)
		return 4;
	if (create_region(c, PAGE) != -EDQUOT)
		return 5;
	if (kvt_bind_name(c, "alice:over", PAGE, KVTIER_OPEN_CREATE, 0600) != -EDQUOT)
		return 6;
	if (kvt_bind_name(c, "alice:over", PAGE, KVTIER_OPEN_CREATE |
		      KVTIER_OPEN_PERSISTENT, 0600) != -EDQUOT)
		return 7;
	/* Her regions work and keep their bytes. */
	kvt_fill(p, 4 * MiB, 0, 23);
	if (posix_fadvise(a, 0, 4 * MiB, POSIX_FADV_DONTNEED) ||
	    kvt_check(p, 4 * MiB, 0, 23) != -1)
		return 8;
	/* Giving one back makes room again. */
	close(b);
	if (create_region(c, 4 * MiB))
		return 9;
	munmap(p, 4 * MiB);
	close(a);
	close(c);
	return 0;
}

static int bob_fills_own_quota(void *arg)
{
	int a = kvt_tier_open(0, O_RDWR);
	int b = kvt_tier_open(0, O_RDWR);

	(void)arg;
	if (a < 0 || b < 0)
		return 1;
	if (create_region(a, 8 * MiB))
		return 2;
	if (create_region(b, PAGE) != -EDQUOT)
		return 3;
	return 0;
}

/*
 * user_quota_mb bounds the sizes of the regions each user owns; others and
 * CAP_SYS_RESOURCE are not affected; 0 lifts it; bad values are refused.
 */
TEST_F_TIMEOUT(tier, user_quota, 300)
{
	int big;

	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_quota_mb", "-1"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_quota_mb", "8M"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_quota_mb", "2147483648"));
	ASSERT_EQ(0, kvt_tier_num(0, "user_quota_mb"));
	ASSERT_EQ(0, kvt_tier_write(0, "user_quota_mb", "8"));
	ASSERT_EQ(8, kvt_tier_num(0, "user_quota_mb"));

	ASSERT_EQ(0, as_user(ALICE, true, alice_quota, NULL));
	ASSERT_EQ(0, as_user(BOB, true, bob_fills_own_quota, NULL));
	/* Root (CAP_SYS_RESOURCE) is not limited. */
	big = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, create_region(big, 64 * MiB));
	close(big);
	/* 0: unlimited again. */
	ASSERT_EQ(0, kvt_tier_write(0, "user_quota_mb", "0"));
	ASSERT_EQ(0, as_user(BOB, true, use_device, &(bool){ true }));
}

/* The pins test's region: Alice's, 0644, PIN_LEN long. */
#define PIN_NAME	"alice:pinned"
#define PIN_LEN		(4 * MiB)

static long long pinned_bytes(void)
{
	return kvt_tier_num(0, "pinned");
}

static int pin(int fd, unsigned long request, unsigned long long off,
	       unsigned long long len)
{
	struct kvtier_pin p = { .offset = off, .length = len };

	return ioctl(fd, request, &p) ? -errno : 0;
}

/* Pipes between the test and alice_holds_pins(). */
struct pin_holder {
	int ready[2], go[2];
};

/* Alice pins 1 MiB of her region and holds it until told to go. */
static int alice_holds_pins(void *arg)
{
	struct pin_holder *h = arg;
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned char *p;
	char c = 'r';

	if (fd < 0 || kvt_bind_name(fd, PIN_NAME, PIN_LEN,
				KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL, 0644))
		return 1;
	p = mmap(NULL, PIN_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 2;
	kvt_fill(p, PIN_LEN, 0, 61);
	if (pin(fd, KVTIER_IOC_PIN, 0, MiB))
		return 3;
	/* Her share is 2 MiB (user_pin_mb): 3 MiB more is refused... */
	if (pin(fd, KVTIER_IOC_PIN, MiB, 3 * MiB) != -EDQUOT)
		return 4;
	/* ...and pins nothing; pinning her MiB again costs nothing. */
	if (pinned_bytes() != (long long)MiB || pin(fd, KVTIER_IOC_PIN, 0, MiB) ||
	    pinned_bytes() != (long long)MiB)
		return 5;
	/* Held until the test says go; if it failed instead, not forever. */
	if (write(h->ready[1], &c, 1) != 1 ||
	    poll(&(struct pollfd){ .fd = h->go[0], .events = POLLIN }, 1, 30000) != 1 ||
	    read(h->go[0], &c, 1) != 1)
		return 6;
	if (kvt_check(p, PIN_LEN, 0, 61) != -1)
		return 7;
	return 0;	/* exit releases her pins */
}

/* Bob, bound read-only to Alice's region, cannot undo or crowd her pins. */
static int bob_pins_too(void *arg)
{
	int fd = kvt_tier_open(0, O_RDWR);
	unsigned char buf[PAGE];

	(void)arg;
	if (fd < 0 || kvt_bind_name(fd, PIN_NAME, 0, KVTIER_OPEN_RDONLY, 0))
		return 1;
	/* UNPIN drops only the pins of this file: none. */
	if (pin(fd, KVTIER_IOC_UNPIN, 0, PIN_LEN) || pinned_bytes() != (long long)MiB)
		return 2;
	/* His own 2 MiB, one of them pinned by Alice already. */
	if (pin(fd, KVTIER_IOC_PIN, 0, 2 * MiB) ||
	    pinned_bytes() != 2 * (long long)MiB)
		return 3;
	if (pin(fd, KVTIER_IOC_PIN, 2 * MiB, PAGE) != -EDQUOT ||
	    pinned_bytes() != 2 * (long long)MiB)
		return 4;
	/* Unpinning his share leaves Alice's. */
	if (pin(fd, KVTIER_IOC_UNPIN, 0, MiB) || pinned_bytes() != 2 * (long long)MiB)
		return 5;
	if (pin(fd, KVTIER_IOC_PIN, 0, MiB))
		return 6;
	if (pread(fd, buf, PAGE, MiB) != (ssize_t)PAGE || kvt_check(buf, PAGE, MiB, 61) != -1)
		return 7;
	close(fd);
	/* His pins went with his file; hers stay. */
	return pinned_bytes() == (long long)MiB ? 0 : 8;
}

/*
 * Pins belong to the file that took them: another binder can neither
 * unpin them nor use up the pin budget (user_pin_mb per user, CAP_SYS_RESOURCE
 * exempt), and closing the file releases them.
 */
TEST_F_TIMEOUT(tier, pins_belong_to_their_binding, 300)
{
	struct pin_holder h;
	int status, fd;
	pid_t pid;
	char c;

	ASSERT_EQ(32, kvt_tier_num(0, "user_pin_mb"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_pin_mb", "-1"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_pin_mb", "2M"));
	ASSERT_EQ(0, kvt_tier_write(0, "user_pin_mb", "2"));
	ASSERT_EQ(0, pipe(h.ready));
	ASSERT_EQ(0, pipe(h.go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(as_user(ALICE, true, alice_holds_pins, &h));
	close(h.ready[1]);
	close(h.go[0]);
	if (read(h.ready[0], &c, 1) != 1) {
		/* Alice failed before she held her pins: say where. */
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_EQ(0, WEXITSTATUS(status));
	}
	ASSERT_EQ((long long)MiB, pinned_bytes());

	ASSERT_EQ(0, as_user(BOB, true, bob_pins_too, NULL));
	ASSERT_EQ((long long)MiB, pinned_bytes());

	/* Root is not bound by user_pin_mb; the tier's limit still holds. */
	fd = kvt_tier_open(0, O_RDWR);
	ASSERT_EQ(0, kvt_bind_name(fd, PIN_NAME, 0, KVTIER_OPEN_RDONLY, 0));
	ASSERT_EQ(0, pin(fd, KVTIER_IOC_PIN, 0, 3 * MiB));
	ASSERT_EQ(3 * (long long)MiB, pinned_bytes());
	close(fd);
	ASSERT_EQ((long long)MiB, pinned_bytes());

	/* Alice checks her bytes and exits: her pins go with her file. */
	ASSERT_EQ(1, write(h.go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, pinned_bytes());
	ASSERT_EQ(0, kvt_unlink_name(self->fd, PIN_NAME));
	close(h.ready[0]);
	close(h.go[1]);
}

/* Alice's side of region_count_bounds: 4 regions, then every path says no. */
static int alice_counts(void *arg)
{
	int fd[5], i;
	unsigned char buf[PAGE];

	(void)arg;
	for (i = 0; i < 5; i++) {
		fd[i] = kvt_tier_open(0, O_RDWR);
		if (fd[i] < 0)
			return 1;
	}
	for (i = 0; i < 4; i++)
		if (create_region(fd[i], PAGE))
			return 10 + i;
	/* A fifth by any path: EDQUOT, and the file stays unbound. */
	if (create_region(fd[4], PAGE) != -EDQUOT)
		return 2;
	if (mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd[4], 0) !=
	    MAP_FAILED || errno != EDQUOT)
		return 3;
	if (kvt_bind_name(fd[4], "alice:fifth", PAGE, KVTIER_OPEN_CREATE, 0600) !=
	    -EDQUOT)
		return 4;
	/* Her regions work. */
	kvt_fill(buf, PAGE, 0, 71);
	if (pwrite(fd[3], buf, PAGE, 0) != (ssize_t)PAGE ||
	    kvt_pread_page(fd[3], 0, 71))
		return 5;
	/* One closed makes room for one. */
	close(fd[0]);
	if (create_region(fd[4], PAGE))
		return 6;
	for (i = 1; i < 5; i++)
		close(fd[i]);
	return 0;
}

/* Bob's side: root holds 5 of the tier's 6. */
static int bob_counts(void *arg)
{
	int a = kvt_tier_open(0, O_RDWR);
	int b = kvt_tier_open(0, O_RDWR);

	(void)arg;
	if (a < 0 || b < 0)
		return 1;
	if (create_region(a, PAGE))
		return 2;
	/* The tier's bound, not his: ENOSPC. */
	if (create_region(b, PAGE) != -ENOSPC)
		return 3;
	close(a);
	close(b);
	return 0;
}

/*
 * user_max_regions bounds the regions one user owns (EDQUOT;
 * CAP_SYS_RESOURCE exempt), max_regions the tier's (ENOSPC, for root
 * too); both are checked before anything is allocated.
 */
TEST_F_TIMEOUT(tier, region_count_bounds, 300)
{
	int held[6], i;

	ASSERT_EQ(1048576, kvt_tier_num(0, "max_regions"));
	ASSERT_EQ(65536, kvt_tier_num(0, "user_max_regions"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "max_regions", "-1"));
	ASSERT_EQ(-EINVAL, kvt_tier_write(0, "user_max_regions", "2147483648"));
	ASSERT_EQ(0, kvt_tier_write(0, "user_max_regions", "4"));
	ASSERT_EQ(0, kvt_tier_write(0, "max_regions", "6"));

	ASSERT_EQ(0, as_user(ALICE, true, alice_counts, NULL));
	/* Root is not bound by user_max_regions: 5 of the tier's 6. */
	for (i = 0; i < 6; i++) {
		held[i] = kvt_tier_open(0, O_RDWR);
		ASSERT_GE(held[i], 0);
	}
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, create_region(held[i], PAGE));
	ASSERT_EQ(0, as_user(BOB, true, bob_counts, NULL));
	/* Bob's is gone again: root takes the sixth, and no seventh. */
	ASSERT_EQ(0, create_region(held[5], PAGE));
	ASSERT_EQ(-ENOSPC, create_region(self->fd, PAGE));
	for (i = 0; i < 6; i++)
		close(held[i]);
	ASSERT_EQ(0, create_region(self->fd, PAGE));
	ASSERT_EQ(0, kvt_tier_write(0, "max_regions", "0"));
	ASSERT_EQ(0, kvt_tier_write(0, "user_max_regions", "0"));
	ASSERT_EQ(0, as_user(BOB, true, use_device, &(bool){ true }));
}

TEST_HARNESS_MAIN
