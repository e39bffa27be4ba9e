/* SPDX-License-Identifier: ISC */
/*
 * sum64.h: the checksum of the files we keep (a transcript's index, its
 * block sums, a workspace's listing): xxh64's rounds, a few GB/s, so the
 * tens of MiB of a big index cost milliseconds to check.  Not for
 * anything a peer could choose to collide: it guards against torn writes
 * and stale files, not against forgery.
 */
#ifndef QWEN_SUM64_H
#define QWEN_SUM64_H

#include <stddef.h>
#include <stdint.h>

/* The sum of [p, p+n), chained from h.  Its value is part of the kept
   files' formats: a change is a new version of each. */
uint64_t	sum64(uint64_t h, const void *p, size_t n);

#endif
