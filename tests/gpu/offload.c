// SPDX-License-Identifier: GPL-2.0
/*
 * tests/gpu/run.sh's block offload: store and restore MIB MiB of 2 MiB
 * blocks (a KV block of a 70B-class model is of that order) from GPU
 * memory through a kvtier region with KVTIER_XFER_CUDA, and time both.
 * The CUDA runtime is reached as libkvtier reaches it (dlopen), so this
 * program needs no CUDA headers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kvtier.h>

#define BLOCK	(2UL << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 1024;
	unsigned int n = mib * (1UL << 20) / BLOCK, i;
	int (*cuda_malloc)(void **, size_t), (*cuda_memset)(void *, int, size_t);
	int (*cuda_memcpy)(void *, const void *, size_t, int);
	struct kvtier_xfer_attr attr = { .block_bytes = BLOCK,
					 .flags = KVTIER_XFER_CUDA };
	struct kvtier_region *region;
	struct kvtier_xfer *xfer;
	struct kvtier_tier *tier;
	void **bufs, *dev, *cudart;
	uint64_t *offs, ticket;
	unsigned char *a, *b;
	double t;
	int ret;

	cudart = dlopen("libcudart.so", RTLD_NOW);
	if (!cudart) {
		printf("no libcudart.so: %s\n", dlerror());
		return 1;
	}
	cuda_malloc = (int (*)(void **, size_t))dlsym(cudart, "cudaMalloc");
	cuda_memset = (int (*)(void *, int, size_t))dlsym(cudart, "cudaMemset");
	cuda_memcpy = (int (*)(void *, const void *, size_t, int))dlsym(cudart, "cudaMemcpy");
	if (!cuda_malloc || !cuda_memset || !cuda_memcpy ||
	    cuda_malloc(&dev, (size_t)n * BLOCK)) {
		printf("cudaMalloc failed\n");
		return 1;
	}
	/* Block i is filled with byte i + 1: a block restored to the wrong
	 * place, or not restored, is caught. */
	for (i = 0; i < n; i++)
		if (cuda_memset((char *)dev + (size_t)i * BLOCK, (i + 1) & 0xff, BLOCK))
			return 1;
	bufs = calloc(n, sizeof(*bufs));
	offs = calloc(n, sizeof(*offs));
	a = malloc(BLOCK);
	b = malloc(BLOCK);
	for (i = 0; i < n; i++) {
		bufs[i] = (char *)dev + (size_t)i * BLOCK;
		offs[i] = (uint64_t)i * BLOCK;
	}
	ret = kvtier_tier_open(0, &tier);
	if (!ret)
		ret = kvtier_region_create(tier, (uint64_t)n * BLOCK, &region);
	if (!ret)
		ret = kvtier_xfer_create(region, &attr, &xfer);
	if (ret) {
		printf("kvtier setup: %s\n", strerror(-ret));
		return 1;
	}
	t = now();
	ret = kvtier_xfer_store(xfer, bufs, offs, n, &ticket);
	if (!ret)
		ret = kvtier_xfer_wait(xfer, ticket);
	if (!ret)
		ret = kvtier_region_sync(region);
	printf("offload_store_GBps %.2f (%u blocks of %lu bytes, synced)\n",
	       (double)n * BLOCK / (now() - t) / 1e9, n, BLOCK);
	if (!ret)
		ret = kvtier_region_cold(region, 0, 0);
	cuda_memset(dev, 0, (size_t)n * BLOCK);
	t = now();
	if (!ret)
		ret = kvtier_xfer_restore(xfer, bufs, offs, n, &ticket);
	if (!ret)
		ret = kvtier_xfer_wait(xfer, ticket);
	printf("offload_restore_GBps %.2f (from the namespace: the region was dropped first)\n",
	       (double)n * BLOCK / (now() - t) / 1e9);
	for (i = 0; !ret && i < n; i++) {
		memset(a, (i + 1) & 0xff, BLOCK);
		if (cuda_memcpy(b, bufs[i], BLOCK, 2 /* DeviceToHost */) ||
		    memcmp(a, b, BLOCK)) {
			printf("block %u came back wrong\n", i);
			ret = -1;
		}
	}
	kvtier_xfer_destroy(xfer);
	kvtier_region_close(region);
	kvtier_tier_close(tier);
	printf("offload_round_trip %s\n", ret ? "FAIL" : "ok");
	return ret ? 1 : 0;
}
