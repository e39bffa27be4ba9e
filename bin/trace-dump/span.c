/* SPDX-License-Identifier: ISC */
/*
 * span.c: OTLP/JSON span objects into struct tspan, and their accessors.
 *
 * Shape (one ExportTraceServiceRequest per line): resourceSpans[].
 * scopeSpans[].spans[] with hex traceId/spanId/parentSpanId, decimal-string
 * start/endTimeUnixNano, attributes [{key, value:{stringValue|intValue|
 * boolValue|doubleValue}}], events [{timeUnixNano, name, attributes}] and
 * status {code, message}.  Everything kept is copied, so the document can be
 * freed as soon as the line is done.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "json.h"
#include "trace-dump.h"
#include "xmalloc.h"

/* Free the attributes of an array. */
static void
attrs_free(struct tattr *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(a[i].key);
		free(a[i].s);
	}
	free(a);
}

/* Free a span's contents and the span itself. */
void
tspan_free(struct tspan *sp)
{
	if (sp == NULL)
		return;
	free(sp->name);
	free(sp->service);
	free(sp->status_msg);
	attrs_free(sp->attrs, sp->nattrs);
	for (size_t i = 0; i < sp->nevents; i++) {
		free(sp->events[i].name);
		attrs_free(sp->events[i].attrs, sp->events[i].nattrs);
	}
	free(sp->events);
	free(sp);
}

/* Look an attribute up in an array; NULL when absent. */
static const struct tattr *
attrs_find(const struct tattr *a, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i].key, key) == 0)
			return &a[i];
	return NULL;
}

/* The span's attribute key, or NULL (borrowed). */
const struct tattr *
tspan_attr(const struct tspan *sp, const char *key)
{
	return attrs_find(sp->attrs, sp->nattrs, key);
}

/* The string value of a span attribute, or NULL (borrowed). */
const char *
tspan_str(const struct tspan *sp, const char *key)
{
	const struct tattr *a = tspan_attr(sp, key);

	return a != NULL && a->type == TATTR_STR ? a->s : NULL;
}

/* A numeric attribute: int, double, or a string holding a number. */
int
tspan_num(const struct tspan *sp, const char *key, double *out)
{
	const struct tattr *a = tspan_attr(sp, key);
	char *end;

	if (a == NULL)
		return -1;
	switch (a->type) {
	case TATTR_INT:
		*out = (double)a->i;
		return 0;
	case TATTR_DOUBLE:
		*out = a->d;
		return 0;
	case TATTR_STR:
		errno = 0;
		*out = strtod(a->s, &end);
		return errno == 0 && end != a->s && *end == '\0' ? 0 : -1;
	default:
		return -1;
	}
}

/* The first event called name, or NULL (borrowed). */
const struct tevent *
tspan_event(const struct tspan *sp, const char *name)
{
	for (size_t i = 0; i < sp->nevents; i++)
		if (strcmp(sp->events[i].name, name) == 0)
			return &sp->events[i];
	return NULL;
}

/* The string value of an event attribute, or NULL (borrowed). */
const char *
tevent_str(const struct tevent *ev, const char *key)
{
	const struct tattr *a = attrs_find(ev->attrs, ev->nattrs, key);

	return a != NULL && a->type == TATTR_STR ? a->s : NULL;
}

/* Parse a decimal uint64 held in a string or an integer member. */
static int
get_u64(json_object *obj, const char *key, uint64_t *out)
{
	json_object *v;
	const char *s;
	char *end;

	if (!json_object_object_get_ex(obj, key, &v))
		return -1;
	if (json_object_is_type(v, json_type_int)) {
		if (json_object_get_int64(v) < 0)
			return -1;
		*out = (uint64_t)json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	s = json_object_get_string(v);
	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0' ? 0 : -1;
}

/* Copy a lowercase hex id of exactly len chars into buf; -1 when invalid. */
static int
get_hex(json_object *obj, const char *key, size_t len, char *buf, int optional)
{
	json_object *v = json_get(obj, key, json_type_string);
	const char *s;

	buf[0] = '\0';
	if (v == NULL || json_object_get_string_len(v) == 0)
		return optional ? 0 : -1;
	s = json_object_get_string(v);
	if (strlen(s) != len)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return -1;
		buf[i] = (char)tolower((unsigned char)s[i]);
	}
	buf[len] = '\0';
	return 0;
}

/* Convert one {key, value} entry; -1 when it has no usable key. */
static int
attr_parse(json_object *kv, struct tattr *a)
{
	json_object *key = json_get(kv, "key", json_type_string);
	json_object *val = json_get(kv, "value", json_type_object), *v;
	char *end;

	memset(a, 0, sizeof(*a));
	if (key == NULL || (a->key = strdup(json_object_get_string(key))) == NULL)
		return -1;
	a->type = TATTR_OTHER;
	if (val == NULL)
		return 0;
	if ((v = json_get(val, "stringValue", json_type_string)) != NULL) {
		if ((a->s = strdup(json_object_get_string(v))) != NULL)
			a->type = TATTR_STR;
	} else if (json_object_object_get_ex(val, "intValue", &v)) {
		if (json_object_is_type(v, json_type_int)) {
			a->i = json_object_get_int64(v);
			a->type = TATTR_INT;
		} else if (json_object_is_type(v, json_type_string)) {
			errno = 0;
			a->i = strtoll(json_object_get_string(v), &end, 10);
			if (errno == 0 && *end == '\0' &&
			    end != json_object_get_string(v))
				a->type = TATTR_INT;
		}
	} else if ((v = json_get(val, "boolValue", json_type_boolean)) != NULL) {
		a->i = json_object_get_boolean(v);
		a->type = TATTR_BOOL;
	} else if (json_object_object_get_ex(val, "doubleValue", &v) &&
	    (json_object_is_type(v, json_type_double) ||
	    json_object_is_type(v, json_type_int))) {
		a->d = json_object_get_double(v);
		a->type = TATTR_DOUBLE;
	}
	return 0;
}

/* Convert an attributes array; entries without a key are skipped. */
static void
attrs_parse(json_object *obj, struct tattr **out, size_t *nout)
{
	json_object *arr = json_get(obj, "attributes", json_type_array);
	size_t n = arr != NULL ? json_object_array_length(arr) : 0, k = 0;

	*out = NULL;
	*nout = 0;
	if (n == 0 || (*out = calloc(n, sizeof(**out))) == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *kv = json_object_array_get_idx(arr, i);

		if (json_object_is_type(kv, json_type_object) &&
		    attr_parse(kv, &(*out)[k]) == 0)
			k++;
	}
	*nout = k;
}

/* Convert the events array; events without a name are skipped. */
static void
events_parse(json_object *obj, struct tspan *sp)
{
	json_object *arr = json_get(obj, "events", json_type_array);
	size_t n = arr != NULL ? json_object_array_length(arr) : 0;

	if (n == 0 || (sp->events = calloc(n, sizeof(*sp->events))) == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(arr, i), *name;
		struct tevent *ev = &sp->events[sp->nevents];

		if (!json_object_is_type(e, json_type_object) ||
		    (name = json_get(e, "name", json_type_string)) == NULL ||
		    (ev->name = strdup(json_object_get_string(name))) == NULL)
			continue;
		if (get_u64(e, "timeUnixNano", &ev->time_ns) == -1)
			ev->time_ns = 0;
		attrs_parse(e, &ev->attrs, &ev->nattrs);
		sp->nevents++;
	}
}

/* Convert the status object: code as number or OTLP enum name. */
static void
status_parse(json_object *obj, struct tspan *sp)
{
	json_object *st = json_get(obj, "status", json_type_object), *v;

	if (st == NULL)
		return;
	if (json_object_object_get_ex(st, "code", &v)) {
		if (json_object_is_type(v, json_type_int))
			sp->status_code = json_object_get_int(v);
		else if (json_object_is_type(v, json_type_string)) {
			const char *s = json_object_get_string(v);

			if (strcmp(s, "STATUS_CODE_OK") == 0)
				sp->status_code = 1;
			else if (strcmp(s, "STATUS_CODE_ERROR") == 0)
				sp->status_code = 2;
		}
	}
	if ((v = json_get(st, "message", json_type_string)) != NULL &&
	    json_object_get_string_len(v) > 0)
		sp->status_msg = xstrdup(json_object_get_string(v));
}

/*
 * Convert one OTLP span object.  NULL with a reason in why when a required
 * field (ids, name, times) is missing or invalid.  Caller frees.
 */
struct tspan *
span_parse(json_object *obj, const char *service, char *why, size_t whysize)
{
	struct tspan *sp;
	json_object *name = json_get(obj, "name", json_type_string);
	const char *bad = NULL;

	if ((sp = calloc(1, sizeof(*sp))) == NULL) {
		snprintf(why, whysize, "out of memory");
		return NULL;
	}
	if (get_hex(obj, "traceId", 32, sp->trace_id, 0) == -1)
		bad = "traceId";
	else if (get_hex(obj, "spanId", 16, sp->span_id, 0) == -1)
		bad = "spanId";
	else if (get_hex(obj, "parentSpanId", 16, sp->parent_id, 1) == -1)
		bad = "parentSpanId";
	else if (name == NULL)
		bad = "name";
	else if (get_u64(obj, "startTimeUnixNano", &sp->start_ns) == -1)
		bad = "startTimeUnixNano";
	else if (get_u64(obj, "endTimeUnixNano", &sp->end_ns) == -1 ||
	    sp->end_ns < sp->start_ns)
		bad = "endTimeUnixNano";
	if (bad != NULL) {
		snprintf(why, whysize, "span with missing or invalid %s", bad);
		free(sp);
		return NULL;
	}
	sp->name = strdup(json_object_get_string(name));
	sp->service = service != NULL ? strdup(service) : NULL;
	attrs_parse(obj, &sp->attrs, &sp->nattrs);
	events_parse(obj, sp);
	status_parse(obj, sp);
	if (sp->name == NULL) {
		tspan_free(sp);
		snprintf(why, whysize, "out of memory");
		return NULL;
	}
	return sp;
}
