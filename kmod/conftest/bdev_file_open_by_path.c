// SPDX-License-Identifier: GPL-2.0
/* 6.9+: exclusive block device opens return a struct file. */
#include <linux/blkdev.h>
#include <linux/fs.h>

struct file *kvtier_conftest(const char *path, void *holder);
struct file *kvtier_conftest(const char *path, void *holder)
{
	return bdev_file_open_by_path(path, BLK_OPEN_READ | BLK_OPEN_WRITE,
				      holder, NULL);
}
