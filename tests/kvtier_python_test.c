// SPDX-License-Identifier: GPL-2.0
/*
 * The kvtier Python package (python/kvtier) against the module: each case
 * runs one module of python/tests with /usr/bin/python3 -m unittest -v,
 * on tier 0 of a module loaded with two tiers (NS0 attached, 16 MiB host
 * budget; KVTIER_NS1, where set, for the attach cycle on tier 1). The
 * output comes out as "# " lines; unittest's exit status decides.
 *
 * Environment of the Python tests: PYTHONPATH=<repo>/python,
 * KVTIER_LIBRARY=<repo>/lib/libkvtier.so.0 (the library of this tree),
 * KVTIER_TEST_TIER=0. Runs as root in the test VM, which sees the host's
 * tree at the same path (tests/run-suite.sh); see kvtier_util.h.
 */
#include <linux/kvtier.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kvtier_util.h"

#define PYTHON	"/usr/bin/python3"

/* Why the Python tests cannot run here, or NULL. */
static const char *python_missing(void)
{
	static char why[PATH_MAX + 64];
	const char *repo = kvt_repo_root();

	if (access(PYTHON, X_OK))
		return "no " PYTHON;
	if (!repo)
		return "no repository (/proc/self/exe)";
	snprintf(why, sizeof(why), "%s/python/kvtier/__init__.py", repo);
	if (!kvt_exists(why)) {
		snprintf(why, sizeof(why), "no %s/python/kvtier", repo);
		return why;
	}
	snprintf(why, sizeof(why), "%s/lib/libkvtier.so.0", repo);
	if (!kvt_exists(why)) {
		snprintf(why, sizeof(why), "no %s/lib/libkvtier.so.0 (make -C lib)", repo);
		return why;
	}
	return NULL;
}

/* Unlink every named region of tier @id (what a failed test left). */
static void unlink_all(int id)
{
	struct kvtier_region_entry e[256];
	struct kvtier_region_list arg = {
		.entries = (uintptr_t)e,
		.count = 256,
	};
	unsigned int i;
	int fd;

	fd = kvt_tier_open(id, O_RDWR);
	if (fd < 0)
		return;
	if (!ioctl(fd, KVTIER_IOC_REGION_LIST, &arg)) {
		for (i = 0; i < arg.count && i < 256; i++) {
			e[i].name[KVTIER_NAME_MAX - 1] = '\0';
			kvt_unlink_name(fd, e[i].name);
		}
	}
	close(fd);
}

/* In the parent, module loaded: leave both tiers as the setup made them. */
static void python_teardown(void)
{
	unlink_all(0);
	if (!kvt_state_is(1, "detached")) {
		unlink_all(1);
		kvt_tier_write(1, "backing_dev", "none");
	}
}

KVT_TIER_FIXTURE("num_tiers=2", 16,
		 why = python_missing(); if (why) SKIP(return, "%s", why), ,
		 python_teardown());

/*
 * /usr/bin/python3 with @argv (NULL-terminated, after argv[0]) in
 * <repo>/python, its output (both streams) as "# " lines. Returns its exit
 * status, or -1.
 */
static int run_python(const char *const *argv)
{
	const char *args[16] = { PYTHON };
	const char *repo = kvt_repo_root();
	char dir[PATH_MAX], lib[PATH_MAX + 32], line[4096];
	int pfd[2], st;
	size_t n;
	pid_t pid;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/python", repo);
	snprintf(lib, sizeof(lib), "%s/lib/libkvtier.so.0", repo);
	if (pipe(pfd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		if (chdir(dir))
			_exit(126);
		setenv("PYTHONPATH", dir, 1);
		setenv("KVTIER_LIBRARY", lib, 1);
		setenv("KVTIER_TEST_TIER", "0", 1);
		/* The tree is the host's: no __pycache__ written into it. */
		setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
		setenv("PYTHONUNBUFFERED", "1", 1);
		for (n = 0; argv[n] && n + 2 < sizeof(args) / sizeof(args[0]); n++)
			args[n + 1] = argv[n];
		execv(PYTHON, (char *const *)args);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (!f) {
		close(pfd[0]);
	} else {
		while (fgets(line, sizeof(line), f)) {
			n = strlen(line);
			printf("# %s%s", line, n && line[n - 1] == '\n' ? "" : "\n");
			fflush(stdout);
		}
		fclose(f);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* python3 -m unittest -v @module: one module of python/tests. */
static int run_unittest(const char *module)
{
	const char *argv[] = { "-m", "unittest", "-v", module, NULL };

	return run_python(argv);
}

/* Tier: information, counters, knobs, listings, attach/detach/format. */
TEST_F_TIMEOUT(tier, tier_module, 300)
{
	ASSERT_EQ(0, run_unittest("tests.test_tier"));
}

/* Region: I/O every way, mappings, hints, pins, names, users. */
TEST_F_TIMEOUT(tier, region_module, 300)
{
	ASSERT_EQ(0, run_unittest("tests.test_region"));
}

/* Xfer: block store and restore, tickets, threads, persistence. */
TEST_F_TIMEOUT(tier, xfer_module, 300)
{
	ASSERT_EQ(0, run_unittest("tests.test_xfer"));
}

/* KVStore: every method, crash rules, processes, users, capacity. */
TEST_F_TIMEOUT(tier, kvstore_module, 600)
{
	ASSERT_EQ(0, run_unittest("tests.test_kvstore"));
}

/*
 * KVStore blocks outlive the module: stored, the module unloaded (still
 * attached, so the unload writes back and commits) and loaded again,
 * every byte read back; then the per-block costs behind the layout.
 */
TEST_F_TIMEOUT(tier, kvstore_reload, 600)
{
	const char *fill[] = { "tests/kvstore_tool.py", "--seed", "5", "fill",
			       "--count", "48", NULL };
	const char *verify[] = { "tests/kvstore_tool.py", "--seed", "5", "verify",
				 "--count", "48", "--all", NULL };
	const char *measure[] = { "tests/kvstore_tool.py", "--seed", "6",
				  "--prefix", "kvm.", "measure", "--count", "64",
				  NULL };

	ASSERT_EQ(0, run_python(fill));
	close(self->fd);
	self->fd = -1;
	ASSERT_EQ(0, kvt_unload());
	self->fd = kvt_start("num_tiers=2", 16);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, run_python(verify));
	ASSERT_EQ(0, run_python(measure));
}

/*
 * Prefix KV reuse with a PyTorch model (python/tests/reuse_tool.py) is not
 * here: tests/persist/run.sh reboot runs the same two processes, store and
 * restore, on both kernels with a reboot between them, which also reloads
 * the module; importing PyTorch costs about 20 s per process under TCG.
 */

TEST_HARNESS_MAIN
