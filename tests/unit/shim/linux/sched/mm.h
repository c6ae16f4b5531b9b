/* SPDX-License-Identifier: GPL-2.0 */
/* Nothing slots.c needs from it in user space (tests/unit/). */
