// SPDX-License-Identifier: GPL-2.0
/*
 * TEST CODE, never installed: a double of the CUDA 13 runtime (built as
 * libcudart.so.13) for machines without a GPU. It reaches the driver the
 * way the real runtime does: dlopen("libcuda.so.1"), dlsym() for
 * cuGetProcAddress_v2, then every driver entry point through that. The
 * prototypes come from the real cuda_runtime_api.h.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "kvt_double.h"

#define EXPORT __attribute__((visibility("default")))

/* The driver entry points the runtime uses, fetched by base name. */
#define DRIVER(X)							\
	X(cuInit, (unsigned int))					\
	X(cuDeviceGetCount, (int *))					\
	X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))	\
	X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))		\
	X(cuCtxSetCurrent, (CUcontext))					\
	X(cuCtxGetStreamPriorityRange, (int *, int *))			\
	X(cuMemAlloc, (CUdeviceptr *, size_t))				\
	X(cuMemFree, (CUdeviceptr))					\
	X(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned int))	\
	X(cuMemAllocHost, (void **, size_t))				\
	X(cuMemFreeHost, (void *))					\
	X(cuStreamCreateWithPriority, (CUstream *, unsigned int, int))	\
	X(cuStreamDestroy, (CUstream))					\
	X(cuStreamSynchronize, (CUstream))				\
	X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))	\
	X(cuPointerGetAttribute, (void *, CUpointer_attribute, CUdeviceptr))

/* cuda.h #defines some base names to their _v2 symbols: fetch by string. */
static struct {
#define X(n, args) CUresult (*n) args;
	DRIVER(X)
#undef X
} drv;

static const char *const drv_names[] = {
#define X(n, args) #n,
	DRIVER(X)
#undef X
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaErrorInitializationError;
static int ndevices;
static __thread int cur_dev;
static __thread int ctx_dev = -1;	/* device whose context is current here */

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t,
			   CUdriverProcAddressQueryResult *);

static void rt_init(void)
{
	CUdriverProcAddressQueryResult st;
	void **slot = (void **)&drv;
	gpa_fn gpa;
	void *h;
	size_t i;

	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		init_error = cudaErrorInsufficientDriver;
		return;
	}
	gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!gpa) {
		init_error = cudaErrorInsufficientDriver;
		return;
	}
	for (i = 0; i < sizeof(drv_names) / sizeof(drv_names[0]); i++) {
		if (gpa(drv_names[i], &slot[i], CUDA_VERSION,
			CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS ||
		    !slot[i]) {
			init_error = cudaErrorInsufficientDriver;
			return;
		}
	}
	if (drv.cuInit(0) != CUDA_SUCCESS ||
	    drv.cuDeviceGetCount(&ndevices) != CUDA_SUCCESS || !ndevices) {
		init_error = cudaErrorNoDevice;
		return;
	}
	init_error = cudaSuccess;
}

static cudaError_t to_rt(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS: return cudaSuccess;
	case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
	case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
	case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
	case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
	case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
	case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
	case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
	default: return cudaErrorUnknown;
	}
}

/* Initialize once; make the calling thread's device's context current. */
static cudaError_t ready(void)
{
	CUcontext ctx;
	CUresult r;

	pthread_once(&once, rt_init);
	if (init_error != cudaSuccess)
		return init_error;
	if (ctx_dev == cur_dev)
		return cudaSuccess;
	r = drv.cuDevicePrimaryCtxRetain(&ctx, cur_dev);
	if (r == CUDA_SUCCESS)
		r = drv.cuCtxSetCurrent(ctx);
	if (r != CUDA_SUCCESS)
		return to_rt(r);
	ctx_dev = cur_dev;
	return cudaSuccess;
}

#define READY()							\
	do {							\
		cudaError_t e_ = ready();			\
		if (e_ != cudaSuccess)				\
			return e_;				\
	} while (0)

EXPORT int kvt_double_rt_malloc(void **ptr, size_t size)
{
	CUdeviceptr p;
	CUresult r;

	READY();
	if (!ptr)
		return cudaErrorInvalidValue;
	r = drv.cuMemAlloc(&p, size);
	if (r == CUDA_SUCCESS)
		*ptr = (void *)(uintptr_t)p;
	return to_rt(r);
}

EXPORT int kvt_double_rt_free(void *ptr)
{
	READY();
	if (!ptr)
		return cudaSuccess;
	return to_rt(drv.cuMemFree((uintptr_t)ptr));
}

EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	return (cudaError_t)kvt_double_rt_malloc(devPtr, size);
}

EXPORT cudaError_t cudaFree(void *devPtr)
{
	return (cudaError_t)kvt_double_rt_free(devPtr);
}

EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size,
				     unsigned int flags)
{
	CUdeviceptr p;
	CUresult r;

	READY();
	if (!devPtr)
		return cudaErrorInvalidValue;
	r = drv.cuMemAllocManaged(&p, size, flags);
	if (r == CUDA_SUCCESS)
		*devPtr = (void *)(uintptr_t)p;
	return to_rt(r);
}

EXPORT cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
					  int device)
{
	pthread_once(&once, rt_init);
	if (init_error != cudaSuccess)
		return init_error;
	/* The runtime's attribute numbers are the driver's. */
	return to_rt(drv.cuDeviceGetAttribute(value, (CUdevice_attribute)attr,
					      device));
}

EXPORT cudaError_t cudaGetDevice(int *device)
{
	pthread_once(&once, rt_init);
	if (init_error != cudaSuccess)
		return init_error;
	if (!device)
		return cudaErrorInvalidValue;
	*device = cur_dev;
	return cudaSuccess;
}

EXPORT cudaError_t cudaSetDevice(int device)
{
	pthread_once(&once, rt_init);
	if (init_error != cudaSuccess)
		return init_error;
	if (device < 0 || device >= ndevices)
		return cudaErrorInvalidDevice;
	cur_dev = device;
	return ready();
}

EXPORT const char *cudaGetErrorString(cudaError_t error)
{
	switch (error) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInitializationError: return "initialization error";
	case cudaErrorInsufficientDriver:
		return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorNoDevice: return "no CUDA-capable device is detected";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	case cudaErrorNotSupported: return "operation not supported";
	default: return "unrecognized error code";
	}
}

EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	READY();
	return to_rt(drv.cuMemAllocHost(ptr, size));
}

EXPORT cudaError_t cudaFreeHost(void *ptr)
{
	READY();
	return to_rt(drv.cuMemFreeHost(ptr));
}

EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority,
						    int *greatestPriority)
{
	READY();
	return to_rt(drv.cuCtxGetStreamPriorityRange(leastPriority,
						     greatestPriority));
}

EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream,
						unsigned int flags, int priority)
{
	READY();
	return to_rt(drv.cuStreamCreateWithPriority((CUstream *)pStream, flags,
						    priority));
}

EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	READY();
	return to_rt(drv.cuStreamDestroy((CUstream)stream));
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	READY();
	return to_rt(drv.cuStreamSynchronize((CUstream)stream));
}

/* The memory type of @p as cudaPointerGetAttributes reports it. */
static enum cudaMemoryType mem_type(const void *p, int *dev)
{
	unsigned int type = 0, managed = 0;

	*dev = -1;
	if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				      (uintptr_t)p) != CUDA_SUCCESS)
		return cudaMemoryTypeUnregistered;
	drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
				  (uintptr_t)p);
	drv.cuPointerGetAttribute(dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
				  (uintptr_t)p);
	if (managed)
		return cudaMemoryTypeManaged;
	return type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost :
		cudaMemoryTypeDevice;
}

/*
 * Like the real runtime without HMM: the device side of a host-to-device
 * or device-to-host copy must be memory the driver allocated (device or
 * managed). With pageable memory access (KVT_DOUBLE_PAGEABLE=1) the GPU
 * reaches any host memory, so anything goes.
 */
static int gpu_side_ok(const void *p)
{
	int dev, pageable = 0;
	enum cudaMemoryType t = mem_type(p, &dev);

	if (t == cudaMemoryTypeDevice || t == cudaMemoryTypeManaged)
		return 1;
	drv.cuDeviceGetAttribute(&pageable,
				 CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
				 cur_dev);
	return pageable;
}

EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
				   enum cudaMemcpyKind kind,
				   cudaStream_t stream)
{
	READY();
	switch (kind) {
	case cudaMemcpyHostToDevice:
		if (count && !gpu_side_ok(dst))
			return cudaErrorInvalidValue;
		break;
	case cudaMemcpyDeviceToHost:
		if (count && !gpu_side_ok(src))
			return cudaErrorInvalidValue;
		break;
	case cudaMemcpyDeviceToDevice:
		if (count && (!gpu_side_ok(src) || !gpu_side_ok(dst)))
			return cudaErrorInvalidValue;
		break;
	case cudaMemcpyHostToHost:
	case cudaMemcpyDefault:
		break;
	default:
		return cudaErrorInvalidMemcpyDirection;
	}
	return to_rt(drv.cuMemcpyAsync((uintptr_t)dst, (uintptr_t)src, count,
				       (CUstream)stream));
}

EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
					    const void *ptr)
{
	int dev;

	READY();
	if (!attributes)
		return cudaErrorInvalidValue;
	attributes->type = mem_type(ptr, &dev);
	attributes->device = dev < 0 ? cur_dev : dev;
	attributes->devicePointer = attributes->type ==
		cudaMemoryTypeUnregistered ? NULL : (void *)ptr;
	attributes->hostPointer = attributes->type == cudaMemoryTypeDevice ?
		NULL : (void *)ptr;
	return cudaSuccess;
}
