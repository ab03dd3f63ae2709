// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_xfer.c - libFuzzer harness for rdmaxfer_xfer_prepare()'s checks,
 * counts and work requests (xfer_plan.c) driven by the descriptors of a
 * parsed metadata blob (blob.c), with the exports list (exports.c).
 *
 * Built by `make -C tests fuzz-xfer` (clang, not part of make check).
 * The input format and the checks are in fuzz_xfer.h; interesting inputs
 * go to tests/corpus/xfer/, which test_rdmaxfer_xfer replays in make
 * check.
 */
#include <stdlib.h>

#include "fuzz_xfer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int ret;

	if (fx_check_xfer(data, size, &ret))
		abort();
	return 0;
}
