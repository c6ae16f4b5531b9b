/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TEST CODE, never installed. The test double of the CUDA driver
 * (libcuda.so.1 from cuda_double.c) and runtime (libcudart.so.13 from
 * cudart_double.c): CUDA 13 entry points implemented on host memory, for
 * machines without a GPU. This header declares what the double adds for
 * tests: call counters and what it knows about its allocations.
 *
 * Environment read by the driver double:
 *   KVT_DOUBLE_PAGEABLE   0 (default) or 1: what cuDeviceGetAttribute answers
 *                         for CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
 *   KVT_DOUBLE_HOST_PAGE_TABLES 0 (default) or 1: the answer for
 *                         ..._PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES (ATS)
 *   KVT_DOUBLE_DEVICES    number of devices (default 1, at most 8)
 *   KVT_DOUBLE_MEM_MB     device memory per device in MiB (default 16384)
 *   KVT_DOUBLE_LOG        file to append one line per driver call to:
 *                         "<pid> <entry point> <result>"
 *   KVT_DOUBLE_FAIL       entry point name that always fails with
 *                         CUDA_ERROR_NOT_SUPPORTED (fault injection)
 *
 * The double's device memory is host memory (mmap), so a test can check
 * bytes through device pointers directly. Device, managed and host
 * allocations are tracked; freeing a pointer the double did not hand out
 * fails with CUDA_ERROR_INVALID_VALUE and is counted as a bad free.
 */
#ifndef KVT_DOUBLE_H
#define KVT_DOUBLE_H

#include <stddef.h>
#include <stdint.h>

/* Kinds of allocation, as kvt_double_kind() reports them. */
#define KVT_DOUBLE_NONE		0
#define KVT_DOUBLE_HOST		1	/* cuMemAllocHost */
#define KVT_DOUBLE_DEVICE	2	/* cuMemAlloc*, cuMemCreate+cuMemMap */
#define KVT_DOUBLE_MANAGED	3	/* cuMemAllocManaged */

/* Driver double (libcuda.so.1). */
long kvt_double_calls(const char *entry_point);	/* calls that reached it */
void kvt_double_reset(void);			/* zero every counter */
long kvt_double_bad_frees(void);		/* frees of unknown pointers */
int kvt_double_kind(uint64_t ptr);		/* KVT_DOUBLE_* of the allocation holding ptr */
int kvt_double_preferred(uint64_t ptr);		/* preferred device, -1 if none advised */
long kvt_double_live(void);			/* live device+managed+host allocations */

/* Runtime double (libcudart.so.13): cudaMalloc's body without the
 * exported name, so a test can reach the driver through the pointers the
 * runtime fetched with cuGetProcAddress_v2 without going through a hook of
 * cudaMalloc itself. */
int kvt_double_rt_malloc(void **ptr, size_t size);
int kvt_double_rt_free(void *ptr);

#endif /* KVT_DOUBLE_H */
