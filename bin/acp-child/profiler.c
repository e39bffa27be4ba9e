/* SPDX-License-Identifier: ISC */
/* profiler.c: stage timings of a restore, ended as one span. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "lagmon.h"
#include "profiler.h"
#include "trace.h"

#define PROFILER_PREFIX "qwen-code.daemon.session_restore."

static const char *const profiler_names[PROFILER_NSTAGES] = {
	"settings_load",
	"existence_check",
	"transcript_read",
	"chain_reconstruct",
	"config_setup",
	"auth",
	"file_system_setup",
	"session_register",
	"history_replay",
	"response_build",
};

void
profiler_init(struct prof *p)
{
	memset(p, 0, sizeof(*p));
	p->failed = -1;
	p->cur = -1;
}

const char *
profiler_stage_name(enum profiler_stage s)
{
	return (unsigned)s < PROFILER_NSTAGES ? profiler_names[s] : "unknown";
}

void
profiler_begin(struct prof *p, enum profiler_stage s)
{
	if (p->cur >= 0)
		profiler_end(p, 1);
	p->cur = (int)s;
	p->cur_start = clock_mono_ns();
}

/* A stage may run more than once (a retry); its durations add up. */
void
profiler_end(struct prof *p, int ok)
{
	if (p->cur < 0)
		return;
	p->stage_ns[p->cur] += clock_mono_ns() - p->cur_start;
	p->ran[p->cur] = 1;
	if (!ok && p->failed < 0)
		p->failed = p->cur;
	p->cur = -1;
}

struct span *
profiler_span_start(const char *name, json_object *meta)
{
	struct trace_ctx parent;
	json_object *tp;

	if (meta != NULL && json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "qwen.telemetry.traceparent", &tp) &&
	    json_object_is_type(tp, json_type_string) &&
	    trace_parse_traceparent(json_object_get_string(tp), &parent) == 0)
		return span_start(name, SPAN_KIND_SERVER, &parent);
	return span_start(name, SPAN_KIND_SERVER, NULL);
}

/* Stage attributes in milliseconds with microsecond resolution. */
static void
profiler_put_stages(struct span *sp, const struct prof *p)
{
	char key[96];
	int i;

	for (i = 0; i < PROFILER_NSTAGES; i++) {
		if (!p->ran[i])
			continue;
		snprintf(key, sizeof(key), PROFILER_PREFIX "%s_ms", profiler_names[i]);
		span_set_double(sp, key, (double)(p->stage_ns[i] / 1000) / 1000.0);
	}
	if (p->failed >= 0)
		span_set_str(sp, PROFILER_PREFIX "failed_stage", profiler_names[p->failed]);
}

void
profiler_span_finish(struct span *sp, const struct prof *p,
    const struct lag_snapshot *lag, struct trace_sink *sink,
    const char *operation, const char *action, const char *session_id,
    const char *error_kind)
{
	if (sp == NULL)
		return;
	span_set_str(sp, "qwen-code.daemon.operation", operation);
	span_set_str(sp, PROFILER_PREFIX "action", action);
	span_set_str(sp, "session.id", session_id);
	profiler_put_stages(sp, p);
	span_set_int(sp, PROFILER_PREFIX "transcript_bytes", (int64_t)p->transcript_bytes);
	span_set_int(sp, PROFILER_PREFIX "chain_records", (int64_t)p->chain_records);
	span_set_int(sp, PROFILER_PREFIX "replay_records", (int64_t)p->replay_records);
	span_set_int(sp, PROFILER_PREFIX "replay_bytes", (int64_t)p->replay_bytes);
	span_set_int(sp, PROFILER_PREFIX "malformed_lines", (int64_t)p->malformed_lines);
	span_set_int(sp, PROFILER_PREFIX "truncated_records", (int64_t)p->truncated_records);
	span_set_bool(sp, PROFILER_PREFIX "partial_replay", p->partial_replay);
	span_set_int(sp, PROFILER_PREFIX "bytes_read", (int64_t)p->bytes_read);
	if (p->index != NULL)
		span_set_str(sp, PROFILER_PREFIX "index", p->index);
	if (lag != NULL) {
		span_set_double(sp, "qwen-code.daemon.event_loop_lag.mean_ms", lag->mean_ms);
		span_set_double(sp, "qwen-code.daemon.event_loop_lag.p50_ms", lag->p50_ms);
		span_set_double(sp, "qwen-code.daemon.event_loop_lag.p99_ms", lag->p99_ms);
		span_set_double(sp, "qwen-code.daemon.event_loop_lag.max_ms", lag->max_ms);
		span_set_int(sp, "qwen-code.daemon.event_loop_lag.samples", (int64_t)lag->samples);
	}
	if (error_kind != NULL) {
		span_set_str(sp, "error.type", error_kind);
		span_set_status(sp, SPAN_STATUS_ERROR, error_kind);
	} else
		span_set_status(sp, SPAN_STATUS_OK, NULL);
	span_end(sp, sink);
}
