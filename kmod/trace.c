// SPDX-License-Identifier: GPL-2.0
/* Instantiates the tracepoints declared in kvtier_trace.h. */
#define CREATE_TRACE_POINTS
#include "kvtier_trace.h"
