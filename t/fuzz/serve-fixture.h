/* SPDX-License-Identifier: ISC */
/*
 * serve-fixture.h: the daemon as the HTTP fuzz harnesses run it: built
 * whole (its main renamed), set up once in a directory of its own with one
 * transcript, and fed one connection per input.
 */
#ifndef QWEN_FUZZ_SERVE_FIXTURE_H
#define QWEN_FUZZ_SERVE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

/* The transcript the fixture keeps, and the session routes name. */
#define FIXTURE_SID	"11111111-1111-4111-8111-111111111111"

/* Set the daemon up once; child: the agent to run (NULL: none, so that
   no session is ever live and no process is the fuzzer's child). */
void	fixture_setup(const char *child);

/* Write data on a new connection, half-close it and run the loop until
   the daemon has answered and closed, or a second has passed.  The
   answer's status, or 0 without one (FUZZ_HTTP_ECHO set: the answer goes
   to stderr). */
int	fixture_send(const uint8_t *data, size_t size);

#endif
