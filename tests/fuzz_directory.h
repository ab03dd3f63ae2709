/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * fuzz_directory.h - what the fuzzer fuzz_directory.c checks on one
 * input, shared with test_rdmaxfer_dirparse.c, which replays its corpus
 * (tests/corpus/directory/) in make check with the same checks.
 *
 * One input is what etcd's gateway might send the directory: byte 0
 * chooses how the rest is read:
 *   0  lines of a watch stream ('\n'-separated), each applied in turn;
 *   1  one range answer, its kvs put as a list (begin, page, end);
 *   2  lines of a watch stream, then a list after a store reset with an
 *      expired grace (every agent kept by it leaves).
 * The table is small (8 names, 4 exports each) so the bounds are met.
 *
 * Contract: nothing crashes or leaks (the sanitizers see to that), every
 * agent the table keeps is a blob rdmaxfer_md_parse() accepts whose
 * exports are within the bounds, the events end, and a list of the table
 * holds exactly its valid agents.  fd_check() returns 0 when the
 * contract held, -1 when it broke.
 */
#ifndef FUZZ_DIRECTORY_H
#define FUZZ_DIRECTORY_H

#include <stdlib.h>
#include <string.h>

#include "directory/directory.h"

#define FD_NS		"ns"
#define FD_AGENTS	8
#define FD_EXPORTS	4

static inline int fd_table_ok(struct dir_state *st)
{
	struct rdmaxfer_dir_list *l = NULL;
	struct rdmaxfer_dir_event ev;
	uint32_t valid = 0;
	size_t i, n, events = 0;

	if (st->count > FD_AGENTS)
		return -1;
	for (i = 0; i < st->nbuckets; i++) {
		struct dir_agent *a;

		for (a = st->buckets[i]; a; a = a->hnext) {
			struct rdmaxfer_md *md;

			if (a->nexports > FD_EXPORTS || !dir_name_valid(a->name))
				return -1;
			if (!a->md)
				continue;
			valid++;
			if (rdmaxfer_md_parse(a->blob, a->blob_len, &md))
				return -1;
			rdmaxfer_md_free(md);
			n = dir_agent_exports(a, NULL, 0);
			if (n > a->md->ndescs + a->nexports)
				return -1;
		}
	}
	if (valid != st->valid)
		return -1;
	if (dir_state_snapshot(st, &l))
		return 0;	/* out of memory: nothing to check */
	n = l->n;
	dir_list_free(l);
	if (n != valid)
		return -1;
	/* at most a LEAVE and an ARRIVE per name */
	while (!dir_state_next_event(st, &ev))
		if (++events > 2 * FD_AGENTS + 2)
			return -1;
	while (dir_state_next_follow(st))
		;
	return 0;
}

static inline void fd_lines(struct dir_state *st, const char *p, size_t n)
{
	struct dir_watch_line out;
	size_t start = 0, i;

	for (i = 0; i <= n; i++) {
		if (i < n && p[i] != '\n')
			continue;
		if (i > start)
			dir_state_watch_line(st, p + start, i - start, &out);
		start = i + 1;
	}
}

static inline int fd_check(const uint8_t *data, size_t size)
{
	struct dir_state st;
	const char *p = (const char *)data + 1;
	size_t n = size ? size - 1 : 0;
	int ret = 0;

	if (!size || dir_state_init(&st, FD_NS, FD_AGENTS, FD_EXPORTS))
		return 0;
	switch (data[0] % 3) {
	case 0:
		fd_lines(&st, p, n);
		break;
	case 1: {
		json_object *obj;
		uint8_t *last;
		size_t last_len;
		int64_t rev;
		bool more;

		if (dir_json_parse(p, n, &obj))
			break;
		dir_state_list_begin(&st);
		if (!dir_state_range_page(&st, obj, &more, &rev, &last,
					  &last_len))
			dir_state_list_end(&st, false, 0);
		free(last);
		json_object_put(obj);
		break;
	}
	default:
		fd_lines(&st, p, n);
		ret = fd_table_ok(&st);
		dir_state_list_begin(&st);
		dir_state_list_end(&st, true, 1);
		if (dir_state_expire(&st, 2) || st.valid)
			ret = -1;	/* the grace is over: nobody is left */
		break;
	}
	if (!ret)
		ret = fd_table_ok(&st);
	dir_state_fini(&st);
	return ret;
}

#endif /* FUZZ_DIRECTORY_H */
