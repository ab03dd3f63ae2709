// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_directory.c - libFuzzer harness for what the etcd directory reads:
 * etcd's JSON answers and watch lines, their base64 keys and values, the
 * blobs in them and the table they build (fuzz_directory.h says how an
 * input is read and what must hold).
 *
 * Built by `make -C tests fuzz-directory` (clang and json-c, not part of
 * make check).  Interesting inputs go to tests/corpus/directory/, which
 * test_rdmaxfer_dirparse replays in make check.
 */
#include <stdlib.h>

#include "fuzz_directory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fd_check(data, size))
		abort();
	return 0;
}
