// SPDX-License-Identifier: GPL-2.0
/*
 * crcspeed - how fast this CPU (or this emulator) computes CRC32C, the
 * page checksum of kvtier, by the two methods the kernel has: the table
 * ("slice-by-8", what __crc32c_le() and crc32c-generic run) and the SSE4.2
 * crc32 instruction (what crc32c-intel runs, there in three interleaved
 * streams combined by PCLMULQDQ; here one stream). Both must give the same
 * value. Under QEMU's TCG the instruction is emulated by a helper call,
 * the table by plain loads and XORs, which is why the module's crypto API
 * CRC is slower than the library's in the benchmark VM and faster on
 * hardware (Documentation/performance.rst).
 *
 * usage: crcspeed [MiB]   (default 256); prints one line per method:
 *   crc32c table 1.234 GB/s value 0x...
 * Exits 1 when the methods disagree.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

static uint32_t table[8][256];

static void table_init(void)
{
	uint32_t c;
	int i, j;

	for (i = 0; i < 256; i++) {
		c = (uint32_t)i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78U : c >> 1;
		table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			table[j][i] = (table[j - 1][i] >> 8) ^
				      table[0][table[j - 1][i] & 0xff];
}

/* Slice-by-8, as lib/crc32.c: 8 bytes per step, 8 table lookups. */
static uint32_t crc_table(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len >= 8) {
		uint32_t a, b;

		memcpy(&a, p, 4);
		memcpy(&b, p + 4, 4);
		a ^= crc;
		crc = table[7][a & 0xff] ^ table[6][(a >> 8) & 0xff] ^
		      table[5][(a >> 16) & 0xff] ^ table[4][a >> 24] ^
		      table[3][b & 0xff] ^ table[2][(b >> 8) & 0xff] ^
		      table[1][(b >> 16) & 0xff] ^ table[0][b >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return (uint32_t)c;
}

static int have_sse42(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
#endif

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CRC of @mib MiB (the buffer again and again, 4 KiB pages as kvtier). */
static uint32_t run(const char *name,
		    uint32_t (*fn)(uint32_t, const unsigned char *, size_t),
		    const unsigned char *buf, size_t len, unsigned long mib)
{
	unsigned long done = 0, n = mib * (1UL << 20) / len;
	uint32_t v = 0;
	double t = now();
	size_t off;

	for (; done < n; done++)
		for (off = 0; off < len; off += 4096)
			v = v * 0x9e3779b1U + fn(0xffffffffU, buf + off, 4096);
	t = now() - t;
	printf("crc32c %-6s %.3f GB/s value 0x%08x\n", name,
	       (double)mib * (1 << 20) / t / 1e9, v);
	return v;
}

int main(int argc, char **argv)
{
	unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
	size_t len = 1 << 20, i;
	unsigned char *buf = malloc(len);
	uint32_t a;

	if (!buf || !mib) {
		fprintf(stderr, "usage: crcspeed [MiB]\n");
		return 2;
	}
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 2654435761U >> 13);
	table_init();
	/* The kernel's check value: no final inversion (kvtier-format.rst). */
	if (crc_table(0xffffffffU, (const unsigned char *)"123456789", 9) !=
	    0x1cf96d7cU) {
		fprintf(stderr, "crcspeed: table CRC gives the wrong check value\n");
		return 1;
	}
	a = run("table", crc_table, buf, len, mib);
#if defined(__x86_64__)
	if (have_sse42() && run("sse4.2", crc_sse42, buf, len, mib) != a) {
		fprintf(stderr, "crcspeed: the methods disagree\n");
		return 1;
	}
#endif
	return 0;
}
