/* SPDX-License-Identifier: ISC */
/*
 * fuzz-http.c: libFuzzer harness, raw bytes into the daemon's HTTP
 * handlers.
 *
 * qwen-serve is built whole (its main renamed) and set up once
 * (serve-fixture.c).  Each input is written as is on a new connection,
 * which is then half-closed; the loop runs until the daemon has answered
 * and closed or a second has passed (FUZZ_HTTP_ECHO set: the answers go
 * to stderr, to see what an input reaches).  Child processes would be
 * the fuzzer's own children: --child names a program that does not
 * exist.  ASan, UBSan and LSan catch what the bytes do to the routes, the framer and the JSON.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "serve-fixture.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* One input: raw bytes on one connection. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;

	if (!ready) {
		fixture_setup(NULL);
		ready = 1;
	}
	(void)fixture_send(data, size);
	return 0;
}
