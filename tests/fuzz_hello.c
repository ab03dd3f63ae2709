// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_hello.c - libFuzzer harness for the connection handshake parsers
 * (librdmaxfer/core/hello.c): every input is the rdma_cm private data of a CM
 * message, decoded as a hello (REQ) and as a welcome (REP, REJ).
 *
 * Built by `make -C tests fuzz-hello` (clang, not part of make check).  A
 * decoder must accept or answer -EBADMSG/-EPROTO, never read past the
 * input; what it accepts must be in range and encode to the same bytes
 * (the format has one encoding per value).  Interesting inputs go to
 * tests/corpus/hello/, which test_rdmaxfer_wire replays in make check
 * with the same checks (fuzz_wire.h).
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int hello_ret, welcome_ret;

	if (fw_check_hello(data, size, &hello_ret, &welcome_ret))
		abort();
	return 0;
}
