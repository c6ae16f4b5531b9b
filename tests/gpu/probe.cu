// SPDX-License-Identifier: GPL-2.0
/*
 * tests/gpu/run.sh's probe: what the GPU allows, and whether an allocation
 * the shim may place (cudaMalloc of --mib MiB) works end to end: a GPU
 * kernel writes a pattern through the pointer, the CPU reads it back (from
 * the pointer itself when the GPU can address pageable memory, else with
 * cudaMemcpy), and a second kernel checks what the CPU wrote. Prints one
 * "key value" line per fact; exits 0 when the bytes round-trip, 1 if not,
 * 4 when there is no GPU.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include <vector>

#define CHECK(call)                                                        \
	do {                                                               \
		cudaError_t e_ = (call);                                   \
		if (e_ != cudaSuccess) {                                   \
			printf("error %s: %s\n", #call, cudaGetErrorString(e_)); \
			return 1;                                          \
		}                                                          \
	} while (0)

__global__ void fill(unsigned long long *p, size_t n, unsigned long long seed)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = (i * 0x9e3779b97f4a7c15ULL) ^ seed;
}

__global__ void verify(const unsigned long long *p, size_t n,
		       unsigned long long seed, unsigned long long *bad)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		if (p[i] != ((i * 0x9e3779b97f4a7c15ULL) ^ seed))
			atomicAdd(bad, 1ULL);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 256;
	size_t n = mib * 1024 * 1024 / 8, i, wrong = 0;
	unsigned long long *d, *bad, nbad = 0;
	cudaPointerAttributes attr;
	int dev = 0, pageable = 0, count = 0;
	cudaDeviceProp prop;

	if (cudaGetDeviceCount(&count) != cudaSuccess || !count) {
		printf("gpu none\n");
		return 4;
	}
	CHECK(cudaGetDeviceProperties(&prop, dev));
	CHECK(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, dev));
	printf("gpu %s\n", prop.name);
	printf("pageable_memory_access %d\n", pageable);

	CHECK(cudaMalloc(&d, mib << 20));
	CHECK(cudaPointerGetAttributes(&attr, d));
	/* device: HBM (unplaced); managed: the shim's managed mode; host:
	 * unregistered host memory (a tier mapping in hmm mode). */
	printf("pointer_type %s\n", attr.type == cudaMemoryTypeDevice ? "device" :
	       attr.type == cudaMemoryTypeManaged ? "managed" :
	       attr.type == cudaMemoryTypeHost ? "host" : "unregistered");
	fill<<<1024, 256>>>(d, n, 0x5eedULL);
	CHECK(cudaGetLastError());
	CHECK(cudaDeviceSynchronize());

	std::vector<unsigned long long> h(n);
	if (attr.type != cudaMemoryTypeDevice && (pageable || attr.type == cudaMemoryTypeManaged))
		memcpy(h.data(), d, mib << 20);		/* the CPU reads the pointer */
	else
		CHECK(cudaMemcpy(h.data(), d, mib << 20, cudaMemcpyDeviceToHost));
	for (i = 0; i < n; i++)
		wrong += h[i] != ((i * 0x9e3779b97f4a7c15ULL) ^ 0x5eedULL);
	printf("gpu_to_cpu_wrong_words %zu\n", wrong);

	for (i = 0; i < n; i++)
		h[i] = (i * 0x9e3779b97f4a7c15ULL) ^ 0xbeefULL;
	CHECK(cudaMemcpy(d, h.data(), mib << 20, cudaMemcpyHostToDevice));
	CHECK(cudaMalloc(&bad, sizeof(*bad)));
	CHECK(cudaMemset(bad, 0, sizeof(*bad)));
	verify<<<1024, 256>>>(d, n, 0xbeefULL, bad);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(&nbad, bad, sizeof(nbad), cudaMemcpyDeviceToHost));
	printf("cpu_to_gpu_wrong_words %llu\n", nbad);
	CHECK(cudaFree(bad));
	CHECK(cudaFree(d));
	printf("round_trip %s\n", wrong || nbad ? "FAIL" : "ok");
	return wrong || nbad ? 1 : 0;
}
