/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libkvtier-cuda: the one list of hooked names (HAMi-core's single-source
 * pattern). Everything else derives from it: the real-function pointers and
 * their types, the name lookup that dlsym() and cuGetProcAddress() answer
 * from, the export map (Makefile) and the test that compares the library's
 * dynamic symbols with it (tests/cuda-double/check-exports.sh).
 *
 * KVTIER_CUDA_HOOKS(CU, RT) expands CU(ret, name, params, args) for each
 * driver entry point (resolved in libcuda.so.1) and RT(...) for each runtime
 * one (resolved in the libcudart the application loaded). Every name must
 * be a real symbol, not a cuda.h macro: the _v2 forms, the per-thread
 * default stream (_ptsz) forms, and the legacy cuGetProcAddress next to
 * cuGetProcAddress_v2. Besides these the library exports dlsym().
 */
#ifndef KVTIER_CUDA_HOOKS_H
#define KVTIER_CUDA_HOOKS_H

#define KVTIER_CUDA_HOOKS(CU, RT)					\
	CU(CUresult, cuMemAlloc_v2,					\
	   (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize))	\
	CU(CUresult, cuMemAllocAsync,					\
	   (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),	\
	   (dptr, bytesize, hStream))					\
	CU(CUresult, cuMemAllocAsync_ptsz,				\
	   (CUdeviceptr *dptr, size_t bytesize, CUstream hStream),	\
	   (dptr, bytesize, hStream))					\
	CU(CUresult, cuMemAllocFromPoolAsync,				\
	   (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,	\
	    CUstream hStream), (dptr, bytesize, pool, hStream))		\
	CU(CUresult, cuMemAllocFromPoolAsync_ptsz,			\
	   (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,	\
	    CUstream hStream), (dptr, bytesize, pool, hStream))		\
	CU(CUresult, cuMemFree_v2, (CUdeviceptr dptr), (dptr))		\
	CU(CUresult, cuMemFreeAsync,					\
	   (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))	\
	CU(CUresult, cuMemFreeAsync_ptsz,				\
	   (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))	\
	CU(CUresult, cuMemAllocManaged,					\
	   (CUdeviceptr *dptr, size_t bytesize, unsigned int flags),	\
	   (dptr, bytesize, flags))					\
	CU(CUresult, cuMemCreate,					\
	   (CUmemGenericAllocationHandle *handle, size_t size,		\
	    const CUmemAllocationProp *prop, unsigned long long flags),	\
	   (handle, size, prop, flags))					\
	CU(CUresult, cuMemMap,						\
	   (CUdeviceptr ptr, size_t size, size_t offset,		\
	    CUmemGenericAllocationHandle handle, unsigned long long flags), \
	   (ptr, size, offset, handle, flags))				\
	CU(CUresult, cuMemUnmap, (CUdeviceptr ptr, size_t size),	\
	   (ptr, size))							\
	CU(CUresult, cuMemRelease,					\
	   (CUmemGenericAllocationHandle handle), (handle))		\
	CU(CUresult, cuMemGetInfo_v2, (size_t *free, size_t *total),	\
	   (free, total))						\
	CU(CUresult, cuGetProcAddress,					\
	   (const char *symbol, void **pfn, int cudaVersion,		\
	    cuuint64_t flags), (symbol, pfn, cudaVersion, flags))	\
	CU(CUresult, cuGetProcAddress_v2,				\
	   (const char *symbol, void **pfn, int cudaVersion,		\
	    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus), \
	   (symbol, pfn, cudaVersion, flags, symbolStatus))		\
	RT(cudaError_t, cudaMalloc, (void **devPtr, size_t size),	\
	   (devPtr, size))						\
	RT(cudaError_t, cudaFree, (void *devPtr), (devPtr))		\
	RT(cudaError_t, cudaMallocManaged,				\
	   (void **devPtr, size_t size, unsigned int flags),		\
	   (devPtr, size, flags))

#endif /* KVTIER_CUDA_HOOKS_H */
