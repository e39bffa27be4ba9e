/* SPDX-License-Identifier: ISC */
/*
 * rpc-splice.c: taking one big array of a message as bytes (rpc-frame.h:
 * rpc_reader_splice).
 *
 * A child's bulk replay answer is a few MiB of updates the daemon only
 * forwards.  Parsing them into json-c objects and encoding each again cost
 * more than the child spent making them, so the array that follows the
 * marker is checked by a strict scanner (rpc-splice-canon.c) and kept as
 * bytes, and json-c parses the rest of the line with an empty array in
 * its place.  The scanner accepts only what json-c itself writes (no
 * whitespace, json-c's escapes, valid UTF-8, integers it keeps as
 * written), so forwarding the bytes gives what parsing and encoding them
 * would.  Anything else, or a marker that is not where the path says,
 * falls back to the full parse: this is a shortcut, never a second judge
 * of the input.
 *
 * The array is scanned as its bytes arrive (rpc_splice_advance, from the
 * reader while the line is incomplete), so reading a few MiB in pieces
 * costs each piece its own share, and the newline only what came last:
 * the daemon's loop is never held by one big scan.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-frame.h"
#include "rpc-frame-int.h"

/* Containers open at the end of [p, e), -1 when e is inside a string. */
static int
prefix_depth(const char *p, const char *e)
{
	int depth = 0, in = 0;

	for (; p < e; p++) {
		if (in) {
			if (*p == '\\')
				p++;
			else if (*p == '"')
				in = 0;
		} else if (*p == '"')
			in = 1;
		else if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
	}
	return in || p != e ? -1 : depth;
}

/* Note the element [s, e) of the array whose body starts at body. */
static int
splice_element(struct rpc_splice *sp, const char *body, const char *s,
    const char *e)
{
	struct rpc_raw *raw = sp->raw;
	struct rpc_raw_el *nel;

	if (raw->n == sp->cap) {
		sp->cap = sp->cap ? sp->cap * 2 : 256;
		if ((nel = reallocarray(raw->el, sp->cap, sizeof *nel)) == NULL)
			return -1;
		raw->el = nel;
	}
	raw->el[raw->n].off = (size_t)(s - body);
	raw->el[raw->n++].len = (size_t)(e - s);
	return 0;
}

/* Find a marker in line[0, len) (from where the last look ended; the one
   that comes first); 0 when found and the array's scan is set up, 1 to
   look again with more, -1. */
static int
splice_find(struct rpc_splice *sp, const struct rpc_splice_spec *spec,
    size_t nspec, const char *line, size_t len)
{
	const char *m = NULL, *f;
	size_t i, mlen, longest = 0;
	int depth;

	if (sp->mscan > len)
		return -1;
	for (i = 0; i < nspec; i++) {
		mlen = strlen(spec[i].marker);
		if (mlen == 0 || spec[i].marker[mlen - 1] != '[')
			return -1;
		longest = mlen > longest ? mlen : longest;
		if (len - sp->mscan < mlen || (f = memmem(line + sp->mscan,
		    len - sp->mscan, spec[i].marker, mlen)) == NULL ||
		    (m != NULL && f >= m))
			continue;
		m = f;
		sp->which = i;
		sp->arr = (size_t)(m - line) + mlen - 1;
	}
	if (m == NULL) {
		/* No marker starts before the last longest - 1 bytes. */
		if (len >= longest && len - longest + 1 > sp->mscan)
			sp->mscan = len - longest + 1;
		return 1;
	}
	if ((depth = prefix_depth(line, line + sp->arr)) < 0 ||
	    depth >= RPC_MAX_DEPTH - 2 ||
	    (sp->raw = calloc(1, sizeof *sp->raw)) == NULL)
		return -1;
	sp->raw->refs = 1;
	sp->depth = RPC_MAX_DEPTH - 2 - depth;
	sp->pos = sp->arr + 1;
	sp->state = SPLICE_FIRST;
	return 0;
}

/*
 * Scan the array's elements in line[pos, len).  Until the line is final
 * an element cut by its end (or that does not pass yet) is scanned again
 * once as many bytes again have come; a byte that can never be right
 * ends the splice.  1 when the array is whole, 0 for more, -1.
 */
static int
splice_scan(struct rpc_splice *sp, const char *line, size_t len, int final)
{
	const char *body = line + sp->arr + 1, *p = line + sp->pos, *e = line + len;
	const char *end;

	for (;;) {
		if (p >= e)
			break;
		if (sp->state == SPLICE_FIRST) {
			if (*p == ']')
				goto whole;
			sp->state = SPLICE_VALUE;
		}
		if (sp->state == SPLICE_SEP) {
			if (*p == ']')
				goto whole;
			if (*p++ != ',')
				return -1;
			sp->state = SPLICE_VALUE;
			continue;
		}
		if (!final && len < sp->retry)
			break;
		if (rpc_splice_canon(p, e, sp->depth, &end) == -1 ||
		    (!final && end >= e)) {
			if (final)
				return -1;
			sp->retry = len + (size_t)(e - p);
			break;
		}
		if (splice_element(sp, body, p, end) == -1)
			return -1;
		p = end;
		sp->state = SPLICE_SEP;
	}
	if (final)
		return -1;
	sp->raw->len = (size_t)(p - body);
	sp->pos = (size_t)(p - line);
	return 0;
whole:
	sp->raw->len = (size_t)(p - body);
	sp->pos = (size_t)(p + 1 - line);
	sp->state = SPLICE_WHOLE;
	return 1;
}

/* Advance over line[0, len): 1 when the array is whole, 0 for more, -1. */
static int
splice_step(struct rpc_splice *sp, const struct rpc_splice_spec *spec,
    size_t nspec, const char *line, size_t len, int final)
{
	int r;

	switch (sp->state) {
	case SPLICE_FIND:
		if ((r = splice_find(sp, spec, nspec, line, len)) != 0) {
			if (r == -1)
				sp->state = SPLICE_OFF;
			return r == 1 && !final ? 0 : -1;
		}
		/* FALLTHROUGH */
	case SPLICE_FIRST:
	case SPLICE_VALUE:
	case SPLICE_SEP:
		if ((r = splice_scan(sp, line, len, final)) == -1)
			sp->state = SPLICE_OFF;
		return r;
	case SPLICE_WHOLE:
		return 1;
	default:
		return -1;
	}
}

void
rpc_splice_advance(struct rpc_splice *sp, const struct rpc_splice_spec *spec,
    size_t nspec, const char *line, size_t len)
{
	(void)splice_step(sp, spec, nspec, line, len, 0);
}

void
rpc_splice_reset(struct rpc_splice *sp)
{
	rpc_raw_unref(sp->raw);
	memset(sp, 0, sizeof *sp);
}

size_t
rpc_splice_checked(const struct rpc_splice *sp)
{
	return sp->raw != NULL ? sp->raw->len : 0;
}

static void
raw_delete(json_object *o, void *arg)
{
	(void)o;
	rpc_raw_unref(arg);
}

/* The array at path in root, when it is an empty array. */
static json_object *
at_path(json_object *root, const char *const *path)
{
	json_object *o = root;

	for (; *path != NULL; path++)
		if (!json_object_is_type(o, json_type_object) ||
		    !json_object_object_get_ex(o, *path, &o))
			return NULL;
	if (!json_object_is_type(o, json_type_array) || json_object_array_length(o) != 0)
		return NULL;
	return o;
}

/* Parse prefix, "[]", suffix with tok; the root or NULL. */
static json_object *
parse_parts(struct json_tokener *tok, const char *line, const char *arr,
    const char *end, size_t len)
{
	json_object *root;
	size_t rest = len - (size_t)(end - line);

	/* Each part must leave the value open; one that completes a value
	   (a bare scalar cut by a NUL, say) hands it back to be put. */
	json_tokener_reset(tok);
	root = json_tokener_parse_ex(tok, line, (int)(arr - line));
	if (root == NULL && json_tokener_get_error(tok) == json_tokener_continue)
		root = json_tokener_parse_ex(tok, "[]", 2);
	if (root != NULL || json_tokener_get_error(tok) != json_tokener_continue) {
		json_object_put(root);
		json_tokener_reset(tok);
		return NULL;
	}
	root = json_tokener_parse_ex(tok, end, (int)rest);
	if (root == NULL || json_tokener_get_parse_end(tok) != rest) {
		json_object_put(root);
		json_tokener_reset(tok);
		return NULL;
	}
	return root;
}

/*
 * Parse the whole line with the array taken as bytes.  The bytes are left
 * where they are, in line: *lent is the message's raw, whose bytes the
 * caller must give a home (mem) before line moves or is freed.
 */
int
rpc_splice_parse(struct rpc_splice *sp, struct json_tokener *tok,
    const struct rpc_splice_spec *spec, size_t nspec, const char *line,
    size_t len, struct rpc_msg *msg, struct rpc_bad *bad,
    enum rpc_read_status *st, struct rpc_raw **lent)
{
	const char *arr, *end;
	json_object *root, *a;

	if (len > INT32_MAX || splice_step(sp, spec, nspec, line, len, 1) != 1)
		return -1;
	arr = line + sp->arr;
	end = line + sp->pos;
	if ((root = parse_parts(tok, line, arr, end, len)) == NULL ||
	    rpc_frame_suspect(line, (size_t)(arr - line), root) ||
	    rpc_frame_suspect(end, len - (size_t)(end - line), root) ||
	    (a = at_path(root, spec[sp->which].path)) == NULL) {
		json_object_put(root);
		return -1;
	}
	sp->raw->bytes = (char *)(uintptr_t)(arr + 1);
	*lent = sp->raw;
	json_object_set_userdata(a, sp->raw, raw_delete);
	sp->raw = NULL;
	*st = rpc_classify(root, msg, bad);
	return 0;
}

struct rpc_raw *
rpc_raw_of(json_object *arr)
{
	if (arr == NULL || json_object_get_userdata(arr) == NULL)
		return NULL;
	/* Only our arrays carry userdata with this deleter. */
	return json_object_get_userdata(arr);
}

struct rpc_raw *
rpc_raw_ref(struct rpc_raw *raw)
{
	raw->refs++;
	return raw;
}

void
rpc_raw_unref(struct rpc_raw *raw)
{
	if (raw == NULL || --raw->refs > 0)
		return;
	free(raw->mem);
	free(raw->el);
	free(raw);
}
