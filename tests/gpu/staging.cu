// SPDX-License-Identifier: GPL-2.0
/*
 * tests/gpu/run.sh's staging ceiling: device <-> pinned host bandwidth with
 * cudaMemcpyAsync on a lowest-priority stream, in the chunk size libkvtier's
 * block offload uses (8 MiB default), over --mib MiB. This is the copy half
 * of kvtier_xfer_store/restore with KVTIER_XFER_CUDA; the tier half needs
 * the module (run.sh measures it when /dev/kvtier0 exists).
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoull(argv[1], NULL, 0) : 1024;
	size_t chunk = 8 << 20, total = mib << 20, off;
	int lo, hi, count = 0;
	cudaStream_t s;
	void *d, *h[2];

	if (cudaGetDeviceCount(&count) != cudaSuccess || !count) {
		printf("gpu none\n");
		return 4;
	}
	if (cudaMalloc(&d, total) || cudaMallocHost(&h[0], chunk) ||
	    cudaMallocHost(&h[1], chunk) ||
	    cudaDeviceGetStreamPriorityRange(&lo, &hi) ||
	    cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, lo)) {
		printf("error setting up: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	for (int dir = 0; dir < 2; dir++) {
		auto t0 = std::chrono::steady_clock::now();

		for (off = 0; off < total; off += chunk) {
			void *hb = h[(off / chunk) & 1];

			if (dir == 0)
				cudaMemcpyAsync(hb, (char *)d + off, chunk,
						cudaMemcpyDeviceToHost, s);
			else
				cudaMemcpyAsync((char *)d + off, hb, chunk,
						cudaMemcpyHostToDevice, s);
		}
		if (cudaStreamSynchronize(s)) {
			printf("error: %s\n", cudaGetErrorString(cudaGetLastError()));
			return 1;
		}
		double sec = std::chrono::duration<double>(
			std::chrono::steady_clock::now() - t0).count();
		printf("%s_pinned_GBps %.2f\n", dir == 0 ? "d2h" : "h2d",
		       total / sec / 1e9);
	}
	return 0;
}
