/* SPDX-License-Identifier: ISC */
/*
 * transcript-record.c: loading one logical record of the transcript index with
 * json-c: its fragments read with pread() into a reusable buffer, parsed,
 * and merged per upstream rules (message.parts concatenated, usageMetadata
 * last wins, timestamp max; the first fragment gives everything else).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript-int.h"

#define AHEAD_MAX	(1u << 20)	/* the most one read-ahead reads */
#define AHEAD_GAP	64		/* blanks between two records of a run */

/* pread exactly n bytes at off. */
static int
read_at(struct transcript *t, char *buf, size_t n, uint64_t off,
    char **cause)
{
	ssize_t r;
	size_t got = 0;

	while (got < n) {
		r = pread(t->fd, buf + got, n - got, (off_t)(off + got));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			transcript_cause(cause, "read %s: %s", t->path, strerror(errno));
			return -1;
		}
		if (r == 0) {
			transcript_cause(cause, "read %s: file shrank under the index", t->path);
			return -1;
		}
		got += (size_t)r;
		t->bytes_read += (uint64_t)r;
	}
	return 0;
}

/* Parse one fragment (read into the transcript's reusable buffer). */
static json_object *
load_fragment(struct transcript *t, uint64_t off, uint32_t len, char **cause)
{
	json_object *obj;
	char *nb;
	int valid;

	if (len > t->rcap) {
		if ((nb = realloc(t->rbuf, len)) == NULL) {
			transcript_cause(cause, "out of memory");
			return NULL;
		}
		t->rbuf = nb;
		t->rcap = len;
	}
	if (read_at(t, t->rbuf, len, off, cause) == -1)
		return NULL;
	obj = transcript_json_parse(t, t->rbuf, len, &valid);
	if (t->rcap > TX_RBUF_KEEP) {
		free(t->rbuf);
		t->rbuf = NULL;
		t->rcap = 0;
	}
	if (!valid || !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		transcript_cause(cause, "%s: record at offset %llu does not parse",
		    t->path, (unsigned long long)off);
		errno = EBADMSG;
		return NULL;
	}
	return obj;
}

/* Merge a later fragment into base: parts appended, usage last, timestamp max. */
static void
merge_fragment(json_object *base, json_object *frag)
{
	json_object *bm, *fm, *bp, *fp, *v, *bt;
	size_t i;

	if (json_object_object_get_ex(frag, "message", &fm) &&
	    json_object_object_get_ex(fm, "parts", &fp) &&
	    json_object_is_type(fp, json_type_array)) {
		if (!json_object_object_get_ex(base, "message", &bm) ||
		    !json_object_is_type(bm, json_type_object)) {
			json_object_object_add(base, "message", json_object_get(fm));
		} else if (!json_object_object_get_ex(bm, "parts", &bp) ||
		    !json_object_is_type(bp, json_type_array)) {
			json_object_object_add(bm, "parts", json_object_get(fp));
		} else {
			for (i = 0; i < json_object_array_length(fp); i++)
				json_object_array_add(bp,
				    json_object_get(json_object_array_get_idx(fp, i)));
		}
	}
	if (json_object_object_get_ex(frag, "usageMetadata", &v))
		json_object_object_add(base, "usageMetadata", json_object_get(v));
	if (json_object_object_get_ex(frag, "timestamp", &v) &&
	    json_object_is_type(v, json_type_string) &&
	    (!json_object_object_get_ex(base, "timestamp", &bt) ||
	    !json_object_is_type(bt, json_type_string) ||
	    strcmp(json_object_get_string(v), json_object_get_string(bt)) > 0))
		json_object_object_add(base, "timestamp", json_object_get(v));
}

json_object *
transcript_load_record(struct transcript *t, uint32_t rec, char **cause)
{
	const struct tx_rec *r;
	json_object *base, *more;
	uint32_t f;

	if (rec >= t->nrec) {
		transcript_cause(cause, "no record %u", rec);
		return NULL;
	}
	r = tx_rec(t, rec);
	if ((base = load_fragment(t, r->off, r->len, cause)) == NULL)
		return NULL;
	for (f = r->frag; f != 0; f = tx_frag(t, f - 1)->next) {
		more = load_fragment(t, tx_frag(t, f - 1)->off, tx_frag(t, f - 1)->len,
		    cause);
		if (more == NULL) {
			json_object_put(base);
			return NULL;
		}
		merge_fragment(base, more);
		json_object_put(more);
	}
	return base;
}

void
transcript_read_ahead(struct transcript *t, const uint32_t *recs, size_t n)
{
	t->ahead = recs;
	t->nahead = n;
	t->ahead_at = 0;
	t->alen = 0;
	if (recs == NULL) {
		free(t->abuf);
		t->abuf = NULL;
		t->acap = 0;
	}
}

/* Read the run of announced records that starts with rec (single fragments
   a few blanks apart, AHEAD_MAX at most) into t->abuf: 1, 0 when rec is not
   announced or too big for a run, -1 + cause. */
static int
ahead_fill(struct transcript *t, uint32_t rec, char **cause)
{
	const struct tx_rec *r = tx_rec(t, rec);
	uint64_t start = r->off, end = r->off + r->len;
	size_t i;
	char *nb;

	for (i = t->ahead_at; i < t->nahead && t->ahead[i] != rec; i++)
		;
	if (i == t->nahead || r->len == 0 || r->len > AHEAD_MAX)
		return 0;
	for (i++; i < t->nahead && t->ahead[i] < t->nrec; i++) {
		r = tx_rec(t, t->ahead[i]);
		if (r->frag != 0 || r->off < end || r->off - end > AHEAD_GAP ||
		    r->off + r->len - start > AHEAD_MAX)
			break;
		end = r->off + r->len;
	}
	t->ahead_at = i;
	t->alen = 0;
	if (end - start > t->acap) {
		if ((nb = realloc(t->abuf, AHEAD_MAX)) == NULL) {
			transcript_cause(cause, "out of memory");
			return -1;
		}
		t->abuf = nb;
		t->acap = AHEAD_MAX;
	}
	if (read_at(t, t->abuf, (size_t)(end - start), start, cause) == -1)
		return -1;
	t->aoff = start;
	t->alen = (size_t)(end - start);
	return 1;
}

int
transcript_record_bytes(struct transcript *t, uint32_t rec, const char **bytes,
    size_t *len, char **cause)
{
	const struct tx_rec *r;
	char *nb;

	if (rec >= t->nrec) {
		transcript_cause(cause, "no record %u", rec);
		return -1;
	}
	r = tx_rec(t, rec);
	if (r->frag != 0)
		return 0;
	/* An announced record: from the run read with it, else a new run. */
	if (t->ahead != NULL && (r->off < t->aoff ||
	    r->off + r->len > t->aoff + t->alen) && ahead_fill(t, rec, cause) == -1)
		return -1;
	if (t->ahead != NULL && t->alen > 0 && r->off >= t->aoff &&
	    r->off + r->len <= t->aoff + t->alen) {
		*bytes = t->abuf + (r->off - t->aoff);
		*len = r->len;
		return 1;
	}
	if (t->rcap > TX_RBUF_KEEP && r->len <= TX_RBUF_KEEP) {
		free(t->rbuf);		/* the previous record was huge */
		t->rbuf = NULL;
		t->rcap = 0;
	}
	if (r->len > t->rcap) {
		if ((nb = realloc(t->rbuf, r->len)) == NULL) {
			transcript_cause(cause, "out of memory");
			return -1;
		}
		t->rbuf = nb;
		t->rcap = r->len;
	}
	if (read_at(t, t->rbuf, r->len, r->off, cause) == -1)
		return -1;
	*bytes = t->rbuf;
	*len = r->len;
	return 1;
}
