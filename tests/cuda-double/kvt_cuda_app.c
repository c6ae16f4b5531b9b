// SPDX-License-Identifier: GPL-2.0
/*
 * TEST CODE, never installed: a small "CUDA application" the shim's tests
 * run under LD_PRELOAD=libkvtier-cuda.so with the test double as its CUDA
 * (LD_LIBRARY_PATH=$(BUILD)/cuda-double). It links libcuda and libcudart
 * directly (direct-symbol interposition) and also reaches entry points
 * through dlsym() and cuGetProcAddress(), as real programs and the CUDA
 * runtime do. Commands run in order from the command line:
 *
 *   init                       cuInit + primary context current (driver API)
 *   alloc SLOT PATH SIZE       allocate through PATH (below), print
 *                              "SLOT ptr=0x.. kind=K pref=P" (kvt_double.h)
 *   free SLOT                  free it through the matching call
 *   fill SLOT SEED / check SLOT SEED
 *                              write / verify a pattern through the pointer
 *   wait                       print "ready", read a line from stdin
 *   calls NAME...              print NAME=count for driver entry points
 *   info                       print "free=.. total=.." (cuMemGetInfo_v2)
 *   syms                       every hooked name resolves to the shim
 *   gpaptr                     cuGetProcAddress(_v2) hand out the shim's
 *   next                       dlsym(RTLD_NEXT) from a later library
 *   vmm SIZE                   cuMemCreate/AddressReserve/Map/SetAccess,
 *                              bytes round-trip, Unmap/Release/AddressFree
 *   storm THREADS ITERS SMALL BIG
 *                              threads allocate and free SMALL and BIG
 *                              allocations through direct, rt and gpa paths
 *   fork CHILDREN SIZE         children allocate, verify and free while the
 *                              parent allocates from another thread
 *
 * PATH: direct (cuMemAlloc_v2), dlsym (dlsym(libcuda, "cuMemAlloc_v2")),
 * gpa (cuGetProcAddress_v2 "cuMemAlloc" fetched through dlsym), gpa1 (the
 * legacy cuGetProcAddress), rt (cudaMalloc), rtdrv (the runtime double's
 * allocation through the driver pointers it fetched), async
 * (cuMemAllocAsync), pool (cuMemAllocFromPoolAsync), managed
 * (cuMemAllocManaged), rtmanaged (cudaMallocManaged).
 *
 * Exits 0 when every command succeeded; otherwise prints why and exits 1.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kvt_double.h"
#include "../kvtier_util.h"
#include "../../cuda/hooks.h"

#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags);

/* libkvt_next.so: dlsym(RTLD_NEXT) from a library loaded after the shim. */
void *kvt_next_probe(void);
void *kvt_next_target(void);

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t,
			    CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

#define SLOTS 16
static struct {
	CUdeviceptr ptr;
	size_t size;
	char path[16];
} slot[SLOTS];

static CUcontext ctx;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kvt_cuda_app: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static size_t size_arg(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

static void *libcuda(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);

	if (!h)
		die("dlopen libcuda.so.1: %s", dlerror());
	return h;
}

/* Make the primary context of device 0 current on this thread. */
static void ctx_current(void)
{
	CUresult r;

	if (!ctx) {
		r = cuInit(0);
		if (r == CUDA_SUCCESS)
			r = cuDevicePrimaryCtxRetain(&ctx, 0);
		if (r != CUDA_SUCCESS)
			die("cuInit/cuDevicePrimaryCtxRetain: %d", r);
	}
	if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		die("cuCtxSetCurrent");
}

static CUresult do_alloc(const char *path, CUdeviceptr *p, size_t size)
{
	CUdriverProcAddressQueryResult st;
	void *fn = NULL, *vp = NULL;
	cudaError_t e;
	CUresult r;

	if (!strcmp(path, "direct"))
		return cuMemAlloc_v2(p, size);
	if (!strcmp(path, "dlsym")) {
		fn = dlsym(libcuda(), "cuMemAlloc_v2");
		return fn ? ((alloc_fn)fn)(p, size) : CUDA_ERROR_NOT_FOUND;
	}
	if (!strcmp(path, "gpa")) {
		gpa2_fn gpa = (gpa2_fn)dlsym(libcuda(), "cuGetProcAddress_v2");

		if (!gpa)
			return CUDA_ERROR_NOT_FOUND;
		r = gpa("cuMemAlloc", &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st);
		return r ? r : ((alloc_fn)fn)(p, size);
	}
	if (!strcmp(path, "gpa1")) {
		gpa1_fn gpa = (gpa1_fn)dlsym(libcuda(), "cuGetProcAddress");

		if (!gpa)
			return CUDA_ERROR_NOT_FOUND;
		r = gpa("cuMemAlloc", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT);
		return r ? r : ((alloc_fn)fn)(p, size);
	}
	if (!strcmp(path, "async"))
		return cuMemAllocAsync(p, size, NULL);
	if (!strcmp(path, "pool"))
		return cuMemAllocFromPoolAsync(p, size, (CUmemoryPool)1, NULL);
	if (!strcmp(path, "managed"))
		return cuMemAllocManaged(p, size, CU_MEM_ATTACH_GLOBAL);
	if (!strcmp(path, "rt") || !strcmp(path, "rtdrv") ||
	    !strcmp(path, "rtmanaged")) {
		if (!strcmp(path, "rt"))
			e = cudaMalloc(&vp, size);
		else if (!strcmp(path, "rtdrv"))
			e = (cudaError_t)kvt_double_rt_malloc(&vp, size);
		else
			e = cudaMallocManaged(&vp, size, cudaMemAttachGlobal);
		*p = (uintptr_t)vp;
		return e == cudaSuccess ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
	}
	die("unknown allocation path %s", path);
}

static CUresult do_free(const char *path, CUdeviceptr p)
{
	if (!strcmp(path, "rt") || !strcmp(path, "rtmanaged"))
		return cudaFree((void *)(uintptr_t)p) ? CUDA_ERROR_UNKNOWN : 0;
	if (!strcmp(path, "rtdrv"))
		return kvt_double_rt_free((void *)(uintptr_t)p) ? CUDA_ERROR_UNKNOWN : 0;
	if (!strcmp(path, "async") || !strcmp(path, "pool"))
		return cuMemFreeAsync(p, NULL);
	return cuMemFree_v2(p);
}

static int slot_arg(const char *s)
{
	int i = atoi(s);

	if (i < 0 || i >= SLOTS)
		die("bad slot %s", s);
	return i;
}

/* Every hooked name, from the shim's own table. */
static const char *const hooked[] = {
#define H(ret, name, params, args) #name,
	KVTIER_CUDA_HOOKS(H, H)
#undef H
};
static const int hooked_rt[] = {
#define CU(ret, name, params, args) 0,
#define RT(ret, name, params, args) 1,
	KVTIER_CUDA_HOOKS(CU, RT)
#undef CU
#undef RT
};

static int in_shim(void *p)
{
	Dl_info di;

	return p && dladdr(p, &di) && di.dli_fname &&
	       strstr(di.dli_fname, "libkvtier-cuda.so");
}

/* dlsym(RTLD_DEFAULT) and dlsym(libcuda) give the shim's wrapper for each. */
static void cmd_syms(void)
{
	void *h = libcuda(), *rt = dlopen("libcudart.so.13", RTLD_NOW);
	size_t i, bad = 0;

	for (i = 0; i < sizeof(hooked) / sizeof(hooked[0]); i++) {
		void *d = dlsym(RTLD_DEFAULT, hooked[i]);
		void *l = dlsym(hooked_rt[i] ? rt : h, hooked[i]);

		if (!in_shim(d) || l != d) {
			printf("sym %s default=%p lib=%p NOT the shim's\n", hooked[i], d, l);
			bad++;
		}
	}
	printf("syms %zu checked, %zu wrong\n", i, bad);
	if (bad)
		exit(1);
}

/* The legacy and _v2 cuGetProcAddress hand out the shim's wrappers too. */
static void cmd_gpa(void)
{
	CUdriverProcAddressQueryResult st;
	gpa2_fn gpa2 = (gpa2_fn)dlsym(libcuda(), "cuGetProcAddress_v2");
	void *p = NULL, *q = NULL, *u = NULL, *f = NULL;

	if (gpa2("cuMemFree", &p, CUDA_VERSION, 0, &st) ||
	    gpa2("cuGetProcAddress", &q, CUDA_VERSION, 0, &st) ||
	    gpa2("cuGetProcAddress", &u, 11000, 0, &st) ||
	    gpa2("cuMemAllocAsync", &f, CUDA_VERSION,
		 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st))
		die("cuGetProcAddress_v2 failed");
	printf("gpa cuMemFree=%d cuGetProcAddress=%d legacy=%d ptsz=%d\n",
	       p == dlsym(RTLD_DEFAULT, "cuMemFree_v2") && in_shim(p),
	       q == (void *)cuGetProcAddress_v2 && in_shim(q),
	       u == (void *)cuGetProcAddress && in_shim(u),
	       f == dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz") && in_shim(f));
	/* A driver function the shim does not hook stays the driver's. */
	if (gpa2("cuInit", &p, CUDA_VERSION, 0, &st) || in_shim(p))
		die("cuInit came back as the shim's");
}

static void cmd_vmm(size_t size)
{
	CUmemAllocationProp prop = { 0 };
	CUmemAccessDesc acc = { 0 };
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (cuMemCreate(&h, size, &prop, 0) ||
	    cuMemAddressReserve(&va, size, 0, 0, 0) ||
	    cuMemMap(va, size, 0, h, 0) || cuMemSetAccess(va, size, &acc, 1))
		die("vmm setup failed");
	kvt_fill((void *)(uintptr_t)va, size, 0, 7);
	if (kvt_check((void *)(uintptr_t)va, size, 0, 7) != -1)
		die("vmm bytes differ");
	printf("vmm ok kind=%d\n", kvt_double_kind(va));
	if (cuMemUnmap(va, size) || cuMemRelease(h) || cuMemAddressFree(va, size))
		die("vmm teardown failed");
}

struct storm {
	int iters;
	size_t small, big;
	int id;
	long placed;
	int failed;
};

static void *storm_thread(void *arg)
{
	static const char *const paths[] = { "direct", "rt", "gpa", "async" };
	struct storm *s = arg;
	CUdeviceptr p[4];
	size_t sz[4];
	int i, j;

	ctx_current();
	for (i = 0; i < s->iters && !s->failed; i++) {
		for (j = 0; j < 4; j++) {
			sz[j] = (i + j + s->id) % 2 ? s->big : s->small;
			if (do_alloc(paths[j], &p[j], sz[j])) {
				s->failed = 1;
				return NULL;
			}
			s->placed += kvt_double_kind(p[j]) == KVT_DOUBLE_NONE ||
				     kvt_double_kind(p[j]) == KVT_DOUBLE_MANAGED;
			kvt_fill((void *)(uintptr_t)p[j], 4096, 0, s->id * 1000 + i * 4 + j);
		}
		for (j = 0; j < 4; j++) {
			if (kvt_check((void *)(uintptr_t)p[j], 4096, 0,
				      s->id * 1000 + i * 4 + j) != -1 ||
			    do_free(paths[j], p[j])) {
				s->failed = 1;
				return NULL;
			}
		}
	}
	return NULL;
}

static void cmd_storm(int threads, int iters, size_t small, size_t big)
{
	struct storm *s = calloc(threads, sizeof(*s));
	pthread_t *t = calloc(threads, sizeof(*t));
	long placed = 0;
	int i, failed = 0;

	for (i = 0; i < threads; i++) {
		s[i] = (struct storm){ iters, small, big, i, 0, 0 };
		pthread_create(&t[i], NULL, storm_thread, &s[i]);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		failed |= s[i].failed;
		placed += s[i].placed;
	}
	printf("storm threads=%d allocations=%d placed=%ld failed=%d live=%ld bad_frees=%ld\n",
	       threads, threads * iters * 4, placed, failed, kvt_double_live(),
	       kvt_double_bad_frees());
	if (failed)
		exit(1);
}

static atomic_int stop_bg;

static void *bg_alloc(void *arg)
{
	size_t size = *(size_t *)arg;
	CUdeviceptr p;

	ctx_current();
	while (!atomic_load(&stop_bg)) {
		if (cuMemAlloc_v2(&p, size) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	}
	return NULL;
}

/*
 * Children forked while another thread allocates and frees must not
 * deadlock (alarm: 20 s), and each allocates, verifies and frees.
 */
static void cmd_fork(int children, size_t size)
{
	CUdeviceptr mine, p;
	pthread_t bg;
	int i, st, ok = 0;
	pid_t pid;

	if (cuMemAlloc_v2(&mine, size))
		die("parent allocation");
	kvt_fill((void *)(uintptr_t)mine, 65536, 0, 99);
	pthread_create(&bg, NULL, bg_alloc, &size);
	for (i = 0; i < children; i++) {
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			alarm(20);
			ctx = NULL;
			ctx_current();
			if (cuMemAlloc_v2(&p, size))
				_exit(2);
			kvt_fill((void *)(uintptr_t)p, 65536, 0, i);
			if (kvt_check((void *)(uintptr_t)p, 65536, 0, i) != -1)
				_exit(3);
			if (kvt_check((void *)(uintptr_t)mine, 65536, 0, 99) != -1)
				_exit(4);
			if (cuMemFree_v2(p))
				_exit(5);
			_exit(0);
		}
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st))
			ok++;
		else
			printf("child %d: status 0x%x\n", i, st);
	}
	atomic_store(&stop_bg, 1);
	pthread_join(bg, NULL);
	if (kvt_check((void *)(uintptr_t)mine, 65536, 0, 99) != -1 ||
	    cuMemFree_v2(mine))
		die("parent allocation damaged");
	printf("fork children=%d ok=%d\n", children, ok);
	if (ok != children)
		exit(1);
}

int main(int argc, char **argv)
{
	char line[64];
	int i, s;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *c = argv[i];

		if (!strcmp(c, "init")) {
			ctx_current();
		} else if (!strcmp(c, "alloc") && i + 3 < argc) {
			CUresult r;

			s = slot_arg(argv[++i]);
			snprintf(slot[s].path, sizeof(slot[s].path), "%s", argv[++i]);
			slot[s].size = size_arg(argv[++i]);
			r = do_alloc(slot[s].path, &slot[s].ptr, slot[s].size);
			if (r)
				die("alloc %s %zu: %d", slot[s].path, slot[s].size, r);
			printf("%d ptr=0x%llx kind=%d pref=%d\n", s,
			       (unsigned long long)slot[s].ptr,
			       kvt_double_kind(slot[s].ptr),
			       kvt_double_preferred(slot[s].ptr));
		} else if (!strcmp(c, "free") && i + 1 < argc) {
			s = slot_arg(argv[++i]);
			if (do_free(slot[s].path, slot[s].ptr))
				die("free %d failed", s);
		} else if ((!strcmp(c, "fill") || !strcmp(c, "check")) && i + 2 < argc) {
			long long bad;

			s = slot_arg(argv[++i]);
			unsigned long long seed = strtoull(argv[++i], NULL, 0);

			if (c[0] == 'f') {
				kvt_fill((void *)(uintptr_t)slot[s].ptr, slot[s].size, 0, seed);
			} else {
				bad = kvt_check((void *)(uintptr_t)slot[s].ptr,
						slot[s].size, 0, seed);
				if (bad != -1)
					die("slot %d: wrong bytes at offset %lld", s, bad);
				printf("%d checked %zu bytes\n", s, slot[s].size);
			}
		} else if (!strcmp(c, "wait")) {
			printf("ready\n");
			if (!fgets(line, sizeof(line), stdin))
				die("wait: no input");
		} else if (!strcmp(c, "calls")) {
			while (i + 1 < argc && kvt_double_calls(argv[i + 1]) >= 0) {
				i++;
				printf("%s=%ld\n", argv[i], kvt_double_calls(argv[i]));
			}
			printf("bad_frees=%ld live=%ld\n", kvt_double_bad_frees(),
			       kvt_double_live());
		} else if (!strcmp(c, "info")) {
			size_t f, t;

			if (cuMemGetInfo_v2(&f, &t))
				die("cuMemGetInfo_v2");
			printf("free=%zu total=%zu\n", f, t);
		} else if (!strcmp(c, "syms")) {
			cmd_syms();
		} else if (!strcmp(c, "next")) {
			/* The only definition is libkvt_next's own: nothing next. */
			printf("next=%s\n", kvt_next_probe() ? "wrong" : "ok");
		} else if (!strcmp(c, "gpaptr")) {
			cmd_gpa();
		} else if (!strcmp(c, "vmm") && i + 1 < argc) {
			cmd_vmm(size_arg(argv[++i]));
		} else if (!strcmp(c, "storm") && i + 4 < argc) {
			int t = atoi(argv[i + 1]), it = atoi(argv[i + 2]);

			cmd_storm(t, it, size_arg(argv[i + 3]), size_arg(argv[i + 4]));
			i += 4;
		} else if (!strcmp(c, "fork") && i + 2 < argc) {
			cmd_fork(atoi(argv[i + 1]), size_arg(argv[i + 2]));
			i += 2;
		} else {
			die("bad command at \"%s\"", c);
		}
	}
	return 0;
}
