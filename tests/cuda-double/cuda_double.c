// SPDX-License-Identifier: GPL-2.0
/*
 * TEST CODE, never installed: a double of the CUDA 13 driver library
 * (built as libcuda.so.1) for machines without a GPU. Device memory is
 * host memory; every entry point counts its calls (kvt_double.h). The
 * prototypes come from the real cuda.h, so the signatures are CUDA 13's.
 */
#define _GNU_SOURCE
#include <cuda.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvt_double.h"

/* Legacy names cuda.h maps to their _v2 forms; the library exports both. */
#undef cuGetProcAddress
#undef cuDeviceGetUuid
#undef cuMemAdvise
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags);
CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
		     CUdevice device);
/* The per-thread default stream forms (cuda.h declares them only when
 * compiled for that mode). */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
			      CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

#define EXPORT __attribute__((visibility("default")))

/* Every entry point: counted, logged, and reachable by cuGetProcAddress. */
#define DOUBLE_ENTRY_POINTS(X)						\
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) \
	X(cuDeviceGetName)							\
	X(cuDeviceGetAttribute) X(cuDeviceGetUuid) X(cuDeviceGetUuid_v2) \
	X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)	\
	X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxGetDevice)		\
	X(cuCtxSynchronize) X(cuCtxGetStreamPriorityRange)		\
	X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocAsync)		\
	X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync)		\
	X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync)		\
	X(cuMemFreeAsync_ptsz) X(cuMemAllocManaged) X(cuMemAdvise)	\
	X(cuMemAdvise_v2) X(cuMemAllocHost_v2) X(cuMemFreeHost)		\
	X(cuMemCreate) X(cuMemRelease) X(cuMemAddressReserve)		\
	X(cuMemAddressFree) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)	\
	X(cuMemGetInfo_v2) X(cuMemcpyAsync) X(cuStreamCreateWithPriority) \
	X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuPointerGetAttribute) \
	X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuGetErrorString)

enum entry {
#define X(n) E_##n,
	DOUBLE_ENTRY_POINTS(X)
#undef X
	E_COUNT
};

static const char *const entry_name[E_COUNT] = {
#define X(n) #n,
	DOUBLE_ENTRY_POINTS(X)
#undef X
};

static void *const entry_fn[E_COUNT] = {
#define X(n) (void *)n,
	DOUBLE_ENTRY_POINTS(X)
#undef X
};

#define MAX_DEVICES	8
#define MAX_ALLOCS	65536

struct alloc {
	uint64_t ptr;
	uint64_t size;
	int kind;
	int dev;
	int pref;
	int vmm;	/* a cuMemMap mapping, not an allocation */
};

struct vmm_handle {
	unsigned int magic;
	int fd;
	int dev;
	size_t size;
};

#define VMM_MAGIC	0x6b76746dU
#define STREAM_MAGIC	0x6b767473U

struct stream {
	unsigned int magic;
	int priority;
};

/* The primary context of each device: what CUcontext points at. */
struct ctx {
	int dev;
};

static atomic_long calls[E_COUNT];
static atomic_long bad_frees;
static atomic_int initialized;
static int ndevices = 1, pageable, host_page_tables, log_fd = -1, fail_entry = -1;
static size_t mem_total;
static size_t mem_used[MAX_DEVICES];
static struct ctx ctxs[MAX_DEVICES];
static __thread struct ctx *current;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *allocs;
static size_t nallocs;

static void atfork_prepare(void) { pthread_mutex_lock(&lock); }
static void atfork_parent(void) { pthread_mutex_unlock(&lock); }
static void atfork_child(void) { pthread_mutex_init(&lock, NULL); }

__attribute__((constructor)) static void double_init(void)
{
	const char *s;
	int i;

	s = getenv("KVT_DOUBLE_PAGEABLE");
	pageable = s && !strcmp(s, "1");
	s = getenv("KVT_DOUBLE_HOST_PAGE_TABLES");
	host_page_tables = s && !strcmp(s, "1");
	s = getenv("KVT_DOUBLE_DEVICES");
	if (s && atoi(s) >= 1 && atoi(s) <= MAX_DEVICES)
		ndevices = atoi(s);
	s = getenv("KVT_DOUBLE_MEM_MB");
	mem_total = (size_t)(s && atoll(s) > 0 ? atoll(s) : 16384) << 20;
	s = getenv("KVT_DOUBLE_LOG");
	if (s && *s)
		log_fd = open(s, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	s = getenv("KVT_DOUBLE_FAIL");
	for (i = 0; s && i < E_COUNT; i++)
		if (!strcmp(s, entry_name[i]))
			fail_entry = i;
	for (i = 0; i < MAX_DEVICES; i++)
		ctxs[i].dev = i;
	allocs = calloc(MAX_ALLOCS, sizeof(*allocs));
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Count a call; CUDA_ERROR_NOT_SUPPORTED if it is the injected failure. */
static int enter(enum entry e)
{
	atomic_fetch_add(&calls[e], 1);
	return (int)e == fail_entry;
}

static CUresult finish(enum entry e, CUresult r)
{
	char line[128];
	int n;

	if (log_fd >= 0) {
		n = snprintf(line, sizeof(line), "%d %s %d\n", (int)getpid(),
			     entry_name[e], (int)r);
		if (write(log_fd, line, n) < 0)
			(void)0;
	}
	return r;
}

#define ENTER(n)							\
	do {								\
		if (enter(E_##n))					\
			return finish(E_##n, CUDA_ERROR_NOT_SUPPORTED);	\
	} while (0)
#define RET(n, r)	return finish(E_##n, (r))
#define NEED_INIT(n)							\
	do {								\
		if (!atomic_load(&initialized))				\
			RET(n, CUDA_ERROR_NOT_INITIALIZED);		\
	} while (0)
#define NEED_CTX(n)							\
	do {								\
		NEED_INIT(n);						\
		if (!current)						\
			RET(n, CUDA_ERROR_INVALID_CONTEXT);		\
	} while (0)

/* Index of the allocation holding @p, or -1. Under lock. */
static long find(uint64_t p)
{
	size_t i;

	for (i = 0; i < nallocs; i++)
		if (p >= allocs[i].ptr && p < allocs[i].ptr + allocs[i].size)
			return (long)i;
	return -1;
}

static long find_exact(uint64_t p)
{
	long i = find(p);

	return i >= 0 && allocs[i].ptr == p ? i : -1;
}

static int track(uint64_t p, uint64_t size, int kind, int dev, int vmm)
{
	int ret = -1;

	pthread_mutex_lock(&lock);
	if (allocs && nallocs < MAX_ALLOCS) {
		allocs[nallocs++] = (struct alloc){ p, size, kind, dev, -1, vmm };
		ret = 0;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static size_t page_round(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

/* Host memory standing in for device memory: @size bytes, page aligned. */
static CUresult do_alloc(CUdeviceptr *dptr, size_t size, int kind)
{
	size_t len = page_round(size);
	int dev = current->dev;
	void *p;

	if (!dptr || !size)
		return CUDA_ERROR_INVALID_VALUE;
	if (kind == KVT_DOUBLE_DEVICE) {
		pthread_mutex_lock(&lock);
		if (mem_used[dev] + len > mem_total) {
			pthread_mutex_unlock(&lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		mem_used[dev] += len;
		pthread_mutex_unlock(&lock);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED || track((uintptr_t)p, len, kind, dev, 0)) {
		if (p != MAP_FAILED)
			munmap(p, len);
		if (kind == KVT_DOUBLE_DEVICE) {
			pthread_mutex_lock(&lock);
			mem_used[dev] -= len;
			pthread_mutex_unlock(&lock);
		}
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*dptr = (uintptr_t)p;
	return CUDA_SUCCESS;
}

/* Free an allocation of one of @kinds (bit mask of 1 << KVT_DOUBLE_*). */
static CUresult do_free(CUdeviceptr p, unsigned int kinds)
{
	struct alloc a;
	long i;

	if (!p)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&lock);
	i = find_exact(p);
	if (i < 0 || allocs[i].vmm || !(kinds & (1U << allocs[i].kind))) {
		pthread_mutex_unlock(&lock);
		atomic_fetch_add(&bad_frees, 1);
		return CUDA_ERROR_INVALID_VALUE;
	}
	a = allocs[i];
	allocs[i] = allocs[--nallocs];
	if (a.kind == KVT_DOUBLE_DEVICE)
		mem_used[a.dev] -= a.size;
	pthread_mutex_unlock(&lock);
	munmap((void *)(uintptr_t)a.ptr, a.size);
	return CUDA_SUCCESS;
}

#define DEV_MEM	((1U << KVT_DOUBLE_DEVICE) | (1U << KVT_DOUBLE_MANAGED))

/* --- the test API ---------------------------------------------------- */

EXPORT long kvt_double_calls(const char *entry_point)
{
	int i;

	for (i = 0; entry_point && i < E_COUNT; i++)
		if (!strcmp(entry_point, entry_name[i]))
			return atomic_load(&calls[i]);
	return -1;
}

EXPORT void kvt_double_reset(void)
{
	int i;

	for (i = 0; i < E_COUNT; i++)
		atomic_store(&calls[i], 0);
	atomic_store(&bad_frees, 0);
}

EXPORT long kvt_double_bad_frees(void)
{
	return atomic_load(&bad_frees);
}

EXPORT int kvt_double_kind(uint64_t ptr)
{
	int kind = KVT_DOUBLE_NONE;
	long i;

	pthread_mutex_lock(&lock);
	i = find(ptr);
	if (i >= 0)
		kind = allocs[i].kind;
	pthread_mutex_unlock(&lock);
	return kind;
}

EXPORT int kvt_double_preferred(uint64_t ptr)
{
	int pref = -1;
	long i;

	pthread_mutex_lock(&lock);
	i = find(ptr);
	if (i >= 0)
		pref = allocs[i].pref;
	pthread_mutex_unlock(&lock);
	return pref;
}

EXPORT long kvt_double_live(void)
{
	long n = 0;
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nallocs; i++)
		n += !allocs[i].vmm;
	pthread_mutex_unlock(&lock);
	return n;
}

/* --- initialization, devices, contexts ------------------------------- */

EXPORT CUresult cuInit(unsigned int Flags)
{
	ENTER(cuInit);
	if (Flags)
		RET(cuInit, CUDA_ERROR_INVALID_VALUE);
	atomic_store(&initialized, 1);
	RET(cuInit, CUDA_SUCCESS);
}

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
	ENTER(cuDriverGetVersion);
	if (!driverVersion)
		RET(cuDriverGetVersion, CUDA_ERROR_INVALID_VALUE);
	*driverVersion = CUDA_VERSION;
	RET(cuDriverGetVersion, CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	ENTER(cuDeviceGet);
	NEED_INIT(cuDeviceGet);
	if (!device)
		RET(cuDeviceGet, CUDA_ERROR_INVALID_VALUE);
	if (ordinal < 0 || ordinal >= ndevices)
		RET(cuDeviceGet, CUDA_ERROR_INVALID_DEVICE);
	*device = ordinal;
	RET(cuDeviceGet, CUDA_SUCCESS);
}

/* "kvtier test double GPU N" */
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	ENTER(cuDeviceGetName);
	NEED_INIT(cuDeviceGetName);
	if (!name || len <= 0)
		RET(cuDeviceGetName, CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= ndevices)
		RET(cuDeviceGetName, CUDA_ERROR_INVALID_DEVICE);
	snprintf(name, (size_t)len, "kvtier test double GPU %d", (int)dev);
	RET(cuDeviceGetName, CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
	ENTER(cuDeviceGetCount);
	NEED_INIT(cuDeviceGetCount);
	if (!count)
		RET(cuDeviceGetCount, CUDA_ERROR_INVALID_VALUE);
	*count = ndevices;
	RET(cuDeviceGetCount, CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
				     CUdevice dev)
{
	ENTER(cuDeviceGetAttribute);
	NEED_INIT(cuDeviceGetAttribute);
	if (!pi)
		RET(cuDeviceGetAttribute, CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= ndevices)
		RET(cuDeviceGetAttribute, CUDA_ERROR_INVALID_DEVICE);
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
		*pi = pageable;
		break;
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
		*pi = host_page_tables;
		break;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
		*pi = 1;
		break;
	default:
		*pi = 0;
	}
	RET(cuDeviceGetAttribute, CUDA_SUCCESS);
}

/* Device @dev's UUID: "kvt-double-gpu" then the ordinal, 16 bytes. */
static void uuid_of(CUuuid *uuid, CUdevice dev)
{
	memcpy(uuid->bytes, "kvt-double-gpu", 14);
	uuid->bytes[14] = '-';
	uuid->bytes[15] = (char)('0' + dev);
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	ENTER(cuDeviceGetUuid);
	NEED_INIT(cuDeviceGetUuid);
	if (!uuid)
		RET(cuDeviceGetUuid, CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= ndevices)
		RET(cuDeviceGetUuid, CUDA_ERROR_INVALID_DEVICE);
	uuid_of(uuid, dev);
	RET(cuDeviceGetUuid, CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	ENTER(cuDeviceGetUuid_v2);
	NEED_INIT(cuDeviceGetUuid_v2);
	if (!uuid)
		RET(cuDeviceGetUuid_v2, CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= ndevices)
		RET(cuDeviceGetUuid_v2, CUDA_ERROR_INVALID_DEVICE);
	uuid_of(uuid, dev);
	RET(cuDeviceGetUuid_v2, CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	ENTER(cuDevicePrimaryCtxRetain);
	NEED_INIT(cuDevicePrimaryCtxRetain);
	if (!pctx)
		RET(cuDevicePrimaryCtxRetain, CUDA_ERROR_INVALID_VALUE);
	if (dev < 0 || dev >= ndevices)
		RET(cuDevicePrimaryCtxRetain, CUDA_ERROR_INVALID_DEVICE);
	*pctx = (CUcontext)&ctxs[dev];
	RET(cuDevicePrimaryCtxRetain, CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	ENTER(cuDevicePrimaryCtxRelease_v2);
	NEED_INIT(cuDevicePrimaryCtxRelease_v2);
	if (dev < 0 || dev >= ndevices)
		RET(cuDevicePrimaryCtxRelease_v2, CUDA_ERROR_INVALID_DEVICE);
	RET(cuDevicePrimaryCtxRelease_v2, CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct ctx *c = (struct ctx *)ctx;

	ENTER(cuCtxSetCurrent);
	NEED_INIT(cuCtxSetCurrent);
	if (c && (c < ctxs || c >= ctxs + ndevices))
		RET(cuCtxSetCurrent, CUDA_ERROR_INVALID_CONTEXT);
	current = c;
	RET(cuCtxSetCurrent, CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	ENTER(cuCtxGetCurrent);
	NEED_INIT(cuCtxGetCurrent);
	if (!pctx)
		RET(cuCtxGetCurrent, CUDA_ERROR_INVALID_VALUE);
	*pctx = (CUcontext)current;
	RET(cuCtxGetCurrent, CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	ENTER(cuCtxGetDevice);
	NEED_CTX(cuCtxGetDevice);
	if (!device)
		RET(cuCtxGetDevice, CUDA_ERROR_INVALID_VALUE);
	*device = current->dev;
	RET(cuCtxGetDevice, CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void)
{
	ENTER(cuCtxSynchronize);
	NEED_CTX(cuCtxSynchronize);
	RET(cuCtxSynchronize, CUDA_SUCCESS);
}

EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority,
					    int *greatestPriority)
{
	ENTER(cuCtxGetStreamPriorityRange);
	NEED_CTX(cuCtxGetStreamPriorityRange);
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	RET(cuCtxGetStreamPriorityRange, CUDA_SUCCESS);
}

/* --- memory ---------------------------------------------------------- */

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	ENTER(cuMemAlloc_v2);
	NEED_CTX(cuMemAlloc_v2);
	RET(cuMemAlloc_v2, do_alloc(dptr, bytesize, KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	ENTER(cuMemFree_v2);
	NEED_CTX(cuMemFree_v2);
	RET(cuMemFree_v2, do_free(dptr, DEV_MEM));
}

static int bad_stream(CUstream s)
{
	const struct stream *st = (const struct stream *)s;

	/* 0, CU_STREAM_LEGACY (1) and CU_STREAM_PER_THREAD (2) are valid. */
	return (uintptr_t)s > 2 && st->magic != STREAM_MAGIC;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
				CUstream hStream)
{
	ENTER(cuMemAllocAsync);
	NEED_CTX(cuMemAllocAsync);
	if (bad_stream(hStream))
		RET(cuMemAllocAsync, CUDA_ERROR_INVALID_HANDLE);
	RET(cuMemAllocAsync, do_alloc(dptr, bytesize, KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				     CUstream hStream)
{
	ENTER(cuMemAllocAsync_ptsz);
	NEED_CTX(cuMemAllocAsync_ptsz);
	if (bad_stream(hStream))
		RET(cuMemAllocAsync_ptsz, CUDA_ERROR_INVALID_HANDLE);
	RET(cuMemAllocAsync_ptsz, do_alloc(dptr, bytesize, KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
					CUmemoryPool pool, CUstream hStream)
{
	ENTER(cuMemAllocFromPoolAsync);
	NEED_CTX(cuMemAllocFromPoolAsync);
	if (!pool || bad_stream(hStream))
		RET(cuMemAllocFromPoolAsync, CUDA_ERROR_INVALID_HANDLE);
	RET(cuMemAllocFromPoolAsync, do_alloc(dptr, bytesize, KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					     CUmemoryPool pool, CUstream hStream)
{
	ENTER(cuMemAllocFromPoolAsync_ptsz);
	NEED_CTX(cuMemAllocFromPoolAsync_ptsz);
	if (!pool || bad_stream(hStream))
		RET(cuMemAllocFromPoolAsync_ptsz, CUDA_ERROR_INVALID_HANDLE);
	RET(cuMemAllocFromPoolAsync_ptsz,
	    do_alloc(dptr, bytesize, KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	ENTER(cuMemFreeAsync);
	NEED_CTX(cuMemFreeAsync);
	if (bad_stream(hStream))
		RET(cuMemFreeAsync, CUDA_ERROR_INVALID_HANDLE);
	/* Stream-ordered frees take pool memory only, never managed. */
	RET(cuMemFreeAsync, do_free(dptr, 1U << KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	ENTER(cuMemFreeAsync_ptsz);
	NEED_CTX(cuMemFreeAsync_ptsz);
	if (bad_stream(hStream))
		RET(cuMemFreeAsync_ptsz, CUDA_ERROR_INVALID_HANDLE);
	RET(cuMemFreeAsync_ptsz, do_free(dptr, 1U << KVT_DOUBLE_DEVICE));
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
				  unsigned int flags)
{
	ENTER(cuMemAllocManaged);
	NEED_CTX(cuMemAllocManaged);
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		RET(cuMemAllocManaged, CUDA_ERROR_INVALID_VALUE);
	RET(cuMemAllocManaged, do_alloc(dptr, bytesize, KVT_DOUBLE_MANAGED));
}

/* Record preferred location @dev (-1: host / unset) over a managed range. */
static CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice,
		       int dev)
{
	CUresult r = CUDA_SUCCESS;
	long i;

	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	i = find(p);
	if (i < 0 || allocs[i].kind != KVT_DOUBLE_MANAGED ||
	    p + count > allocs[i].ptr + allocs[i].size) {
		/* Pageable memory takes advice only where the GPU can reach it. */
		r = i < 0 && pageable ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	} else if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
		allocs[i].pref = dev;
	} else if (advice == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) {
		allocs[i].pref = -1;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

EXPORT CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count,
			    CUmem_advise advice, CUdevice device)
{
	ENTER(cuMemAdvise);
	NEED_CTX(cuMemAdvise);
	if (device != CU_DEVICE_CPU && (device < 0 || device >= ndevices))
		RET(cuMemAdvise, CUDA_ERROR_INVALID_DEVICE);
	RET(cuMemAdvise, advise(devPtr, count, advice,
				device == CU_DEVICE_CPU ? -1 : device));
}

EXPORT CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count,
			       CUmem_advise advice, CUmemLocation location)
{
	int dev = -1;

	ENTER(cuMemAdvise_v2);
	NEED_CTX(cuMemAdvise_v2);
	if (location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
		if (location.id < 0 || location.id >= ndevices)
			RET(cuMemAdvise_v2, CUDA_ERROR_INVALID_DEVICE);
		dev = location.id;
	} else if (location.type != CU_MEM_LOCATION_TYPE_HOST &&
		   location.type != CU_MEM_LOCATION_TYPE_INVALID) {
		RET(cuMemAdvise_v2, CUDA_ERROR_INVALID_VALUE);
	}
	RET(cuMemAdvise_v2, advise(devPtr, count, advice, dev));
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	CUdeviceptr p;
	CUresult r;

	ENTER(cuMemAllocHost_v2);
	NEED_CTX(cuMemAllocHost_v2);
	if (!pp)
		RET(cuMemAllocHost_v2, CUDA_ERROR_INVALID_VALUE);
	r = do_alloc(&p, bytesize, KVT_DOUBLE_HOST);
	if (r == CUDA_SUCCESS)
		*pp = (void *)(uintptr_t)p;
	RET(cuMemAllocHost_v2, r);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	ENTER(cuMemFreeHost);
	NEED_CTX(cuMemFreeHost);
	RET(cuMemFreeHost, do_free((uintptr_t)p, 1U << KVT_DOUBLE_HOST));
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	int dev;

	ENTER(cuMemGetInfo_v2);
	NEED_CTX(cuMemGetInfo_v2);
	if (!free || !total)
		RET(cuMemGetInfo_v2, CUDA_ERROR_INVALID_VALUE);
	dev = current->dev;
	pthread_mutex_lock(&lock);
	*total = mem_total;
	*free = mem_total - mem_used[dev];
	pthread_mutex_unlock(&lock);
	RET(cuMemGetInfo_v2, CUDA_SUCCESS);
}

/* --- virtual memory management: handles are memfds ------------------- */

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	struct vmm_handle *h;
	int dev;

	ENTER(cuMemCreate);
	NEED_CTX(cuMemCreate);
	if (!handle || !prop || flags || !size || size % 4096 ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		RET(cuMemCreate, CUDA_ERROR_INVALID_VALUE);
	dev = prop->location.id;
	if (dev < 0 || dev >= ndevices)
		RET(cuMemCreate, CUDA_ERROR_INVALID_DEVICE);
	h = calloc(1, sizeof(*h));
	if (!h)
		RET(cuMemCreate, CUDA_ERROR_OUT_OF_MEMORY);
	pthread_mutex_lock(&lock);
	if (mem_used[dev] + size > mem_total) {
		pthread_mutex_unlock(&lock);
		free(h);
		RET(cuMemCreate, CUDA_ERROR_OUT_OF_MEMORY);
	}
	mem_used[dev] += size;
	pthread_mutex_unlock(&lock);
	h->fd = memfd_create("kvt-double-vmm", MFD_CLOEXEC);
	if (h->fd < 0 || ftruncate(h->fd, size)) {
		if (h->fd >= 0)
			close(h->fd);
		free(h);
		pthread_mutex_lock(&lock);
		mem_used[dev] -= size;
		pthread_mutex_unlock(&lock);
		RET(cuMemCreate, CUDA_ERROR_OUT_OF_MEMORY);
	}
	h->magic = VMM_MAGIC;
	h->dev = dev;
	h->size = size;
	*handle = (uintptr_t)h;
	RET(cuMemCreate, CUDA_SUCCESS);
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *h = (struct vmm_handle *)(uintptr_t)handle;

	ENTER(cuMemRelease);
	NEED_INIT(cuMemRelease);
	if (!h || h->magic != VMM_MAGIC)
		RET(cuMemRelease, CUDA_ERROR_INVALID_VALUE);
	/* Mappings keep the memory (the memfd) until they are unmapped. */
	pthread_mutex_lock(&lock);
	mem_used[h->dev] -= h->size;
	pthread_mutex_unlock(&lock);
	close(h->fd);
	h->magic = 0;
	free(h);
	RET(cuMemRelease, CUDA_SUCCESS);
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
				    size_t alignment, CUdeviceptr addr,
				    unsigned long long flags)
{
	void *p;

	ENTER(cuMemAddressReserve);
	NEED_INIT(cuMemAddressReserve);
	(void)alignment;
	if (!ptr || !size || size % 4096 || flags)
		RET(cuMemAddressReserve, CUDA_ERROR_INVALID_VALUE);
	p = mmap((void *)(uintptr_t)addr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		RET(cuMemAddressReserve, CUDA_ERROR_OUT_OF_MEMORY);
	*ptr = (uintptr_t)p;
	RET(cuMemAddressReserve, CUDA_SUCCESS);
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	ENTER(cuMemAddressFree);
	NEED_INIT(cuMemAddressFree);
	if (!ptr || !size || munmap((void *)(uintptr_t)ptr, size))
		RET(cuMemAddressFree, CUDA_ERROR_INVALID_VALUE);
	RET(cuMemAddressFree, CUDA_SUCCESS);
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	struct vmm_handle *h = (struct vmm_handle *)(uintptr_t)handle;
	void *p;

	ENTER(cuMemMap);
	NEED_INIT(cuMemMap);
	if (!h || h->magic != VMM_MAGIC || offset || flags || !ptr ||
	    size != h->size)
		RET(cuMemMap, CUDA_ERROR_INVALID_VALUE);
	/* Mapped but inaccessible until cuMemSetAccess, as on a GPU. */
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED,
		 h->fd, 0);
	if (p == MAP_FAILED)
		RET(cuMemMap, CUDA_ERROR_INVALID_VALUE);
	if (track(ptr, size, KVT_DOUBLE_DEVICE, h->dev, 1))
		RET(cuMemMap, CUDA_ERROR_OUT_OF_MEMORY);
	RET(cuMemMap, CUDA_SUCCESS);
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	long i;

	ENTER(cuMemUnmap);
	NEED_INIT(cuMemUnmap);
	pthread_mutex_lock(&lock);
	i = find_exact(ptr);
	if (i < 0 || !allocs[i].vmm || allocs[i].size != size) {
		pthread_mutex_unlock(&lock);
		RET(cuMemUnmap, CUDA_ERROR_INVALID_VALUE);
	}
	allocs[i] = allocs[--nallocs];
	pthread_mutex_unlock(&lock);
	/* Back to a reservation. */
	mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	RET(cuMemUnmap, CUDA_SUCCESS);
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			       const CUmemAccessDesc *desc, size_t count)
{
	int prot = PROT_NONE;
	size_t i;

	ENTER(cuMemSetAccess);
	NEED_INIT(cuMemSetAccess);
	if (!ptr || !size || !desc || !count)
		RET(cuMemSetAccess, CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < count; i++) {
		if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			prot = PROT_READ | PROT_WRITE;
		else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ &&
			 prot == PROT_NONE)
			prot = PROT_READ;
	}
	if (mprotect((void *)(uintptr_t)ptr, size, prot))
		RET(cuMemSetAccess, CUDA_ERROR_INVALID_VALUE);
	RET(cuMemSetAccess, CUDA_SUCCESS);
}

/* --- streams and copies ---------------------------------------------- */

EXPORT CUresult cuStreamCreateWithPriority(CUstream *phStream,
					   unsigned int flags, int priority)
{
	struct stream *s;

	ENTER(cuStreamCreateWithPriority);
	NEED_CTX(cuStreamCreateWithPriority);
	if (!phStream || flags > CU_STREAM_NON_BLOCKING)
		RET(cuStreamCreateWithPriority, CUDA_ERROR_INVALID_VALUE);
	s = calloc(1, sizeof(*s));
	if (!s)
		RET(cuStreamCreateWithPriority, CUDA_ERROR_OUT_OF_MEMORY);
	s->magic = STREAM_MAGIC;
	s->priority = priority < -5 ? -5 : priority > 0 ? 0 : priority;
	*phStream = (CUstream)s;
	RET(cuStreamCreateWithPriority, CUDA_SUCCESS);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream hStream)
{
	struct stream *s = (struct stream *)hStream;

	ENTER(cuStreamDestroy_v2);
	NEED_CTX(cuStreamDestroy_v2);
	if (!s || (uintptr_t)s <= 2 || s->magic != STREAM_MAGIC)
		RET(cuStreamDestroy_v2, CUDA_ERROR_INVALID_HANDLE);
	s->magic = 0;
	free(s);
	RET(cuStreamDestroy_v2, CUDA_SUCCESS);
}

EXPORT CUresult cuStreamSynchronize(CUstream hStream)
{
	ENTER(cuStreamSynchronize);
	NEED_CTX(cuStreamSynchronize);
	if (bad_stream(hStream))
		RET(cuStreamSynchronize, CUDA_ERROR_INVALID_HANDLE);
	RET(cuStreamSynchronize, CUDA_SUCCESS);
}

/* Copies complete at once (every stream is always idle). */
EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
			      size_t ByteCount, CUstream hStream)
{
	ENTER(cuMemcpyAsync);
	NEED_CTX(cuMemcpyAsync);
	if (bad_stream(hStream))
		RET(cuMemcpyAsync, CUDA_ERROR_INVALID_HANDLE);
	if (!ByteCount)
		RET(cuMemcpyAsync, CUDA_SUCCESS);
	if (!dst || !src)
		RET(cuMemcpyAsync, CUDA_ERROR_INVALID_VALUE);
	memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, ByteCount);
	RET(cuMemcpyAsync, CUDA_SUCCESS);
}

EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
				      CUdeviceptr ptr)
{
	struct alloc a = { 0 };
	long i;

	ENTER(cuPointerGetAttribute);
	NEED_INIT(cuPointerGetAttribute);
	if (!data)
		RET(cuPointerGetAttribute, CUDA_ERROR_INVALID_VALUE);
	pthread_mutex_lock(&lock);
	i = find(ptr);
	if (i >= 0)
		a = allocs[i];
	pthread_mutex_unlock(&lock);
	/* Memory the driver does not know about, as the real one answers. */
	if (i < 0)
		RET(cuPointerGetAttribute, CUDA_ERROR_INVALID_VALUE);
	switch (attribute) {
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = a.kind == KVT_DOUBLE_HOST ?
			CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		*(unsigned int *)data = a.kind == KVT_DOUBLE_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a.dev;
		break;
	default:
		RET(cuPointerGetAttribute, CUDA_ERROR_NOT_SUPPORTED);
	}
	RET(cuPointerGetAttribute, CUDA_SUCCESS);
}

/* --- entry points by name -------------------------------------------- */

static void *by_name(const char *name)
{
	int i;

	for (i = 0; i < E_COUNT; i++)
		if (!strcmp(name, entry_name[i]))
			return entry_fn[i];
	return NULL;
}

/*
 * As the real driver: @symbol is a base name ("cuMemAlloc"); the newest
 * version the caller's @cudaVersion knows is returned, the per-thread
 * default stream form when @flags ask for it.
 */
static CUresult proc_address(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags, int *found)
{
	static const struct { const char *base; int v2_from; } v2_since[] = {
		{ "cuGetProcAddress", 12000 },
		{ "cuDeviceGetUuid", 11040 },
		{ "cuMemAdvise", 12020 },
	};
	char name[128];
	int v2 = 1;
	size_t i;
	void *fn = NULL;

	*found = 0;
	if (!symbol || !pfn || strlen(symbol) > 100)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	for (i = 0; i < sizeof(v2_since) / sizeof(v2_since[0]); i++)
		if (!strcmp(symbol, v2_since[i].base))
			v2 = cudaVersion >= v2_since[i].v2_from;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		snprintf(name, sizeof(name), "%s_ptsz", symbol);
		fn = by_name(name);
	}
	if (!fn && v2) {
		snprintf(name, sizeof(name), "%s_v2", symbol);
		fn = by_name(name);
	}
	if (!fn)
		fn = by_name(symbol);
	if (!fn)
		return CUDA_ERROR_NOT_FOUND;
	*pfn = fn;
	*found = 1;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				    int cudaVersion, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult r;
	int found;

	ENTER(cuGetProcAddress_v2);
	r = proc_address(symbol, pfn, cudaVersion, flags, &found);
	if (symbolStatus)
		*symbolStatus = found ? CU_GET_PROC_ADDRESS_SUCCESS :
			CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	RET(cuGetProcAddress_v2, r);
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
				 int cudaVersion, cuuint64_t flags)
{
	int found;

	ENTER(cuGetProcAddress);
	RET(cuGetProcAddress, proc_address(symbol, pfn, cudaVersion, flags,
					   &found));
}

EXPORT CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	const char *s;

	ENTER(cuGetErrorString);
	if (!pStr)
		RET(cuGetErrorString, CUDA_ERROR_INVALID_VALUE);
	switch (error) {
	case CUDA_SUCCESS: s = "no error"; break;
	case CUDA_ERROR_INVALID_VALUE: s = "invalid argument"; break;
	case CUDA_ERROR_OUT_OF_MEMORY: s = "out of memory"; break;
	case CUDA_ERROR_NOT_INITIALIZED: s = "initialization error"; break;
	case CUDA_ERROR_INVALID_DEVICE: s = "invalid device ordinal"; break;
	case CUDA_ERROR_INVALID_CONTEXT: s = "invalid device context"; break;
	case CUDA_ERROR_INVALID_HANDLE: s = "invalid resource handle"; break;
	case CUDA_ERROR_NOT_FOUND: s = "named symbol not found"; break;
	case CUDA_ERROR_NOT_SUPPORTED: s = "operation not supported"; break;
	default:
		*pStr = NULL;
		RET(cuGetErrorString, CUDA_ERROR_INVALID_VALUE);
	}
	*pStr = s;
	RET(cuGetErrorString, CUDA_SUCCESS);
}
