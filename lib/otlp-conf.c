/* SPDX-License-Identifier: ISC */
/*
 * otlp-conf.c: the OTLP exporter's settings, the OpenTelemetry way (see
 * otlp.h): the endpoint from the flag or OTEL_EXPORTER_OTLP_*, headers,
 * the service name and resource attributes, the batch processor limits.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "otlp-int.h"

/* The value of the first variable of names that is set and not empty. */
static const char *
env_first(const char *a, const char *b)
{
	const char	*v;

	if ((v = getenv(a)) != NULL && *v != '\0')
		return v;
	if (b != NULL && (v = getenv(b)) != NULL && *v != '\0')
		return v;
	return NULL;
}

int
otlp_endpoint(const char *flag, char **url, char **cause)
{
	const char	*v, *what = "--otlp-endpoint";
	size_t		 len;
	int		 base = 1;

	*url = NULL;
	if ((v = flag) == NULL) {
		what = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
		if ((v = env_first(what, NULL)) != NULL)
			base = 0;
		else if ((v = env_first(what = "OTEL_EXPORTER_OTLP_ENDPOINT",
		    NULL)) == NULL)
			return 0;
	}
	if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
		return cause_set(cause, "%s %s: must start with http:// or "
		    "https://", what, v);
	}
	len = strlen(v);
	while (base && len > 0 && v[len - 1] == '/')
		len--;
	/* A base URL gets the signal's path, unless it already has it. */
	if (base && !(len >= 10 && strncmp(v + len - 10, "/v1/traces", 10) == 0)) {
		if (asprintf(url, "%.*s/v1/traces", (int)len, v) == -1)
			*url = NULL;
	} else
		*url = strndup(v, len);
	if (*url == NULL)
		return cause_set(cause, "%s: out of memory", what);
	return 0;
}

/* Split "k=v,k2=v2" calling fn(arg, key, decoded value); -1 on a bad item. */
static int
kv_list(const char *list, int (*fn)(void *, const char *, const char *),
    void *arg)
{
	char	*copy, *item, *save, *eq, *val;
	int	 rc = 0, n;

	if (list == NULL)
		return 0;
	if ((copy = strdup(list)) == NULL)
		return -1;
	for (item = strtok_r(copy, ",", &save); item != NULL && rc == 0;
	    item = strtok_r(NULL, ",", &save)) {
		while (*item == ' ')
			item++;
		if ((eq = strchr(item, '=')) == NULL || eq == item) {
			rc = -1;
			break;
		}
		*eq = '\0';
		for (n = (int)strlen(item); n > 0 && item[n - 1] == ' '; n--)
			item[n - 1] = '\0';
		val = otlp_curl.easy_unescape(NULL, eq + 1, 0, &n);
		if (val == NULL ||
		    strlen(val) != (size_t)n || strpbrk(val, "\r\n") != NULL ||
		    strpbrk(item, "\r\n: ") != NULL)
			rc = -1;
		else
			rc = fn(arg, item, val);
		otlp_curl.free(val);
	}
	free(copy);
	return rc;
}

/* kv_list: one header line. */
static int
add_header(void *arg, const char *k, const char *v)
{
	struct otlp		*o = arg;
	struct curl_slist	*n;
	char			*line;

	if (asprintf(&line, "%s: %s", k, v) == -1)
		return -1;
	n = otlp_curl.slist_append(o->headers, line);
	free(line);
	if (n == NULL)
		return -1;
	o->headers = n;
	return 0;
}

/* kv_list: one resource attribute {key, value: {stringValue}}. */
static int
add_attr(void *arg, const char *k, const char *v)
{
	struct otlp	*o = arg;
	json_object	*a = json_object_new_object(), *val;

	val = json_object_new_object();
	json_object_object_add(val, "stringValue", json_object_new_string(v));
	json_object_object_add(a, "key", json_object_new_string(k));
	json_object_object_add(a, "value", val);
	json_object_array_add(o->attrs, a);
	return 0;
}

/* A numeric OTEL_* setting in [min, max], else dflt; -1 when malformed. */
static int
env_num(const char *a, const char *b, long long min, long long max,
    long long dflt, long long *out, char **cause)
{
	const char	*v = env_first(a, b), *errstr;

	*out = dflt;
	if (v == NULL)
		return 0;
	*out = strtonum(v, min, max, &errstr);
	if (errstr != NULL)
		return cause_set(cause, "%s=%s: %s (%lld to %lld)", a, v,
		    errstr, min, max);
	return 0;
}

/* The batching settings of the OTel batch span processor's variables. */
static int
otlp_limits(struct otlp *o, char **cause)
{
	long long	v;

	if (env_num("OTEL_BSP_MAX_QUEUE_SIZE", NULL, 1, 1000000,
	    OTLP_QUEUE_MAX, &v, cause) == -1)
		return -1;
	o->qmax = (size_t)v;
	if (env_num("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", NULL, 1, OTLP_BATCH_MAX,
	    OTLP_BATCH_MAX, &v, cause) == -1)
		return -1;
	o->batch_max = (size_t)v;
	if (env_num("OTEL_BSP_SCHEDULE_DELAY", NULL, 0, 3600000,
	    OTLP_BATCH_DELAY_MS, &v, cause) == -1)
		return -1;
	o->delay_ms = (long)v;
	if (env_num("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	    "OTEL_EXPORTER_OTLP_TIMEOUT", 1, 3600000, OTLP_TIMEOUT_MS, &v,
	    cause) == -1)
		return -1;
	o->timeout_ms = (long)v;
	return 0;
}

/* The settings of o from the environment (see otlp.h).  0, or -1 + *cause. */
int
otlp_conf_load(struct otlp *o, const char *service, char **cause)
{
	const char	*sn;

	if (otlp_limits(o, cause) == -1)
		return -1;
	o->headers = otlp_curl.slist_append(NULL,
	    "Content-Type: application/json");
	if (o->headers == NULL || kv_list(env_first(
	    "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"),
	    add_header, o) == -1)
		return cause_set(cause, "OTEL_EXPORTER_OTLP_HEADERS: not a "
		    "list of key=value pairs");
	if (kv_list(getenv("OTEL_RESOURCE_ATTRIBUTES"), add_attr, o) == -1)
		return cause_set(cause, "OTEL_RESOURCE_ATTRIBUTES: not a list "
		    "of key=value pairs");
	sn = env_first("OTEL_SERVICE_NAME", NULL);
	if ((o->service = strdup(sn != NULL ? sn : service)) == NULL)
		return cause_set(cause, "OTLP export: out of memory");
	return 0;
}
