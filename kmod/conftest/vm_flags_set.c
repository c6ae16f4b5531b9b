// SPDX-License-Identifier: GPL-2.0
/* 6.3+: vm_flags is read-only; writers go through vm_flags_set(). */
#include <linux/mm.h>

void kvtier_conftest(struct vm_area_struct *vma);
void kvtier_conftest(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
}
