/* SPDX-License-Identifier: ISC */
/*
 * txscan.h: the top-level key scanner of the transcript index pass.
 *
 * Reads one trimmed JSONL line (or one slice of a `}{`-glued line) and pulls
 * the keys the index needs without building a DOM.  The top level is checked
 * strictly; nested values are skipped structurally (strings escape-aware,
 * brackets matched).  Anything it cannot read exactly (an escaped key or
 * value it needs, nesting deeper than 64, a line not starting with '{') is
 * left to json-c by the caller.
 */
#ifndef QWEN_ACP_TXSCAN_H
#define QWEN_ACP_TXSCAN_H

#include <stddef.h>

#include <json-c/json.h>

enum txscan_result {
	TXSCAN_OK,		/* one object spanning the whole input */
	TXSCAN_BAD,		/* not valid JSON as far as the scanner can tell */
	TXSCAN_TRAIL,		/* an object followed by more non-blank bytes */
	TXSCAN_FALLBACK		/* needs json-c */
};

enum txscan_kind { TXK_ABSENT, TXK_STR, TXK_NULL, TXK_OTHER };

struct txscan_field {
	enum txscan_kind kind;
	const char *p;		/* string value bytes (no quotes, no escapes) */
	size_t len;
};

enum { TXF_UUID, TXF_PARENT, TXF_SESSION, TXF_TYPE, TXF_SUBTYPE, TXF_N };

struct txscan {
	struct txscan_field f[TXF_N];
	int message;		/* a non-empty message object */
	int role_user;		/* message.role == "user" */
	/* Optional, set by the caller and kept by the scan: called as soon as a
	   top-level uuid string is seen (the index prefetches its hash slot). */
	void (*uuid_hook)(void *, const char *, size_t);
	void *hook_arg;
};

/* Scan [p, e) (already trimmed).  Pointers in *out point into the input.
   out->uuid_hook is kept (set it or zero it before the call). */
enum txscan_result txscan_object(const char *p, const char *e, struct txscan *out);
/* The fast path of the index pass: [p, e) is the rest of the read buffer
   (p after leading blanks).  Returns 1 when one valid object fills the line
   that starts at p: *obj_end is just after it and *nl at the line's '\n'.
   0 means "find the line end and use txscan_object" (malformed or odd line,
   line not complete in the buffer, or no AVX2 string scanner). */
int txscan_line(const char *p, const char *e, struct txscan *out,
    const char **obj_end, const char **nl);
/* Fill *out from a json-c object (the fallback path); pointers borrow obj. */
void txscan_from_json(json_object *obj, struct txscan *out);
/* The reference loader's recovery scan: call cb for every slice of [p, e)
   where the brace depth returns to zero outside strings. */
void txscan_recover(const char *p, const char *e,
    void (*cb)(void *, const char *, const char *), void *arg);
/* ASCII whitespace as Python's str.strip() sees it. */
int txscan_isspace(unsigned char c);

#endif
