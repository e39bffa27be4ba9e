/* SPDX-License-Identifier: ISC */
/*
 * otlp.c: the OTLP/HTTP JSON exporter (see otlp.h).
 *
 * The queue is a list of span lines under one mutex; the caller's side
 * only copies a line in (or counts a drop).  The worker waits for a line,
 * then up to OTLP_BATCH_DELAY_MS for more, takes at most OTLP_BATCH_MAX,
 * merges their resourceSpans into one request (rewriting the resource
 * from OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES) and POSTs it.  Losses
 * are logged at most every OTLP_LOG_EVERY_MS, so a dead collector cannot
 * flood the log.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "cause.h"
#include "otlp-int.h"

static void	*otlp_worker(void *);

/* Start the exporter (see otlp.h); caller frees with otlp_stop(). */
struct otlp *
otlp_start(const char *url, const char *service, char **cause)
{
	struct otlp	*o;

	/* Before any thread of ours: libcurl's global state is not safe. */
	*cause = NULL;
	if (otlp_curl_load(cause) == -1)
		return NULL;
	if (otlp_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		cause_set(cause, "OTLP export: cannot initialise libcurl");
		return NULL;
	}
	if ((o = calloc(1, sizeof(*o))) == NULL ||
	    (o->url = strdup(url)) == NULL ||
	    (o->attrs = json_object_new_array()) == NULL) {
		cause_set(cause, "OTLP export: out of memory");
		goto fail;
	}
	TAILQ_INIT(&o->q);
	if (otlp_conf_load(o, service, cause) == -1)
		goto fail;
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (pthread_create(&o->thread, NULL, otlp_worker, o) != 0) {
		cause_set(cause, "OTLP export: %s", strerror(errno));
		pthread_mutex_destroy(&o->mu);
		pthread_cond_destroy(&o->cv);
		goto fail;
	}
	return o;
fail:
	if (o != NULL) {
		otlp_curl.slist_free_all(o->headers);
		json_object_put(o->attrs);
		free(o->service);
		free(o->url);
		free(o);
	}
	return NULL;
}

void
otlp_enqueue(void *arg, const char *line, size_t len)
{
	struct otlp	*o = arg;
	struct oline	*l = NULL;

	if (o == NULL)
		return;
	pthread_mutex_lock(&o->mu);
	if (o->nq >= o->qmax || len > OTLP_LINE_MAX || o->stop ||
	    (l = malloc(sizeof(*l))) == NULL ||
	    (l->text = strndup(line, len)) == NULL) {
		free(l);
		o->st.dropped++;
		pthread_mutex_unlock(&o->mu);
		return;
	}
	l->len = len;
	TAILQ_INSERT_TAIL(&o->q, l, entry);
	o->nq++;
	pthread_cond_signal(&o->cv);
	pthread_mutex_unlock(&o->mu);
}

/* Rewrite one resource: service.name and the extra attributes. */
static void
fix_resource(struct otlp *o, json_object *rs)
{
	json_object	*res, *attrs, *a, *k, *v;
	size_t		 i;

	if (!json_object_object_get_ex(rs, "resource", &res) ||
	    !json_object_object_get_ex(res, "attributes", &attrs) ||
	    !json_object_is_type(attrs, json_type_array))
		return;
	for (i = 0; i < json_object_array_length(attrs); i++) {
		a = json_object_array_get_idx(attrs, i);
		if (json_object_object_get_ex(a, "key", &k) &&
		    strcmp(json_object_get_string(k), "service.name") == 0 &&
		    json_object_object_get_ex(a, "value", &v))
			json_object_object_add(v, "stringValue",
			    json_object_new_string(o->service));
	}
	for (i = 0; i < json_object_array_length(o->attrs); i++)
		json_object_array_add(attrs, json_object_get(
		    json_object_array_get_idx(o->attrs, i)));
}

/* The request body of a batch; caller frees.  *nspans: spans in it. */
static char *
batch_body(struct otlp *o, struct oline **lines, size_t n, size_t *nspans)
{
	json_object	*req = json_object_new_object(), *all, *one, *rss;
	json_tokener	*tok = json_tokener_new_ex(64);
	char		*body = NULL;
	size_t		 i, j;

	all = json_object_new_array();
	json_object_object_add(req, "resourceSpans", all);
	*nspans = 0;
	for (i = 0; tok != NULL && i < n; i++) {
		json_tokener_reset(tok);
		one = json_tokener_parse_ex(tok, lines[i]->text,
		    (int)lines[i]->len);
		if (one != NULL && json_object_object_get_ex(one,
		    "resourceSpans", &rss) &&
		    json_object_is_type(rss, json_type_array)) {
			for (j = 0; j < json_object_array_length(rss); j++) {
				json_object *rs = json_object_array_get_idx(rss, j);

				fix_resource(o, rs);
				json_object_array_add(all, json_object_get(rs));
			}
			(*nspans)++;
		}
		json_object_put(one);
	}
	if (*nspans > 0)
		body = strdup(json_object_to_json_string_ext(req,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(req);
	json_tokener_free(tok);
	return body;
}

/* libcurl progress: give up on a request once stopping has had its grace. */
static int
post_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c,
    curl_off_t d)
{
	struct otlp	*o = arg;
	int		 stop;

	(void)a; (void)b; (void)c; (void)d;
	pthread_mutex_lock(&o->mu);
	stop = o->stop && clock_mono_ms() > o->stop_ms + OTLP_STOP_GRACE_MS;
	pthread_mutex_unlock(&o->mu);
	return stop;
}

/* Discard the collector's answer body. */
static size_t
post_sink(char *p, size_t size, size_t n, void *arg)
{
	(void)p; (void)arg;
	return size * n;
}

/* POST body; 0 when the collector took it (2xx), -1 (o->last_err) if not. */
static int
post(struct otlp *o, const char *body)
{
	CURL		*c;
	CURLcode	 rc;
	long		 status = 0;
	char		 errbuf[CURL_ERROR_SIZE] = "";

	if ((c = otlp_curl.easy_init()) == NULL)
		return -1;
	otlp_curl.easy_setopt(c, CURLOPT_URL, o->url);
	otlp_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	otlp_curl.easy_setopt(c, CURLOPT_HTTPHEADER, o->headers);
	otlp_curl.easy_setopt(c, CURLOPT_POSTFIELDS, body);
	otlp_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	otlp_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	otlp_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, post_sink);
	otlp_curl.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	otlp_curl.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, post_progress);
	otlp_curl.easy_setopt(c, CURLOPT_XFERINFODATA, o);
	otlp_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	rc = otlp_curl.easy_perform(c);
	if (rc == CURLE_OK)
		otlp_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	otlp_curl.easy_cleanup(c);
	pthread_mutex_lock(&o->mu);
	if (rc != CURLE_OK)
		strlcpy(o->last_err, errbuf[0] ? errbuf :
		    otlp_curl.easy_strerror(rc), sizeof(o->last_err));
	else if (status < 200 || status >= 300)
		snprintf(o->last_err, sizeof(o->last_err), "HTTP %ld", status);
	pthread_mutex_unlock(&o->mu);
	return rc == CURLE_OK && status >= 200 && status < 300 ? 0 : -1;
}

/* Log the losses since the last line, at most every OTLP_LOG_EVERY_MS. */
static void
log_losses(struct otlp *o, int force)
{
	uint64_t	now = clock_mono_ms(), lost;

	pthread_mutex_lock(&o->mu);
	lost = o->st.dropped + o->st.failed;
	if (lost == o->logged_lost ||
	    (!force && now < o->logged_ms + OTLP_LOG_EVERY_MS)) {
		pthread_mutex_unlock(&o->mu);
		return;
	}
	log_warnx("OTLP export to %s: %llu spans lost in all (%llu dropped "
	    "with the queue full, %llu in failed exports; last error: %s)",
	    o->url, (unsigned long long)lost,
	    (unsigned long long)o->st.dropped,
	    (unsigned long long)o->st.failed,
	    o->last_err[0] ? o->last_err : "none");
	o->logged_lost = lost;
	o->logged_ms = now;
	pthread_mutex_unlock(&o->mu);
}

/* Wait for a batch (under o->mu); how many lines were taken into lines. */
static size_t
take_batch(struct otlp *o, struct oline **lines)
{
	struct timespec	 ts;
	struct oline	*l;
	size_t		 n = 0;

	while (o->nq == 0 && !o->stop)
		pthread_cond_wait(&o->cv, &o->mu);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += o->delay_ms / 1000;
	ts.tv_nsec += (o->delay_ms % 1000) * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	while (o->nq < o->batch_max && !o->stop &&
	    pthread_cond_timedwait(&o->cv, &o->mu, &ts) == 0)
		;
	while (n < o->batch_max && (l = TAILQ_FIRST(&o->q)) != NULL) {
		TAILQ_REMOVE(&o->q, l, entry);
		o->nq--;
		lines[n++] = l;
	}
	return n;
}

/* The worker: batch, export, count, until stopped and drained once. */
static void *
otlp_worker(void *arg)
{
	struct otlp	*o = arg;
	struct oline	*lines[OTLP_BATCH_MAX];
	size_t		 n, nspans, i;
	char		*body;
	int		 ok, last;

	for (;;) {
		pthread_mutex_lock(&o->mu);
		n = take_batch(o, lines);
		last = o->stop;
		pthread_mutex_unlock(&o->mu);
		body = n > 0 ? batch_body(o, lines, n, &nspans) : NULL;
		ok = body != NULL && post(o, body) == 0;
		free(body);
		pthread_mutex_lock(&o->mu);
		if (ok)
			o->st.exported += nspans;
		else
			o->st.failed += n;
		pthread_mutex_unlock(&o->mu);
		for (i = 0; i < n; i++) {
			free(lines[i]->text);
			free(lines[i]);
		}
		log_losses(o, last);
		pthread_mutex_lock(&o->mu);
		last = o->stop && o->nq == 0;
		pthread_mutex_unlock(&o->mu);
		if (last)
			break;
	}
	return NULL;
}

void
otlp_stats(struct otlp *o, struct otlp_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (o == NULL)
		return;
	pthread_mutex_lock(&o->mu);
	*st = o->st;
	st->queued = o->nq;
	pthread_mutex_unlock(&o->mu);
}

const char *
otlp_url(const struct otlp *o)
{
	return o != NULL ? o->url : NULL;
}

void
otlp_stop(struct otlp *o)
{
	struct oline	*l;

	if (o == NULL)
		return;
	pthread_mutex_lock(&o->mu);
	o->stop = 1;
	o->stop_ms = clock_mono_ms();
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->thread, NULL);
	while ((l = TAILQ_FIRST(&o->q)) != NULL) {
		TAILQ_REMOVE(&o->q, l, entry);
		free(l->text);
		free(l);
	}
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	otlp_curl.slist_free_all(o->headers);
	json_object_put(o->attrs);
	free(o->service);
	free(o->url);
	free(o);
}
