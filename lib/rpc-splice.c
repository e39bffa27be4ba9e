/*
 * rpc-splice.c: taking one big array of a message as bytes (rpc-frame.h:
 * rpc_reader_splice).
 *
 * A child's bulk replay answer is a few MiB of updates the daemon only
 * forwards.  Parsing them into json-c objects and encoding each again cost
 * more than the child spent making them, so the array that follows the
 * marker is checked by a strict scanner and kept as bytes, and json-c
 * parses the rest of the line with an empty array in its place.  The
 * scanner accepts only what json-c itself writes (no whitespace, json-c's
 * escapes, valid UTF-8, integers it keeps as written), so forwarding the
 * bytes gives what parsing and encoding them would.  Anything else, or a
 * marker that is not where the path says, falls back to the full parse:
 * this is a shortcut, never a second judge of the input.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "rpc-frame.h"
#include "rpc-frame-int.h"

/* Bytes inside a string: 0 plain, 1 '"', 2 '\\', 3 control, 4 non-ASCII. */
static const unsigned char strclass[256] = {
	[0 ... 0x1f] = 3, ['"'] = 1, ['\\'] = 2, [0x80 ... 0xff] = 4
};

struct canon {
	const unsigned char	*p, *e;
	int			 depth;		/* containers still allowed */
};

static int	canon_value(struct canon *);

/* Length of the valid UTF-8 sequence at p (not overlong, no surrogate,
   at most U+10FFFF), 0 when invalid. */
static size_t
utf8_len(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	size_t n, i;
	unsigned v;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, v = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, v = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, v = c & 0x07;
	else
		return 0;
	if ((size_t)(e - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
	    (n == 4 && (v < 0x10000 || v > 0x10ffff)))
		return 0;
	return n;
}

/* An escape as json-c writes it: \" \\ \b \f \n \r \t, or \u00xx
   (lowercase) for the other control characters.  Its length, 0 if not. */
static size_t
canon_escape(const unsigned char *p, const unsigned char *e)
{
	static const char hex[] = "0123456789abcdef";
	const char *h;
	unsigned v;

	if (e - p < 2)
		return 0;
	switch (p[1]) {
	case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
		return 2;
	}
	if (p[1] != 'u' || e - p < 6 || p[2] != '0' || p[3] != '0' ||
	    (p[4] != '0' && p[4] != '1') || p[5] == '\0' ||
	    (h = strchr(hex, p[5])) == NULL)
		return 0;
	v = (unsigned)(p[4] - '0') << 4 | (unsigned)(h - hex);
	return v == '\b' || v == '\t' || v == '\n' || v == '\f' || v == '\r' ? 0 : 6;
}

/* The first byte at or after p that is not plain string text (or e):
   16 at a time where SSE2 is there, since strings are most of the bytes. */
static const unsigned char *
plain_run(const unsigned char *p, const unsigned char *e)
{
#ifdef __SSE2__
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(0x20);
	__m128i v;
	int m;

	for (; e - p >= 16; p += 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)p);
		/* Signed: below 0x20 is a control byte or a non-ASCII one. */
		m = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(
		    _mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bs)),
		    _mm_cmplt_epi8(v, space)));
		if (m != 0)
			return p + __builtin_ctz((unsigned)m);
	}
#endif
	while (p < e && strclass[*p] == 0)
		p++;
	return p;
}

static int
canon_string(struct canon *c)
{
	const unsigned char *p = c->p + 1, *e = c->e;
	size_t n;

	for (;;) {
		p = plain_run(p, e);
		if (p >= e)
			return -1;
		switch (strclass[*p]) {
		case 1:
			c->p = p + 1;
			return 0;
		case 2:
			n = canon_escape(p, e);
			break;
		case 4:
			n = utf8_len(p, e);
			break;
		default:
			return -1;
		}
		if (n == 0)
			return -1;
		p += n;
	}
}

/* A number json-c keeps as written: any double; an integer without "-0"
   and short enough not to be clamped. */
static int
canon_number(struct canon *c)
{
	const unsigned char *p = c->p, *e = c->e, *d;
	int real = 0;

	if (p < e && *p == '-')
		p++;
	d = p;
	if (p < e && *p == '0')
		p++;
	else if (p < e && *p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return -1;
	if (p < e && *p == '.') {
		real = 1;
		if (++p >= e || *p < '0' || *p > '9')
			return -1;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		real = 1;
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return -1;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (!real && (p - d > 18 || (d != c->p && *d == '0')))
		return -1;
	c->p = p;
	return 0;
}

/* A literal word. */
static int
canon_word(struct canon *c, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->e - c->p) < n || memcmp(c->p, w, n) != 0)
		return -1;
	c->p += n;
	return 0;
}

/* An object or array body after its opening bracket. */
static int
canon_container(struct canon *c, int obj)
{
	unsigned char close = obj ? '}' : ']';

	if (--c->depth < 0)
		return -1;
	if (++c->p < c->e && *c->p == close) {
		c->p++;
		c->depth++;
		return 0;
	}
	for (;;) {
		if (obj && (c->p >= c->e || *c->p != '"' || canon_string(c) == -1 ||
		    c->p >= c->e || *c->p++ != ':'))
			return -1;
		if (canon_value(c) == -1 || c->p >= c->e)
			return -1;
		if (*c->p == close)
			break;
		if (*c->p++ != ',')
			return -1;
	}
	c->p++;
	c->depth++;
	return 0;
}

static int
canon_value(struct canon *c)
{
	if (c->p >= c->e)
		return -1;
	switch (*c->p) {
	case '"':
		return canon_string(c);
	case '{':
		return canon_container(c, 1);
	case '[':
		return canon_container(c, 0);
	case 't':
		return canon_word(c, "true");
	case 'f':
		return canon_word(c, "false");
	case 'n':
		return canon_word(c, "null");
	default:
		return canon_number(c);
	}
}

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

/* Scan the array at [p, e) ('[' first) into a new rpc_raw; *end after it. */
static struct rpc_raw *
raw_scan(const char *p, const char *e, int depth, const char **end)
{
	struct canon c = { (const unsigned char *)p + 1, (const unsigned char *)e, depth };
	struct rpc_raw *raw;
	struct rpc_raw_el *nel;
	size_t cap = 0;
	const unsigned char *s;

	if ((raw = calloc(1, sizeof *raw)) == NULL)
		return NULL;
	raw->refs = 1;
	while (c.p < c.e && *c.p != ']') {
		s = c.p;
		if (canon_value(&c) == -1 || c.p >= c.e || (*c.p != ',' && *c.p != ']') ||
		    (*c.p == ',' && (c.p + 1 >= c.e || c.p[1] == ']')))
			goto fail;
		if (raw->n == cap) {
			cap = cap ? cap * 2 : 256;
			if ((nel = reallocarray(raw->el, cap, sizeof *nel)) == NULL)
				goto fail;
			raw->el = nel;
		}
		raw->el[raw->n].off = (size_t)(s - (const unsigned char *)p - 1);
		raw->el[raw->n++].len = (size_t)(c.p - s);
		if (*c.p == ',')
			c.p++;
	}
	if (c.p >= c.e)
		goto fail;
	raw->len = (size_t)(c.p - (const unsigned char *)p - 1);
	if ((raw->bytes = malloc(raw->len + 1)) == NULL)
		goto fail;
	memcpy(raw->bytes, p + 1, raw->len);
	*end = (const char *)c.p + 1;
	return raw;
fail:
	rpc_raw_unref(raw);
	return NULL;
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

	json_tokener_reset(tok);
	if (json_tokener_parse_ex(tok, line, (int)(arr - line)) != NULL ||
	    json_tokener_get_error(tok) != json_tokener_continue ||
	    json_tokener_parse_ex(tok, "[]", 2) != NULL ||
	    json_tokener_get_error(tok) != json_tokener_continue) {
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

int
rpc_splice_parse(struct json_tokener *tok, const char *marker,
    const char *const *path, const char *line, size_t len,
    struct rpc_msg *msg, struct rpc_bad *bad, enum rpc_read_status *st)
{
	const char *m, *arr, *end;
	struct rpc_raw *raw;
	json_object *root, *a;
	size_t mlen = strlen(marker);
	int depth;

	if (len > INT32_MAX || (m = memmem(line, len, marker, mlen)) == NULL ||
	    marker[mlen - 1] != '[')
		return -1;
	arr = m + mlen - 1;
	if ((depth = prefix_depth(line, arr)) < 0 || depth >= RPC_MAX_DEPTH - 2 ||
	    (raw = raw_scan(arr, line + len, RPC_MAX_DEPTH - 2 - depth, &end)) == NULL)
		return -1;
	if ((root = parse_parts(tok, line, arr, end, len)) == NULL ||
	    rpc_frame_suspect(line, (size_t)(arr - line), root) ||
	    rpc_frame_suspect(end, len - (size_t)(end - line), root) ||
	    (a = at_path(root, path)) == NULL) {
		json_object_put(root);
		rpc_raw_unref(raw);
		return -1;
	}
	json_object_set_userdata(a, raw, raw_delete);
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
	free(raw->bytes);
	free(raw->el);
	free(raw);
}
