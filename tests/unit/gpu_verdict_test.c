// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier_gpu_mode_check(3) on described hosts, one per platform row of
 * Documentation/admin-guide/kvtier-cuda.rst and each reason it can give.
 * Probing real files is checked by tools/testdata/check.sh (fixtures) and
 * in the VM (kvtier_cuda_test gpu_report); this is the decision alone.
 */
#include <errno.h>
#include <string.h>

#include "kselftest_harness.h"
#include "kvtier.h"

/* Debian 6.1 / 6.12 on x86: HMM_MIRROR=y, no DEVICE_PRIVATE. */
static void debian(struct kvtier_gpu_host *h)
{
	memset(h, 0, sizeof(*h));
	strcpy(h->kernel, "6.12.117+deb12-amd64");
	strcpy(h->machine, "x86_64");
	strcpy(h->config_path, "/boot/config-6.12.117+deb12-amd64");
	h->hmm_mirror = 1;
	h->device_private = 0;
	h->nvidia = 1;
	h->nvidia_open = 1;
	strcpy(h->nvidia_version, "550.54.15");
	h->uvm = 1;
	h->uvm_hmm_disabled = 0;
	h->tier = 1;
	strcpy(h->tier_device, "/dev/nvme0n1");
	h->pageable = -1;
	h->host_page_tables = -1;
}

/* The verdict on @mode, and @text in its reason. */
static int verdict(const struct kvtier_gpu_host *h, int mode, const char *text)
{
	char why[1024];
	int v = kvtier_gpu_mode_check(h, mode, why, sizeof(why));

	if (!strstr(why, text)) {
		fprintf(stderr, "# no '%s' in: %s\n", text, why);
		return -100;
	}
	return v;
}

TEST(debian_pcie)
{
	struct kvtier_gpu_host h;

	debian(&h);
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "hmm unavailable: kernel 6.12.117+deb12-amd64 built without CONFIG_DEVICE_PRIVATE (/boot/config-6.12.117+deb12-amd64), which UVM's HMM needs; use an engine-driven offload through libkvtier (kvtier_xfer_create(3)) or a kernel with it"));
	h.pageable = 0;		/* what the H200 run reported */
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "hmm unavailable: the device reports no pageable memory access: kernel 6.12.117+deb12-amd64 built without CONFIG_DEVICE_PRIVATE"));
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_MANAGED,
		  "whose host copy is UVM's own memory, not kvtier's: tier 0 only accounts it"));
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_OFFLOAD,
		  "offload available: the engine stores and restores KV blocks on tier 0"));
}

TEST(device_private_kernel)
{
	struct kvtier_gpu_host h;

	debian(&h);
	h.device_private = 1;
	ASSERT_EQ(KVTIER_GPU_MAYBE, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "hmm possible: the kernel and the NVIDIA driver allow HMM; the device's pageable memory access attribute decides"));
	h.pageable = 1;
	h.host_page_tables = 0;
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "hmm available: the device reaches pageable memory through HMM; allocations are mappings of tier 0"));
	h.pageable = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "the device reports no pageable memory access though the kernel and driver allow HMM; see nvidia_uvm's messages"));
}

TEST(grace_hopper_ats)
{
	struct kvtier_gpu_host h;

	debian(&h);
	strcpy(h.machine, "aarch64");
	/* No HMM in the kernel does not rule out ATS: only the device can say. */
	ASSERT_EQ(KVTIER_GPU_MAYBE, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "an aarch64 host may be a coherent platform with ATS"));
	/* Only the kernel options are excused there, not the driver. */
	h.uvm = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "nvidia_uvm is not loaded"));
	h.uvm = 1;
	h.pageable = 1;
	h.host_page_tables = 1;
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "through the host's page tables (ATS: a coherent platform, no HMM needed)"));
	h.tier = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "hmm unavailable: the device reaches pageable memory through the host's page tables (ATS), but tier 0 has no namespace attached"));
}

TEST(driver_reasons)
{
	struct kvtier_gpu_host h;

	debian(&h);
	h.device_private = 1;
	h.hmm_mirror = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "built without CONFIG_HMM_MIRROR"));
	h.hmm_mirror = 1;
	h.nvidia_open = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "is the proprietary one (550.54.15)"));
	h.nvidia_open = -1;		/* unknown is not a reason */
	ASSERT_EQ(KVTIER_GPU_MAYBE, verdict(&h, KVTIER_GPU_MODE_HMM, "allow HMM"));
	strcpy(h.nvidia_version, "530.30.02");
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "530.30.02 is older than 535"));
	strcpy(h.nvidia_version, "535.54.03");
	ASSERT_EQ(KVTIER_GPU_MAYBE, verdict(&h, KVTIER_GPU_MODE_HMM, "allow HMM"));
	h.uvm_hmm_disabled = 1;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "uvm_disable_hmm=1"));
	h.uvm = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "nvidia_uvm is not loaded"));
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_MANAGED, "nvidia_uvm, which managed memory needs"));
	h.nvidia = 0;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "no NVIDIA kernel module is loaded"));
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_MANAGED, "no NVIDIA kernel module is loaded"));
	/* A device that answered has a driver (a container, a test double). */
	h.pageable = 0;
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_MANAGED, "not kvtier's"));
}

TEST(unknown_config_and_tier)
{
	struct kvtier_gpu_host h;

	debian(&h);
	h.hmm_mirror = -1;
	h.device_private = -1;
	h.config_path[0] = '\0';
	ASSERT_EQ(KVTIER_GPU_MAYBE, verdict(&h, KVTIER_GPU_MODE_HMM,
		  "the kernel's configuration was not found"));
	h.tier = -1;
	h.tier_id = 5;
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_HMM, "there is no tier 5"));
	ASSERT_EQ(KVTIER_GPU_NO, verdict(&h, KVTIER_GPU_MODE_OFFLOAD,
		  "offload unavailable: there is no tier 5 (the kvtier module is not loaded, or has fewer tiers); load kvtier and attach a namespace (kvtierctl attach 5 DEVICE)"));
	ASSERT_EQ(KVTIER_GPU_YES, verdict(&h, KVTIER_GPU_MODE_MANAGED, "no tier accounts it either"));
}

TEST(bad_arguments)
{
	struct kvtier_gpu_host h;
	char why[64] = "untouched";

	debian(&h);
	ASSERT_EQ(-EINVAL, kvtier_gpu_mode_check(NULL, KVTIER_GPU_MODE_HMM, why, sizeof(why)));
	ASSERT_EQ(-EINVAL, kvtier_gpu_mode_check(&h, 0, why, sizeof(why)));
	ASSERT_EQ(-EINVAL, kvtier_gpu_mode_check(&h, 4, why, sizeof(why)));
	ASSERT_EQ(-EINVAL, kvtier_gpu_mode_check(&h, -1, why, sizeof(why)));
	/* The uapi's registration modes mean the same modes here. */
	ASSERT_EQ(KVTIER_GPU_HMM, KVTIER_GPU_MODE_HMM);
	ASSERT_EQ(KVTIER_GPU_MANAGED, KVTIER_GPU_MODE_MANAGED);
	ASSERT_EQ(-EINVAL, kvtier_gpu_mode_check(&h, KVTIER_GPU_MODE_HMM, NULL, 8));
	ASSERT_EQ(-EINVAL, kvtier_gpu_host_probe(0, NULL));
	/* No reason wanted: the verdict alone. */
	ASSERT_EQ(KVTIER_GPU_NO, kvtier_gpu_mode_check(&h, KVTIER_GPU_MODE_HMM, NULL, 0));
	/* A short buffer holds the start of the reason, terminated. */
	ASSERT_EQ(KVTIER_GPU_NO, kvtier_gpu_mode_check(&h, KVTIER_GPU_MODE_HMM, why, 16));
	ASSERT_STREQ("hmm unavailable", why);
}

TEST_HARNESS_MAIN
