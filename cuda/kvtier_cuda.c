// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier-cuda: an LD_PRELOAD shim that places an unmodified program's
 * large CUDA allocations on a kvtier tier. See kvtier-cuda(7) and
 * Documentation/admin-guide/kvtier-cuda.rst.
 *
 * Interposes the allocation entry points listed in hooks.h, plus dlsym()
 * and cuGetProcAddress()/_v2 so that entry points fetched at run time (the
 * CUDA runtime reaches the driver only that way) are the shim's too. The
 * real functions come from the real libraries through the real dlsym().
 *
 * Placement modes (KVTIER_MODE):
 *   hmm      the allocation is a mapping of a fresh region of the tier; the
 *            returned device pointer is its address (the GPU reaches the
 *            pages through HMM), registered KVTIER_GPU_HMM
 *   managed  cuMemAllocManaged + preferred location the device, registered
 *            KVTIER_GPU_MANAGED (accounting) where the tier is present
 *   auto     hmm where the device reports pageable memory access and the
 *            tier has a namespace attached (kvtier_gpu_mode_check(3)),
 *            managed otherwise
 *   off      everything passes through
 *
 * Lock order: decide_lock, then table_lock. Neither is held across a call
 * into CUDA except decide_lock around the one-time mode decision; the
 * host probe of that decision (files, maybe dlopen of zlib) runs before
 * decide_lock, so the loader's lock is never taken under it.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvtier.h"
#include "hooks.h"

/* The legacy 4-argument cuGetProcAddress: cuda.h maps the name to _v2. */
#undef cuGetProcAddress
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags);
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
			      CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

#define EXPORT __attribute__((visibility("default")))

/* --- the hook table, expanded ---------------------------------------- */

enum hook {
#define H(ret, name, params, args) H_##name,
	KVTIER_CUDA_HOOKS(H, H)
#undef H
	H_COUNT
};

#define H(ret, name, params, args) typedef ret (*name##_fn) params;
KVTIER_CUDA_HOOKS(H, H)
#undef H

/* Each table entry's type is the one cuda.h / cuda_runtime_api.h declare. */
#define H(ret, name, params, args)					\
	_Static_assert(__builtin_types_compatible_p(__typeof__(&name),	\
						    name##_fn),		\
		       #name " in hooks.h differs from the CUDA headers");
KVTIER_CUDA_HOOKS(H, H)
#undef H

static const char *const hook_name[H_COUNT] = {
#define H(ret, name, params, args) #name,
	KVTIER_CUDA_HOOKS(H, H)
#undef H
};

/* The shim's wrappers, by hook (-Bsymbolic-functions: these are ours). */
static void *const hook_wrapper[H_COUNT] = {
#define H(ret, name, params, args) (void *)name,
	KVTIER_CUDA_HOOKS(H, H)
#undef H
};

static const int hook_is_rt[H_COUNT] = {
#define CU(ret, name, params, args) 0,
#define RT(ret, name, params, args) 1,
	KVTIER_CUDA_HOOKS(CU, RT)
#undef CU
#undef RT
};

/* The real functions; driver ones resolved together, runtime ones lazily. */
static void *_Atomic real[H_COUNT];

/* Driver entry points the modes need, not hooked. */
#define AUX(X)								\
	X(CUresult, cuCtxGetDevice, (CUdevice *))			\
	X(CUresult, cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice)) \
	X(CUresult, cuDeviceGetUuid_v2, (CUuuid *, CUdevice))		\
	X(CUresult, cuMemAdvise_v2, (CUdeviceptr, size_t, CUmem_advise,	\
				     CUmemLocation))			\
	X(CUresult, cuCtxSynchronize, (void))				\
	X(CUresult, cuStreamSynchronize, (CUstream))

static struct {
#define X(ret, name, params) ret (*name) params;
	AUX(X)
#undef X
} aux;

/* --- logging ---------------------------------------------------------- */

enum { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

enum { MODE_OFF, MODE_AUTO, MODE_HMM, MODE_MANAGED };

static const char *const mode_name[] = { "off", "auto", "hmm", "managed" };
static const char *const log_name[] = { "error", "warn", "info", "debug" };

#define DEFAULT_MIN_BYTES	(64ULL << 20)

static struct {
	int mode;
	int log;
	uint64_t min_bytes;
	unsigned long max_allocs;	/* live placed allocations; 0: no limit */
	unsigned int tier_id;
	char tier_path[64];
	char tenant[KVTIER_TENANT_MAX];
} pol = { MODE_AUTO, LOG_INFO, DEFAULT_MIN_BYTES, 0, 0, KVTIER_DEV_PREFIX "0", "" };

/* Where the lines go: stderr, or the file KVTIER_LOG names (O_APPEND). */
static int log_fd = STDERR_FILENO;

/* One line in one write(): safe in any thread, and after fork. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	n = snprintf(buf, sizeof(buf), "kvtier-cuda[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	buf[n++] = '\n';
	if (write(log_fd, buf, n) < 0)
		(void)0;
}

#define LOG(level, ...)							\
	do {								\
		if ((level) <= pol.log)					\
			say(__VA_ARGS__);				\
	} while (0)

/* Log once per process lifetime (per @flag). */
#define LOG_ONCE(flag, level, ...)					\
	do {								\
		static atomic_int flag;					\
		if (!atomic_exchange(&flag, 1))				\
			LOG(level, __VA_ARGS__);			\
	} while (0)

/* --- policy from the environment, read once ------------------------- */

static pthread_once_t policy_once = PTHREAD_ONCE_INIT;

static int parse_bytes(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (!*p)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -1;
	switch (*p) {
	case 'k': case 'K': mul = 1ULL << 10; p++; break;
	case 'm': case 'M': mul = 1ULL << 20; p++; break;
	case 'g': case 'G': mul = 1ULL << 30; p++; break;
	case 't': case 'T': mul = 1ULL << 40; p++; break;
	}
	if (*p || (v && v > UINT64_MAX / mul))
		return -1;
	*out = v * mul;
	return 0;
}

static int parse_ulong(const char *s, unsigned long *out)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int pick(const char *s, const char *const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

static int bad(const char *var, const char *val, const char *want)
{
	say("%s=\"%.64s\" is not valid (%s); passing every CUDA call through untouched",
	    var, val, want);
	return 1;
}

static void policy_init(void)
{
	const char *s;
	unsigned long ul;
	int errors = 0, i;

	/* KVTIER_LOG: LEVEL, /PATH or LEVEL:/PATH. */
	s = getenv("KVTIER_LOG");
	if (s && *s) {
		const char *path = strchr(s, '/');
		size_t n = path ? (size_t)(path - s) : strlen(s);
		char level[16] = "";

		/* The level: all of it, or what comes before ":/". */
		if (path && n && s[n - 1] == ':')
			n--;
		else if (path && n)
			n = sizeof(level);	/* a relative path: refused */
		if (n < sizeof(level))
			memcpy(level, s, n);
		i = n >= sizeof(level) ? -1 :
		    *level ? pick(level, log_name, 4) : (int)pol.log;
		if (i < 0)
			errors += bad("KVTIER_LOG", s,
				      "error, warn, info or debug, an absolute path, or LEVEL:PATH");
		else
			pol.log = i;
		if (path && !errors) {
			int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

			if (fd < 0)
				errors += bad("KVTIER_LOG", s, "a file that can be opened for appending");
			else
				log_fd = fd;
		}
	}
	s = getenv("KVTIER_MODE");
	if (s && *s) {
		i = pick(s, mode_name, 4);
		if (i < 0)
			errors += bad("KVTIER_MODE", s, "off, auto, hmm or managed");
		else
			pol.mode = i;
	}
	s = getenv("KVTIER_MIN_BYTES");
	if (s && *s && parse_bytes(s, &pol.min_bytes))
		errors += bad("KVTIER_MIN_BYTES", s,
			      "a byte count with an optional K, M, G or T suffix");
	s = getenv("KVTIER_MAX_ALLOCS");
	if (s && *s) {
		if (parse_ulong(s, &ul))
			errors += bad("KVTIER_MAX_ALLOCS", s,
				      "a non-negative integer, 0 for no limit");
		else
			pol.max_allocs = ul;
	}
	s = getenv("KVTIER_TIER");
	if (s && *s) {
		size_t n = strlen(KVTIER_DEV_PREFIX);

		if (strncmp(s, KVTIER_DEV_PREFIX, n) || strlen(s) >= sizeof(pol.tier_path) ||
		    parse_ulong(s + n, &ul) || ul > 255 ||
		    (s[n] == '0' && s[n + 1]))
			errors += bad("KVTIER_TIER", s, KVTIER_DEV_PREFIX "N, N from 0 to 255");
		else {
			pol.tier_id = (unsigned int)ul;
			strcpy(pol.tier_path, s);
		}
	}
	s = getenv("KVTIER_TENANT");
	if (s && *s) {
		size_t len = strlen(s), j;
		int ok = len < KVTIER_TENANT_MAX;

		for (j = 0; ok && j < len; j++)
			ok = s[j] >= 0x21 && s[j] <= 0x7e;
		if (!ok)
			errors += bad("KVTIER_TENANT", s,
				      "at most 31 printable characters, no spaces");
		else
			memcpy(pol.tenant, s, len + 1);
	}
	if (errors)
		pol.mode = MODE_OFF;
	LOG(LOG_DEBUG, "policy: mode %s, min %" PRIu64 " bytes, max %lu allocations, tier %s, tenant \"%s\"",
	    mode_name[pol.mode], pol.min_bytes, pol.max_allocs, pol.tier_path,
	    pol.tenant);
}

static inline void policy(void)
{
	pthread_once(&policy_once, policy_init);
}

/* --- the real functions --------------------------------------------- */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn _Atomic real_dlsym_p;

static dlsym_fn real_dlsym(void)
{
	dlsym_fn f = atomic_load(&real_dlsym_p);

	if (!f) {
		f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!f)
			f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		atomic_store(&real_dlsym_p, f);
	}
	return f;
}

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

/* The application's libcuda.so.1 (already loaded, or loaded now). */
static void cu_resolve(void)
{
	dlsym_fn ds = real_dlsym();
	void *h;
	int i;

	if (!ds)
		return;
	h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		LOG_ONCE(no_cuda, LOG_WARN, "cannot load libcuda.so.1: %s", dlerror());
		return;
	}
	for (i = 0; i < H_COUNT; i++)
		if (!hook_is_rt[i])
			atomic_store(&real[i], ds(h, hook_name[i]));
#define X(ret, name, params) aux.name = (ret(*) params)ds(h, #name);
	AUX(X)
#undef X
}

static void *cu_real(enum hook i)
{
	pthread_once(&cu_once, cu_resolve);
	return atomic_load(&real[i]);
}

/* dl_iterate_phdr: the first loaded libcudart.so* (loaded RTLD_LOCAL). */
static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, "libcudart.so", 12))
		return 0;
	snprintf(data, PATH_MAX, "%s", info->dlpi_name);
	return 1;
}

static void *rt_real(enum hook i)
{
	void *f = atomic_load(&real[i]), *h;
	char path[PATH_MAX];
	dlsym_fn ds;

	if (f)
		return f;
	ds = real_dlsym();
	if (!ds)
		return NULL;
	/* Next after the shim in the global scope, else the local copy. */
	f = ds(RTLD_NEXT, hook_name[i]);
	if (!f && dl_iterate_phdr(find_cudart, path)) {
		h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = ds(h, hook_name[i]);
			dlclose(h);
		}
	}
	if (f == hook_wrapper[i])
		f = NULL;
	atomic_store(&real[i], f);
	return f;
}

/* real_<name>(args): the real function, or an error if it is missing. */
#define CU(ret, name, params, args)					\
	static ret real_##name params					\
	{								\
		name##_fn f = (name##_fn)cu_real(H_##name);		\
		return f ? f args : CUDA_ERROR_NOT_INITIALIZED;		\
	}
#define RT(ret, name, params, args)					\
	static ret real_##name params					\
	{								\
		name##_fn f = (name##_fn)rt_real(H_##name);		\
		return f ? f args : cudaErrorInitializationError;	\
	}
KVTIER_CUDA_HOOKS(CU, RT)
#undef CU
#undef RT

/* --- placed allocations ---------------------------------------------- */

enum place_kind { PLACED_HMM = 1, PLACED_MANAGED };

struct entry {
	struct entry *next;
	uint64_t ptr;
	uint64_t size;
	int kind;
	int registered;
	pid_t owner;		/* the process that placed it (fork) */
	struct kvtier_tier *tier;	/* registered through; owner's only */
	struct kvtier_region *region;
};

#define TABLE_BUCKETS	1024

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *table[TABLE_BUCKETS];
static atomic_long nlive;		/* entries in the table */

/* Counters for the exit summary. */
static atomic_long placed_hmm, placed_managed, passed_big;
static atomic_long bytes_hmm, bytes_managed, bytes_passed;
static atomic_long vmm_created, vmm_handles, vmm_mapped;

static unsigned int bucket(uint64_t p)
{
	return (unsigned int)((p >> 12) * 0x9e3779b97f4a7c15ULL >> 54) %
		TABLE_BUCKETS;
}

static void table_add(struct entry *e)
{
	unsigned int b = bucket(e->ptr);

	pthread_mutex_lock(&table_lock);
	e->next = table[b];
	table[b] = e;
	atomic_fetch_add(&nlive, 1);
	pthread_mutex_unlock(&table_lock);
}

/* Remove and return the entry placed at @p, or NULL. */
static struct entry *table_take(uint64_t p)
{
	struct entry **pp, *e = NULL;

	if (!atomic_load(&nlive))
		return NULL;	/* nothing placed: a load, no lock */
	pthread_mutex_lock(&table_lock);
	for (pp = &table[bucket(p)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->ptr == p) {
			e = *pp;
			*pp = e->next;
			atomic_fetch_sub(&nlive, 1);
			break;
		}
	}
	pthread_mutex_unlock(&table_lock);
	return e;
}

/* --- the mode decision ----------------------------------------------- */

enum { EFF_UNDECIDED, EFF_PASS, EFF_HMM, EFF_MANAGED };

static pthread_mutex_t decide_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int eff = EFF_UNDECIDED;
static struct kvtier_tier *tier;
static int tier_error;			/* why the tier is not open */

#define MAX_UUIDS	64
static CUuuid uuids[MAX_UUIDS];
static unsigned char uuid_known[MAX_UUIDS];

/* Calls made by the shim itself on this thread pass through untouched. */
static __thread int inside;

static void tier_try_open(void)
{
	int ret;

	if (tier || tier_error)
		return;
	if (access(pol.tier_path, F_OK)) {
		tier_error = -errno;
		return;
	}
	ret = kvtier_tier_open(pol.tier_id, &tier);
	if (ret)
		tier_error = ret;
}

/* The tier, opened at first use (again in a child of fork()). */
static struct kvtier_tier *tier_get(void)
{
	struct kvtier_tier *t;

	pthread_mutex_lock(&decide_lock);
	tier_try_open();
	t = tier;
	pthread_mutex_unlock(&decide_lock);
	return t;
}

static void disable(const char *why, const char *detail)
{
	atomic_store(&eff, EFF_PASS);
	LOG_ONCE(disabled, LOG_WARN, "%s (%s): passing allocations through from now on",
		 why, detail);
}

/*
 * Why hmm is or is not available for device @dev, from @host (probed by the
 * caller before it took decide_lock) and the device's own answers
 * (kvtier_gpu_mode_check(3)), into @why. Returns the KVTIER_GPU_* verdict,
 * or KVTIER_GPU_MAYBE if the host could not be probed.
 */
static int hmm_verdict(CUdevice dev, struct kvtier_gpu_host *host,
		       char *why, size_t len, int *pageable)
{
	struct kvtier_gpu_host h = *host;
	int v;

	*pageable = -1;
	if (host->tier_id != pol.tier_id) {	/* the probe failed */
		snprintf(why, len, "the host cannot be probed");
		return KVTIER_GPU_MAYBE;
	}
	if (!aux.cuDeviceGetAttribute ||
	    aux.cuDeviceGetAttribute(&h.pageable,
				     CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
				     dev) != CUDA_SUCCESS)
		h.pageable = -1;
	if (!aux.cuDeviceGetAttribute ||
	    aux.cuDeviceGetAttribute(&h.host_page_tables,
				     CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
				     dev) != CUDA_SUCCESS)
		h.host_page_tables = -1;
	*pageable = h.pageable;
	v = kvtier_gpu_mode_check(&h, KVTIER_GPU_MODE_HMM, why, len);
	return v < 0 ? KVTIER_GPU_MAYBE : v;
}

/* Said of managed memory wherever the shim makes it. */
#define MANAGED_HOST_COPY "its host copy is UVM's own memory, not kvtier's"

/*
 * The effective mode, decided at the first allocation worth placing, when
 * a context is current (the device's attributes need one). Returns
 * EFF_UNDECIDED while that is not so: the allocation passes through.
 */
static int decide(CUdevice dev)
{
	int e = atomic_load(&eff), pageable;
	struct kvtier_gpu_host host;
	char why[1024];

	if (e != EFF_UNDECIDED)
		return e;
	/*
	 * Read the host's files (and maybe dlopen zlib) before decide_lock:
	 * the loader's lock must never be taken under it.
	 */
	if (kvtier_gpu_host_probe(pol.tier_id, &host))
		host.tier_id = ~pol.tier_id;
	pthread_mutex_lock(&decide_lock);
	e = atomic_load(&eff);
	if (e != EFF_UNDECIDED)
		goto out;
	tier_try_open();
	switch (pol.mode) {
	case MODE_HMM:
		if (tier) {
			e = EFF_HMM;
			LOG(LOG_INFO, "mode hmm (KVTIER_MODE=hmm): allocations of %" PRIu64 " bytes or more are mappings of %s",
			    pol.min_bytes, pol.tier_path);
			if (hmm_verdict(dev, &host, why, sizeof(why), &pageable) == KVTIER_GPU_NO)
				LOG(LOG_WARN, "KVTIER_MODE=hmm on device %d, but %s%s",
				    (int)dev, why, pageable != 1 ?
				    ": the GPU cannot reach these allocations" : "");
		} else {
			e = EFF_PASS;
			LOG(LOG_WARN, "KVTIER_MODE=hmm but %s cannot be opened (%s): passing allocations through",
			    pol.tier_path, strerror(-tier_error));
		}
		break;
	case MODE_MANAGED:
		e = EFF_MANAGED;
		LOG(LOG_INFO, "mode managed (KVTIER_MODE=managed): allocations of %" PRIu64 " bytes or more become managed memory (" MANAGED_HOST_COPY ")%s%s%s",
		    pol.min_bytes, tier ? "; registered with " : "; not registered: ",
		    pol.tier_path, tier ? " for accounting" : " cannot be opened");
		break;
	case MODE_AUTO:
		/*
		 * No tier, no placement: managed memory without a tier only
		 * changes how a program's allocations (its weights too)
		 * behave, with nothing to show for it.
		 */
		if (!tier) {
			e = EFF_PASS;
			LOG(LOG_INFO, "mode off (auto): %s cannot be opened (%s): allocations pass through unchanged",
			    pol.tier_path, strerror(-tier_error));
			break;
		}
		/* Only the device's own yes picks hmm. */
		if (hmm_verdict(dev, &host, why, sizeof(why), &pageable) == KVTIER_GPU_YES) {
			e = EFF_HMM;
			LOG(LOG_INFO, "mode hmm (auto): device %d: %s", (int)dev, why);
		} else {
			e = EFF_MANAGED;
			LOG(LOG_INFO, "mode managed (auto): device %d: %s; so managed memory (" MANAGED_HOST_COPY "), registered with %s for accounting",
			    (int)dev, why, pol.tier_path);
		}
		break;
	default:
		e = EFF_PASS;
	}
	atomic_store(&eff, e);
out:
	pthread_mutex_unlock(&decide_lock);
	return e;
}

/* UUID of device @dev into @u; 0 or -1. */
static int device_uuid(CUdevice dev, CUuuid *u)
{
	int ret = 0;

	if (dev < 0 || dev >= MAX_UUIDS || !aux.cuDeviceGetUuid_v2)
		return -1;
	pthread_mutex_lock(&decide_lock);
	if (!uuid_known[dev]) {
		if (aux.cuDeviceGetUuid_v2(&uuids[dev], dev) == CUDA_SUCCESS)
			uuid_known[dev] = 1;
		else
			ret = -1;
	}
	if (!ret)
		*u = uuids[dev];
	pthread_mutex_unlock(&decide_lock);
	return ret;
}

/* Take one of KVTIER_MAX_ALLOCS slots; 0 if all are used. */
static atomic_ulong slots_used;

static int slot_get(void)
{
	unsigned long n = atomic_load(&slots_used);

	do {
		if (pol.max_allocs && n >= pol.max_allocs) {
			LOG_ONCE(max_reached, LOG_INFO,
				 "KVTIER_MAX_ALLOCS=%lu placed allocations are live: further ones pass through until one is freed",
				 pol.max_allocs);
			return 0;
		}
	} while (!atomic_compare_exchange_weak(&slots_used, &n, n + 1));
	return 1;
}

static void slot_put(void)
{
	atomic_fetch_sub(&slots_used, 1);
}

static void range_of(struct kvtier_gpu_range *r, uint64_t va, uint64_t len,
		     const CUuuid *u, unsigned int mode)
{
	memset(r, 0, sizeof(*r));
	r->va = va;
	r->length = len;
	memcpy(r->gpu_uuid, u->bytes, sizeof(r->gpu_uuid));
	r->mode = mode;
	memcpy(r->tenant, pol.tenant, sizeof(r->tenant));
}

static struct entry *place_hmm(struct kvtier_tier *tier, size_t size,
			       const CUuuid *u)
{
	uint64_t len = (size + 4095) & ~4095ULL;
	struct kvtier_gpu_range range;
	struct kvtier_region *region;
	struct entry *e;
	void *addr;
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	ret = kvtier_region_create(tier, len, &region);
	if (ret) {
		free(e);
		if (ret == -ENOSPC || ret == -ENOMEM || ret == -EMFILE ||
		    ret == -ENFILE)
			LOG_ONCE(tier_full, LOG_WARN, "%s has no room for %zu bytes (%s): that allocation passes through",
				 pol.tier_path, size, strerror(-ret));
		else
			disable("cannot create a region of the tier", strerror(-ret));
		return NULL;
	}
	ret = kvtier_region_map(region, PROT_READ | PROT_WRITE, &addr);
	if (!ret) {
		range_of(&range, (uintptr_t)addr, len, u, KVTIER_GPU_HMM);
		ret = kvtier_gpu_register(tier, &range);
	}
	if (ret) {
		kvtier_region_close(region);
		free(e);
		if (ret == -ENOMEM)
			LOG_ONCE(map_nomem, LOG_WARN, "cannot map %zu bytes of the tier (%s): that allocation passes through",
				 size, strerror(-ret));
		else
			disable("cannot map or register a region of the tier", strerror(-ret));
		return NULL;
	}
	e->ptr = (uintptr_t)addr;
	e->size = len;
	e->kind = PLACED_HMM;
	e->registered = 1;
	e->tier = tier;
	e->region = region;
	return e;
}

static struct entry *place_managed(struct kvtier_tier *tier, size_t size,
				   CUdevice dev, const CUuuid *u,
				   unsigned int flags, int advise)
{
	struct kvtier_gpu_range range;
	CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, dev };
	struct entry *e;
	CUdeviceptr p;
	CUresult r;
	int ret;

	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	r = real_cuMemAllocManaged(&p, size, flags);
	if (r != CUDA_SUCCESS) {
		free(e);
		if (r != CUDA_ERROR_OUT_OF_MEMORY)
			disable("cuMemAllocManaged failed", "CUresult error");
		LOG(LOG_DEBUG, "cuMemAllocManaged(%zu) failed with %d: passed through",
		    size, (int)r);
		return NULL;
	}
	if (advise) {
		r = aux.cuMemAdvise_v2 ? aux.cuMemAdvise_v2(p, size,
				CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc) :
			CUDA_ERROR_NOT_FOUND;
		if (r != CUDA_SUCCESS) {
			real_cuMemFree_v2(p);
			free(e);
			disable("cuMemAdvise (preferred location) failed", "CUresult error");
			return NULL;
		}
	}
	e->ptr = p;
	e->size = size;
	e->kind = PLACED_MANAGED;
	if (tier && u) {
		range_of(&range, p, size, u, KVTIER_GPU_MANAGED);
		ret = kvtier_gpu_register(tier, &range);
		if (ret)
			LOG_ONCE(reg_managed, LOG_WARN, "cannot register managed memory with %s (%s): it stays unregistered",
				 pol.tier_path, strerror(-ret));
		else
			e->registered = 1;
		e->tier = tier;
	}
	return e;
}

/* Where an allocation request came from. */
enum origin { FROM_DEVICE, FROM_MANAGED };

/*
 * Place an allocation of @size bytes selected by size. Returns 1 with the
 * pointer in *@dptr, or 0: the caller passes the request through.
 */
static int place(CUdeviceptr *dptr, size_t size, enum origin origin,
		 unsigned int flags)
{
	struct kvtier_tier *t;
	struct entry *e = NULL;
	CUuuid u;
	CUdevice dev;
	int mode, have_uuid;

	pthread_once(&cu_once, cu_resolve);
	if (!aux.cuCtxGetDevice || aux.cuCtxGetDevice(&dev) != CUDA_SUCCESS)
		return 0;	/* no current context: the real call says why */
	mode = decide(dev);
	if (mode != EFF_HMM && mode != EFF_MANAGED)
		return 0;
	t = tier_get();
	if (mode == EFF_HMM && !t)
		return 0;	/* a child of fork() that cannot reopen it */
	if (!slot_get())
		return 0;
	have_uuid = !device_uuid(dev, &u);
	if (mode == EFF_HMM) {
		if (have_uuid)
			e = place_hmm(t, size, &u);
		else
			disable("cannot read the GPU's UUID", "cuDeviceGetUuid_v2");
	} else {
		e = place_managed(t, size, dev, have_uuid ? &u : NULL,
				  origin == FROM_MANAGED ? flags : CU_MEM_ATTACH_GLOBAL,
				  origin == FROM_DEVICE);
	}
	if (!e) {
		slot_put();
		return 0;
	}
	e->owner = getpid();
	table_add(e);
	atomic_fetch_add(e->kind == PLACED_HMM ? &placed_hmm : &placed_managed, 1);
	atomic_fetch_add(e->kind == PLACED_HMM ? &bytes_hmm : &bytes_managed,
			 (long)e->size);
	LOG(LOG_DEBUG, "placed %zu bytes at 0x%" PRIx64 " (%s)", size, e->ptr,
	    e->kind == PLACED_HMM ? "hmm" : "managed");
	*dptr = e->ptr;
	return 1;
}

/* Is an allocation of @size a candidate? Cheap: no lock, no CUDA call. */
static inline int wanted(size_t size)
{
	policy();
	if (inside || pol.mode == MODE_OFF || !size || size < pol.min_bytes ||
	    atomic_load(&eff) == EFF_PASS)
		return 0;
	return 1;
}

/*
 * Free a placed allocation. @stream: synchronize it first (a stream-
 * ordered free); otherwise the context is synchronized for hmm ranges.
 */
static CUresult release(struct entry *e, int async, CUstream stream)
{
	CUresult r = CUDA_SUCCESS;
	int ret;

	if (async && aux.cuStreamSynchronize)
		aux.cuStreamSynchronize(stream);
	else if (e->kind == PLACED_HMM && aux.cuCtxSynchronize)
		aux.cuCtxSynchronize();
	/* A child of fork(): the ranges are its parent's registrations. */
	if (e->registered && e->owner == getpid()) {
		ret = kvtier_gpu_unregister(e->tier, e->ptr);
		if (ret)
			LOG_ONCE(unreg, LOG_WARN, "cannot unregister the range at 0x%" PRIx64 " (%s)",
				 e->ptr, strerror(-ret));
	}
	if (e->kind == PLACED_HMM)
		kvtier_region_close(e->region);
	else
		r = real_cuMemFree_v2(e->ptr);
	LOG(LOG_DEBUG, "freed 0x%" PRIx64 " (%s)", e->ptr,
	    e->kind == PLACED_HMM ? "hmm" : "managed");
	free(e);
	slot_put();
	return r;
}

/* --- driver wrappers ------------------------------------------------- */

/* Count an allocation the threshold selected that still passed through. */
static void note_passed(size_t size)
{
	if (size && size >= pol.min_bytes && pol.mode != MODE_OFF && !inside) {
		atomic_fetch_add(&passed_big, 1);
		atomic_fetch_add(&bytes_passed, (long)size);
	}
}

/* Place the allocation if the policy selects it: 1 placed, 0 pass through. */
static int try_place(CUdeviceptr *dptr, size_t size, enum origin o,
		     unsigned int flags)
{
	if (dptr && wanted(size) && place(dptr, size, o, flags))
		return 1;
	note_passed(size);
	return 0;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	if (try_place(dptr, bytesize, FROM_DEVICE, 0))
		return CUDA_SUCCESS;
	return real_cuMemAlloc_v2(dptr, bytesize);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize,
				CUstream hStream)
{
	if (try_place(dptr, bytesize, FROM_DEVICE, 0))
		return CUDA_SUCCESS;
	return real_cuMemAllocAsync(dptr, bytesize, hStream);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				     CUstream hStream)
{
	if (try_place(dptr, bytesize, FROM_DEVICE, 0))
		return CUDA_SUCCESS;
	return real_cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
					CUmemoryPool pool, CUstream hStream)
{
	if (try_place(dptr, bytesize, FROM_DEVICE, 0))
		return CUDA_SUCCESS;
	return real_cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					     CUmemoryPool pool, CUstream hStream)
{
	if (try_place(dptr, bytesize, FROM_DEVICE, 0))
		return CUDA_SUCCESS;
	return real_cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream);
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
				  unsigned int flags)
{
	if (try_place(dptr, bytesize, FROM_MANAGED, flags))
		return CUDA_SUCCESS;
	return real_cuMemAllocManaged(dptr, bytesize, flags);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	struct entry *e = table_take(dptr);

	if (e)
		return release(e, 0, NULL);
	return real_cuMemFree_v2(dptr);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	struct entry *e = table_take(dptr);

	if (e)
		return release(e, 1, hStream);
	return real_cuMemFreeAsync(dptr, hStream);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	struct entry *e = table_take(dptr);

	if (e)
		return release(e, 1, hStream);
	return real_cuMemFreeAsync_ptsz(dptr, hStream);
}

/*
 * Virtual memory management: cuMemCreate makes a physical allocation on
 * the GPU and cuMemMap maps it into a reserved device address range. A
 * tier mapping is neither, so these pass through; the shim only counts
 * them (the exit summary, KVTIER_LOG=debug).
 */
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			    const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	CUresult r = real_cuMemCreate(handle, size, prop, flags);

	if (r == CUDA_SUCCESS) {
		atomic_fetch_add(&vmm_created, 1);
		atomic_fetch_add(&vmm_handles, 1);
		LOG(LOG_DEBUG, "cuMemCreate %zu bytes: physical GPU memory, passed through",
		    size);
	}
	return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	CUresult r = real_cuMemRelease(handle);

	if (r == CUDA_SUCCESS)
		atomic_fetch_sub(&vmm_handles, 1);
	return r;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle handle,
			 unsigned long long flags)
{
	CUresult r = real_cuMemMap(ptr, size, offset, handle, flags);

	if (r == CUDA_SUCCESS)
		atomic_fetch_add(&vmm_mapped, (long)size);
	return r;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r = real_cuMemUnmap(ptr, size);

	if (r == CUDA_SUCCESS)
		atomic_fetch_sub(&vmm_mapped, (long)size);
	return r;
}

/*
 * In hmm mode the tier's free capacity counts as free device memory (and
 * its capacity as total): engines that size their KV cache by free memory
 * see room for the allocations the shim will place on the tier.
 */
EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	struct kvtier_tier_info info;
	struct kvtier_tier *tier;
	long long used = 0;
	char path[96], buf[32];
	CUresult r = real_cuMemGetInfo_v2(free, total);
	int fd;
	ssize_t n;

	policy();
	if (r != CUDA_SUCCESS || inside || atomic_load(&eff) != EFF_HMM)
		return r;
	tier = tier_get();
	if (!tier ||
	    !free || !total || kvtier_tier_info(tier, &info) ||
	    !info.capacity_bytes)
		return r;
	snprintf(path, sizeof(path), "/sys/class/kvtier/kvtier%u/used", pol.tier_id);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			used = atoll(buf);
		}
		close(fd);
	}
	if (used < 0 || (unsigned long long)used > info.capacity_bytes)
		used = (long long)info.capacity_bytes;
	*total += info.capacity_bytes;
	*free += info.capacity_bytes - (unsigned long long)used;
	return r;
}

/* Our wrapper for the real function @p, or @p. */
static void *substitute(void *p)
{
	int i;

	if (!p)
		return p;
	for (i = 0; i < H_COUNT; i++)
		if (!hook_is_rt[i] && cu_real((enum hook)i) == p)
			return hook_wrapper[i];
	return p;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn,
				    int cudaVersion, cuuint64_t flags,
				    CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult r = real_cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags,
					      symbolStatus);

	if (r == CUDA_SUCCESS && pfn)
		*pfn = substitute(*pfn);
	return r;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn,
				 int cudaVersion, cuuint64_t flags)
{
	CUresult r = real_cuGetProcAddress(symbol, pfn, cudaVersion, flags);

	if (r == CUDA_SUCCESS && pfn)
		*pfn = substitute(*pfn);
	return r;
}

/* --- runtime wrappers ------------------------------------------------ */

/*
 * The runtime makes its primary context current lazily; cudaFree(NULL) is
 * the documented way to have it done before the shim asks the driver.
 */
static void rt_context(void)
{
	inside++;
	real_cudaFree(NULL);
	inside--;
}

EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	CUdeviceptr p;
	cudaError_t r;

	if (devPtr && wanted(size)) {
		rt_context();
		if (place(&p, size, FROM_DEVICE, 0)) {
			*devPtr = (void *)(uintptr_t)p;
			return cudaSuccess;
		}
	}
	/* The runtime's own driver calls must not be placed a second time. */
	note_passed(size);
	inside++;
	r = real_cudaMalloc(devPtr, size);
	inside--;
	return r;
}

EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size,
				     unsigned int flags)
{
	CUdeviceptr p;
	cudaError_t r;

	if (devPtr && wanted(size)) {
		rt_context();
		if (place(&p, size, FROM_MANAGED, flags)) {
			*devPtr = (void *)(uintptr_t)p;
			return cudaSuccess;
		}
	}
	note_passed(size);
	inside++;
	r = real_cudaMallocManaged(devPtr, size, flags);
	inside--;
	return r;
}

EXPORT cudaError_t cudaFree(void *devPtr)
{
	struct entry *e = devPtr ? table_take((uintptr_t)devPtr) : NULL;
	cudaError_t r;

	if (e)
		return release(e, 0, NULL) == CUDA_SUCCESS ? cudaSuccess :
			cudaErrorInvalidValue;
	inside++;
	r = real_cudaFree(devPtr);
	inside--;
	return r;
}

/* --- dlsym ----------------------------------------------------------- */

static int hook_index(const char *name)
{
	int i;

	if (!name || name[0] != 'c' || name[1] != 'u')
		return -1;
	for (i = 0; i < H_COUNT; i++)
		if (!strcmp(name, hook_name[i]))
			return i;
	return -1;
}

/*
 * Names the shim hooks resolve to its wrappers (where the real lookup
 * finds the name at all). Every other name goes to the real dlsym() as a
 * tail call, so that it sees the caller's return address: RTLD_NEXT
 * lookups of other libraries keep meaning "after the caller".
 */
EXPORT void *dlsym(void *handle, const char *name)
{
	dlsym_fn ds = real_dlsym();
	int i;

	/* dlfcn.h declares @name nonnull; a NULL must still not crash. */
	__asm__("" : "+r"(name));
	if (!ds || !name)
		return NULL;
	i = hook_index(name);
	if (i < 0)
		return ds(handle, name);
	return ds(handle, name) ? hook_wrapper[i] : NULL;
}

/* --- process lifetime ------------------------------------------------ */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&decide_lock);
	pthread_mutex_lock(&table_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&table_lock);
	pthread_mutex_unlock(&decide_lock);
}

/*
 * The child registers through a file of its own: ranges belong to the
 * registering file and die with it, and the parent's file outlives the
 * child. Entries inherited from the parent are not the child's to
 * unregister (release() checks the owner).
 */
static void atfork_child(void)
{
	pthread_mutex_init(&table_lock, NULL);
	pthread_mutex_init(&decide_lock, NULL);
	if (tier) {
		kvtier_tier_close(tier);
		tier = NULL;
	}
	tier_error = 0;
}

__attribute__((constructor)) static void shim_init(void)
{
	policy();
	real_dlsym();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

__attribute__((destructor)) static void shim_fini(void)
{
	long hmm = atomic_load(&placed_hmm), man = atomic_load(&placed_managed);

	if (hmm || man || atomic_load(&passed_big) || atomic_load(&vmm_created))
		LOG(LOG_INFO, "summary: placed %ld hmm + %ld managed (%ld bytes), %ld at or above the threshold passed through, %ld live placed, VMM (passed through): %ld handles created, %ld live, %ld bytes mapped; bytes: %ld on the tier (hmm), %ld managed, %ld passed through",
		    hmm, man, atomic_load(&bytes_hmm) + atomic_load(&bytes_managed),
		    atomic_load(&passed_big), atomic_load(&nlive),
		    atomic_load(&vmm_created), atomic_load(&vmm_handles),
		    atomic_load(&vmm_mapped), atomic_load(&bytes_hmm),
		    atomic_load(&bytes_managed), atomic_load(&bytes_passed));
}
