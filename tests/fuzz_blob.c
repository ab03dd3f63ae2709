// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_blob.c - libFuzzer harness for the metadata blob parser.
 *
 * Built by `make -C tests fuzz-blob` (clang, not part of make check).  Any
 * input must parse or fail with -EINVAL/-EPROTO; a parsed blob must
 * re-encode to the same bytes (the format has one encoding per value), so
 * the fuzzer also checks the encoder.  Interesting inputs go to
 * tests/corpus/blob/, which test_rdmaxfer_blob replays in make check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmaxfer_md *md;
	uint8_t *again;
	size_t len;
	int ret;

	ret = rdmaxfer_md_parse(data, size, &md);
	if (ret) {
		if (ret != -EINVAL && ret != -EPROTO)
			abort();
		return 0;
	}
	again = malloc(size);
	if (!again)
		abort();
	if (rx_md_encode(md, again, size, &len) || len != size ||
	    memcmp(again, data, size))
		abort();
	free(again);
	rdmaxfer_md_free(md);
	return 0;
}
