/*
 * txscan.c: string-aware top-level key scanner for transcript lines.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "txscan.h"

#define MAX_DEPTH 64

int
txscan_isspace(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* Skip JSON whitespace. */
static inline const char *
ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p is just after an opening quote: return just after the closing one. */
static inline const char *
skip_str(const char *p, const char *e)
{
	const char *q, *b;

	for (;;) {
		q = memchr(p, '"', e - p);
		if (q == NULL)
			return NULL;
		/* The opening quote bounds the backslash run. */
		for (b = q; b[-1] == '\\'; b--)
			;
		if (((q - b) & 1) == 0)
			return q + 1;
		p = q + 1;
	}
}

/* Skip an object or array starting at p; *deep set when too deep. */
static const char *
skip_nested(const char *p, const char *e, int *deep)
{
	uint64_t arrays = 0;
	int depth = 0;
	char c;

	while (p < e) {
		c = *p;
		if (c == '"') {
			if ((p = skip_str(p + 1, e)) == NULL)
				return NULL;
			continue;
		}
		p++;
		if (c == '{' || c == '[') {
			if (depth == MAX_DEPTH) {
				*deep = 1;
				return NULL;
			}
			if (c == '[')
				arrays |= 1ull << depth;
			else
				arrays &= ~(1ull << depth);
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return NULL;
			depth--;
			if ((int)((arrays >> depth) & 1) != (c == ']'))
				return NULL;
			if (depth == 0)
				return p;
		}
	}
	return NULL;
}

/* Skip one value at p (not whitespace). */
static const char *
skip_value(const char *p, const char *e, int *deep)
{
	const char *s = p;

	if (*p == '"')
		return skip_str(p + 1, e);
	if (*p == '{' || *p == '[')
		return skip_nested(p, e, deep);
	if (*p == '\0' || strchr("-0123456789tfnNI", *p) == NULL)
		return NULL;
	while (p < e && *p != '\0' && strchr(",}] \t\r\n", *p) == NULL)
		p++;
	if (*s == 't' && (p - s != 4 || memcmp(s, "true", 4) != 0))
		return NULL;
	if (*s == 'f' && (p - s != 5 || memcmp(s, "false", 5) != 0))
		return NULL;
	if (*s == 'n' && (p - s != 4 || memcmp(s, "null", 4) != 0))
		return NULL;
	return p;
}

enum { KEY_OTHER = TXF_N, KEY_MESSAGE, KEY_ROLE };

/* Which key of interest [k, k+n) names. */
static int
key_id(const char *k, size_t n)
{
	switch (n) {
	case 4:
		if (memcmp(k, "uuid", 4) == 0)
			return TXF_UUID;
		if (memcmp(k, "type", 4) == 0)
			return TXF_TYPE;
		if (memcmp(k, "role", 4) == 0)
			return KEY_ROLE;
		break;
	case 7:
		if (memcmp(k, "subtype", 7) == 0)
			return TXF_SUBTYPE;
		if (memcmp(k, "message", 7) == 0)
			return KEY_MESSAGE;
		break;
	case 9:
		if (memcmp(k, "sessionId", 9) == 0)
			return TXF_SESSION;
		break;
	case 10:
		if (memcmp(k, "parentUuid", 10) == 0)
			return TXF_PARENT;
		break;
	}
	return KEY_OTHER;
}

/* Read one object member's key at *pp; returns its id, -1 bad, -2 fallback. */
static int
member_key(const char **pp, const char *e)
{
	const char *p = *pp, *k, *ke;
	int id;

	if (p >= e || *p != '"')
		return -1;
	k = p + 1;
	if ((ke = skip_str(k, e)) == NULL)
		return -1;
	if (memchr(k, '\\', ke - 1 - k) != NULL)
		return -2;
	id = key_id(k, ke - 1 - k);
	p = ws(ke, e);
	if (p >= e || *p != ':')
		return -1;
	p = ws(p + 1, e);
	if (p >= e)
		return -1;
	*pp = p;
	return id;
}

/* Read a field value: strings are recorded, others classified and skipped. */
static int
field_value(const char **pp, const char *e, struct txscan_field *f, int *deep)
{
	const char *p = *pp, *q;

	if (*p == '"') {
		if ((q = skip_str(p + 1, e)) == NULL)
			return TXSCAN_BAD;
		f->kind = TXK_STR;
		f->p = p + 1;
		f->len = q - 1 - (p + 1);
		if (memchr(f->p, '\\', f->len) != NULL)
			return TXSCAN_FALLBACK;
	} else {
		if ((q = skip_value(p, e, deep)) == NULL)
			return *deep ? TXSCAN_FALLBACK : TXSCAN_BAD;
		f->kind = (q - p == 4 && memcmp(p, "null", 4) == 0) ?
		    TXK_NULL : TXK_OTHER;
	}
	*pp = q;
	return TXSCAN_OK;
}

/* After a member: ',' continues (1), '}' ends (0), anything else is bad. */
static int
member_end(const char **pp, const char *e)
{
	const char *p = ws(*pp, e);

	if (p >= e)
		return -1;
	if (*p == ',') {
		*pp = ws(p + 1, e);
		return 1;
	}
	if (*p == '}') {
		*pp = p + 1;
		return 0;
	}
	return -1;
}

/* The message value: note a non-empty object and whether its role is user. */
static int
scan_message(const char **pp, const char *e, struct txscan *s, int *deep)
{
	const char *p = *pp;
	struct txscan_field role;
	int id, r, more;

	s->message = s->role_user = 0;
	if (*p != '{') {
		if ((p = skip_value(p, e, deep)) == NULL)
			return *deep ? TXSCAN_FALLBACK : TXSCAN_BAD;
		*pp = p;
		return TXSCAN_OK;
	}
	p = ws(p + 1, e);
	if (p < e && *p == '}') {
		*pp = p + 1;
		return TXSCAN_OK;
	}
	s->message = 1;
	do {
		if ((id = member_key(&p, e)) < 0)
			return id == -2 ? TXSCAN_FALLBACK : TXSCAN_BAD;
		memset(&role, 0, sizeof role);
		if ((r = field_value(&p, e, &role, deep)) != TXSCAN_OK)
			return r;
		if (id == KEY_ROLE)
			s->role_user = role.kind == TXK_STR && role.len == 4 &&
			    memcmp(role.p, "user", 4) == 0;
		if ((more = member_end(&p, e)) < 0)
			return TXSCAN_BAD;
	} while (more);
	*pp = p;
	return TXSCAN_OK;
}

enum txscan_result
txscan_object(const char *p, const char *e, struct txscan *s)
{
	struct txscan_field scratch;
	int id, r, more, deep = 0;

	memset(s, 0, sizeof *s);
	if (p >= e || *p != '{')
		return TXSCAN_FALLBACK;
	p = ws(p + 1, e);
	if (p < e && *p == '}') {
		p++;
		goto end;
	}
	do {
		if ((id = member_key(&p, e)) < 0)
			return id == -2 ? TXSCAN_FALLBACK : TXSCAN_BAD;
		if (id == KEY_MESSAGE)
			r = scan_message(&p, e, s, &deep);
		else if (id < TXF_N)
			r = field_value(&p, e, &s->f[id], &deep);
		else
			r = field_value(&p, e, &scratch, &deep);
		if (r != TXSCAN_OK)
			return r;
		if ((more = member_end(&p, e)) < 0)
			return TXSCAN_BAD;
	} while (more);
end:
	p = ws(p, e);
	return p == e ? TXSCAN_OK : TXSCAN_TRAIL;
}

/* One field from a json-c member. */
static void
json_field(json_object *obj, const char *key, struct txscan_field *f)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v)) {
		f->kind = TXK_ABSENT;
	} else if (v == NULL) {
		f->kind = TXK_NULL;
	} else if (json_object_is_type(v, json_type_string)) {
		f->kind = TXK_STR;
		f->p = json_object_get_string(v);
		f->len = json_object_get_string_len(v);
	} else {
		f->kind = TXK_OTHER;
	}
}

void
txscan_from_json(json_object *obj, struct txscan *s)
{
	static const char *const keys[TXF_N] = {
		"uuid", "parentUuid", "sessionId", "type", "subtype"
	};
	json_object *msg, *role;
	int i;

	memset(s, 0, sizeof *s);
	for (i = 0; i < TXF_N; i++)
		json_field(obj, keys[i], &s->f[i]);
	if (json_object_object_get_ex(obj, "message", &msg) &&
	    json_object_is_type(msg, json_type_object) &&
	    json_object_object_length(msg) > 0) {
		s->message = 1;
		s->role_user = json_object_object_get_ex(msg, "role", &role) &&
		    json_object_is_type(role, json_type_string) &&
		    strcmp(json_object_get_string(role), "user") == 0;
	}
}

void
txscan_recover(const char *p, const char *e,
    void (*cb)(void *, const char *, const char *), void *arg)
{
	const char *start = NULL;
	int depth = 0, in_str = 0, esc = 0;

	for (; p < e; p++) {
		if (esc) {
			esc = 0;
			continue;
		}
		if (in_str) {
			if (*p == '\\')
				esc = 1;
			else if (*p == '"')
				in_str = 0;
			continue;
		}
		if (*p == '"') {
			in_str = 1;
		} else if (*p == '{') {
			if (depth++ == 0)
				start = p;
		} else if (*p == '}') {
			depth--;
			if (depth == 0 && start != NULL) {
				cb(arg, start, p + 1);
				start = NULL;
			} else if (depth < 0) {
				depth = 0;
				start = NULL;
			}
		}
	}
}
