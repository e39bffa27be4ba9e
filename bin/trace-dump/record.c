/* SPDX-License-Identifier: ISC */
/*
 * record.c: one restore's facts, derived from its daemon and child spans.
 *
 * The daemon span carries the action, budget, session and channel and the
 * public/late/cleanup results as events; the child span carries the stage
 * durations, the failed stage, sizes and the loop-lag snapshot.  Either may
 * be missing: a child driven directly has no daemon span, a child killed
 * mid-restore never wrote its span.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-dump.h"

/* Stages in the order the child runs them (unknown ones follow). */
static const char *const stage_order[] = {
	"settings_load", "existence_check", "live_restore", "transcript_read",
	"chain_reconstruct", "config_setup", "restore_session_model",
	"runtime_initialize", "auth", "file_system_setup", "session_register",
	"history_replay", "post_replay_services", "response_build",
};
#define NSTAGE_ORDER (sizeof(stage_order) / sizeof(stage_order[0]))

/* Free the restore and its spans.  NULL-safe. */
void
record_free(struct restore *r)
{
	if (r == NULL)
		return;
	tspan_free(r->daemon);
	tspan_free(r->child);
	free(r);
}

/* The first string attribute among keys found in sp (borrowed), or NULL. */
static const char *
first_str(const struct tspan *sp, const char *const *keys)
{
	const char *v;

	if (sp == NULL)
		return NULL;
	for (; *keys != NULL; keys++)
		if ((v = tspan_str(sp, *keys)) != NULL)
			return v;
	return NULL;
}

/* A numeric attribute or -1. */
static double
num_or(const struct tspan *sp, const char *key)
{
	double v;

	return sp != NULL && tspan_num(sp, key, &v) == 0 ? v : -1;
}

/* "session.load", "acp_session_load", "load" -> "load". */
static const char *
action_name(const char *s)
{
	if (s == NULL)
		return NULL;
	if (strstr(s, "resume") != NULL)
		return "resume";
	if (strstr(s, "load") != NULL)
		return "load";
	return s;
}

/* An event's result attribute (or a span attribute as fallback). */
static const char *
event_result(const struct tspan *sp, const char *event, const char *key)
{
	const struct tevent *ev;
	char attr[96];

	if (sp == NULL)
		return NULL;
	if ((ev = tspan_event(sp, event)) != NULL && tevent_str(ev, key) != NULL)
		return tevent_str(ev, key);
	snprintf(attr, sizeof(attr), "%s%s", TD_RESTORE_PREFIX,
	    event + strlen("session.restore."));
	return tspan_str(sp, attr);
}

/* Is key a stage duration "<prefix><stage>_ms"?  Copy the stage name. */
static int
stage_key(const char *key, char *name, size_t size)
{
	size_t plen = strlen(TD_RESTORE_PREFIX), klen = strlen(key);

	if (strncmp(key, TD_RESTORE_PREFIX, plen) != 0 || klen < plen + 4 ||
	    strcmp(key + klen - 3, "_ms") != 0 || klen - plen - 3 >= size)
		return 0;
	memcpy(name, key + plen, klen - plen - 3);
	name[klen - plen - 3] = '\0';
	return strcmp(name, "timeout") != 0 && strstr(name, "loop_lag") == NULL;
}

/* Collect the child's stage durations, known stages in execution order. */
static void
restore_stages(struct restore *r, const struct tspan *c)
{
	char name[128];
	size_t k;

	for (k = 0; k < NSTAGE_ORDER && r->nstages < TD_MAX_STAGES; k++) {
		snprintf(name, sizeof(name), "%s%s_ms", TD_RESTORE_PREFIX,
		    stage_order[k]);
		if (tspan_num(c, name, &r->stages[r->nstages].ms) == 0)
			strlcpy(r->stages[r->nstages++].name, stage_order[k],
			    sizeof(r->stages[0].name));
	}
	for (size_t i = 0; i < c->nattrs && r->nstages < TD_MAX_STAGES; i++) {
		if (!stage_key(c->attrs[i].key, name, sizeof(name)))
			continue;
		for (k = 0; k < NSTAGE_ORDER; k++)
			if (strcmp(name, stage_order[k]) == 0)
				break;
		if (k < NSTAGE_ORDER ||
		    tspan_num(c, c->attrs[i].key, &r->stages[r->nstages].ms) == -1)
			continue;
		strlcpy(r->stages[r->nstages++].name, name,
		    sizeof(r->stages[0].name));
	}
}

/* The loop-lag figure which (mean, p50, ...) under any accepted name. */
static double
lag_get(const struct tspan *c, const char *which)
{
	char key[96];
	double v;

	snprintf(key, sizeof(key), "%s%s_ms", TD_LAG_PREFIX, which);
	if (tspan_num(c, key, &v) == 0)
		return v;
	snprintf(key, sizeof(key), "qwen-code.daemon.loop_lag.%s_ms", which);
	if (tspan_num(c, key, &v) == 0)
		return v;
	snprintf(key, sizeof(key), "%sloop_lag.%s_ms", TD_RESTORE_PREFIX, which);
	if (tspan_num(c, key, &v) == 0)
		return v;
	snprintf(key, sizeof(key), "%sloop_lag_%s_ms", TD_RESTORE_PREFIX, which);
	return tspan_num(c, key, &v) == 0 ? v : -1;
}

/* Fill in what the child span says. */
static void
restore_child(struct restore *r, const struct tspan *c)
{
	static const char *const action_keys[] = {
		"qwen-code.daemon.operation", TD_RESTORE_PREFIX "action", NULL };
	const struct tattr *a;

	/*
	 * The operation (acp_session_load) names the action; the child's
	 * action attribute says restore or refresh, so it comes second.
	 */
	if (r->action == NULL)
		r->action = action_name(first_str(c, action_keys));
	r->failed_stage = tspan_str(c, TD_RESTORE_PREFIX "failed_stage");
	restore_stages(r, c);
	r->transcript_bytes = num_or(c, TD_RESTORE_PREFIX "transcript_bytes");
	r->chain_records = num_or(c, TD_RESTORE_PREFIX "chain_records");
	r->replay_records = num_or(c, TD_RESTORE_PREFIX "replay_records");
	r->replay_bytes = num_or(c, TD_RESTORE_PREFIX "replay_bytes");
	r->malformed_lines = num_or(c, TD_RESTORE_PREFIX "malformed_lines");
	if ((a = tspan_attr(c, TD_RESTORE_PREFIX "partial_replay")) != NULL &&
	    (a->type == TATTR_BOOL || a->type == TATTR_INT))
		r->partial_replay = a->i != 0;
	r->lag_mean = lag_get(c, "mean");
	r->lag_p50 = lag_get(c, "p50");
	r->lag_p99 = lag_get(c, "p99");
	r->lag_max = lag_get(c, "max");
}

/*
 * A quarantined restore is settled later, by the end of its channel: the
 * last cleanup event when it differs from the first (borrowed), or NULL.
 */
static const char *
settled_by(const struct tspan *d, const char *first)
{
	const char *last = NULL, *v;

	for (size_t i = 0; i < d->nevents; i++)
		if (strcmp(d->events[i].name, "session.restore.cleanup") == 0 &&
		    (v = tevent_str(&d->events[i], "cleanup_result")) != NULL)
			last = v;
	return last != NULL && first != NULL && strcmp(last, first) != 0 ?
	    last : NULL;
}

/* Fill in what the daemon span says. */
static void
restore_daemon(struct restore *r, const struct tspan *d)
{
	const struct tevent *ev = tspan_event(d, "session.restore.public_result");

	r->action = action_name(tspan_str(d, "qwen-code.daemon.bridge.operation"));
	r->budget_ms = num_or(d, TD_RESTORE_PREFIX "timeout_ms");
	r->public_result = event_result(d, "session.restore.public_result", "result");
	r->late_result = event_result(d, "session.restore.late_result", "result");
	r->cleanup_result = event_result(d, "session.restore.cleanup",
	    "cleanup_result");
	r->settled_by = settled_by(d, r->cleanup_result);
	r->overdue = tspan_event(d, "session.restore.settlement_overdue") != NULL;
	if (ev != NULL && ev->time_ns >= d->start_ns)
		r->elapsed_ms = (double)(ev->time_ns - d->start_ns) / 1e6;
	else
		r->elapsed_ms = (double)(d->end_ns - d->start_ns) / 1e6;
}

/*
 * The channel id: a string (borrowed) or, as qwen-serve writes it, an
 * integer (formatted into r->channel_buf).
 */
static void
restore_channel(struct restore *r, const struct tspan *daemon,
    const struct tspan *child, const char *const *keys)
{
	const struct tspan *sps[2] = { daemon, child };
	const struct tattr *a;

	for (size_t i = 0; i < 2; i++) {
		if (sps[i] == NULL)
			continue;
		for (const char *const *k = keys; *k != NULL; k++) {
			if ((a = tspan_attr(sps[i], *k)) == NULL)
				continue;
			if (a->type == TATTR_STR) {
				r->channel_id = a->s;
				return;
			}
			if (a->type == TATTR_INT) {
				snprintf(r->channel_buf, sizeof(r->channel_buf),
				    "%lld", (long long)a->i);
				r->channel_id = r->channel_buf;
				return;
			}
		}
	}
}

/* Build a restore from its spans (either may be NULL; takes ownership). */
struct restore *
record_build(struct tspan *daemon, struct tspan *child)
{
	static const char *const session_keys[] = { "session.id",
		"qwen-code.session.id", "qwen-code.daemon.session.id",
		"qwen-code.daemon.session_id", "sessionId", NULL };
	static const char *const channel_keys[] = {
		"qwen-code.daemon.channel.id", "qwen-code.daemon.channel_id",
		"channel.id", NULL };
	struct restore *r;
	const struct tspan *any = daemon != NULL ? daemon : child;

	if (any == NULL || (r = calloc(1, sizeof(*r))) == NULL) {
		tspan_free(daemon);
		tspan_free(child);
		return NULL;
	}
	r->daemon = daemon;
	r->child = child;
	r->trace_id = any->trace_id;
	r->start_ns = any->start_ns;
	r->budget_ms = -1;
	r->elapsed_ms = (double)(any->end_ns - any->start_ns) / 1e6;
	if ((r->session_id = first_str(daemon, session_keys)) == NULL)
		r->session_id = first_str(child, session_keys);
	restore_channel(r, daemon, child, channel_keys);
	r->transcript_bytes = r->chain_records = r->replay_records = -1;
	r->replay_bytes = r->malformed_lines = -1;
	r->lag_mean = r->lag_p50 = r->lag_p99 = r->lag_max = -1;
	r->partial_replay = -1;
	if (daemon != NULL)
		restore_daemon(r, daemon);
	if (child != NULL)
		restore_child(r, child);
	if (r->action == NULL)
		r->action = "?";
	if (r->public_result != NULL)
		r->result = r->public_result;
	else if (child != NULL)
		r->result = r->failed_stage != NULL || child->status_code == 2 ?
		    "failure" : "success";
	else
		r->result = any->status_code == 2 ? "failure" : "unknown";
	return r;
}
