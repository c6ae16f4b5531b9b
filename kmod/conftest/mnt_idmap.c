// SPDX-License-Identifier: GPL-2.0
/* 6.3+: inode operations take a struct mnt_idmap, not a user_namespace. */
#include <linux/fs.h>

int kvtier_conftest(struct dentry *dentry, struct iattr *attr);
int kvtier_conftest(struct dentry *dentry, struct iattr *attr)
{
	return setattr_prepare(&nop_mnt_idmap, dentry, attr);
}
