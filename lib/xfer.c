// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier block offload: store N blocks of block_bytes at region offsets
 * and restore them, asynchronously, with tickets.
 *
 * A store or restore call is a job: its blocks are cut into units of at
 * most staging_bytes, which worker threads take in submission order and
 * move with pread/pwrite on the xfer's own file of the region. A job is
 * done when all its units are; its result is its first error.
 *
 * With KVTIER_XFER_CUDA the CUDA runtime is dlopen()ed (never linked).
 * Each worker owns one pinned staging buffer (cudaMallocHost) and one
 * stream of the lowest priority, so its copies run on the copy engines
 * without SM work. A unit of a device (or managed) buffer goes through the
 * worker's staging buffer: store copies device to staging then writes the
 * tier; restore reads the tier into staging then copies to the device.
 * With two or more workers one's CUDA copy overlaps another's tier I/O
 * (double buffering). Units of host buffers go straight to pread/pwrite.
 *
 * Lock order: xfer->lock only; the CUDA table is set up under cuda_lock,
 * never taken with xfer->lock held.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "internal.h"

/* Host-buffer workers (without CUDA). */
#define HOST_WORKERS		4
#define DEF_STAGING_BUFFERS	4
#define DEF_STAGING_BYTES	(8UL << 20)
#define MAX_STAGING_BUFFERS	64
#define MAX_STAGING_BYTES	(1UL << 30)

/*
 * The CUDA runtime entry points used, declared here: no CUDA header is
 * needed to build libkvtier. Values as in CUDA's driver_types.h.
 */
typedef int cudaError_t;		/* cudaSuccess is 0 */
typedef struct CUstream_st *cudaStream_t;

enum {
	KVT_CUDA_MEM_UNREGISTERED = 0,	/* cudaMemoryTypeUnregistered */
	KVT_CUDA_MEM_HOST = 1,		/* cudaMemoryTypeHost */
	KVT_CUDA_MEM_DEVICE = 2,	/* cudaMemoryTypeDevice */
	KVT_CUDA_MEM_MANAGED = 3,	/* cudaMemoryTypeManaged */
};

enum {
	KVT_CUDA_H2D = 1,		/* cudaMemcpyHostToDevice */
	KVT_CUDA_D2H = 2,		/* cudaMemcpyDeviceToHost */
};

#define KVT_CUDA_STREAM_NONBLOCKING	0x01	/* cudaStreamNonBlocking */

/*
 * struct cudaPointerAttributes: type, device, devicePointer, hostPointer,
 * then (CUDA 11 and later) reserved words the runtime may write; the
 * padding keeps a runtime that writes them inside this object.
 */
struct kvt_cuda_ptr_attr {
	int type;
	int device;
	void *devicePointer;
	void *hostPointer;
	long reserved[8];
};

struct kvt_cuda {
	cudaError_t (*SetDevice)(int device);
	const char *(*GetErrorString)(cudaError_t err);
	cudaError_t (*MallocHost)(void **ptr, size_t size);
	cudaError_t (*FreeHost)(void *ptr);
	cudaError_t (*DeviceGetStreamPriorityRange)(int *least, int *greatest);
	cudaError_t (*StreamCreateWithPriority)(cudaStream_t *s,
						unsigned int flags, int prio);
	cudaError_t (*StreamDestroy)(cudaStream_t s);
	cudaError_t (*StreamSynchronize)(cudaStream_t s);
	cudaError_t (*MemcpyAsync)(void *dst, const void *src, size_t count,
				   int kind, cudaStream_t s);
	cudaError_t (*PointerGetAttributes)(struct kvt_cuda_ptr_attr *attr,
					    const void *ptr);
};

static const char *const cudart_names[] = {
	"libcudart.so.13", "libcudart.so.12", "libcudart.so",
};

/* Loaded once per process and kept: unloading a CUDA runtime is unsafe. */
static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kvt_cuda cuda;
static bool cuda_ready;

/* The entry points libkvtier uses, and nothing else. */
static const struct {
	const char *name;
	size_t off;
} cuda_syms[] = {
	{ "cudaSetDevice", offsetof(struct kvt_cuda, SetDevice) },
	{ "cudaGetErrorString", offsetof(struct kvt_cuda, GetErrorString) },
	{ "cudaMallocHost", offsetof(struct kvt_cuda, MallocHost) },
	{ "cudaFreeHost", offsetof(struct kvt_cuda, FreeHost) },
	{ "cudaDeviceGetStreamPriorityRange",
	  offsetof(struct kvt_cuda, DeviceGetStreamPriorityRange) },
	{ "cudaStreamCreateWithPriority",
	  offsetof(struct kvt_cuda, StreamCreateWithPriority) },
	{ "cudaStreamDestroy", offsetof(struct kvt_cuda, StreamDestroy) },
	{ "cudaStreamSynchronize", offsetof(struct kvt_cuda, StreamSynchronize) },
	{ "cudaMemcpyAsync", offsetof(struct kvt_cuda, MemcpyAsync) },
	{ "cudaPointerGetAttributes",
	  offsetof(struct kvt_cuda, PointerGetAttributes) },
};

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Find the CUDA runtime (one already loaded first, then by name) and its
 * entry points: 0, or -ENOENT if there is none or it lacks one of them.
 */
static int cuda_load(void)
{
	struct kvt_cuda c;
	void *h = NULL, *sym;
	size_t i;
	int ret = 0;

	pthread_mutex_lock(&cuda_lock);
	if (cuda_ready)
		goto out;
	for (i = 0; !h && i < ARRAY_SIZE(cudart_names); i++)
		h = dlopen(cudart_names[i], RTLD_NOW | RTLD_NOLOAD);
	for (i = 0; !h && i < ARRAY_SIZE(cudart_names); i++)
		h = dlopen(cudart_names[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		ret = -ENOENT;
		goto out;
	}
	memset(&c, 0, sizeof(c));
	for (i = 0; i < ARRAY_SIZE(cuda_syms); i++) {
		sym = dlsym(h, cuda_syms[i].name);
		if (!sym) {
			dlclose(h);
			ret = -ENOENT;
			goto out;
		}
		/* A data pointer into a function pointer slot, as POSIX allows. */
		memcpy((char *)&c + cuda_syms[i].off, &sym, sizeof(sym));
	}
	cuda = c;
	cuda_ready = true;
out:
	pthread_mutex_unlock(&cuda_lock);
	return ret;
}

enum { DIR_STORE, DIR_RESTORE };

/* One store or restore call. */
struct job {
	struct job *next;		/* in xfer->jobs (all unreaped jobs) */
	struct job *qnext;		/* in the dispatch queue */
	uint64_t ticket;
	int dir;
	unsigned int n;
	void **bufs;
	uint64_t *offs;
	unsigned char *dev;		/* per block: through staging */
	uint64_t units, next_unit, units_done;
	int error;			/* first error, negative errno */
};

struct worker {
	struct kvtier_xfer *x;
	pthread_t thread;
	void *staging;
	cudaStream_t stream;
	int setup;			/* CUDA setup result */
};

struct kvtier_xfer {
	int fd;				/* our own file of the region */
	uint64_t size;
	int readonly;
	size_t block_bytes;
	size_t chunk;			/* bytes per unit */
	uint64_t units_per_block;
	unsigned int flags;
	int cuda_device;

	pthread_mutex_t lock;
	pthread_cond_t work;		/* workers: a unit is queued, or stop */
	pthread_cond_t done;		/* waiters: a job finished; setup done */
	struct job *jobs;
	struct job *qhead, *qtail;
	uint64_t next_ticket;
	bool stop;
	unsigned int nworkers, nsetup;
	struct worker *workers;
};

static void job_free(struct job *j)
{
	free(j->bufs);
	free(j->offs);
	free(j->dev);
	free(j);
}

/* Move unit @u of job @j with worker @w: 0 or -errno. */
static int do_unit(struct worker *w, struct job *j, uint64_t u)
{
	struct kvtier_xfer *x = w->x;
	uint64_t blk = u / x->units_per_block;
	size_t at = (size_t)(u % x->units_per_block) * x->chunk;
	size_t len = x->block_bytes - at < x->chunk ? x->block_bytes - at : x->chunk;
	uint64_t off = j->offs[blk] + at;
	char *buf = (char *)j->bufs[blk] + at;
	int ret;

	if (!j->dev[blk]) {
		if (j->dir == DIR_STORE)
			return kvt_pwrite_full(x->fd, buf, len, off);
		return kvt_pread_full(x->fd, buf, len, off);
	}
	if (j->dir == DIR_STORE) {
		if (cuda.MemcpyAsync(w->staging, buf, len, KVT_CUDA_D2H, w->stream) ||
		    cuda.StreamSynchronize(w->stream))
			return -EIO;
		return kvt_pwrite_full(x->fd, w->staging, len, off);
	}
	ret = kvt_pread_full(x->fd, w->staging, len, off);
	if (ret)
		return ret;
	if (cuda.MemcpyAsync(buf, w->staging, len, KVT_CUDA_H2D, w->stream) ||
	    cuda.StreamSynchronize(w->stream))
		return -EIO;
	return 0;
}

/* Per-thread CUDA state of a worker: 0 or -EIO. */
static int worker_cuda_setup(struct worker *w)
{
	int least = 0, greatest = 0;

	if (cuda.SetDevice(w->x->cuda_device) ||
	    cuda.DeviceGetStreamPriorityRange(&least, &greatest))
		return -EIO;
	/* The lowest priority is the numerically greatest ("least"). */
	if (cuda.StreamCreateWithPriority(&w->stream, KVT_CUDA_STREAM_NONBLOCKING,
					  least)) {
		w->stream = NULL;
		return -EIO;
	}
	if (cuda.MallocHost(&w->staging, w->x->chunk)) {
		w->staging = NULL;
		return -EIO;
	}
	return 0;
}

static void worker_cuda_teardown(struct worker *w)
{
	if (w->staging)
		cuda.FreeHost(w->staging);
	if (w->stream)
		cuda.StreamDestroy(w->stream);
	w->staging = NULL;
	w->stream = NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct kvtier_xfer *x = w->x;
	struct job *j;
	uint64_t u;
	int ret;

	if (x->flags & KVTIER_XFER_CUDA)
		w->setup = worker_cuda_setup(w);
	pthread_mutex_lock(&x->lock);
	x->nsetup++;
	pthread_cond_broadcast(&x->done);
	for (;;) {
		while (!x->qhead && !x->stop)
			pthread_cond_wait(&x->work, &x->lock);
		if (!x->qhead)
			break;		/* stopping, and nothing is queued */
		j = x->qhead;
		u = j->next_unit++;
		if (j->next_unit == j->units) {
			x->qhead = j->qnext;
			if (!x->qhead)
				x->qtail = NULL;
		}
		/* After a failure the job's other units are not moved. */
		ret = j->error;
		pthread_mutex_unlock(&x->lock);
		if (!ret)
			ret = do_unit(w, j, u);
		pthread_mutex_lock(&x->lock);
		if (ret && !j->error)
			j->error = ret;
		if (++j->units_done == j->units)
			pthread_cond_broadcast(&x->done);
	}
	pthread_mutex_unlock(&x->lock);
	if (x->flags & KVTIER_XFER_CUDA)
		worker_cuda_teardown(w);
	return NULL;
}

/* Stop and join the first @n workers; free everything. */
static void xfer_free(struct kvtier_xfer *x, unsigned int n)
{
	struct job *j;
	unsigned int i;

	pthread_mutex_lock(&x->lock);
	x->stop = true;
	pthread_cond_broadcast(&x->work);
	pthread_mutex_unlock(&x->lock);
	for (i = 0; i < n; i++)
		pthread_join(x->workers[i].thread, NULL);
	while ((j = x->jobs)) {
		x->jobs = j->next;
		job_free(j);
	}
	pthread_cond_destroy(&x->work);
	pthread_cond_destroy(&x->done);
	pthread_mutex_destroy(&x->lock);
	free(x->workers);
	close(x->fd);
	free(x);
}

KVTIER_EXPORT int kvtier_xfer_create(struct kvtier_region *region,
				     const struct kvtier_xfer_attr *attr,
				     struct kvtier_xfer **xferp)
{
	struct kvtier_xfer *x;
	unsigned int i, started = 0;
	int ret = 0;

	if (!region || !attr || !xferp || !attr->block_bytes ||
	    attr->block_bytes > region->size || (attr->flags & ~KVTIER_XFER_CUDA) ||
	    attr->reserved[0] || attr->reserved[1] || attr->reserved[2] ||
	    attr->reserved[3] || attr->staging_buffers > MAX_STAGING_BUFFERS ||
	    attr->staging_bytes > MAX_STAGING_BYTES ||
	    ((attr->flags & KVTIER_XFER_CUDA) && attr->cuda_device < 0))
		return -EINVAL;
	if (attr->flags & KVTIER_XFER_CUDA) {
		ret = cuda_load();
		if (ret)
			return ret;
	}
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = fcntl(region->fd, F_DUPFD_CLOEXEC, 0);
	if (x->fd < 0) {
		ret = -errno;
		free(x);
		return ret;
	}
	x->size = region->size;
	x->readonly = region->readonly;
	x->block_bytes = attr->block_bytes;
	x->chunk = attr->staging_bytes ? attr->staging_bytes : DEF_STAGING_BYTES;
	if (x->chunk > x->block_bytes)
		x->chunk = x->block_bytes;
	x->units_per_block = (x->block_bytes + x->chunk - 1) / x->chunk;
	x->flags = attr->flags;
	x->cuda_device = attr->cuda_device;
	x->next_ticket = 1;
	x->nworkers = !(attr->flags & KVTIER_XFER_CUDA) ? HOST_WORKERS :
		      attr->staging_buffers ? attr->staging_buffers :
					      DEF_STAGING_BUFFERS;
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->work, NULL);
	pthread_cond_init(&x->done, NULL);
	x->workers = calloc(x->nworkers, sizeof(*x->workers));
	if (!x->workers) {
		ret = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < x->nworkers; i++) {
		x->workers[i].x = x;
		ret = -pthread_create(&x->workers[i].thread, NULL, worker_main,
				      &x->workers[i]);
		if (ret)
			goto fail;
		started++;
	}
	/* CUDA state is per thread: each worker set up its own. */
	pthread_mutex_lock(&x->lock);
	while (x->nsetup < x->nworkers)
		pthread_cond_wait(&x->done, &x->lock);
	pthread_mutex_unlock(&x->lock);
	for (i = 0; i < x->nworkers; i++) {
		if (x->workers[i].setup) {
			ret = x->workers[i].setup;
			goto fail;
		}
	}
	*xferp = x;
	return 0;
fail:
	xfer_free(x, started);
	return ret;
}

KVTIER_EXPORT void kvtier_xfer_destroy(struct kvtier_xfer *xfer)
{
	if (!xfer)
		return;
	/* Workers drain the queue before they stop: buffers stay valid. */
	xfer_free(xfer, xfer->nworkers);
}

/* Is @p device (or managed) memory, to be copied through staging? */
static int classify(const void *p, unsigned char *dev)
{
	struct kvt_cuda_ptr_attr a;

	memset(&a, 0, sizeof(a));
	if (cuda.PointerGetAttributes(&a, p))
		return -EIO;
	switch (a.type) {
	case KVT_CUDA_MEM_UNREGISTERED:
	case KVT_CUDA_MEM_HOST:
		*dev = 0;
		return 0;
	case KVT_CUDA_MEM_DEVICE:
	case KVT_CUDA_MEM_MANAGED:
		*dev = 1;
		return 0;
	}
	return -EIO;
}

static int submit(struct kvtier_xfer *x, int dir, void *const *bufs,
		  const uint64_t *offsets, unsigned int n, uint64_t *ticketp)
{
	struct job *j;
	unsigned int i;
	int ret;

	if (!x || !bufs || !offsets || !n || !ticketp)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!bufs[i] || offsets[i] > x->size ||
		    x->block_bytes > x->size - offsets[i])
			return -EINVAL;
	}
	if (dir == DIR_STORE && x->readonly)
		return -EACCES;
	if ((uint64_t)n > UINT64_MAX / x->units_per_block)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->bufs = malloc(n * sizeof(*j->bufs));
	j->offs = malloc(n * sizeof(*j->offs));
	j->dev = calloc(n, 1);
	if (!j->bufs || !j->offs || !j->dev) {
		job_free(j);
		return -ENOMEM;
	}
	memcpy(j->bufs, bufs, n * sizeof(*j->bufs));
	memcpy(j->offs, offsets, n * sizeof(*j->offs));
	if (x->flags & KVTIER_XFER_CUDA) {
		for (i = 0; i < n; i++) {
			ret = classify(bufs[i], &j->dev[i]);
			if (ret) {
				job_free(j);
				return ret;
			}
		}
	}
	j->dir = dir;
	j->n = n;
	j->units = (uint64_t)n * x->units_per_block;

	pthread_mutex_lock(&x->lock);
	j->ticket = x->next_ticket++;
	j->next = x->jobs;
	x->jobs = j;
	if (x->qtail)
		x->qtail->qnext = j;
	else
		x->qhead = j;
	x->qtail = j;
	pthread_cond_broadcast(&x->work);
	*ticketp = j->ticket;
	pthread_mutex_unlock(&x->lock);
	return 0;
}

KVTIER_EXPORT int kvtier_xfer_store(struct kvtier_xfer *xfer, void *const *bufs,
				    const uint64_t *offsets, unsigned int n,
				    uint64_t *ticketp)
{
	return submit(xfer, DIR_STORE, bufs, offsets, n, ticketp);
}

KVTIER_EXPORT int kvtier_xfer_restore(struct kvtier_xfer *xfer,
				      void *const *bufs,
				      const uint64_t *offsets, unsigned int n,
				      uint64_t *ticketp)
{
	return submit(xfer, DIR_RESTORE, bufs, offsets, n, ticketp);
}

/* The link to the unreaped job @ticket, or NULL. Under x->lock. */
static struct job **find_job(struct kvtier_xfer *x, uint64_t ticket)
{
	struct job **pp;

	for (pp = &x->jobs; *pp; pp = &(*pp)->next)
		if ((*pp)->ticket == ticket)
			return pp;
	return NULL;
}

/* Forget the finished job at @pp: 1 if it succeeded, else its error. */
static int reap(struct job **pp)
{
	struct job *j = *pp;
	int ret = j->error ? j->error : 1;

	*pp = j->next;
	job_free(j);
	return ret;
}

KVTIER_EXPORT int kvtier_xfer_poll(struct kvtier_xfer *xfer, uint64_t ticket)
{
	struct job **pp;
	int ret = 0;

	if (!xfer)
		return -EINVAL;
	pthread_mutex_lock(&xfer->lock);
	pp = find_job(xfer, ticket);
	if (!pp)
		ret = -ENOENT;
	else if ((*pp)->units_done == (*pp)->units)
		ret = reap(pp);
	pthread_mutex_unlock(&xfer->lock);
	return ret;
}

KVTIER_EXPORT int kvtier_xfer_wait(struct kvtier_xfer *xfer, uint64_t ticket)
{
	struct job **pp;
	int ret;

	if (!xfer)
		return -EINVAL;
	pthread_mutex_lock(&xfer->lock);
	for (;;) {
		pp = find_job(xfer, ticket);
		if (!pp) {
			ret = -ENOENT;
			break;
		}
		if ((*pp)->units_done == (*pp)->units) {
			ret = reap(pp);
			break;
		}
		pthread_cond_wait(&xfer->done, &xfer->lock);
	}
	pthread_mutex_unlock(&xfer->lock);
	return ret == 1 ? 0 : ret;
}
