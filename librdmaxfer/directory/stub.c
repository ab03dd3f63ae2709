// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * stub.c - the directory's calls in a library built without libcurl or
 * json-c (configure --without-etcd, or not found): the same symbols, so
 * librdmaxfer's ABI does not depend on the build, each returning
 * -EOPNOTSUPP (rdmaxfer_directory_attr_init() is attr.c's, built always).
 */
#include <errno.h>

#include "rdmaxfer_directory.h"

#define DIR_EXPORT	__attribute__((visibility("default")))

DIR_EXPORT
int rdmaxfer_directory_open(const struct rdmaxfer_directory_attr *attr,
			    struct rdmaxfer_directory **dirp)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
void rdmaxfer_directory_close(struct rdmaxfer_directory *dir)
{
}

DIR_EXPORT
int rdmaxfer_directory_publish(struct rdmaxfer_directory *dir,
			       struct rdmaxfer_agent *agent, const char *name)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_publish_md(struct rdmaxfer_directory *dir,
				  const char *name, const void *blob,
				  size_t len)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_unpublish(struct rdmaxfer_directory *dir,
				 const char *name)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_export(struct rdmaxfer_directory *dir,
			      const char *name,
			      const struct rdmaxfer_desc *desc)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_export_md(struct rdmaxfer_directory *dir,
				 const char *name, const void *blob,
				 size_t len)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_export_mem(struct rdmaxfer_directory *dir,
				  const char *name, void *addr, size_t len,
				  uint32_t access, struct rdmaxfer_desc *desc)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_withdraw(struct rdmaxfer_directory *dir,
				const char *name,
				const struct rdmaxfer_desc *desc)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_lookup(struct rdmaxfer_directory *dir,
			      const char *name, int timeout_ms,
			      struct rdmaxfer_md **mdp)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_list(struct rdmaxfer_directory *dir,
			    struct rdmaxfer_dir_list **listp)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
void rdmaxfer_directory_list_free(struct rdmaxfer_dir_list *list)
{
}

DIR_EXPORT
int rdmaxfer_connect_name(struct rdmaxfer_directory *dir,
			  struct rdmaxfer_agent *agent, const char *name,
			  int timeout_ms, struct rdmaxfer_peer **peerp)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_watch(struct rdmaxfer_directory *dir, int timeout_ms)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_events(struct rdmaxfer_directory *dir,
			      struct rdmaxfer_dir_event *ev, size_t max,
			      int timeout_ms)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_set_event_cb(struct rdmaxfer_directory *dir,
				    rdmaxfer_dir_event_fn fn, void *user)
{
	return -EOPNOTSUPP;
}

DIR_EXPORT
int rdmaxfer_directory_query(struct rdmaxfer_directory *dir,
			     struct rdmaxfer_directory_info *info)
{
	return -EOPNOTSUPP;
}
