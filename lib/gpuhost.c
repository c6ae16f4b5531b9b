// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libkvtier: what this host lets a GPU do with a tier, from evidence
 * (kvtier_gpu_host_probe(3)), and the verdict on each placement mode with
 * its reason and what an operator can do about it (kvtier_gpu_mode_check(3)).
 *
 * The facts behind the verdicts:
 * - NVIDIA's UVM driver supports HMM (a GPU reading and writing pageable
 *   memory, such as a tier's mapping) only when the kernel has both
 *   CONFIG_HMM_MIRROR and CONFIG_DEVICE_PRIVATE (UVM_IS_CONFIG_HMM() in the
 *   open modules' uvm_linux.h), and only in the open kernel modules, from
 *   release 535. Debian's 6.1 and 6.12 kernels have HMM_MIRROR=y but not
 *   DEVICE_PRIVATE.
 * - A coherent platform with ATS (Grace Hopper) reaches pageable memory
 *   through the host's page tables instead, without HMM.
 * - Either way CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is the final
 *   word. This library never calls CUDA: the caller reads the attribute
 *   and puts it in the host description.
 * - Managed memory is UVM's: its host copy lives in UVM's own pages, not
 *   in the tier, which can only account it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "internal.h"

#define PROC_CONFIG	"/proc/config.gz"
#define NV_VERSION	"/proc/driver/nvidia/version"
#define UVM_DISABLE_HMM	"/sys/module/nvidia_uvm/parameters/uvm_disable_hmm"
/* The first release of the open kernel modules whose UVM has HMM. */
#define NV_HMM_MAJOR	535

/* Copy @src into @dst of @size bytes, cut to fit. */
static void copy(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* --- the kernel's configuration ------------------------------------- */

struct config_opt {
	const char *name;	/* "CONFIG_X" */
	int *val;
};

/* Note @line's value of each option in @opts; 1 if it is a config line. */
static int config_line(const char *line, struct config_opt *opts, size_t n)
{
	size_t i, len;

	if (strncmp(line, "CONFIG_", 7) && strncmp(line, "# CONFIG_", 9))
		return 0;
	for (i = 0; i < n; i++) {
		len = strlen(opts[i].name);
		if (!strncmp(line, opts[i].name, len) && line[len] == '=')
			*opts[i].val = line[len + 1] == 'y' || line[len + 1] == 'm';
		else if (!strncmp(line, "# ", 2) &&
			 !strncmp(line + 2, opts[i].name, len) &&
			 !strcmp(line + 2 + len, " is not set\n"))
			*opts[i].val = 0;
	}
	return 1;
}

/*
 * zlib is reached through dlopen(): libkvtier needs only libc, and only a
 * compressed configuration needs it. Returns 0, or -errno (-ENODATA: no
 * configuration line in it).
 */
static int config_read_gz(const char *path, struct config_opt *opts, size_t n)
{
	void *(*gzopen_)(const char *, const char *);
	char *(*gzgets_)(void *, char *, int);
	int (*gzclose_)(void *);
	char line[512];
	void *z, *gz;
	int ret = 0, seen = 0;

	z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!z)
		return -ENOSYS;
	gzopen_ = (void *(*)(const char *, const char *))dlsym(z, "gzopen");
	gzgets_ = (char *(*)(void *, char *, int))dlsym(z, "gzgets");
	gzclose_ = (int (*)(void *))dlsym(z, "gzclose");
	if (!gzopen_ || !gzgets_ || !gzclose_) {
		ret = -ENOSYS;
		goto out;
	}
	gz = gzopen_(path, "rb");
	if (!gz) {
		ret = errno ? -errno : -EIO;
		goto out;
	}
	while (gzgets_(gz, line, sizeof(line)))
		seen += config_line(line, opts, n);
	gzclose_(gz);
	if (!seen)
		ret = -ENODATA;
out:
	dlclose(z);
	return ret;
}

/* Read @path (plain or gzip, told by its magic): 0, or -errno. */
static int config_read(const char *path, struct config_opt *opts, size_t n)
{
	char line[512];
	int c0, c1, seen = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	c0 = getc(f);
	c1 = getc(f);
	if (c0 == 0x1f && c1 == 0x8b) {
		fclose(f);
		return config_read_gz(path, opts, n);
	}
	rewind(f);
	while (fgets(line, sizeof(line), f))
		seen += config_line(line, opts, n);
	fclose(f);
	return seen ? 0 : -ENODATA;
}

/* /boot/config-RELEASE, then /proc/config.gz (CONFIG_IKCONFIG_PROC). */
static void probe_config(struct kvtier_gpu_host *h)
{
	struct config_opt opts[] = {
		{ "CONFIG_HMM_MIRROR", &h->hmm_mirror },
		{ "CONFIG_DEVICE_PRIVATE", &h->device_private },
	};
	char boot[sizeof("/boot/config-") + sizeof(h->kernel)];
	const char *paths[] = { boot, PROC_CONFIG };
	size_t i;

	snprintf(boot, sizeof(boot), "/boot/config-%s", h->kernel);
	for (i = 0; i < 2; i++) {
		/* A configuration that was found says unset by leaving it out. */
		h->hmm_mirror = 0;
		h->device_private = 0;
		if (!config_read(paths[i], opts, 2)) {
			copy(h->config_path, sizeof(h->config_path), paths[i]);
			return;
		}
	}
	h->hmm_mirror = -1;
	h->device_private = -1;
	h->config_path[0] = '\0';
}

/* --- the NVIDIA kernel modules --------------------------------------- */

static int exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/*
 * /proc/driver/nvidia/version's first line names the flavour and release:
 *   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ...
 *   NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 ...
 */
static void probe_nvidia(struct kvtier_gpu_host *h)
{
	char line[512], *p, *tok, *save = NULL;
	FILE *f;

	h->nvidia = exists("/sys/module/nvidia") || exists(NV_VERSION);
	h->nvidia_open = -1;
	h->nvidia_version[0] = '\0';
	f = fopen(NV_VERSION, "re");
	if (f) {
		if (fgets(line, sizeof(line), f) && !strncmp(line, "NVRM version:", 13)) {
			h->nvidia_open = strstr(line, "Open Kernel Module") != NULL;
			p = strstr(line, "Kernel Module");
			for (tok = p ? strtok_r(p, " \t\n", &save) : NULL; tok;
			     tok = strtok_r(NULL, " \t\n", &save))
				if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.')) {
					copy(h->nvidia_version,
					     sizeof(h->nvidia_version), tok);
					break;
				}
		}
		fclose(f);
	}
	if (!h->nvidia_version[0]) {
		f = fopen("/sys/module/nvidia/version", "re");
		if (f) {
			if (fgets(line, sizeof(line), f)) {
				line[strcspn(line, "\n")] = '\0';
				copy(h->nvidia_version,
				     sizeof(h->nvidia_version), line);
			}
			fclose(f);
		}
	}
	h->uvm = exists("/sys/module/nvidia_uvm");
	h->uvm_hmm_disabled = -1;
	f = fopen(UVM_DISABLE_HMM, "re");
	if (f) {
		if (fgets(line, sizeof(line), f))
			h->uvm_hmm_disabled = line[0] == 'Y' || line[0] == 'y' ||
					      line[0] == '1';
		fclose(f);
	}
}

KVTIER_EXPORT int kvtier_gpu_host_probe(unsigned int id,
					struct kvtier_gpu_host *host)
{
	char backing[PATH_MAX];
	struct utsname u;
	int ret;

	if (!host)
		return -EINVAL;
	memset(host, 0, sizeof(*host));
	if (uname(&u))
		return -errno;
	copy(host->kernel, sizeof(host->kernel), u.release);
	copy(host->machine, sizeof(host->machine), u.machine);
	probe_config(host);
	probe_nvidia(host);
	host->tier_id = id;
	/* backing_dev is the path as written: any length; cut to fit. */
	ret = kvtier_tier_attr_get(id, "backing_dev", backing, sizeof(backing));
	copy(host->tier_device, sizeof(host->tier_device), backing);
	if (ret == -ENOENT)
		host->tier = -1;
	else
		host->tier = ret || strcmp(backing, "none") != 0;
	host->pageable = -1;
	host->host_page_tables = -1;
	return 0;
}

/* --- the verdicts ----------------------------------------------------- */

__attribute__((format(printf, 4, 5)))
static int say(int verdict, char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return verdict;
}

/* Why tier @h->tier_id cannot hold KV and what to do, or NULL if it can. */
static const char *tier_blocker(const struct kvtier_gpu_host *h, char *buf,
				size_t len)
{
	if (h->tier == 1)
		return NULL;
	if (h->tier < 0)
		snprintf(buf, len, "there is no tier %u (the kvtier module is not loaded, or has fewer tiers); load kvtier and attach a namespace (kvtierctl attach %u DEVICE)",
			 h->tier_id, h->tier_id);
	else
		snprintf(buf, len, "tier %u has no namespace attached; attach one (kvtierctl attach %u DEVICE)",
			 h->tier_id, h->tier_id);
	return buf;
}

static unsigned int nv_major(const struct kvtier_gpu_host *h)
{
	return (unsigned int)strtoul(h->nvidia_version, NULL, 10);
}

#define OFFLOAD_HINT	"use an engine-driven offload through libkvtier (kvtier_xfer_create(3))"

/*
 * What in the kernel or the NVIDIA driver rules HMM out, with what to do,
 * into @buf; NULL when nothing known does.
 */
static const char *hmm_blocker(const struct kvtier_gpu_host *h, char *buf,
			       size_t len)
{
	/* ATS on a coherent (aarch64) platform needs neither option. */
	int ats_platform = !strcmp(h->machine, "aarch64");

	if (!ats_platform && !h->device_private)
		snprintf(buf, len, "kernel %s built without CONFIG_DEVICE_PRIVATE (%s), which UVM's HMM needs; " OFFLOAD_HINT " or a kernel with it",
			 h->kernel, h->config_path);
	else if (!ats_platform && !h->hmm_mirror)
		snprintf(buf, len, "kernel %s built without CONFIG_HMM_MIRROR (%s), which UVM's HMM needs; " OFFLOAD_HINT " or a kernel with it",
			 h->kernel, h->config_path);
	else if (!h->nvidia)
		snprintf(buf, len, "no NVIDIA kernel module is loaded; install the NVIDIA open kernel modules, %d or newer",
			 NV_HMM_MAJOR);
	else if (h->nvidia_open == 0)
		snprintf(buf, len, "the NVIDIA kernel module is the proprietary one (%s), and UVM has HMM only in the open kernel modules; install the open modules, %d or newer",
			 *h->nvidia_version ? h->nvidia_version : "version unknown",
			 NV_HMM_MAJOR);
	else if (*h->nvidia_version && nv_major(h) < NV_HMM_MAJOR)
		snprintf(buf, len, "NVIDIA driver %s is older than %d, the first whose UVM has HMM; install %d or newer (open kernel modules)",
			 h->nvidia_version, NV_HMM_MAJOR, NV_HMM_MAJOR);
	else if (!h->uvm)
		snprintf(buf, len, "nvidia_uvm is not loaded; load it (modprobe nvidia-uvm)");
	else if (h->uvm_hmm_disabled == 1)
		snprintf(buf, len, "nvidia_uvm was loaded with uvm_disable_hmm=1; reload it without");
	else
		return NULL;
	return buf;
}

static int check_hmm(const struct kvtier_gpu_host *h, char *why, size_t len)
{
	char tb[256], hb[512];
	const char *tier = tier_blocker(h, tb, sizeof(tb));
	const char *host;
	int ats = h->host_page_tables == 1;

	if (h->pageable == 1) {
		if (tier)
			return say(KVTIER_GPU_NO, why, len, "hmm unavailable: the device reaches pageable memory %s, but %s",
				   ats ? "through the host's page tables (ATS)" : "through HMM", tier);
		return say(KVTIER_GPU_YES, why, len, "hmm available: the device reaches pageable memory %s; allocations are mappings of tier %u, whose pool and namespace hold the KV",
			   ats ? "through the host's page tables (ATS: a coherent platform, no HMM needed)" :
			   "through HMM", h->tier_id);
	}
	/* A coherent platform does not need HMM: only the device can say. */
	host = hmm_blocker(h, hb, sizeof(hb));
	if (host)
		return say(KVTIER_GPU_NO, why, len, "hmm unavailable: %s%s",
			   h->pageable == 0 ? "the device reports no pageable memory access: " : "",
			   host);
	if (h->pageable == 0)
		return say(KVTIER_GPU_NO, why, len, "hmm unavailable: the device reports no pageable memory access%s; see nvidia_uvm's messages in the kernel log, or " OFFLOAD_HINT,
			   h->hmm_mirror == 1 && h->device_private == 1 ?
			   " though the kernel and driver allow HMM" : "");
	if (tier)
		return say(KVTIER_GPU_NO, why, len, "hmm unavailable: %s", tier);
	return say(KVTIER_GPU_MAYBE, why, len, "hmm possible: %s; the device's pageable memory access attribute decides (no CUDA device was asked)",
		   !strcmp(h->machine, "aarch64") ?
		   "an aarch64 host may be a coherent platform with ATS (Grace Hopper), which needs no HMM" :
		   h->hmm_mirror < 0 ? "the kernel's configuration was not found (/boot/config-RELEASE, " PROC_CONFIG ")" :
		   "the kernel and the NVIDIA driver allow HMM");
}

static int check_managed(const struct kvtier_gpu_host *h, char *why, size_t len)
{
	char tb[256];
	const char *tier = tier_blocker(h, tb, sizeof(tb));

	/* A device that answered has a driver, whatever /sys shows. */
	if (!h->nvidia && h->pageable < 0)
		return say(KVTIER_GPU_NO, why, len, "managed unavailable: no NVIDIA kernel module is loaded; install and load the NVIDIA driver");
	if (h->nvidia && !h->uvm)
		return say(KVTIER_GPU_NO, why, len, "managed unavailable: nvidia_uvm, which managed memory needs, is not loaded; load it (modprobe nvidia-uvm)");
	if (tier)
		return say(KVTIER_GPU_YES, why, len, "managed available: allocations become CUDA managed memory, whose host copy is UVM's own memory, not kvtier's; no tier accounts it either, as %s",
			   tier);
	return say(KVTIER_GPU_YES, why, len, "managed available: allocations become CUDA managed memory, whose host copy is UVM's own memory, not kvtier's: tier %u only accounts it (registered ranges)",
		   h->tier_id);
}

static int check_offload(const struct kvtier_gpu_host *h, char *why, size_t len)
{
	char tb[256];
	const char *tier = tier_blocker(h, tb, sizeof(tb));

	if (tier)
		return say(KVTIER_GPU_NO, why, len, "offload unavailable: %s", tier);
	return say(KVTIER_GPU_YES, why, len, "offload available: the engine stores and restores KV blocks on tier %u through libkvtier (kvtier_xfer_create(3)); the bytes are the tier's, in its pool and on its namespace",
		   h->tier_id);
}

KVTIER_EXPORT int kvtier_gpu_mode_check(const struct kvtier_gpu_host *host,
					int mode, char *why, size_t len)
{
	if (!host || (len && !why))
		return -EINVAL;
	switch (mode) {
	case KVTIER_GPU_MODE_HMM:
		return check_hmm(host, why, len);
	case KVTIER_GPU_MODE_MANAGED:
		return check_managed(host, why, len);
	case KVTIER_GPU_MODE_OFFLOAD:
		return check_offload(host, why, len);
	}
	return -EINVAL;
}
