// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: NVMe identify through libnvme (Identify Controller and
 * Identify Namespace, sent as admin passthrough on the namespace's block
 * device, which needs CAP_SYS_ADMIN).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <libnvme.h>

#include "ctl.h"

/* An identify string: fixed width, space padded, not NUL terminated. */
static void id_string(char *dst, size_t dstlen, const char *src, size_t len)
{
	while (len && (src[len - 1] == ' ' || src[len - 1] == '\0'))
		len--;
	if (len >= dstlen)
		len = dstlen - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* libnvme: 0, an NVMe status (> 0), or -1 with errno. */
static int nvme_err(int ret)
{
	if (ret < 0)
		return errno ? -errno : -EIO;
	return ret ? -EIO : 0;
}

static int identify_fd(int fd, struct kvt_nvme_id *id)
{
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns ns;
	__u8 lbaf;
	int ret;

	errno = 0;
	if (nvme_get_nsid(fd, &id->nsid))
		return errno == ENOTTY || errno == EINVAL || !errno ? -ENOTTY : -errno;
	ret = nvme_err(nvme_identify_ctrl(fd, &ctrl));
	if (ret)
		return ret;
	ret = nvme_err(nvme_identify_ns(fd, id->nsid, &ns));
	if (ret)
		return ret;
	id_string(id->model, sizeof(id->model), ctrl.mn, sizeof(ctrl.mn));
	id_string(id->serial, sizeof(id->serial), ctrl.sn, sizeof(ctrl.sn));
	id_string(id->firmware, sizeof(id->firmware), ctrl.fr, sizeof(ctrl.fr));
	nvme_id_ns_flbas_to_lbaf_inuse(ns.flbas, &lbaf);
	if (lbaf >= 64)
		return -EPROTO;
	id->lbaf = lbaf;
	/* LBA data size is 2^ds bytes; ds below 9 is not in use. */
	id->lba_bytes = ns.lbaf[lbaf].ds >= 9 && ns.lbaf[lbaf].ds < 32 ?
			1U << ns.lbaf[lbaf].ds : 0;
	id->meta_bytes = le16toh(ns.lbaf[lbaf].ms);
	id->nsze_blocks = le64toh(ns.nsze);
	return 0;
}

int kvt_nvme_identify(const char *path, struct kvt_nvme_id *id)
{
	int fd, ret;

	memset(id, 0, sizeof(*id));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = identify_fd(fd, id);
	close(fd);
	return ret;
}
