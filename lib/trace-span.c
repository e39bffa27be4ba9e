/* SPDX-License-Identifier: ISC */
/*
 * trace-span.c: building spans in memory: attributes, events and status,
 * within the limits of trace.h, with strings cleaned to bounded UTF-8.
 * No global state, so spans can be built on any thread.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "trace-int.h"

/* Length of the valid UTF-8 sequence at s (avail bytes), 0 if invalid. */
static size_t
utf8_seq_len(const unsigned char *s, size_t avail)
{
	uint32_t cp;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (avail < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)))
		return 0;
	if (len == 4 && (cp < 0x10000 || cp > 0x10ffff))
		return 0;
	return len;
}

/*
 * Copy in as valid UTF-8 of at most SPAN_MAX_STR bytes into out (NULL: only
 * measure), cutting on a character boundary; invalid bytes become U+FFFD.
 */
static size_t
str_clean(const char *in, char *out)
{
	const unsigned char *s = (const unsigned char *)in, *src;
	size_t o = 0, len, adv;

	while (*s != '\0') {
		adv = len = utf8_seq_len(s, strnlen((const char *)s, 4));
		src = s;
		if (len == 0) {
			src = (const unsigned char *)"\xef\xbf\xbd";
			len = 3;
			adv = 1;
		}
		if (o + len > SPAN_MAX_STR)
			break;
		if (out != NULL)
			memcpy(out + o, src, len);
		o += len;
		s += adv;
	}
	if (out != NULL)
		out[o] = '\0';
	return o;
}

/* A cleaned copy of s charged to the span's budget; NULL when over it. */
static char *
span_str(struct span *sp, const char *s)
{
	size_t len = str_clean(s, NULL);
	char *copy;

	if (sp->bytes + len + 1 > SPAN_MAX_BYTES)
		return NULL;
	if ((copy = malloc(len + 1)) == NULL)
		return NULL;
	str_clean(s, copy);
	sp->bytes += len + 1;
	return copy;
}

/* Free a string made by span_str and give its bytes back. */
static void
span_unstr(struct span *sp, char *s)
{
	if (s == NULL)
		return;
	sp->bytes -= strlen(s) + 1;
	free(s);
}

/* The attribute with this key, or NULL. */
static struct span_attr *
attr_find(struct attr_list *l, const char *key)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return &l->v[i];
	return NULL;
}

/* A new slot at the end of l, or NULL when full or out of memory. */
static struct span_attr *
attr_append(struct span *sp, struct attr_list *l, const char *key)
{
	struct span_attr *v;
	size_t cap;
	char *k;

	if (l->n >= l->max)
		return NULL;
	if (l->n == l->cap) {
		cap = l->cap == 0 ? 8 : l->cap * 2;
		if ((v = reallocarray(l->v, cap, sizeof(*v))) == NULL)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	if ((k = span_str(sp, key)) == NULL)
		return NULL;
	l->v[l->n].key = k;
	l->v[l->n].type = ATTR_INT;
	return &l->v[l->n++];
}

/* Set key to val in l (replacing an old value); count a drop on failure. */
static void
attr_put(struct span *sp, struct attr_list *l, const char *key,
    const struct span_attr *val)
{
	struct span_attr *a;
	char *s = NULL;

	if (key == NULL || (val->type == ATTR_STR && val->v.s == NULL))
		return;
	if (val->type == ATTR_STR && (s = span_str(sp, val->v.s)) == NULL) {
		l->dropped++;
		return;
	}
	if ((a = attr_find(l, key)) == NULL &&
	    (a = attr_append(sp, l, key)) == NULL) {
		span_unstr(sp, s);
		l->dropped++;
		return;
	}
	if (a->type == ATTR_STR)
		span_unstr(sp, a->v.s);
	a->type = val->type;
	a->v = val->v;
	if (s != NULL)
		a->v.s = s;
}

/* Free the attributes of l. */
static void
attr_list_free(struct attr_list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		if (l->v[i].type == ATTR_STR)
			free(l->v[i].v.s);
	}
	free(l->v);
}

/* Wall time now, measured as start plus elapsed monotonic time. */
uint64_t
span_now_ns(const struct span *sp)
{
	return sp->start_ns + (clock_mono_ns() - sp->start_mono_ns);
}

/* A new span starting now, root or child of parent; caller ends or frees. */
struct span *
span_start(const char *name, enum span_kind kind,
    const struct trace_ctx *parent)
{
	struct span *sp;

	if ((sp = calloc(1, sizeof(*sp))) == NULL)
		return NULL;
	sp->attrs.max = SPAN_MAX_ATTRS;
	if ((sp->name = span_str(sp, name != NULL ? name : "unnamed")) == NULL) {
		free(sp);
		return NULL;
	}
	if (trace_ctx_valid(parent)) {
		memcpy(sp->ctx.trace_id, parent->trace_id, 16);
		memcpy(sp->parent_id, parent->span_id, 8);
		sp->ctx.flags = parent->flags;
		sp->has_parent = 1;
		trace_new_span_id(sp->ctx.span_id);
	} else
		trace_ctx_new_root(&sp->ctx);
	sp->kind = kind >= SPAN_KIND_INTERNAL && kind <= SPAN_KIND_CONSUMER ?
	    kind : SPAN_KIND_INTERNAL;
	sp->start_ns = clock_wall_ns();
	sp->start_mono_ns = clock_mono_ns();
	return sp;
}

/* The span's own context, for traceparent propagation. */
void
span_context(const struct span *sp, struct trace_ctx *out)
{
	if (out == NULL)
		return;
	if (sp == NULL)
		memset(out, 0, sizeof(*out));
	else
		*out = sp->ctx;
}

/* Fix the end time at now, once. */
void
span_mark_end(struct span *sp)
{
	if (sp != NULL && sp->end_ns == 0)
		sp->end_ns = span_now_ns(sp);
}

/* Set a string attribute (copied, cleaned, capped). */
void
span_set_str(struct span *sp, const char *key, const char *value)
{
	struct span_attr a = { .type = ATTR_STR, .v.s = (char *)value };

	if (sp != NULL)
		attr_put(sp, &sp->attrs, key, &a);
}

/* Set an int attribute (a decimal string in OTLP/JSON). */
void
span_set_int(struct span *sp, const char *key, int64_t value)
{
	struct span_attr a = { .type = ATTR_INT, .v.i = value };

	if (sp != NULL)
		attr_put(sp, &sp->attrs, key, &a);
}

/* Set a bool attribute. */
void
span_set_bool(struct span *sp, const char *key, int value)
{
	struct span_attr a = { .type = ATTR_BOOL, .v.b = value != 0 };

	if (sp != NULL)
		attr_put(sp, &sp->attrs, key, &a);
}

/* Set a double attribute. */
void
span_set_double(struct span *sp, const char *key, double value)
{
	struct span_attr a = { .type = ATTR_DOUBLE, .v.d = value };

	if (sp != NULL)
		attr_put(sp, &sp->attrs, key, &a);
}

/* Add an event at now; it takes the span_event_set_* calls that follow. */
void
span_add_event(struct span *sp, const char *name)
{
	struct span_event *ev;
	size_t cap;
	char *n;

	if (sp == NULL)
		return;
	sp->cur_event = 0;
	if (sp->nevents >= SPAN_MAX_EVENTS)
		goto drop;
	if (sp->nevents == sp->evcap) {
		cap = sp->evcap == 0 ? 4 : sp->evcap * 2;
		if ((ev = reallocarray(sp->events, cap, sizeof(*ev))) == NULL)
			goto drop;
		sp->events = ev;
		sp->evcap = cap;
	}
	if ((n = span_str(sp, name != NULL ? name : "unnamed")) == NULL)
		goto drop;
	ev = &sp->events[sp->nevents++];
	memset(ev, 0, sizeof(*ev));
	ev->name = n;
	ev->time_ns = span_now_ns(sp);
	ev->attrs.max = SPAN_MAX_EVENT_ATTRS;
	sp->cur_event = 1;
	return;
drop:
	sp->dropped_events++;
}

/* Set a string attribute on the last event (none if it was dropped). */
void
span_event_set_str(struct span *sp, const char *key, const char *value)
{
	struct span_attr a = { .type = ATTR_STR, .v.s = (char *)value };

	if (sp != NULL && sp->cur_event)
		attr_put(sp, &sp->events[sp->nevents - 1].attrs, key, &a);
}

/* Set an int attribute on the last event (none if it was dropped). */
void
span_event_set_int(struct span *sp, const char *key, int64_t value)
{
	struct span_attr a = { .type = ATTR_INT, .v.i = value };

	if (sp != NULL && sp->cur_event)
		attr_put(sp, &sp->events[sp->nevents - 1].attrs, key, &a);
}

/* Set the status code and message (copied; NULL clears it). */
void
span_set_status(struct span *sp, enum span_status status, const char *message)
{
	if (sp == NULL)
		return;
	sp->status = (unsigned)status <= SPAN_STATUS_ERROR ? status :
	    SPAN_STATUS_ERROR;
	span_unstr(sp, sp->status_msg);
	sp->status_msg = message != NULL ? span_str(sp, message) : NULL;
}

/* Free without writing.  NULL-safe. */
void
span_free(struct span *sp)
{
	size_t i;

	if (sp == NULL)
		return;
	for (i = 0; i < sp->nevents; i++) {
		free(sp->events[i].name);
		attr_list_free(&sp->events[i].attrs);
	}
	free(sp->events);
	attr_list_free(&sp->attrs);
	free(sp->status_msg);
	free(sp->name);
	free(sp);
}
