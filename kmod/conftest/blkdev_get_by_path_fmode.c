// SPDX-License-Identifier: GPL-2.0
/* Up to 6.4: blkdev_get_by_path(path, fmode_t, holder), FMODE_EXCL claims. */
#include <linux/blkdev.h>
#include <linux/fs.h>

struct block_device *kvtier_conftest(const char *path, void *holder);
struct block_device *kvtier_conftest(const char *path, void *holder)
{
	fmode_t mode = FMODE_READ | FMODE_WRITE | FMODE_EXCL;

	return blkdev_get_by_path(path, mode, holder);
}
