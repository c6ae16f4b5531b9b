// SPDX-License-Identifier: GPL-2.0
/*
 * kvtierctl: NVMe identify through libnvme (Identify Controller and
 * Identify Namespace, sent as admin passthrough on the namespace's block
 * device, which needs CAP_SYS_ADMIN), and the namespace's place in the
 * NVMe topology (subsystem, controllers, transports: libnvme's sysfs scan).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
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

/* @dst = @src, truncated; "" for NULL. */
static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void add_path(struct kvt_nvme_topo *t, nvme_ctrl_t c)
{
	struct kvt_nvme_path *p;
	char file[512], buf[16];
	const char *dir = nvme_ctrl_get_sysfs_dir(c);
	ssize_t n;
	int fd;

	if (t->npaths >= KVT_NVME_MAX_PATHS) {
		t->more_paths = true;
		return;
	}
	p = &t->path[t->npaths++];
	copy_str(p->ctrl, sizeof(p->ctrl), nvme_ctrl_get_name(c));
	copy_str(p->transport, sizeof(p->transport), nvme_ctrl_get_transport(c));
	copy_str(p->address, sizeof(p->address), nvme_ctrl_get_address(c));
	copy_str(p->state, sizeof(p->state), nvme_ctrl_get_state(c));
	/* Fabrics only: seconds, or "off" (reconnect forever). */
	p->ctrl_loss_tmo[0] = '\0';
	if (!dir)
		return;
	snprintf(file, sizeof(file), "%s/ctrl_loss_tmo", dir);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	copy_str(p->ctrl_loss_tmo, sizeof(p->ctrl_loss_tmo), buf);
}

/* libnvme's scan of sysfs, or NULL with -errno in *@err. */
static nvme_root_t topology_scan(int *err)
{
	/* Errors only: a missing /etc/nvme/hostnqn is no concern here. */
	nvme_root_t r = nvme_create_root(stderr, LOG_ERR);

	if (!r) {
		*err = -ENOMEM;
		return NULL;
	}
	if (nvme_scan_topology(r, NULL, NULL) < 0) {
		*err = errno ? -errno : -EIO;
		nvme_free_tree(r);
		return NULL;
	}
	return r;
}

int kvt_nvme_topology(const char *path, struct kvt_nvme_topo *t)
{
	char real[4096];
	const char *name;
	nvme_subsystem_t s;
	nvme_root_t r;
	nvme_host_t h;
	nvme_ctrl_t c;
	nvme_ns_t n;
	int ret = -ENOENT;

	memset(t, 0, sizeof(*t));
	if (!realpath(path, real))
		return -errno;
	name = strrchr(real, '/');
	name = name ? name + 1 : real;
	r = topology_scan(&ret);
	if (!r)
		return ret;
	nvme_for_each_host(r, h) {
		nvme_for_each_subsystem(h, s) {
			/* A multipath head: every controller is a path. */
			nvme_subsystem_for_each_ns(s, n) {
				if (strcmp(nvme_ns_get_name(n), name))
					continue;
				t->multipath = true;
				nvme_subsystem_for_each_ctrl(s, c)
					add_path(t, c);
				goto found;
			}
			/* Without native multipath: one controller's namespace. */
			nvme_subsystem_for_each_ctrl(s, c) {
				nvme_ctrl_for_each_ns(c, n) {
					if (strcmp(nvme_ns_get_name(n), name))
						continue;
					add_path(t, c);
					goto found;
				}
			}
			continue;
found:
			copy_str(t->subsysnqn, sizeof(t->subsysnqn),
				 nvme_subsystem_get_nqn(s));
			ret = 0;
			goto out;
		}
	}
out:
	nvme_free_tree(r);
	return ret;
}

bool kvt_nvme_is_fabrics(const struct kvt_nvme_topo *t)
{
	unsigned int i;

	for (i = 0; i < t->npaths; i++)
		if (strcmp(t->path[i].transport, "pcie"))
			return true;
	return false;
}

/*
 * Why the namespace has no redundant path, or NULL: fewer than two
 * controllers, none but one live, or every path to one address.
 */
const char *kvt_nvme_single_path(const struct kvt_nvme_topo *t)
{
	unsigned int i, live = 0;
	bool same = true;

	if (!t->multipath)
		return "the block device is one controller's namespace (no native NVMe multipath)";
	if (t->npaths < 2)
		return "the subsystem has one controller (one path)";
	for (i = 0; i < t->npaths; i++) {
		if (!strcmp(t->path[i].state, "live"))
			live++;
		if (strcmp(t->path[i].address, t->path[0].address))
			same = false;
	}
	if (live < 2)
		return "only one of the subsystem's controllers is live";
	if (same)
		return "every controller of the subsystem goes to the same address";
	return NULL;
}

/*
 * Record namespace @n of @nsid (0: any) in @dev; -EEXIST once a second
 * one matches.
 */
static int pick_ns(nvme_ns_t n, uint32_t nsid, char *dev, size_t len)
{
	if (nsid && (uint32_t)nvme_ns_get_nsid(n) != nsid)
		return 0;
	if (*dev)
		return -EEXIST;
	snprintf(dev, len, "/dev/%s", nvme_ns_get_name(n));
	return 0;
}

int kvt_nvme_find(const char *nqn, uint32_t nsid, char *dev, size_t len)
{
	const char *sn;
	nvme_subsystem_t s;
	nvme_root_t r;
	nvme_host_t h;
	nvme_ctrl_t c;
	nvme_ns_t n;
	int ret = -ENOENT;

	*dev = '\0';
	r = topology_scan(&ret);
	if (!r)
		return ret;
	ret = -ENOENT;
	/* A subsystem may be listed under several hosts: look at each. */
	nvme_for_each_host(r, h) {
		nvme_for_each_subsystem(h, s) {
			sn = nvme_subsystem_get_nqn(s);
			if (!sn || strcmp(sn, nqn))
				continue;
			ret = 0;
			nvme_subsystem_for_each_ns(s, n)
				ret = ret ? ret : pick_ns(n, nsid, dev, len);
			/* Without native multipath: the first controller's. */
			nvme_subsystem_for_each_ctrl(s, c) {
				if (*dev || ret)
					break;
				nvme_ctrl_for_each_ns(c, n)
					ret = ret ? ret : pick_ns(n, nsid, dev, len);
			}
			if (ret || *dev)
				goto out;
		}
	}
	if (!ret)
		ret = -ENODEV;	/* the subsystem, but no such namespace */
out:
	nvme_free_tree(r);
	return ret;
}
