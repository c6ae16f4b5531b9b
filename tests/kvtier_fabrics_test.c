// SPDX-License-Identifier: GPL-2.0
/*
 * A tier on an NVMe over Fabrics namespace: the kernel's nvmet target in
 * the guest exports KVTIER_NS1 on 127.0.0.1 over nvme-tcp
 * (tests/fabrics/nvmet.sh, its own subsystem and port 4421), the host
 * connects with nvme-cli and tier 0 attaches the fabrics namespace.
 *
 *   kvtierctl     attach and status name the subsystem, each path
 *                 (transport, address, state, ctrl_loss_tmo) and warn when
 *                 one lost path loses the namespace; with a second port
 *                 and controller the warning goes
 *   path_return   during a fault storm on pages that are not resident
 *                 (reads through the mapping, pread, writes through the
 *                 mapping), the port goes away for about 3 s and comes
 *                 back within ctrl_loss_tmo: every access completes, no
 *                 error, every byte reads back
 *   path_loss     the port stays away past ctrl_loss_tmo (4 s): accesses
 *                 to pages that are not resident fail (SIGBUS, EIO),
 *                 resident pages keep serving, state "error", then detach
 *                 and unload work
 *
 * Skipped without KVTIER_NS1 or without nvmet-tcp/nvme-tcp in the kernel.
 * Runs as root in the test VM, from tests/fabrics/run.sh (make
 * check-fabrics), not make check: it takes minutes under TCG. Built as
 * BUILD/tests/fabrics/kvtier_fabrics_test, so that run-suite.sh's default
 * (every _test program directly in BUILD/tests) leaves it out.
 */
#include <linux/kvtier.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define STATE		"KVT_NVMET_STATE=/run/kvtier-nvmet-fabrics-test"
#define NQN		"nqn.2024-11.io.kvtier:fabrics-test"
#define SVC		"4421"
#define SVC2		"4422"
/* Host B's view: a second subsystem exporting the same device (see publish). */
#define STATE_B		"KVT_NVMET_STATE=/run/kvtier-nvmet-fabrics-test-b"
#define NQN_B		"nqn.2024-11.io.kvtier:fabrics-test-b"
#define SVC_B		"4423"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run a shell command; its stdout (first @len - 1 bytes) in @out. */
static int sh_out(char *out, size_t len, const char *fmt, ...)
{
	char cmd[1024];
	size_t n = 0;
	va_list ap;
	FILE *f;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	f = popen(cmd, "re");
	if (!f)
		return -1;
	if (out) {
		n = fread(out, 1, len - 1, f);
		out[n] = '\0';
		while (n && out[n - 1] == '\n')
			out[--n] = '\0';
	} else {
		char buf[256];

		while (fread(buf, 1, sizeof(buf), f) > 0)
			;
	}
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The repository: /proc/self/exe is <repo>/build/tests/fabrics/<program>. */
static const char *repo(void)
{
	static char root[PATH_MAX];
	char *slash;
	ssize_t n;
	int i;

	if (*root)
		return root;
	n = readlink("/proc/self/exe", root, sizeof(root) - 1);
	if (n <= 0)
		return ".";
	root[n] = '\0';
	for (i = 0; i < 4; i++) {
		slash = strrchr(root, '/');
		if (slash)
			*slash = '\0';
	}
	return root;
}

/* tests/fabrics/nvmet.sh ARGS with this test's state file; its stdout. */
#define nvmet(out, len, args, ...)					\
	sh_out(out, len, STATE " %s/tests/fabrics/nvmet.sh " args,	\
	       repo(), ##__VA_ARGS__)

/* The same for host B's subsystem (its own state file). */
#define nvmet_b(out, len, args, ...)					\
	sh_out(out, len, STATE_B " %s/tests/fabrics/nvmet.sh " args,	\
	       repo(), ##__VA_ARGS__)

/* kvtierctl ARGS, stdout and stderr in @out. */
#define ctl(out, len, args, ...)					\
	sh_out(out, len, "LD_LIBRARY_PATH=%s/lib %s/tools/kvtierctl " args " 2>&1 </dev/null", \
	       repo(), repo(), ##__VA_ARGS__)

/* How often @w occurs in @s. */
static int count_str(const char *s, const char *w)
{
	int n = 0;

	while ((s = strstr(s, w))) {
		n++;
		s += strlen(w);
	}
	return n;
}

/* Every controller of the subsystem "live" within @secs. */
static int wait_live(double secs)
{
	char out[512];
	double end = now() + secs;

	do {
		if (!nvmet(out, sizeof(out), "ctrls") && *out && !strstr(out, "connecting") &&
		    !strstr(out, "resetting") && !strstr(out, "deleting"))
			return 0;
		usleep(200000);
	} while (now() < end);
	return -1;
}

/*
 * The target on KVTIER_NS1 with @tmo seconds of ctrl_loss_tmo, the module
 * loaded and the fabrics namespace attached to tier 0 (through the sysfs
 * attribute unless @via_ctl). The device in @dev.
 */
static int start(struct __test_metadata *_metadata, int tmo, char *dev,
		 size_t len, int budget_mb)
{
	int ret;

	ret = nvmet(dev, len, "setup --backing %s --nqn " NQN " --port-id 11 --trsvcid " SVC
		    " --ctrl-loss-tmo %d --reconnect-delay 1", kvt_ns("KVTIER_NS1"), tmo);
	if (ret) {
		TH_LOG("nvmet.sh setup failed (%d)", ret);
		return -1;
	}
	TH_LOG("fabrics namespace %s (nvme-tcp 127.0.0.1:%s, ctrl_loss_tmo %d s)", dev, SVC, tmo);
	if (kvt_load("num_tiers=2"))
		return -1;
	if (budget_mb) {
		/* --format: KVTIER_NS1 may hold another test's format. */
		ret = kvt_tier_write(0, "format", dev);
		if (!ret)
			ret = kvt_knob(0, "host_budget_mb", budget_mb);
		if (ret) {
			TH_LOG("attach %s: %s", dev, strerror(-ret));
			return -1;
		}
	}
	return 0;
}

static void stop(struct __test_metadata *_metadata)
{
	char st[64] = "";

	if (kvt_loaded()) {
		kvt_tier_read(0, "state", st, sizeof(st));
		if (strcmp(st, "detached"))
			kvt_tier_write(0, "backing_dev", "none");
		EXPECT_EQ(0, kvt_unload());
	}
	EXPECT_EQ(0, nvmet(NULL, 0, "teardown"));
	if (!access("/run/kvtier-nvmet-fabrics-test-b", F_OK))
		EXPECT_EQ(0, nvmet_b(NULL, 0, "teardown"));
}

FIXTURE(fabric) {
	char dev[64];
};

FIXTURE_VARIANT(fabric) {
	int writes;	/* path_return: the storm writes too */
};

FIXTURE_VARIANT_ADD(fabric, reads) { .writes = 0 };
FIXTURE_VARIANT_ADD(fabric, writes) { .writes = 1 };

FIXTURE_SETUP(fabric)
{
	const char *why = kvt_missing();
	int ret;

	if (!why && !kvt_ns("KVTIER_NS1"))
		why = "no second namespace in KVTIER_NS1";
	if (why)
		SKIP(return, "%s", why);
	ASSERT_FALSE(kvt_loaded());
	ret = nvmet(NULL, 0, "check --transport tcp");
	if (ret == 4)
		SKIP(return, "no nvmet-tcp/nvme-tcp in this kernel");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN_PARENT(fabric)
{
	stop(_metadata);
}

/* kvtierctl attach and status on the fabrics namespace. */
TEST_F_TIMEOUT(fabric, kvtierctl, 240)
{
	static char out[8192];
	char want[128], ctrl[32];

	if (variant->writes)
		SKIP(return, "once is enough (the reads variant)");

	ASSERT_EQ(0, start(_metadata, 10, self->dev, sizeof(self->dev), 0));
	/* The namespace is blank (or another test's): --format. */
	EXPECT_EQ(0, ctl(out, sizeof(out), "attach --format --yes 0 %s", self->dev));
	TH_LOG("kvtierctl attach:\n%s", out);
	EXPECT_NE(NULL, strstr(out, "subsystem " NQN));
	EXPECT_NE(NULL, strstr(out, " tcp traddr=127.0.0.1,trsvcid=" SVC));
	EXPECT_NE(NULL, strstr(out, " live ctrl_loss_tmo 10"));
	EXPECT_NE(NULL, strstr(out, "warning: "));
	EXPECT_NE(NULL, strstr(out, "without multipath redundancy: the subsystem has one controller"));
	EXPECT_NE(NULL, strstr(out, "kvtier nvmet (tcp)"));	/* model */
	snprintf(want, sizeof(want), "kvtier0: formatted and attached %s", self->dev);
	EXPECT_NE(NULL, strstr(out, want));

	EXPECT_EQ(0, ctl(out, sizeof(out), "status 0"));
	TH_LOG("kvtierctl status:\n%s", out);
	EXPECT_NE(NULL, strstr(out, "subsystem " NQN));
	EXPECT_NE(NULL, strstr(out, "paths     no redundancy: the subsystem has one controller"));

	/* A second port and a second controller through it: two paths. */
	ASSERT_EQ(0, nvmet(NULL, 0, "add-port --port-id 12 --trsvcid " SVC2));
	ASSERT_EQ(0, nvmet(ctrl, sizeof(ctrl), "connect --trsvcid " SVC2));
	TH_LOG("second path: %s", ctrl);
	ASSERT_EQ(0, wait_live(20));
	EXPECT_EQ(0, ctl(out, sizeof(out), "status 0"));
	TH_LOG("kvtierctl status, two paths:\n%s", out);
	EXPECT_NE(NULL, strstr(out, "trsvcid=" SVC));
	EXPECT_NE(NULL, strstr(out, "trsvcid=" SVC2));
	EXPECT_EQ(2, count_str(out, " live"));
	EXPECT_EQ(NULL, strstr(out, "no redundancy"));
	EXPECT_EQ(0, sh_out(out, sizeof(out),
			    "LD_LIBRARY_PATH=%s/lib %s/tools/kvtierctl --json status 0 </dev/null | "
			    "python3 -c 'import json,sys; d=json.load(sys.stdin)[0]; "
			    "assert d[\"fabrics\"] is True and d[\"multipath_redundant\"] is True "
			    "and d[\"subsysnqn\"] == \"" NQN "\" and len(d[\"paths\"]) == 2 "
			    "and {p[\"transport\"] for p in d[\"paths\"]} == {\"tcp\"} "
			    "and all(p[\"ctrl_loss_tmo\"] == \"10\" for p in d[\"paths\"]), d' 2>&1",
			    repo(), repo()));
	if (*out)
		TH_LOG("%s", out);

	/* One path down: the namespace stays (I/O goes the other way). */
	ASSERT_EQ(0, nvmet(NULL, 0, "port-down"));
	EXPECT_EQ(0, ctl(out, sizeof(out), "status 0"));
	TH_LOG("kvtierctl status, first port down:\n%s", out);
	EXPECT_NE(NULL, strstr(out, "no redundancy: only one of the subsystem's controllers is live"));
	ASSERT_EQ(0, nvmet(NULL, 0, "port-up"));
	EXPECT_EQ(0, wait_live(20));
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/* --- the storm ------------------------------------------------------------ */

#define STORM_MB	32
#define STORM_BUDGET	4
#define HALF		(STORM_MB * MiB / 2)

struct storm {
	unsigned char *p;
	int fd;
	volatile int stop;
	/* per thread: accesses, bad bytes, errors, longest access (s) */
	unsigned long n[3], bad[3], err[3];
	double longest[3];
	/* the writer: pages [HALF, HALF + written) hold seed 2 */
	volatile unsigned long long written;
};

static unsigned long long rnd(unsigned long long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random pages of the first half through the mapping, seed 1. */
static void *storm_map_reader(void *arg)
{
	struct storm *s = arg;
	unsigned long long r = 0x1234567, off;

	while (!s->stop) {
		double t = now();

		off = rnd(&r) % (HALF / PAGE) * PAGE;
		if (kvt_check(s->p + off, PAGE, off, 1) >= 0)
			s->bad[0]++;
		t = now() - t;
		if (t > s->longest[0])
			s->longest[0] = t;
		s->n[0]++;
	}
	return NULL;
}

/* Random pages of the first half with pread, seed 1. */
static void *storm_preader(void *arg)
{
	struct storm *s = arg;
	unsigned long long r = 0x7654321, off;
	static unsigned char buf[PAGE];

	while (!s->stop) {
		double t = now();

		off = rnd(&r) % (HALF / PAGE) * PAGE;
		if (pread(s->fd, buf, PAGE, (off_t)off) != (ssize_t)PAGE)
			s->err[1]++;
		else if (kvt_check(buf, PAGE, off, 1) >= 0)
			s->bad[1]++;
		t = now() - t;
		if (t > s->longest[1])
			s->longest[1] = t;
		s->n[1]++;
	}
	return NULL;
}

/*
 * The second half, page after page, rewritten with seed 2 (each store
 * faults in a page that is not resident and dirties it: write-back goes
 * on under the budget); around again when done.
 */
static void *storm_writer(void *arg)
{
	struct storm *s = arg;
	unsigned long long i = 0;

	while (!s->stop) {
		double t = now();

		kvt_fill(s->p + HALF + i, PAGE, HALF + i, 2);
		t = now() - t;
		if (t > s->longest[2])
			s->longest[2] = t;
		s->n[2]++;
		i += PAGE;
		if (i > s->written)
			s->written = i;
		if (i == HALF)
			i = 0;
	}
	return NULL;
}

/* A region of STORM_MB with seed 1, synced and dropped from host memory. */
static unsigned char *cold_region(struct __test_metadata *_metadata, int *fdp,
				  unsigned long long seed)
{
	unsigned char *p;
	int fd;

	fd = kvt_tier_open(0, O_RDWR);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, STORM_MB * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	kvt_fill(p, STORM_MB * MiB, 0, seed);
	EXPECT_EQ(0, fsync(fd));
	EXPECT_EQ(0, posix_fadvise(fd, 0, STORM_MB * MiB, POSIX_FADV_DONTNEED));
	EXPECT_GE(kvt_tier_num(0, "resident"), 0);
	TH_LOG("region of %d MiB written, synced, dropped: %lld bytes resident",
	       STORM_MB, kvt_tier_num(0, "resident"));
	*fdp = fd;
	return p;
}

/*
 * The storm runs in a child process (its threads as the variant says), so
 * that a SIGBUS there is a result to report, not the end of the test.
 */
static pid_t storm_start(struct storm *s, int writes)
{
	pid_t pid = fork();
	pthread_t th[3];
	int i, n = writes ? 3 : 2;

	if (pid)
		return pid;
	/*
	 * nvme-tcp may send a request's data from the submitting thread,
	 * without MSG_NOSIGNAL: a thread whose fault or pread submits just
	 * as the connection breaks gets SIGPIPE. Applications on a fabrics
	 * tier ignore it, as network servers do (flash pool guide).
	 */
	signal(SIGPIPE, SIG_IGN);
	if (pthread_create(&th[0], NULL, storm_map_reader, s) ||
	    pthread_create(&th[1], NULL, storm_preader, s) ||
	    (writes && pthread_create(&th[2], NULL, storm_writer, s)))
		_exit(2);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

/* The storm child, if it ended: "" while it runs, else how it ended. */
static const char *storm_ended(pid_t pid, int *status, char *buf, size_t len)
{
	if (*status == -1 && waitpid(pid, status, WNOHANG) != pid)
		return "";
	if (WIFSIGNALED(*status))
		snprintf(buf, len, "killed by %s", strsignal(WTERMSIG(*status)));
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(*status));
	return buf;
}

/* Sleep @secs; stop early, noting when, if the storm ended. */
static void storm_sleep(pid_t pid, int *status, double secs, double t0,
			double *died)
{
	double end = now() + secs;
	char buf[64];

	while (now() < end) {
		if (*storm_ended(pid, status, buf, sizeof(buf))) {
			if (*died < 0)
				*died = now() - t0;
			return;
		}
		usleep(20000);
	}
}

TEST_F_TIMEOUT(fabric, path_return, 300)
{
	static const char *const name[] = { "mmap reads", "preads", "mmap writes" };
	int i, status = -1, n = variant->writes ? 3 : 2;
	long long stalls, ioerr;
	unsigned long before[3];
	char st[64], ctrls[256], how[64];
	double t0, down, up, died = -1;
	struct storm *s;
	pid_t pid;

	ASSERT_EQ(0, start(_metadata, 60, self->dev, sizeof(self->dev), STORM_BUDGET));
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s);
	memset(s, 0, sizeof(*s));
	s->p = cold_region(_metadata, &s->fd, 1);
	ASSERT_NE(NULL, s->p);
	stalls = kvt_stat(0, "budget_stalls");
	ioerr = kvt_stat(0, "io_errors");

	pid = storm_start(s, variant->writes);
	ASSERT_GT(pid, 0);
	storm_sleep(pid, &status, 2, now(), &died);
	for (i = 0; i < n; i++)
		before[i] = s->n[i];

	t0 = now();
	ASSERT_EQ(0, nvmet(NULL, 0, "port-down"));
	storm_sleep(pid, &status, 3, t0, &died);
	nvmet(ctrls, sizeof(ctrls), "ctrls");
	TH_LOG("port down for %.1f s: controller %s; accesses meanwhile: %lu, %lu, %lu",
	       now() - t0, ctrls, s->n[0] - before[0], s->n[1] - before[1],
	       s->n[2] - before[2]);
	EXPECT_EQ(NULL, strstr(ctrls, "live"));
	/* The storm's I/O is stuck on the path: the tier says so. */
	ASSERT_EQ(0, kvt_tier_read(0, "state", st, sizeof(st)));
	TH_LOG("state with the path down: %s", st);
	EXPECT_STREQ("degraded", st);
	down = now() - t0;
	ASSERT_EQ(0, nvmet(NULL, 0, "port-up"));
	EXPECT_EQ(0, wait_live(20));
	up = now() - t0;
	storm_sleep(pid, &status, 0.1, t0, &died);
	TH_LOG("port up after %.1f s, controller live after %.1f s", down, up);
	for (i = 0; i < n; i++)
		before[i] = s->n[i];
	storm_sleep(pid, &status, 3, t0, &died);
	s->stop = 1;
	if (status == -1)
		waitpid(pid, &status, 0);
	storm_ended(pid, &status, how, sizeof(how));
	stalls = kvt_stat(0, "budget_stalls") - stalls;
	ioerr = kvt_stat(0, "io_errors") - ioerr;
	TH_LOG("storm %s%s; budget_stalls +%lld, io_errors +%lld, error %lld",
	       how, died < 0 ? "" : " (ended early)", stalls, ioerr, kvt_tier_num(0, "error"));
	if (died >= 0)
		TH_LOG("the storm ended %.1f s after the port went down", died);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));

	for (i = 0; i < n; i++) {
		TH_LOG("%s: %lu, %lu after the return, longest %.2f s, %lu bad, %lu errors",
		       name[i], s->n[i], s->n[i] - before[i], s->longest[i], s->bad[i], s->err[i]);
		EXPECT_GT(s->n[i] - before[i], 0);
		EXPECT_EQ(0, s->bad[i]);
		EXPECT_EQ(0, s->err[i]);
	}
	/* Some access waited through the outage. */
	EXPECT_GT(s->longest[0] + s->longest[1] + s->longest[2], 1.0);

	EXPECT_EQ(0, fsync(s->fd));
	EXPECT_EQ(0, posix_fadvise(s->fd, 0, STORM_MB * MiB, POSIX_FADV_DONTNEED));
	/* Every byte, from the namespace. */
	EXPECT_EQ(-1, kvt_check(s->p, HALF, 0, 1));
	EXPECT_EQ(-1, kvt_check(s->p + HALF, s->written, HALF, 2));
	EXPECT_EQ(-1, kvt_check(s->p + HALF + s->written, HALF - s->written,
				HALF + s->written, 1));
	TH_LOG("verified: %llu KiB of the second half rewritten during the storm",
	       s->written >> 10);
	ASSERT_EQ(0, kvt_tier_read(0, "state", st, sizeof(st)));
	EXPECT_STREQ("attached", st);
	EXPECT_EQ(0, kvt_tier_num(0, "error"));
	munmap(s->p, STORM_MB * MiB);
	close(s->fd);
	munmap(s, sizeof(*s));
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

/*
 * In a child: touch the page at @off of the mapping (@pread_it: pread it).
 * Exit 0 when that failed as it should (SIGBUS, EIO), 1 when it
 * succeeded, 2 on anything else.
 */
static pid_t access_child(unsigned char *p, int fd, unsigned long long off,
			  int pread_it)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	signal(SIGPIPE, SIG_IGN);	/* see storm_start() */
	if (pread_it) {
		static unsigned char buf[PAGE];
		ssize_t n = pread(fd, buf, PAGE, (off_t)off);

		_exit(n < 0 && errno == EIO ? 0 : n == (ssize_t)PAGE ? 1 : 2);
	}
	_exit(kvt_touch_or_sigbus(p + off) ? 0 : 1);
}

/* waitpid with a deadline: the exit status, or -1 (then killed). */
static int wait_child(pid_t pid, double secs, double *took)
{
	double t0 = now();
	int st;

	while (now() - t0 < secs) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			*took = now() - t0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
		}
		usleep(50000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

#define LOSS_TMO	4
#define LOSS_BUDGET	16
#define RESIDENT	(4 * MiB)

TEST_F_TIMEOUT(fabric, path_loss, 300)
{
	unsigned char *p;
	char st[64];
	double t0, t, took;
	pid_t map_pid, pread_pid;
	int fd, ret;

	if (variant->writes)
		SKIP(return, "once is enough (the reads variant)");
	ASSERT_EQ(0, start(_metadata, LOSS_TMO, self->dev, sizeof(self->dev), LOSS_BUDGET));
	p = cold_region(_metadata, &fd, 3);
	ASSERT_NE(NULL, p);
	/* The first 4 MiB resident again (the budget holds them). */
	ASSERT_EQ(-1, kvt_check(p, RESIDENT, 0, 3));
	TH_LOG("%lld bytes resident", kvt_tier_num(0, "resident"));

	t0 = now();
	ASSERT_EQ(0, nvmet(NULL, 0, "port-down"));
	/* Pages that are not resident: both accesses wait for the path. */
	map_pid = access_child(p, fd, 20 * MiB, 0);
	pread_pid = access_child(p, fd, 24 * MiB, 1);
	/* Resident pages serve meanwhile, at once. */
	usleep(500000);
	t = now();
	EXPECT_EQ(-1, kvt_check(p, RESIDENT, 0, 3));
	t = now() - t;
	TH_LOG("resident 4 MiB read in %.3f s with the path down", t);
	EXPECT_LT(t, 2.0);

	ret = wait_child(map_pid, LOSS_TMO + 60, &took);
	TH_LOG("mapped access to a page not resident: %s after %.1f s",
	       ret == 0 ? "SIGBUS" : ret == 1 ? "succeeded" : "no result", now() - t0);
	EXPECT_EQ(0, ret);
	ret = wait_child(pread_pid, 30, &took);
	TH_LOG("pread of a page not resident: %s after %.1f s",
	       ret == 0 ? "EIO" : ret == 1 ? "succeeded" : "no result", now() - t0);
	EXPECT_EQ(0, ret);
	EXPECT_GE(now() - t0, LOSS_TMO - 1);

	ASSERT_EQ(0, kvt_tier_read(0, "state", st, sizeof(st)));
	EXPECT_STREQ("error", st);
	EXPECT_LT(kvt_tier_num(0, "error"), 0);
	TH_LOG("state %s, error %lld", st, kvt_tier_num(0, "error"));

	/* Past the timeout: failures are immediate, resident pages still serve. */
	t = now();
	EXPECT_EQ(1, kvt_touch_or_sigbus(p + 28 * MiB));
	{
		static unsigned char buf[PAGE];

		EXPECT_EQ(-1, pread(fd, buf, PAGE, 12 * MiB));
		EXPECT_EQ(EIO, errno);
	}
	t = now() - t;
	TH_LOG("after the loss: SIGBUS and EIO in %.3f s", t);
	EXPECT_LT(t, 5.0);
	EXPECT_EQ(-1, kvt_check(p, RESIDENT, 0, 3));

	munmap(p, STORM_MB * MiB);
	close(fd);
	/* Detach: done even when the final commit fails (EIO). */
	ret = kvt_tier_write(0, "backing_dev", "none");
	TH_LOG("detach: %s", ret ? strerror(-ret) : "ok");
	EXPECT_TRUE(ret == 0 || ret == -EIO);
	ASSERT_EQ(0, kvt_tier_read(0, "state", st, sizeof(st)));
	EXPECT_STREQ("detached", st);
	EXPECT_EQ(0, kvt_unload());
}

#define PREFIX_MB	8

/*
 * The namespace byte offsets of persistent region @name's pages, as the
 * committed state on @dev names them: up to @max in @off; the count.
 */
static long region_slots(const char *dev, const char *name,
			 unsigned long long *off, long max)
{
	const struct kvtier_disk_region *r;
	const struct kvtier_disk_page *pg;
	struct kvtier_disk_super sb;
	unsigned long long first = 0, i;
	unsigned char *buf = NULL;
	size_t len;
	long n = -1;

	if (kvt_state_read(dev, &sb, &buf, &len))
		goto out;
	r = (const void *)(buf + sizeof(struct kvtier_disk_ckpt));
	pg = (const void *)(r + le64toh(((struct kvtier_disk_ckpt *)buf)->nr_regions));
	for (i = 0; i < le64toh(((struct kvtier_disk_ckpt *)buf)->nr_regions); i++) {
		if (!strncmp(r[i].name, name, sizeof(r[i].name))) {
			for (n = 0; n < max && (unsigned long long)n < le64toh(r[i].nr_pages); n++)
				off[n] = kvt_slot_offset(&sb, le64toh(pg[first + n].slot));
			break;
		}
		first += le64toh(r[i].nr_pages);
	}
out:
	free(buf);
	return n;
}

static int region_bind(int fd, const char *name, unsigned long long size,
		       unsigned int flags)
{
	struct kvtier_region_open ro = { .size = size, .flags = flags, .mode = 0644 };

	strncpy(ro.name, name, sizeof(ro.name) - 1);
	return ioctl(fd, KVTIER_IOC_REGION_OPEN, &ro) ? -errno : 0;
}

/*
 * Publish and reuse: host A (tier 0, read-write) writes and seals a
 * prefix; host B (tier 1, read-only, through its own controller) maps it
 * by name and reads the same bytes; B can neither write it nor attach
 * read-write (A holds the ownership lease). A unlinks it while B has it
 * mapped and reuses the space: B keeps what it has resident, and every
 * other page reads back right if its slot was not written over, and
 * fails (EIO, the CRC) if it was, never wrong.
 *
 * Host B's view: inside one guest, native NVMe multipath merges two
 * controllers of one subsystem into one namespace head, one block device,
 * which tier 0 has claimed. A second host has its own head; here a second
 * subsystem exporting the same device gives the guest that independent
 * view (a controller, a namespace, a /dev/nvmeXnY of its own).
 */
TEST_F_TIMEOUT(fabric, publish, 300)
{
	unsigned char *buf = malloc(PREFIX_MB * MiB), *p;
	struct kvtier_region_flags rf = { .set = KVTIER_REGION_SEALED };
	unsigned long long off, right = 0, eio = 0, wrong = 0, misplaced = 0, by_a = 0;
	static unsigned long long slots[PREFIX_MB * MiB / PAGE];
	static bool reused[PREFIX_MB * MiB / PAGE];
	char dev_b[64], lease[256];
	long nslots, i;
	int a, b, ret;

	if (variant->writes)
		SKIP(return, "once is enough (the reads variant)");
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, start(_metadata, 60, self->dev, sizeof(self->dev), 16));
	ASSERT_EQ(0, nvmet_b(dev_b, sizeof(dev_b), "setup --backing %s --nqn " NQN_B
			     " --port-id 13 --trsvcid " SVC_B " --ctrl-loss-tmo 60"
			     " --hostnqn nqn.2024-11.io.kvtier:host-b",
			     kvt_ns("KVTIER_NS1")));
	TH_LOG("host A: %s (" NQN "), host B: %s (" NQN_B ", same device)",
	       self->dev, dev_b);
	ASSERT_STRNE(self->dev, dev_b);

	/* A publishes. */
	a = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, region_bind(a, "prefix:sys", PREFIX_MB * MiB,
				 KVTIER_OPEN_CREATE | KVTIER_OPEN_EXCL | KVTIER_OPEN_PERSISTENT));
	kvt_fill(buf, PREFIX_MB * MiB, 0, 5);
	ASSERT_EQ((ssize_t)(PREFIX_MB * MiB), pwrite(a, buf, PREFIX_MB * MiB, 0));
	ASSERT_EQ(0, fsync(a));
	close(a);
	a = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(a, 0);
	strcpy(rf.name, "prefix:sys");
	ASSERT_EQ(0, ioctl(a, KVTIER_IOC_REGION_SETFLAGS, &rf));

	/* B: no read-write attach while A holds the lease; read-only works. */
	ret = kvt_tier_write(1, "backing_dev", dev_b);
	TH_LOG("host B read-write attach: %s", ret ? strerror(-ret) : "ok");
	ASSERT_EQ(-EBUSY, ret);
	ASSERT_EQ(0, kvt_knob(1, "read_only", 1));
	ASSERT_EQ(0, kvt_tier_write(1, "backing_dev", dev_b));
	ASSERT_EQ(0, kvt_tier_read(1, "lease", lease, sizeof(lease)));
	TH_LOG("host B sees the lease: %s", lease);
	EXPECT_EQ(0, strncmp(lease, "held host=", 10));
	EXPECT_NE(NULL, strstr(lease, " tier=0 "));

	/* B maps it by name: the same bytes. */
	b = kvt_tier_open(1, O_RDWR);
	ASSERT_GE(b, 0);
	ASSERT_EQ(-EROFS, region_bind(b, "prefix:sys", 0, 0));
	ASSERT_EQ(0, region_bind(b, "prefix:sys", 0, KVTIER_OPEN_RDONLY));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, PREFIX_MB * MiB, PROT_READ | PROT_WRITE,
				   MAP_SHARED, b, 0));
	EXPECT_EQ(EACCES, errno);
	p = mmap(NULL, PREFIX_MB * MiB, PROT_READ, MAP_SHARED, b, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, kvt_check(p, PREFIX_MB * MiB, 0, 5));
	EXPECT_EQ(-1, pwrite(b, buf, PAGE, 0));
	EXPECT_EQ(EACCES, errno);
	{
		int c = kvt_tier_open(1, O_RDWR);

		ASSERT_GE(c, 0);
		EXPECT_EQ(-EROFS, region_bind(c, "prefix:new", MiB,
					      KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT));
		close(c);
	}

	/* Where the prefix's pages are on the namespace. */
	nslots = region_slots(kvt_ns("KVTIER_NS1"), "prefix:sys", slots,
			      PREFIX_MB * MiB / PAGE);
	ASSERT_EQ((long)(PREFIX_MB * MiB / PAGE), nslots);

	/* A unlinks it while B has it mapped, and writes over the space. */
	{
		struct kvtier_region_name rn = { 0 };

		strcpy(rn.name, "prefix:sys");
		EXPECT_EQ(0, ioctl(a, KVTIER_IOC_REGION_UNLINK, &rn));
	}
	close(a);
	a = kvt_tier_open(0, O_RDWR);
	ASSERT_GE(a, 0);
	ASSERT_EQ(0, region_bind(a, "other:kv", 2 * PREFIX_MB * MiB,
				 KVTIER_OPEN_CREATE | KVTIER_OPEN_PERSISTENT));
	kvt_fill(buf, PREFIX_MB * MiB, 0, 6);
	ASSERT_EQ((ssize_t)(PREFIX_MB * MiB), pwrite(a, buf, PREFIX_MB * MiB, 0));
	ASSERT_EQ((ssize_t)(PREFIX_MB * MiB), pwrite(a, buf, PREFIX_MB * MiB, PREFIX_MB * MiB));
	ASSERT_EQ(0, fsync(a));
	/*
	 * A's allocator may have reused freed prefix slots already (free
	 * extents are taken by size, not in order). Reuse every other prefix
	 * slot besides, by writing other bytes there, so that some are
	 * reused whatever A did; then note which slots still hold the
	 * prefix's bytes.
	 */
	memset(buf, 0x5a, PAGE);
	for (i = 0; i < nslots; i += 2)
		ASSERT_EQ(0, kvt_dev_write(kvt_ns("KVTIER_NS1"), buf, PAGE, slots[i]));
	for (i = 0; i < nslots; i++) {
		ASSERT_EQ(0, kvt_dev_read(kvt_ns("KVTIER_NS1"), buf, PAGE, slots[i]));
		reused[i] = kvt_check(buf, PAGE, (unsigned long long)i * PAGE, 5) != -1;
		by_a += reused[i] && i % 2;
	}

	/* B still serves what it has resident... */
	EXPECT_EQ(-1, kvt_check(p, PREFIX_MB * MiB, 0, 5));
	/* ...and, once it is dropped, never wrong bytes from the namespace. */
	EXPECT_EQ(0, posix_fadvise(b, 0, PREFIX_MB * MiB, POSIX_FADV_DONTNEED));
	for (off = 0; off < PREFIX_MB * MiB; off += PAGE) {
		ssize_t n = pread(b, buf, PAGE, (off_t)off);

		if (n < 0 && errno == EIO) {
			eio++;
			misplaced += !reused[off / PAGE];
		} else if (n == (ssize_t)PAGE && kvt_check(buf, PAGE, off, 5) == -1) {
			right++;
			misplaced += reused[off / PAGE];
		} else {
			wrong++;
		}
	}
	TH_LOG("B after A's unlink and rewrite: %llu pages right, %llu EIO, %llu wrong; %llu of the odd slots reused by A; checksum_errors %lld",
	       right, eio, wrong, by_a, kvt_stat(1, "checksum_errors"));
	EXPECT_EQ(0ULL, wrong);
	EXPECT_EQ(PREFIX_MB * MiB / PAGE, right + eio);
	/* A reused page fails its CRC; one nobody wrote over reads right. */
	EXPECT_EQ(0ULL, misplaced);
	EXPECT_GE(eio, (unsigned long long)nslots / 2);

	munmap(p, PREFIX_MB * MiB);
	close(b);
	close(a);
	EXPECT_EQ(0, kvt_tier_write(1, "backing_dev", "none"));
	EXPECT_EQ(0, kvt_knob(1, "read_only", 0));
	free(buf);
}

#define WAIT_FAULTS	8
#define WAIT_DOWN	6

/* In a child: page @off of the mapping holds seed 1 (exit 0), else 1, SIGBUS 2. */
static pid_t check_child(unsigned char *p, unsigned long long off)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	signal(SIGPIPE, SIG_IGN);	/* see storm_start() */
	if (kvt_touch_or_sigbus(p + off))
		_exit(2);
	_exit(kvt_check(p + off, PAGE, off, 1) == -1 ? 0 : 1);
}

/*
 * Faults whose budget charge finds every pool page locked for reads the
 * dead path holds (a WILLNEED took them all): they wait for that I/O (up
 * to ctrl_loss_tmo), not a fixed 2 s, and get their bytes when the path
 * returns after 6 s.
 */
TEST_F_TIMEOUT(fabric, budget_wait, 300)
{
	pid_t pid[WAIT_FAULTS];
	long long stalls;
	double t0, took;
	unsigned char *p;
	int fd, i, ret;

	if (variant->writes)
		SKIP(return, "once is enough (the reads variant)");
	ASSERT_EQ(0, start(_metadata, 60, self->dev, sizeof(self->dev), 1));
	p = cold_region(_metadata, &fd, 1);
	ASSERT_NE(NULL, p);
	stalls = kvt_stat(0, "budget_stalls");

	t0 = now();
	ASSERT_EQ(0, nvmet(NULL, 0, "port-down"));
	/*
	 * WILLNEED takes every free pool page for reads the dead path now
	 * holds; then faults elsewhere find nothing to reclaim.
	 */
	ASSERT_EQ(0, posix_fadvise(fd, 0, STORM_MB * MiB, POSIX_FADV_WILLNEED));
	usleep(500000);
	for (i = 0; i < WAIT_FAULTS; i++) {
		pid[i] = check_child(p, 2 * MiB + (unsigned long long)i * 4 * MiB);
		ASSERT_GT(pid[i], 0);
	}
	sleep(WAIT_DOWN);
	TH_LOG("port down %.1f s; budget_stalls +%lld, resident %lld bytes",
	       now() - t0, kvt_stat(0, "budget_stalls") - stalls,
	       kvt_tier_num(0, "resident"));
	ASSERT_EQ(0, nvmet(NULL, 0, "port-up"));
	EXPECT_EQ(0, wait_live(20));
	for (i = 0; i < WAIT_FAULTS; i++) {
		ret = wait_child(pid[i], 60, &took);
		TH_LOG("fault %d: %s after %.1f s", i,
		       ret == 0 ? "right bytes" : ret == 1 ? "WRONG BYTES" :
		       ret == 2 ? "SIGBUS" : "no result", now() - t0);
		EXPECT_EQ(0, ret);
	}
	EXPECT_GT(kvt_stat(0, "budget_stalls") - stalls, 0);
	EXPECT_GE(now() - t0, WAIT_DOWN);
	EXPECT_EQ(0, kvt_tier_num(0, "error"));
	munmap(p, STORM_MB * MiB);
	close(fd);
	EXPECT_EQ(0, kvt_tier_write(0, "backing_dev", "none"));
}

TEST_HARNESS_MAIN
