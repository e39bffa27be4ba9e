/* SPDX-License-Identifier: ISC */
/*
 * transcript.c: the index of a qwen-code JSONL transcript.
 *
 * One pass of pread() in 1 MiB chunks, memchr for newlines, txscan for the
 * top-level keys, json-c only where the scanner gives up.  The index keeps,
 * per logical record, its uuid and parent (16-byte binary for canonical
 * lowercase UUIDs, else a string in a pool), the first fragment's offset and
 * length, type, subtype and a few flags: 56 bytes plus the hash slots.
 * Lines are classified like the reference loader (shared gen-transcript):
 * a non-blank line that is not one JSON value is malformed and goes through
 * the `}{` recovery scan.  A last line without '\n' is not yet written.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transcript.h"
#include "transcript-int.h"
#include "txscan.h"

#define CHUNK		(1u << 20)
#define MAX_LINE	(256u << 20)	/* longer lines are skipped as malformed */

/* Set *cause to a formatted message (caller frees). */
void
transcript_cause(char **cause, const char *fmt, ...)
{
	va_list ap;
	char *s;

	if (cause == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	free(*cause);
	*cause = s;
}

/* Classify a type string. */
static int
type_of(const struct txscan_field *f)
{
	if (f->kind != TXK_STR)
		return 0;
	if (f->len == 4 && memcmp(f->p, "user", 4) == 0)
		return TX_USER;
	if (f->len == 9 && memcmp(f->p, "assistant", 9) == 0)
		return TX_ASSISTANT;
	if (f->len == 11 && memcmp(f->p, "tool_result", 11) == 0)
		return TX_TOOL_RESULT;
	if (f->len == 6 && memcmp(f->p, "system", 6) == 0)
		return TX_SYSTEM;
	return 0;
}

/* Append a fragment to logical record r. */
int
transcript_add_fragment(struct transcript *t, uint32_t r, uint64_t off, uint32_t len)
{
	struct tx_frag *f;
	uint32_t *link, head;

	if (t->nfrag == t->capfrag) {
		size_t n = t->capfrag ? t->capfrag * 2 : 16;
		if ((f = reallocarray(t->frag, n, sizeof *f)) == NULL)
			return -1;
		t->frag = f;
		t->capfrag = n;
	}
	/* Append after the last fragment, known to the first: a uuid repeated
	   N times costs O(N), not O(N^2). */
	head = t->rec[r].frag;
	link = head == 0 ? &t->rec[r].frag : &t->frag[t->frag[head - 1].last - 1].next;
	f = &t->frag[t->nfrag++];
	f->off = off;
	f->len = len;
	f->next = 0;
	f->last = (uint32_t)t->nfrag;
	*link = (uint32_t)t->nfrag;
	if (head != 0)
		t->frag[head - 1].last = (uint32_t)t->nfrag;
	return 0;
}

/* Validate a scanned record and add it to the index; -1 on ENOMEM only. */
static int
add_record(struct transcript *t, const struct txscan *s, uint64_t off,
    size_t len, int recovered)
{
	const struct txscan_field *u = &s->f[TXF_UUID], *pa = &s->f[TXF_PARENT];
	const struct txscan_field *si = &s->f[TXF_SESSION], *su = &s->f[TXF_SUBTYPE];
	struct tx_rec *r;
	struct tx_key key;
	int type, conv;
	int64_t dup;
	uint32_t sub;
	size_t slot = 0;

	if (u->kind != TXK_STR || u->len == 0 ||
	    (pa->kind != TXK_ABSENT && pa->kind != TXK_NULL && pa->kind != TXK_STR) ||
	    si->kind != TXK_STR || si->len != t->sidlen ||
	    memcmp(si->p, t->sid, si->len) != 0 || (type = type_of(&s->f[TXF_TYPE])) == 0 ||
	    len > UINT32_MAX)
		return 0;
	t->st.records++;
	if (recovered)
		t->st.recovered_records++;
	sub = 0;
	if (su->kind == TXK_STR && su->len > 0 &&
	    transcript_intern_sub(t, su->p, su->len, &sub) == -1)
		return -1;
	conv = !(type == TX_SYSTEM && (t->subflags[sub] & TX_SUB_NONCONV));
	if (t->project_fast_p == u->p && (t->project_fast_key.str ? t->project_fast_key.len == u->len : u->len == 36))
		key = t->project_fast_key;		/* hashed by prefetch_uuid */
	else
		transcript_key_text(t, &key, u->p, u->len);
	t->project_fast_p = NULL;
	if (conv && transcript_ht_reserve(t) == -1)
		return -1;
	if (conv && (dup = transcript_ht_probe(t, &key, &slot)) >= 0) {
		t->st.duplicates++;
		t->leaf = dup;
		return transcript_add_fragment(t, (uint32_t)dup, off, (uint32_t)len);
	}
	if ((r = transcript_rec_new(t)) == NULL)
		return -1;
	r->off = off;
	r->len = (uint32_t)len;
	r->type = (uint8_t)type;
	r->sub = sub;
	r->flags = (conv ? TX_F_CONVERSATION : 0) |
	    (s->message ? TX_F_MESSAGE : 0) | (s->role_user ? TX_F_ROLE_USER : 0);
	if (transcript_key_store(t, &key, r->id, &r->kflags, TXR_ID_STR) == -1)
		return -1;
	if (pa->kind != TXK_STR || pa->len == 0) {
		r->kflags |= TXR_PAR_NULL;
	} else {
		struct tx_key pk;

		transcript_key_text(t, &pk, pa->p, pa->len);
		if (transcript_key_store(t, &pk, r->par, &r->kflags, TXR_PAR_STR) == -1)
			return -1;
	}
	if (conv) {
		t->leaf = (int64_t)(t->nrec - 1);
		transcript_ht_set(t, slot, (uint32_t)(t->nrec - 1), &key);
	}
	return 0;
}

/*
 * Drop the tokener after a failed parse of bytes with a \u escape: json-c's
 * reset keeps a high surrogate the failure left pending, and the next
 * record's first \u escape would then decode with a U+FFFD in front (found
 * by fuzz-jtape).  Malformed lines without one keep the tokener.
 */
static void
transcript_json_forget(struct transcript *t, const char *p, size_t n)
{
	if (n == 0 || memmem(p, n, "\\u", 2) == NULL)
		return;
	json_tokener_free(t->tok);
	t->tok = NULL;
}

/* Parse [p, e) with json-c; the object (caller puts) or NULL when invalid. */
json_object *
transcript_json_parse(struct transcript *t, const char *p, size_t n, int *valid)
{
	json_object *obj;

	*valid = 0;
	if (n > INT32_MAX - 1)
		return NULL;
	if (t->tok == NULL &&
	    (t->tok = json_tokener_new_ex(TX_JSON_DEPTH)) == NULL)
		return NULL;
	json_tokener_reset(t->tok);
	json_tokener_set_flags(t->tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(t->tok, p, (int)n);
	if (json_tokener_get_error(t->tok) == json_tokener_continue) {
		/* A bare scalar needs a terminator to finish. */
		obj = json_tokener_parse_ex(t->tok, "", 1);
		if (json_tokener_get_error(t->tok) == json_tokener_success) {
			*valid = 1;
			return obj;
		}
		json_object_put(obj);
		transcript_json_forget(t, p, n);
		return NULL;
	}
	if (json_tokener_get_error(t->tok) != json_tokener_success ||
	    json_tokener_get_parse_end(t->tok) != n) {
		json_object_put(obj);
		transcript_json_forget(t, p, n);
		return NULL;
	}
	*valid = 1;
	return obj;
}

/* A JSON value that parsed: index it when it is an object. */
static int
add_json(struct transcript *t, json_object *obj, uint64_t off, size_t n,
    int recovered)
{
	struct txscan s;
	int rc = 0;

	if (json_object_is_type(obj, json_type_object)) {
		txscan_from_json(obj, &s);
		rc = add_record(t, &s, off, n, recovered);
	}
	json_object_put(obj);
	return rc;
}

struct recover_ctx {
	struct transcript *t;
	const char *base;
	uint64_t off;
	int rc;
};

/* One slice of a malformed line: index it when it is a valid object. */
static void
recover_slice(void *arg, const char *p, const char *e)
{
	struct recover_ctx *c = arg;
	struct txscan s = { .uuid_hook = NULL };
	json_object *obj;
	uint64_t off = c->off + (uint64_t)(p - c->base);
	int valid;

	if (c->rc == -1)
		return;
	switch (txscan_object(p, e, &s)) {
	case TXSCAN_OK:
		c->rc = add_record(c->t, &s, off, e - p, 1);
		return;
	case TXSCAN_BAD:
	case TXSCAN_TRAIL:
		return;
	case TXSCAN_FALLBACK:
		break;
	}
	obj = transcript_json_parse(c->t, p, e - p, &valid);
	if (valid && add_json(c->t, obj, off, e - p, 1) == -1)
		c->rc = -1;
}

/* Index one line [p, e) that starts at file offset off. */
static int
index_line(struct transcript *t, uint64_t off, const char *p, const char *e)
{
	struct recover_ctx rc;
	struct txscan s = { .uuid_hook = NULL };
	json_object *obj;
	const char *b = p;
	int valid;

	while (p < e && txscan_isspace((unsigned char)*p))
		p++;
	while (e > p && txscan_isspace((unsigned char)e[-1]))
		e--;
	if (p == e)
		return 0;
	off += (uint64_t)(p - b);
	switch (txscan_object(p, e, &s)) {
	case TXSCAN_OK:
		return add_record(t, &s, off, e - p, 0);
	case TXSCAN_FALLBACK:
		/* Escaped keys, deep nesting, not an object: json-c decides. */
		obj = transcript_json_parse(t, p, e - p, &valid);
		if (valid)
			return add_json(t, obj, off, e - p, 0);
		break;
	case TXSCAN_BAD:
	case TXSCAN_TRAIL:
		break;
	}
	t->st.malformed_lines++;
	rc.t = t;
	rc.base = p;
	rc.off = off;
	rc.rc = 0;
	txscan_recover(p, e, recover_slice, &rc);
	return rc.rc;
}

/* Scanner hook: hash the uuid as soon as it is seen and prefetch its slot,
   so the probe after the (much longer) rest of the line does not stall. */
static void
prefetch_uuid(void *arg, const char *p, size_t n)
{
	struct transcript *t = arg;

	transcript_key_text(t, &t->project_fast_key, p, n);
	t->project_fast_p = p;
	__builtin_prefetch(&t->ht[t->project_fast_key.h & t->htmask]);
}

/* Index the line starting at buf[start] in one pass when it is one valid
   object; returns the offset after its '\n', 0 when the fast path does not
   apply (then the line is found with memchr and indexed by index_line). */
static size_t
fast_line(struct transcript *t, uint64_t off, const char *buf, size_t start,
    size_t len, int *rc)
{
	const char *p = buf + start, *e = buf + len, *end, *nl;
	struct txscan s;

	/* The scan sets every other member: no initializer (a memset a line). */
	s.uuid_hook = prefetch_uuid;
	s.hook_arg = t;
	while (p < e && *p != '\n' && txscan_isspace((unsigned char)*p))
		p++;
	t->project_fast_p = NULL;
	if (p >= e || *p != '{' || !txscan_line(p, e, &s, &end, &nl)) {
		t->project_fast_p = NULL;		/* never reuse a hash across lines */
		return 0;
	}
	*rc = add_record(t, &s, off + (uint64_t)(p - buf), (size_t)(end - p), 0);
	return (size_t)(nl - buf) + 1;
}

/* The read buffer of a pass from off: CHUNK bytes, or twice that on huge
   pages when there is that much to read (a fresh child faults every page
   of it in; a small file's pass would pay for a whole huge page). */
static char *
read_buf(const struct transcript *t, uint64_t off, size_t *cap)
{
	struct stat st;
	uint64_t end = t->limit;

	if (end == 0 && fstat(t->fd, &st) == 0 && st.st_size > 0)
		end = (uint64_t)st.st_size;
	if (end > off && end - off >= 2 * CHUNK) {
		*cap = 2 * CHUNK;
		return transcript_big_realloc(NULL, 0, cap);
	}
	*cap = CHUNK;
	return malloc(CHUNK);
}

int
transcript_index_pass(struct transcript *t, char **cause)
{
	struct tx_rbuf rb = { NULL, 0 };
	int rc;

	rc = transcript_index_pass_buf(t, &rb, cause);
	free(rb.p);
	return rc;
}

/* Index whole lines from t->indexed to the end of the file (or t->limit),
   read into rb (allocated on first use, grown for a long line, left to
   the caller: the chunks of a pass share a thread's buffer). */
int
transcript_index_pass_buf(struct transcript *t, struct tx_rbuf *rb, char **cause)
{
	char *buf, *nb, *nl;
	size_t cap, len = 0, scan = 0, start, want, next;
	uint64_t off = t->indexed;
	ssize_t n;
	int skipping = 0, rc = 0;

	/* An index cache in place is read-only: own it before adding to it. */
	if (t->map != NULL && transcript_cache_own(t, cause) == -1)
		return -1;
	if (rb->p == NULL && (rb->p = read_buf(t, off, &rb->cap)) == NULL)
		goto nomem;
	buf = rb->p;
	cap = rb->cap;
	(void)posix_fadvise(t->fd, (off_t)off, 0, POSIX_FADV_SEQUENTIAL);
	for (;;) {
		if (cap - len < CHUNK / 2) {
			want = cap * 2;
			if ((nb = transcript_big_realloc(buf, len, &want)) == NULL)
				goto nomem;
			rb->p = buf = nb;
			rb->cap = cap = want;
		}
		want = cap - len > CHUNK ? CHUNK : cap - len;
		if (t->limit != 0 && want > t->limit - (off + len))
			want = (size_t)(t->limit - (off + len));
		n = want == 0 ? 0 : pread(t->fd, buf + len, want, (off_t)(off + len));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			transcript_cause(cause, "read %s: %s", t->path, strerror(errno));
			return -1;
		}
		if (n == 0)
			break;
		t->bytes_read += (uint64_t)n;
		len += (size_t)n;
		start = 0;
		for (;;) {
			/* A fresh line: try the one-pass scanner first. */
			if (!skipping && scan <= start &&
			    (next = fast_line(t, off, buf, start, len, &rc)) != 0) {
				if (rc == -1)
					goto nomem;
				start = scan = next;
				continue;
			}
			if (scan < start)
				scan = start;
			if ((nl = memchr(buf + scan, '\n', len - scan)) == NULL)
				break;
			if (skipping) {
				skipping = 0;
				t->st.malformed_lines++;
			} else if (index_line(t, off + start, buf + start, nl) == -1)
				goto nomem;
			start = scan = (size_t)(nl - buf) + 1;
		}
		scan = len;
		if (start == 0 && (skipping || len >= MAX_LINE)) {
			/* An absurd line: dropped up to its newline, then counted. */
			skipping = 1;
			start = len;
		}
		if (start > 0) {
			memmove(buf, buf + start, len - start);
			len -= start;
			scan -= start;
			off += start;
			if (!skipping)
				t->indexed = off;
		}
	}
	t->pending = off + len - t->indexed;
	t->st.bytes = t->indexed;
	return 0;
nomem:
	transcript_cause(cause, "index %s: out of memory", t->path);
	return -1;
}

/* Default session id: the file's basename without ".jsonl". */
static char *
default_sid(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	n = strlen(b);
	if (n > 6 && strcmp(b + n - 6, ".jsonl") == 0)
		n -= 6;
	return strndup(b, n);
}

/* A transcript with its file open and no index yet (the caller builds or
   loads one); NULL + cause, errno kept for ENOENT/EISDIR. *sb gets fstat. */
struct transcript *
transcript_file_open(const char *path, const char *session_id, struct stat *sb,
    char **cause)
{
	struct transcript *t;
	int saved;

	if ((t = calloc(1, sizeof *t)) == NULL) {
		transcript_cause(cause, "out of memory");
		return NULL;
	}
	t->fd = -1;
	t->leaf = -1;
	t->path = strdup(path);
	t->sid = session_id ? strdup(session_id) : default_sid(path);
	if (t->path == NULL || t->sid == NULL) {
		transcript_cause(cause, "out of memory");
		transcript_free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->sidlen = strlen(t->sid);
	/*
	 * Not through a symlink, and without blocking on a FIFO someone put
	 * in the chats directory: fstat below refuses anything not regular.
	 */
	if ((t->fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		saved = errno;
		transcript_cause(cause, "open %s: %s", path, saved == ELOOP ?
		    "a symbolic link" : strerror(saved));
		transcript_free(t);
		errno = saved;
		return NULL;
	}
	if (fstat(t->fd, sb) == -1 || !S_ISREG(sb->st_mode)) {
		saved = S_ISDIR(sb->st_mode) ? EISDIR : EINVAL;
		transcript_cause(cause, "%s: not a regular file", path);
		transcript_free(t);
		errno = saved;
		return NULL;
	}
	t->dev = sb->st_dev;
	t->ino = sb->st_ino;
	return t;
}

/* Index the whole file from scratch (t fresh from tx_new). */
int
transcript_index_full(struct transcript *t, uint64_t size, char **cause)
{
	if (transcript_index_init(t, size) == -1) {
		transcript_cause(cause, "out of memory");
		return -1;
	}
	return transcript_index_split(t, size, cause);
}

struct transcript *
transcript_open(const char *path, const char *session_id, char **cause)
{
	struct transcript *t;
	struct stat sb;

	if ((t = transcript_file_open(path, session_id, &sb, cause)) == NULL)
		return NULL;
	if (transcript_index_full(t, (uint64_t)sb.st_size, cause) == -1) {
		transcript_free(t);
		return NULL;
	}
	return t;
}

int
transcript_refresh(struct transcript *t, char **cause)
{
	struct stat sb, pb;

	if (fstat(t->fd, &sb) == -1) {
		transcript_cause(cause, "stat %s: %s", t->path, strerror(errno));
		return -1;
	}
	if (lstat(t->path, &pb) == -1 || pb.st_dev != t->dev || pb.st_ino != t->ino) {
		transcript_cause(cause, "%s was replaced or removed", t->path);
		return -1;
	}
	if ((uint64_t)sb.st_size < t->indexed) {
		transcript_cause(cause, "%s was truncated below the indexed size", t->path);
		return -1;
	}
	if ((uint64_t)sb.st_size == t->indexed + t->pending)
		return 0;
	return transcript_index_pass(t, cause);
}

void
transcript_free(struct transcript *t)
{
	if (t == NULL)
		return;
	if (t->fd != -1)
		close(t->fd);
	if (t->tok != NULL)
		json_tokener_free(t->tok);
	transcript_index_free(t);
	free(t->path);
	free(t->sid);
	free(t);
}

const struct tx_stats *
transcript_stats(const struct transcript *t)
{
	return &t->st;
}

uint64_t
transcript_size(const struct transcript *t)
{
	return t->indexed;
}

uint64_t
transcript_bytes_read(const struct transcript *t)
{
	return t->bytes_read;
}

uint64_t
transcript_pending_bytes(const struct transcript *t)
{
	return t->pending;
}

const char *
transcript_path(const struct transcript *t)
{
	return t->path;
}

int64_t
transcript_leaf(const struct transcript *t)
{
	return t->leaf;
}
