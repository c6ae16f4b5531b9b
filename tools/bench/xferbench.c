// SPDX-License-Identifier: GPL-2.0
/*
 * xferbench - libkvtier's block offload (kvtier_xfer_*) timed on one tier:
 * store N blocks in one call and wait, write them back (region_cold),
 * restore them in one call and wait; every byte checked after the restore.
 *
 * --no-io-uring first installs a seccomp filter that fails io_uring_setup(2)
 * with ENOSYS, so the same library moves the blocks with its four worker
 * threads instead of its ring: the two engines in one boot, one build.
 *
 * Output: one CSV line per round:
 *   engine,block_kib,mib,store_s,store_gbps,writeback_s,restore_s,restore_gbps
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kvtier.h"

static void die(const char *what, int err)
{
	fprintf(stderr, "xferbench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void deny_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("seccomp", errno);
}

static uint64_t word(uint64_t off, uint64_t seed)
{
	uint64_t x = (off + 1) * 0x9e3779b97f4a7c15ULL ^ seed;

	x ^= x >> 29;
	return x * 0xbf58476d1ce4e5b9ULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: xferbench [--tier N] [--mib M] [--block-kb K] [--rounds R] [--no-io-uring]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long tier_id = 0, mib = 256, block_kb = 2048, rounds = 3, i, k;
	struct kvtier_xfer_attr attr = { 0 };
	struct kvtier_region *region;
	struct kvtier_xfer *x;
	struct kvtier_tier *t;
	const char *engine = "io_uring";
	uint64_t *offs, ticket;
	size_t bytes, n;
	void **bufs;
	int a, ret;

	for (a = 1; a < argc; a++) {
		char *end = NULL;

		if (!strcmp(argv[a], "--no-io-uring")) {
			engine = "workers";
			continue;
		}
		if (a + 1 >= argc)
			usage();
		errno = 0;
		if (!strcmp(argv[a], "--tier"))
			tier_id = strtoul(argv[++a], &end, 0);
		else if (!strcmp(argv[a], "--mib"))
			mib = strtoul(argv[++a], &end, 0);
		else if (!strcmp(argv[a], "--block-kb"))
			block_kb = strtoul(argv[++a], &end, 0);
		else if (!strcmp(argv[a], "--rounds"))
			rounds = strtoul(argv[++a], &end, 0);
		else
			usage();
		if (errno || !end || *end)
			usage();
	}
	if (!mib || !block_kb || !rounds || block_kb * 1024 > mib << 20 || tier_id > 255)
		usage();
	if (!strcmp(engine, "workers"))
		deny_io_uring();

	bytes = block_kb * 1024;
	n = (mib << 20) / bytes;
	bufs = calloc(n, sizeof(*bufs));
	offs = calloc(n, sizeof(*offs));
	if (!bufs || !offs)
		die("calloc", ENOMEM);
	for (i = 0; i < n; i++) {
		bufs[i] = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (bufs[i] == MAP_FAILED)
			die("mmap", errno);
		offs[i] = (uint64_t)i * bytes;
	}
	ret = kvtier_tier_open(tier_id, &t);
	if (ret)
		die("kvtier_tier_open", ret);
	ret = kvtier_region_create(t, (uint64_t)n * bytes, &region);
	if (ret)
		die("kvtier_region_create", ret);
	attr.block_bytes = bytes;
	ret = kvtier_xfer_create(region, &attr, &x);
	if (ret)
		die("kvtier_xfer_create", ret);

	for (k = 0; k < rounds; k++) {
		double t0, t1, t2, t3, t4;

		for (i = 0; i < n; i++) {
			uint64_t *w = bufs[i];
			size_t j;

			for (j = 0; j < bytes / 8; j++)
				w[j] = word(offs[i] + j * 8, k);
		}
		t0 = now();
		ret = kvtier_xfer_store(x, bufs, offs, n, &ticket);
		if (!ret)
			ret = kvtier_xfer_wait(x, ticket);
		if (ret)
			die("store", ret);
		t1 = now();
		/* Written back and dropped: the restore reads the namespace. */
		ret = kvtier_region_cold(region, 0, 0);
		if (ret)
			die("kvtier_region_cold", ret);
		t2 = now();
		for (i = 0; i < n; i++)
			memset(bufs[i], 0, bytes);
		t3 = now();
		ret = kvtier_xfer_restore(x, bufs, offs, n, &ticket);
		if (!ret)
			ret = kvtier_xfer_wait(x, ticket);
		if (ret)
			die("restore", ret);
		t4 = now();
		for (i = 0; i < n; i++) {
			uint64_t *w = bufs[i];
			size_t j;

			for (j = 0; j < bytes / 8; j++)
				if (w[j] != word(offs[i] + j * 8, k)) {
					fprintf(stderr, "xferbench: block %lu word %zu is wrong\n",
						i, j);
					return 1;
				}
		}
		printf("%s,%lu,%lu,%.3f,%.3f,%.3f,%.3f,%.3f\n", engine, block_kb,
		       (unsigned long)(n * bytes >> 20), t1 - t0,
		       n * bytes / (t1 - t0) / 1e9, t2 - t1, t4 - t3,
		       n * bytes / (t4 - t3) / 1e9);
		fflush(stdout);
	}
	kvtier_xfer_destroy(x);
	kvtier_region_close(region);
	kvtier_tier_close(t);
	return 0;
}
