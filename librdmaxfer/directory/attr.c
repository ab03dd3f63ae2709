// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * attr.c - the directory's attribute defaults, built with and without
 * etcd support (stub.c), so a program can fill its attributes either way.
 */
#include <string.h>

#include "rdmaxfer_directory.h"

__attribute__((visibility("default")))
void rdmaxfer_directory_attr_init(struct rdmaxfer_directory_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->ttl_s = RDMAXFER_DIR_DEF_TTL_S;
	attr->timeout_ms = RDMAXFER_DIR_DEF_TIMEOUT_MS;
	attr->retry_ms = RDMAXFER_DIR_DEF_RETRY_MS;
	attr->max_agents = RDMAXFER_DIR_DEF_MAX_AGENTS;
	attr->max_exports = RDMAXFER_DIR_DEF_MAX_EXPORTS;
}
