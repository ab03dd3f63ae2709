/* SPDX-License-Identifier: GPL-2.0-only */
/* regcache_internal.h - shared declarations of regcache.ko. */
#ifndef REGCACHE_INTERNAL_H
#define REGCACHE_INTERNAL_H
#include <linux/miscdevice.h>
#include "regcache_uapi.h"
#endif
