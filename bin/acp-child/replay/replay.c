/* SPDX-License-Identifier: ISC */
/*
 * replay.c: the session/load replay (upstream-transcript.md 3.8).
 *
 * The window is the newest turns whose source bytes fit max_bytes (aligned
 * to a turn start); only those records are parsed and projected (project.c).
 * When the encoded updates still exceed max_bytes or max_updates, the
 * oldest turns are dropped from the projection (each update knows the record
 * it came from; a missing-result failure belongs to the record that opened
 * the call, so it goes with it) until both fit.
 */
#include "config.h"

#include <sys/types.h>

#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "project.h"
#include "replay.h"
#include "transcript.h"

/* Estimated encoded update bytes of a record from its source bytes: tool
   results and assistant turns project to about 1.08x their size (content plus
   rawOutput/rawInput and _meta), users to less; most system records to nothing.
   An overshoot costs parsing records that are then dropped; an undershoot a
   window a little smaller than the budget. */
static uint64_t
estimate(const struct transcript *t, uint32_t rec)
{
	uint64_t raw = transcript_raw_len(t, rec);
	const char *sub;

	switch (transcript_type(t, rec)) {
	case TX_SYSTEM:
		sub = transcript_subtype(t, rec);
		if (strcmp(sub, "slash_command") != 0 && strcmp(sub, "turn_result") != 0)
			return 0;
		return raw;
	case TX_ASSISTANT:
	case TX_TOOL_RESULT:
		return raw + raw / 8;
	default:
		return raw;
	}
}

/* The earliest window start from which sizes[start..len) fit the budget:
   a turn start if one fits, else the longest record suffix that fits. */
static size_t
fit_start(const struct transcript *t, const struct tx_chain *c,
    const uint64_t *sizes, size_t from, uint64_t budget)
{
	size_t i, best = c->len, rec_best = c->len;
	uint64_t sum = 0;

	for (i = c->len; i-- > from;) {
		sum += sizes ? sizes[i] : estimate(t, c->rec[i]);
		if (sum > budget)
			break;
		rec_best = i;
		if (chain_is_turn_start(t, c->rec[i]))
			best = i;
	}
	return best < c->len ? best : rec_best;
}

/* Per-record encoded sizes and update counts of a projection from start
   (only those are read: a long chain's head is not touched). */
static void
measure(const struct projection *p, const struct tx_chain *c, size_t start,
    uint64_t *sizes, uint64_t *counts, uint64_t *total)
{
	size_t i;

	memset(sizes + start, 0, (c->len - start) * sizeof *sizes);
	memset(counts + start, 0, (c->len - start) * sizeof *counts);
	*total = 2;
	for (i = 0; i < p->n; i++) {
		sizes[p->u[i].origin] += p->u[i].len + 1;
		counts[p->u[i].origin]++;
		*total += p->u[i].len + (i > 0);
	}
}

/* Window start that fits both limits given measured sizes and counts. */
static size_t
shrink(const struct transcript *t, const struct tx_chain *c, size_t start,
    const uint64_t *sizes, const uint64_t *counts, size_t max_bytes,
    size_t max_updates)
{
	size_t s1, s2, i;
	uint64_t n = 0;

	s1 = fit_start(t, c, sizes, start, max_bytes > 2 ? max_bytes - 2 : 0);
	s2 = c->len;
	for (i = c->len; i-- > start;) {
		n += counts[i];
		if (n > max_updates)
			break;
		if (chain_is_turn_start(t, c->rec[i]) || s2 == c->len)
			s2 = i;
	}
	if (s1 < start)
		s1 = start;
	s1 = s1 > s2 ? s1 : s2;
	return s1 > start ? s1 : start + 1;
}

/* Keep only the updates that come from records at or after start. */
static void
keep_from(struct projection *p, size_t start)
{
	size_t i, j;

	for (i = 0, j = 0; i < p->n; i++)
		if (p->u[i].origin >= start)
			p->u[j++] = p->u[i];
	p->n = j;
}

/* The first record not inherited from a fork parent (the inherited ones
   are the fork's prefix: binary search); -1 on I/O failure. */
static ssize_t
first_own(struct transcript *t, const struct tx_chain *c, char **cause)
{
	size_t lo = 0, hi = c->len, mid;
	int inh;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((inh = project_inherited(t, c->rec[mid], cause)) == -1)
			return -1;
		if (inh)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo;
}

/* The newest page of at most page records from base, aligned to a turn
   start (forwards first, else backwards), as upstream's recent replay. */
static size_t
page_start(const struct transcript *t, const struct tx_chain *c, size_t base,
    size_t page)
{
	size_t s, i;

	if (c->len - base <= page)
		return base;
	s = c->len - page;
	for (i = s; i < c->len; i++)
		if (chain_is_turn_start(t, c->rec[i]))
			return i;
	while (s > base && !chain_is_turn_start(t, c->rec[s]))
		s--;
	return s;
}

/* The first window: the page (or base) unless its estimated size exceeds
   the byte budget, then the newest turns that fit. */
static size_t
first_window(const struct transcript *t, const struct tx_chain *c, size_t base,
    size_t max_bytes)
{
	uint64_t sum = 0;
	size_t i;

	for (i = base; base > 0 && i < c->len && sum <= max_bytes; i++)
		sum += estimate(t, c->rec[i]);
	if (base > 0 && sum <= max_bytes)
		return base;
	return fit_start(t, c, NULL, base, max_bytes);
}

int
replay_build(struct transcript *t, const struct tx_chain *c,
    const struct replay_opts *opts, struct replay_result *res, char **cause)
{
	size_t max_bytes = opts && opts->max_bytes ? opts->max_bytes :
	    REPLAY_DEFAULT_MAX_BYTES;
	size_t max_updates = opts && opts->max_updates ? opts->max_updates :
	    REPLAY_DEFAULT_MAX_UPDATES;
	int flags = opts ? opts->flags : 0;
	struct projection p;
	uint64_t *sizes = NULL, *counts = NULL, total = 2, n;
	size_t start, i, own = 0, base;
	ssize_t f;

	memset(res, 0, sizeof *res);
	memset(&p, 0, sizeof p);
	if ((sizes = calloc(c->len + 1, sizeof *sizes)) == NULL ||
	    (counts = calloc(c->len + 1, sizeof *counts)) == NULL) {
		transcript_cause(cause, "replay: out of memory");
		goto fail;
	}
	if ((flags & PROJECT_HIDE_INHERITED) && (f = first_own(t, c, cause)) == -1)
		goto fail;
	else if (flags & PROJECT_HIDE_INHERITED)
		own = (size_t)f;
	base = opts && opts->page_size ? page_start(t, c, own, opts->page_size) : own;
	start = first_window(t, c, base, max_bytes);
	if (project_window(t, c, start, flags, &p, cause) == -1)
		goto fail;
	measure(&p, c, start, sizes, counts, &total);
	while ((total > max_bytes || p.n > max_updates) && start < c->len) {
		start = shrink(t, c, start, sizes, counts, max_bytes, max_updates);
		for (i = start, total = 2, n = 0; i < c->len; i++) {
			total += sizes[i];
			n += counts[i];
		}
		total -= n > 0;		/* sizes carry one separator per update */
		keep_from(&p, start);
	}
	res->p = p;
	memset(&p, 0, sizeof p);
	res->records = c->len - start;
	res->truncated_records = start > base ? start - base : 0;
	res->has_more = start > own || (own == 0 && c->gaps > 0);
	res->partial = start > base;
	res->bytes = total;
	res->anchor = opts && opts->page_size && start < c->len ? (ssize_t)start : -1;
	free(sizes);
	free(counts);
	return 0;
fail:
	project_clear(&p);
	free(sizes);
	free(counts);
	return -1;
}

void
replay_result_write(const struct replay_result *r, struct jbuf *b)
{
	size_t i;

	jbuf_put(b, "[", 1);
	for (i = 0; i < r->p.n; i++) {
		if (i > 0)
			jbuf_put(b, ",", 1);
		jbuf_put(b, r->p.enc.p + r->p.u[i].off, r->p.u[i].len);
	}
	jbuf_put(b, "]", 1);
}

const char *
replay_result_body(const struct replay_result *r, size_t *len)
{
	const struct projection *p = &r->p;
	size_t i;

	if (p->n == 0 || p->enc.oom)
		return NULL;
	for (i = 1; i < p->n; i++)
		if (p->u[i].off != p->u[i - 1].off + p->u[i - 1].len + 1)
			return NULL;
	*len = p->u[p->n - 1].off + p->u[p->n - 1].len - p->u[0].off;
	return p->enc.p + p->u[0].off;
}

json_object *
replay_result_json(const struct replay_result *r)
{
	struct jbuf b = { NULL, 0, 0, 0 };
	json_tokener *tok = json_tokener_new_ex(TX_JSON_DEPTH);
	json_object *o = NULL;

	replay_result_write(r, &b);
	if (tok != NULL && !b.oom)
		o = json_tokener_parse_ex(tok, b.p, (int)b.len);
	json_tokener_free(tok);
	jbuf_free(&b);
	return o;
}

void
replay_result_clear(struct replay_result *r)
{
	if (r == NULL)
		return;
	project_clear(&r->p);
	memset(r, 0, sizeof *r);
}
