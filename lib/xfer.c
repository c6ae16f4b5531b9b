// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier block offload: store N blocks of block_bytes at region offsets
 * and restore them, asynchronously, with tickets.
 *
 * A store or restore call is a job: its blocks are cut into units of at
 * most staging_bytes, taken in submission order and moved on the xfer's
 * own file of the region. A job is done when all its units are; its
 * result is its first error.
 *
 * Without CUDA one thread moves the units through an io_uring, up to
 * RING_BYTES of them in flight in units of at most RING_UNIT (the module
 * completes page-aligned reads from its direct path without a kernel
 * worker, and page-aligned writes too with its checksum off; other stores
 * go to io_uring's workers; at most RING_WRITES stores). Where
 * io_uring cannot be set up (kernel.io_uring_disabled, a seccomp filter,
 * an old kernel) four worker threads move them with pread/pwrite
 * instead, and a ring that fails for good later finishes its units with
 * pread/pwrite on its own thread.
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
 * never taken with xfer->lock held. The ring is its thread's alone: no
 * lock; x->lock is never held while it waits for a completion.
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
#include <liburing.h>

#include "internal.h"

/* Host-buffer workers (without CUDA). */
#define HOST_WORKERS		4
#define DEF_STAGING_BUFFERS	4
#define DEF_STAGING_BYTES	(8UL << 20)
#define MAX_STAGING_BUFFERS	64
#define MAX_STAGING_BYTES	(1UL << 30)
/*
 * Units in flight on the ring: RING_BYTES of them (the module's default
 * max_inflight_kb) rounded down, at most RING_MAX: 16 to 64, units being
 * at most RING_UNIT (less than RING_BYTES below 256 KiB units).
 */
#define RING_BYTES		(16UL << 20)
#define RING_MAX		64
/*
 * Units on the ring are at most RING_UNIT: requests that size complete
 * inline in the module (one direct read each, under its in-flight cap),
 * where a few requests of 8 MiB would wait for room in io_uring's workers.
 */
#define RING_UNIT		(1UL << 20)
/*
 * Stores in flight on the ring. With the module's checksum off a store is
 * a direct write, issued inline and completed from its bios; with it on,
 * the module's write path is synchronous, so each store holds one of
 * io_uring's workers until it is done, and many such writers only contend
 * for the budget.
 */
#define RING_WRITES		16
/* A submission refused for want of resources is tried for about 1 s. */
#define RING_RETRIES		1000

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

/* A unit on the ring, from its preparation to its completion. */
struct ring_unit {
	struct job *j;			/* NULL: free */
	char *buf;
	size_t len;
	uint64_t off;
	uint64_t seq;			/* order of preparation */
};

struct ring {
	struct io_uring uring;
	unsigned int depth;		/* units it may have in flight */
	struct ring_unit *u;		/* @depth of them */
	unsigned int busy;		/* units prepared and not completed */
	unsigned int writes;		/* of them, stores */
	uint64_t seq;			/* units prepared so far */
	bool broken;			/* units go by pread/pwrite from now */
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
	struct ring *ring;		/* NULL: the workers move the units */
};

static void job_free(struct job *j)
{
	free(j->bufs);
	free(j->offs);
	free(j->dev);
	free(j);
}

/* Where unit @u of job @j is: its buffer, bytes and region offset. */
static void unit_span(const struct kvtier_xfer *x, const struct job *j,
		      uint64_t u, char **buf, size_t *len, uint64_t *off)
{
	uint64_t blk = u / x->units_per_block;
	size_t at = (size_t)(u % x->units_per_block) * x->chunk;

	*len = x->block_bytes - at < x->chunk ? x->block_bytes - at : x->chunk;
	*off = j->offs[blk] + at;
	*buf = (char *)j->bufs[blk] + at;
}

/* pread or pwrite @len bytes of @buf at @off, as job @j goes: 0 or -errno. */
static int unit_rw(const struct kvtier_xfer *x, const struct job *j,
		   char *buf, size_t len, uint64_t off)
{
	if (j->dir == DIR_STORE)
		return kvt_pwrite_full(x->fd, buf, len, off);
	return kvt_pread_full(x->fd, buf, len, off);
}

/* Move unit @u of job @j (host memory) with pread/pwrite: 0 or -errno. */
static int host_unit_rw(const struct kvtier_xfer *x, const struct job *j,
			uint64_t u)
{
	uint64_t off;
	size_t len;
	char *buf;

	unit_span(x, j, u, &buf, &len, &off);
	return unit_rw(x, j, buf, len, off);
}

/* Move unit @u of job @j with worker @w: 0 or -errno. */
static int do_unit(struct worker *w, struct job *j, uint64_t u)
{
	struct kvtier_xfer *x = w->x;
	uint64_t off;
	size_t len;
	char *buf;
	int ret;

	if (!j->dev[u / x->units_per_block])
		return host_unit_rw(x, j, u);
	unit_span(x, j, u, &buf, &len, &off);
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

/* Take the next queued unit into @jp and @up: false if none. Under x->lock. */
static bool next_unit(struct kvtier_xfer *x, struct job **jp, uint64_t *up)
{
	struct job *j = x->qhead;

	if (!j)
		return false;
	*jp = j;
	*up = j->next_unit++;
	if (j->next_unit == j->units) {
		x->qhead = j->qnext;
		if (!x->qhead)
			x->qtail = NULL;
	}
	return true;
}

/* A unit of @j ended with @ret (0 or -errno). Under x->lock. */
static void unit_done(struct kvtier_xfer *x, struct job *j, int ret)
{
	if (ret && !j->error)
		j->error = ret;
	if (++j->units_done == j->units)
		pthread_cond_broadcast(&x->done);
}

/*
 * Put unit @u of job @j on the ring, in a free ring_unit (there is one:
 * r->busy < r->depth, and so is a free SQE). Submitted by ring_run().
 */
static void ring_prep(struct kvtier_xfer *x, struct job *j, uint64_t u)
{
	struct ring *r = x->ring;
	struct ring_unit *ru = r->u;
	struct io_uring_sqe *sqe;

	while (ru->j)
		ru++;
	ru->j = j;
	ru->seq = r->seq++;
	unit_span(x, j, u, &ru->buf, &ru->len, &ru->off);
	sqe = io_uring_get_sqe(&r->uring);
	/* A unit is at most RING_UNIT: it fits the SQE's length. */
	if (j->dir == DIR_STORE) {
		/*
		 * Issued inline: the module starts a direct write there, or
		 * answers EAGAIN and io_uring hands it to a worker.
		 */
		io_uring_prep_write(sqe, x->fd, ru->buf, (unsigned int)ru->len,
				    ru->off);
		r->writes++;
	} else
		io_uring_prep_read(sqe, x->fd, ru->buf, (unsigned int)ru->len,
				   ru->off);
	io_uring_sqe_set_data(sqe, ru);
	r->busy++;
}

/*
 * Move the @done.. end of @ru with pread/pwrite, unless its job already
 * failed (then its other units are not moved): 0 or -errno.
 */
static int ring_unit_finish(struct kvtier_xfer *x, struct ring_unit *ru,
			    size_t done)
{
	int failed;

	pthread_mutex_lock(&x->lock);
	failed = ru->j->error;
	pthread_mutex_unlock(&x->lock);
	if (failed)
		return 0;
	return unit_rw(x, ru->j, ru->buf + done, ru->len - done, ru->off + done);
}

/* @ru ended with @ret: free it and count it for its job. */
static void ring_unit_end(struct kvtier_xfer *x, struct ring_unit *ru, int ret)
{
	struct job *j = ru->j;

	ru->j = NULL;
	x->ring->busy--;
	if (j->dir == DIR_STORE)
		x->ring->writes--;
	pthread_mutex_lock(&x->lock);
	unit_done(x, j, ret);
	pthread_mutex_unlock(&x->lock);
}

/*
 * The ring cannot submit: move the units it never took (the last ones
 * prepared, still in its submission queue, never to be submitted now)
 * with pread/pwrite, and every later unit too. Those it took are reaped
 * as they complete: their buffers are the kernel's until then.
 */
static void ring_break(struct kvtier_xfer *x)
{
	struct ring *r = x->ring;
	uint64_t first = r->seq - io_uring_sq_ready(&r->uring);
	unsigned int i;

	r->broken = true;
	for (i = 0; i < r->depth; i++) {
		struct ring_unit *ru = &r->u[i];

		if (ru->j && ru->seq >= first)
			ring_unit_end(x, ru, ring_unit_finish(x, ru, 0));
	}
}

/*
 * A completion of the ring. A unit that did not move whole - short (a
 * fault part-way in the buffer, a signal), or failed, whether by the file
 * (EFAULT, EIO) or by io_uring itself (EAGAIN from a file that said it
 * would not block, ECANCELED when io-wq could not start a worker, ENOMEM
 * for its own state) - is finished as a worker would move it: its result
 * is what pread/pwrite then meet, so the ring never fails a job the
 * workers would not have.
 */
static void ring_complete(struct kvtier_xfer *x, struct io_uring_cqe *cqe)
{
	struct ring_unit *ru = io_uring_cqe_get_data(cqe);
	int res = cqe->res;

	io_uring_cqe_seen(&x->ring->uring, cqe);
	if (res >= 0 && (size_t)res == ru->len)
		ring_unit_end(x, ru, 0);
	else
		ring_unit_end(x, ru, ring_unit_finish(x, ru, res > 0 ? (size_t)res : 0));
}

/* Submit what is prepared and reap at least one completion if any is due. */
static void ring_run(struct kvtier_xfer *x)
{
	struct ring *r = x->ring;
	struct io_uring_cqe *cqe;
	unsigned int tries = 0;
	int ret;

	while (!r->broken && io_uring_sq_ready(&r->uring)) {
		ret = io_uring_submit(&r->uring);
		if (ret > 0 || ret == -EINTR)
			continue;
		if (ret == 0 || ret == -EAGAIN || ret == -EBUSY || ret == -ENOMEM) {
			/* Out of resources: a completion frees some. */
			if (r->busy > io_uring_sq_ready(&r->uring))
				break;
			if (++tries < RING_RETRIES) {
				usleep(1000);
				continue;
			}
		}
		ring_break(x);
	}
	/* Here what is left on the ring is in the kernel's hands. */
	if (!r->busy)
		return;
	ret = io_uring_wait_cqe(&r->uring, &cqe);
	if (ret) {
		/*
		 * The kernel still owns the buffers of what it took: there is
		 * nothing to do but wait again (EINTR, or a ring in trouble).
		 */
		if (ret != -EINTR)
			usleep(1000);
		return;
	}
	do {
		ring_complete(x, cqe);
	} while (!io_uring_peek_cqe(&r->uring, &cqe));
}

/*
 * The ring's thread: keeps up to r->depth units in flight (RING_WRITES of
 * them stores), in the order they were submitted: a call waits behind
 * the units of those before it. Drains the queue and what is in flight
 * on stop.
 */
static void ring_main(struct kvtier_xfer *x)
{
	struct ring *r = x->ring;
	struct job *j;
	uint64_t u;
	int ret;

	pthread_mutex_lock(&x->lock);
	for (;;) {
		while (r->busy < r->depth && x->qhead &&
		       (x->qhead->dir != DIR_STORE || r->writes < RING_WRITES) &&
		       next_unit(x, &j, &u)) {
			/* After a failure the job's other units are not moved. */
			if (j->error) {
				unit_done(x, j, 0);
			} else if (r->broken) {
				pthread_mutex_unlock(&x->lock);
				ret = host_unit_rw(x, j, u);
				pthread_mutex_lock(&x->lock);
				unit_done(x, j, ret);
			} else {
				ring_prep(x, j, u);
			}
		}
		if (!r->busy) {
			if (!x->qhead && x->stop)
				break;
			if (!x->qhead)
				pthread_cond_wait(&x->work, &x->lock);
			continue;
		}
		pthread_mutex_unlock(&x->lock);
		ring_run(x);
		pthread_mutex_lock(&x->lock);
	}
	pthread_mutex_unlock(&x->lock);
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
	if (x->ring) {
		pthread_mutex_unlock(&x->lock);
		ring_main(x);
		return NULL;
	}
	for (;;) {
		while (!x->qhead && !x->stop)
			pthread_cond_wait(&x->work, &x->lock);
		if (!next_unit(x, &j, &u))
			break;		/* stopping, and nothing is queued */
		/* After a failure the job's other units are not moved. */
		ret = j->error;
		pthread_mutex_unlock(&x->lock);
		if (!ret)
			ret = do_unit(w, j, u);
		pthread_mutex_lock(&x->lock);
		unit_done(x, j, ret);
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
	if (x->ring) {
		io_uring_queue_exit(&x->ring->uring);
		free(x->ring->u);
		free(x->ring);
	}
	pthread_cond_destroy(&x->work);
	pthread_cond_destroy(&x->done);
	pthread_mutex_destroy(&x->lock);
	free(x->workers);
	close(x->fd);
	free(x);
}

/*
 * Give @x a ring for its host units where io_uring can be used: it can be
 * set up (not kernel.io_uring_disabled, a seccomp profile or a kernel
 * without it) and takes requests (a sandbox may allow io_uring_setup and
 * refuse io_uring_enter): one NOP must complete. Else x->ring stays NULL,
 * for the workers. 0, or -ENOMEM.
 */
static int ring_new(struct kvtier_xfer *x)
{
	size_t unit = x->chunk < RING_UNIT ? x->chunk : RING_UNIT;
	struct ring *r = calloc(1, sizeof(*r));
	size_t depth = RING_BYTES / unit;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	bool ok;

	if (depth > RING_MAX)
		depth = RING_MAX;
	if (r)
		r->u = calloc(depth, sizeof(*r->u));
	if (!r || !r->u) {
		free(r);
		return -ENOMEM;
	}
	r->depth = (unsigned int)depth;
	if (io_uring_queue_init(r->depth, &r->uring, 0)) {
		free(r->u);
		free(r);
		return 0;
	}
	sqe = io_uring_get_sqe(&r->uring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	ok = io_uring_submit_and_wait(&r->uring, 1) == 1 &&
	     !io_uring_peek_cqe(&r->uring, &cqe);
	if (ok) {
		ok = !cqe->res && !io_uring_cqe_get_data(cqe);
		io_uring_cqe_seen(&r->uring, cqe);
	}
	if (!ok) {
		io_uring_queue_exit(&r->uring);
		free(r->u);
		free(r);
		return 0;
	}
	x->ring = r;
	x->chunk = unit;
	x->units_per_block = (x->block_bytes + unit - 1) / unit;
	return 0;
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
	/* Host buffers: one ring thread where io_uring can be set up. */
	if (!(attr->flags & KVTIER_XFER_CUDA)) {
		ret = ring_new(x);
		if (ret) {
			close(x->fd);
			free(x);
			return ret;
		}
		if (x->ring)
			x->nworkers = 1;
	}
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
