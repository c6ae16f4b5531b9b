// SPDX-License-Identifier: GPL-2.0
/* 6.6+: generic_fillattr() takes the statx request mask. */
#include <linux/fs.h>
#include <linux/stat.h>

void kvtier_conftest(struct inode *inode, struct kstat *stat);
void kvtier_conftest(struct inode *inode, struct kstat *stat)
{
	generic_fillattr(&nop_mnt_idmap, STATX_BASIC_STATS, inode, stat);
}
