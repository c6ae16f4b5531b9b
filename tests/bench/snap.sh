#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The counters kvbench reads around each of its runs (tools/bench/kvbench.c,
# sys_read()), saved for a fio job: fio runs it as the job's exec_prerun and
# exec_postrun, and tests/bench/fio2csv.py turns the pair into the same
# cpu_s and dev_* columns.
#
# usage: tests/bench/snap.sh DEV FILE   (DEV: the namespace in /sys/block)
{ head -n 1 /proc/stat && cat "/sys/block/$1/stat"; } >"$2"
