// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * fuzz_notif.c - libFuzzer harness for the notification decoder
 * (librdmaxfer/core/notif_msg.c): every input is a receive completion (opcode,
 * immediate flag and value, byte_len) followed by the receive buffer, as
 * framed in fuzz_wire.h.
 *
 * Built by `make -C tests fuzz-notif` (clang, not part of make check).
 * The decoder must accept or answer -EPROTO/-EMSGSIZE, never read past
 * the buffer; what it accepts must say what the completion said.
 * Interesting inputs go to tests/corpus/notif/, which test_rdmaxfer_wire
 * replays in make check with the same checks.
 */
#include "fuzz_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int ret;

	if (fw_check_notif(data, size, &ret))
		abort();
	return 0;
}
