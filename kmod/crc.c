// SPDX-License-Identifier: GPL-2.0
/*
 * CRC32C of pages and metadata, at the speed the CPU offers.
 *
 * The values are the kernel library's crc32c (seed ~0, final value not
 * inverted: kvtier_format.h), whatever computes them, so the on-disk
 * format does not depend on the implementation. On 6.1 and 6.12 the
 * library's __crc32c_le() is the generic slice-by-8 loop; the SSE4.2 and
 * PCLMULQDQ version (crc32c-intel) and the other architectures' ones are
 * reached only through the crypto API's "crc32c" shash. So at load the
 * module asks the crypto API for the best "crc32c" it has (the softdep
 * below makes modprobe load the drivers first; insmod leaves it to the
 * crypto API's own request_module), checks it against the library on
 * fixed buffers, and uses it for every CRC. Without one it uses the
 * library.
 *
 * The crc32c= parameter names the implementation: empty (the best the
 * crypto API has), a driver name ("crc32c-intel", "crc32c-generic"), or
 * "lib" for the library itself, which is what modules before this file
 * used; it reads back the one in use. A driver named explicitly that
 * cannot be had, or that is not a crc32c, fails the load.
 *
 * The transform is set up before any tier exists and freed after the last
 * is gone, and a shash transform may be used by any number of callers at
 * once (each digest has its descriptor on its caller's stack): no lock.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <crypto/hash.h>
#include <linux/crc32.h>
#include <linux/err.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "kvtier.h"

#define KVT_CRC_LIB	"lib"

/* crc32c= as given at load (empty: the best the crypto API has). */
static char kvtier_crc_want[CRYPTO_MAX_ALG_NAME];
/* The driver in use; NULL: the library. */
static struct crypto_shash *kvtier_crc_tfm;

static int kvtier_crc_param_set(const char *val, const struct kernel_param *kp)
{
	size_t len = strcspn(val, "\n");

	if (len >= sizeof(kvtier_crc_want)) {
		pr_err("crc32c=%s: longer than a crypto driver name\n", val);
		return -EINVAL;
	}
	memcpy(kvtier_crc_want, val, len);
	kvtier_crc_want[len] = '\0';
	return 0;
}

static int kvtier_crc_param_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%s\n", kvtier_crc_tfm ?
			  crypto_shash_driver_name(kvtier_crc_tfm) :
			  kvtier_crc_want[0] ? kvtier_crc_want : KVT_CRC_LIB);
}

static const struct kernel_param_ops kvtier_crc_param_ops = {
	.set = kvtier_crc_param_set,
	.get = kvtier_crc_param_get,
};

module_param_cb(crc32c, &kvtier_crc_param_ops, NULL, 0444);
MODULE_PARM_DESC(crc32c,
		 "CRC32C implementation: empty for the fastest the crypto API has (default), a crypto driver name (crc32c-intel, crc32c-generic), or lib for the kernel's generic library; reads back the one in use");
MODULE_SOFTDEP("pre: crc32c");

static u32 kvtier_crc_lib(const void *p, size_t len)
{
	return __crc32c_le(~0U, p, len);
}

/*
 * Longer buffers (a checkpoint is megabytes) go to the driver in pieces:
 * the SIMD drivers keep preemption off for each piece they are given.
 */
#define KVT_CRC_PIECE	SZ_64K

static int kvtier_crc_pieces(struct crypto_shash *tfm, const u8 *p, size_t len,
			     __le32 *out)
{
	SHASH_DESC_ON_STACK(desc, tfm);
	int ret;

	desc->tfm = tfm;
	ret = crypto_shash_init(desc);
	while (!ret && len) {
		size_t n = min_t(size_t, len, KVT_CRC_PIECE);

		ret = crypto_shash_update(desc, p, n);
		p += n;
		len -= n;
	}
	if (!ret)
		ret = crypto_shash_final(desc, (u8 *)out);
	shash_desc_zero(desc);
	return ret;
}

/* A crc32c shash seeds with ~0 and stores the inverted value, little-endian. */
static int kvtier_crc_shash(struct crypto_shash *tfm, const void *p,
			    size_t len, u32 *crc)
{
	__le32 out;
	int ret;

	if (len <= KVT_CRC_PIECE)
		ret = crypto_shash_tfm_digest(tfm, p, len, (u8 *)&out);
	else
		ret = kvtier_crc_pieces(tfm, p, len, &out);
	if (!ret)
		*crc = ~le32_to_cpu(out);
	return ret;
}

/**
 * kvtier_crc32c() - the CRC32C of @len bytes at @p, as kvtier_format.h
 * defines it (seed ~0, not inverted at the end)
 * @p: the bytes
 * @len: their number
 *
 * Any context (the crypto drivers fall back to their scalar code where
 * SIMD is unusable).
 */
u32 kvtier_crc32c(const void *p, size_t len)
{
	u32 crc;

	/*
	 * A crc32c digest cannot fail (no key, no allocation); were it to,
	 * the library gives the same value, so nothing is lost.
	 */
	if (!kvtier_crc_tfm ||
	    unlikely(kvtier_crc_shash(kvtier_crc_tfm, p, len, &crc)))
		return kvtier_crc_lib(p, len);
	return crc;
}

/**
 * kvtier_crc32c_cat() - the CRC32C of A followed by B, from theirs
 * @crc_a: kvtier_crc32c() of A
 * @crc_b: kvtier_crc32c() of B
 * @len_b: bytes of B
 *
 * So a stream written in pieces out of order (a checkpoint's page records
 * before the region records that precede them) gets the CRC of its bytes
 * in order. The library's register is linear: the CRC of B from a seed s
 * is the CRC of B from 0 xor s shifted over @len_b zero bytes, and
 * kvtier_crc32c() seeds with ~0 (@crc_a ^ ~0 moves A's register from one
 * seed to the other). The CRC of nothing is ~0: cat(~0, b, len) is b.
 */
u32 kvtier_crc32c_cat(u32 crc_a, u32 crc_b, size_t len_b)
{
	return __crc32c_le_shift(crc_a ^ ~0U, len_b) ^ crc_b;
}

/*
 * The driver must give the library's values: on lengths around the
 * drivers' block and SIMD thresholds, odd addresses included, over a
 * pattern that is not periodic in any of them.
 */
static int kvtier_crc_selftest(struct crypto_shash *tfm)
{
	static const size_t lens[] = { 0, 1, 3, 8, 63, 64, 255, 256, 511,
				       512, 1000, 1024, 4095, PAGE_SIZE,
				       KVT_CRC_PIECE + 5 };
	unsigned int i, off;
	u32 x = 0x9e3779b9, crc;
	u8 *buf;
	int ret = 0;

	buf = kvmalloc(KVT_CRC_PIECE + 8, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < KVT_CRC_PIECE + 8; i++) {
		x = x * 1664525 + 1013904223;
		buf[i] = x >> 24;
	}
	for (off = 0; off < 2 && !ret; off++) {
		for (i = 0; i < ARRAY_SIZE(lens) && !ret; i++) {
			ret = kvtier_crc_shash(tfm, buf + off, lens[i], &crc);
			if (!ret && crc != kvtier_crc_lib(buf + off, lens[i]))
				ret = -EBADMSG;
		}
	}
	kvfree(buf);
	return ret;
}

static int kvtier_crc_get(const char *name, struct crypto_shash **tfmp)
{
	struct crypto_shash *tfm = crypto_alloc_shash(name, 0, 0);
	int ret;

	if (IS_ERR(tfm))
		return PTR_ERR(tfm);
	ret = -EINVAL;
	if (strcmp(crypto_shash_alg_name(tfm), "crc32c") ||
	    crypto_shash_digestsize(tfm) != 4)
		goto err;
	ret = kvtier_crc_selftest(tfm);
	if (ret)
		goto err;
	*tfmp = tfm;
	return 0;
err:
	crypto_free_shash(tfm);
	return ret;
}

/**
 * kvtier_crc_module_init() - choose the CRC32C implementation (crc32c=)
 *
 * Return: 0, or -errno when crc32c= names a driver that cannot be had
 * (-ENOENT), is not a crc32c or gives other values (-EINVAL).
 */
int kvtier_crc_module_init(void)
{
	static const u8 abc[] = "kvtier: a checkpoint's bytes, in two pieces";
	const char *want = kvtier_crc_want;
	size_t len = sizeof(abc), k;
	int ret;

	/* kvtier_crc32c_cat() against the library, at every split. */
	for (k = 0; k <= len; k++) {
		if (kvtier_crc32c_cat(kvtier_crc_lib(abc, k),
				      kvtier_crc_lib(abc + k, len - k), len - k) !=
		    kvtier_crc_lib(abc, len)) {
			pr_err("crc32c: the library's shift does not concatenate CRCs\n");
			return -EINVAL;
		}
	}
	if (!strcmp(want, KVT_CRC_LIB))
		return 0;
	ret = kvtier_crc_get(want[0] ? want : "crc32c", &kvtier_crc_tfm);
	if (!ret) {
		pr_info("crc32c by %s\n", crypto_shash_driver_name(kvtier_crc_tfm));
		return 0;
	}
	if (want[0]) {
		pr_err("crc32c=%s: %s (%d)\n", want,
		       ret == -ENOENT ? "no such crypto driver" :
		       ret == -EBADMSG ? "its values differ from the library's" :
		       "not a crc32c driver", ret);
		return ret == -EBADMSG ? -EINVAL : ret;
	}
	if (ret == -EBADMSG)
		pr_err("crc32c by the generic library: the crypto API's crc32c gives other values\n");
	else
		pr_info("crc32c by the generic library: the crypto API has no usable crc32c (%d)\n",
			ret);
	return 0;
}

void kvtier_crc_module_exit(void)
{
	if (kvtier_crc_tfm)
		crypto_free_shash(kvtier_crc_tfm);
	kvtier_crc_tfm = NULL;
}
