/* SPDX-License-Identifier: ISC */
/*
 * routes-subagent.c: a live session's subagents, found among its agent's
 * tasks.
 *
 * GET /session/:id/subagents/:subagentRef resolves a reference (a
 * subagent's task id, the tool call that launched it, or the id's last
 * part after a "-") to upstream's virtual subagent session: the daemon
 * asks the session's agent for its tasks (qwen/status/session/tasks, as
 * upstream's daemon does) and answers the agent task with an output file
 * the reference names as {sessionId "subagent.<parent>.<agent>" (each
 * part base64url), taskId, title, status, durationMs?, totalTokens?}.
 * POST .../cancel resolves it the same way and cancels the task through
 * the agent (qwen/control/session/task/cancel {sessionId, taskId,
 * taskKind "agent"}), answering the agent's result as it is.  A reference
 * that is empty or over 500 UTF-16 units is 400 invalid_subagent_ref, one
 * no task matches 404 session_not_found; an agent without the methods is
 * answered as the other pass-through routes answer it (500 and the
 * agent's code).  A subagent the agent no longer lists is looked for, as
 * upstream looks, among the sidecars of the parent's subagent transcripts
 * (<project>/subagents/<parent>/<name>.meta.json {agentId, toolUseId?,
 * description?, agentType?, status?, createdAt, lastUpdatedAt?}).
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "base64.h"
#include "clock.h"
#include "errors.h"
#include "json.h"
#include "paths.h"
#include "serve.h"
#include "xmalloc.h"

#define SUBAGENT_REF_MAX	500	/* upstream's MAX_VIRTUAL_SESSION_ID_PART_LENGTH */
#define SUBAGENT_ID_MAX		2000	/* upstream's MAX_VIRTUAL_SESSION_ID_LENGTH */
#define SUBAGENT_TASKS_MAX	4096	/* tasks looked at in the agent's answer */
#define SUBAGENT_METAS_MAX	1024	/* sidecars looked at on disk */
#define SUBAGENT_META_BYTES	(64 * 1024)

/* One resolve (and maybe cancel) out to the agent. */
struct subagent_req {
	struct evhttp_request	*req;
	struct channel		*ch;
	int			 cancel;
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			*ref;
};

static void	subagent_tasks_cb(void *, enum channel_outcome, json_object *);

/* The length of s in UTF-16 code units, as JavaScript counts it. */
static size_t
subagent_units(const char *s)
{
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c & 0xc0) != 0x80)
			n += c >= 0xf0 ? 2 : 1;
	}
	return n;
}

static void
subagent_free(struct subagent_req *sr)
{
	channel_control_end(sr->ch);
	free(sr->ref);
	free(sr);
}

/* A failed request's answer, as the other pass-through routes give it. */
static void
subagent_fail(struct subagent_req *sr, enum channel_outcome o,
    json_object *payload)
{
	if (o == CHANNEL_ERROR)
		http_error_rpc(sr->req, payload, sr->id);
	else
		http_error(sr->req, o == CHANNEL_TIMEOUT ? "init_timeout" :
		    "acp_channel_unavailable", sr->id);
}

/* Whether task is the agent task with an output file that ref names. */
static int
subagent_match(json_object *task, const char *ref)
{
	const char *kind = json_get_str(task, "kind");
	const char *id = json_get_str(task, "id");
	const char *tool = json_get_str(task, "toolUseId");
	json_object *out;
	size_t il, rl = strlen(ref);

	if (kind == NULL || strcmp(kind, "agent") != 0 || id == NULL ||
	    !json_object_object_get_ex(task, "outputFile", &out) ||
	    !json_object_is_type(out, json_type_string))
		return 0;
	if (strcmp(id, ref) == 0 || (tool != NULL && strcmp(tool, ref) == 0))
		return 1;
	il = strlen(id);
	return il > rl && id[il - rl - 1] == '-' && strcmp(id + il - rl, ref) == 0;
}

/* part, base64url, appended to the buffer at *at (room checked by caller). */
static void
subagent_part(char *buf, size_t size, size_t *at, const char *part)
{
	long n = base64_encode(BASE64_URL, part, strlen(part), buf + *at,
	    size - *at);

	if (n > 0)
		*at += (size_t)n;
}

/* upstream's virtual session id of the parent's agent task, or NULL. */
static char *
subagent_session_id(const char *parent, const char *agent)
{
	size_t size, at = strlen("subagent.");
	char *buf;

	if (agent[0] == '\0' || subagent_units(agent) > SUBAGENT_REF_MAX)
		return NULL;
	size = at + base64_encoded_len(BASE64_URL, strlen(parent)) + 1 +
	    base64_encoded_len(BASE64_URL, strlen(agent)) + 1;
	if (size - 1 > SUBAGENT_ID_MAX)
		return NULL;
	buf = xmalloc(size);
	memcpy(buf, "subagent.", at);
	subagent_part(buf, size, &at, parent);
	buf[at++] = '.';
	subagent_part(buf, size, &at, agent);
	buf[at] = '\0';
	return buf;
}

/* o's member k as it is (a number), when o has it. */
static void
subagent_copy(json_object *to, const char *k, json_object *o)
{
	json_object *v;

	if (o != NULL && json_object_object_get_ex(o, k, &v) &&
	    (json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double)))
		json_object_object_add(to, k, json_object_get(v));
}

/* The task's duration: its stats', else end - start when it has ended. */
static void
subagent_duration(json_object *r, json_object *task, json_object *stats)
{
	json_object *v;
	int64_t start, end;

	if (stats != NULL && json_object_object_get_ex(stats, "durationMs", &v)) {
		subagent_copy(r, "durationMs", stats);
		return;
	}
	if (!json_object_object_get_ex(task, "endTime", &v) || v == NULL)
		return;
	end = json_object_get_int64(v);
	start = json_object_object_get_ex(task, "startTime", &v) ?
	    json_object_get_int64(v) : 0;
	json_object_object_add(r, "durationMs",
	    json_object_new_int64(end > start ? end - start : 0));
}

/* upstream's resolved subagent {sessionId, taskId, title, status, ...}. */
static json_object *
subagent_resolved(json_object *task, const char *vid)
{
	json_object *r = xjson_object_new_object(), *stats = NULL, *v;
	static const char *const keep[] = { "label", "status", NULL };
	static const char *const as[] = { "title", "status", NULL };
	size_t i;

	json_object_object_add(r, "sessionId", xjson_object_new_string(vid));
	json_object_object_add(r, "taskId",
	    xjson_object_new_string(json_get_str(task, "id")));
	for (i = 0; keep[i] != NULL; i++)
		if (json_object_object_get_ex(task, keep[i], &v) && v != NULL)
			json_object_object_add(r, as[i], json_object_get(v));
	if (json_object_object_get_ex(task, "stats", &v) &&
	    json_object_is_type(v, json_type_object))
		stats = v;
	subagent_duration(r, task, stats);
	subagent_copy(r, "totalTokens", stats);
	return r;
}

/* The agent task the reference names, in the agent's answer, or NULL. */
static json_object *
subagent_find(json_object *payload, const char *ref)
{
	json_object *tasks, *t;
	size_t i, n;

	if (payload == NULL ||
	    !json_object_object_get_ex(payload, "tasks", &tasks) ||
	    !json_object_is_type(tasks, json_type_array))
		return NULL;
	n = json_object_array_length(tasks);
	for (i = 0; i < n && i < SUBAGENT_TASKS_MAX; i++) {
		t = json_object_array_get_idx(tasks, i);
		if (json_object_is_type(t, json_type_object) &&
		    subagent_match(t, ref))
			return t;
	}
	return NULL;
}

/* The sidecar at path as an agent task of the agent's shape, or NULL. */
static json_object *
subagent_meta_task(const char *path)
{
	json_object *m, *t, *st;
	const char *id, *label;
	struct stat sb;
	int64_t a, b;
	char *out;

	if (stat(path, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > SUBAGENT_META_BYTES ||
	    (m = json_object_from_file(path)) == NULL)
		return NULL;
	if ((id = json_get_str(m, "agentId")) == NULL) {
		json_object_put(m);
		return NULL;
	}
	t = xjson_object_new_object();
	json_object_object_add(t, "kind", xjson_object_new_string("agent"));
	json_object_object_add(t, "id", xjson_object_new_string(id));
	if (json_get_str(m, "toolUseId") != NULL)
		json_object_object_add(t, "toolUseId",
		    xjson_object_new_string(json_get_str(m, "toolUseId")));
	out = xstrndup(path, strlen(path) - strlen(".meta.json"));
	json_object_object_add(t, "outputFile", json_object_new_string(out));
	free(out);
	label = json_get_str(m, "description");
	if (label == NULL || label[0] == '\0')
		label = json_get_str(m, "agentType");
	if (label != NULL)
		json_object_object_add(t, "label", xjson_object_new_string(label));
	json_object_object_add(t, "status", xjson_object_new_string(
	    json_get_str(m, "status") != NULL ? json_get_str(m, "status") : "completed"));
	a = clock_iso_parse(json_get_str(m, "createdAt"));
	b = clock_iso_parse(json_get_str(m, "lastUpdatedAt"));
	if (a != -1 && b != -1) {
		st = xjson_object_new_object();
		json_object_object_add(st, "durationMs",
		    json_object_new_int64(b > a ? b - a : 0));
		json_object_object_add(t, "stats", st);
	}
	json_object_put(m);
	return t;
}

static int
subagent_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of dir's sidecars, sorted (at most SUBAGENT_METAS_MAX): *n. */
static char **
subagent_metas(const char *dir, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t len;

	*n = 0;
	if (d == NULL)
		return NULL;
	while ((e = readdir(d)) != NULL && *n < SUBAGENT_METAS_MAX) {
		len = strlen(e->d_name);
		if (len <= strlen(".meta.json") || strcmp(e->d_name + len -
		    strlen(".meta.json"), ".meta.json") != 0)
			continue;
		v = xreallocarray(v, *n + 1, sizeof(*v));
		v[(*n)++] = xstrdup(e->d_name);
	}
	closedir(d);
	if (*n > 0)
		qsort(v, *n, sizeof(*v), subagent_name_cmp);
	return v;
}

/* <project>/subagents/<parent, sanitized as upstream>: caller frees. */
static char *
subagent_dir(struct subagent_req *sr)
{
	char *data = paths_data_dir(conf.data_dir), *chats, *slash, *dir, *p;

	chats = paths_chats_dir(data, channel_workspace(sr->ch));
	free(data);
	if ((slash = strrchr(chats, '/')) != NULL)
		*slash = '\0';
	if (asprintf(&dir, "%s/subagents/%s", chats, sr->id) == -1)
		dir = NULL;
	free(chats);
	for (p = dir != NULL ? strrchr(dir, '/') + 1 : NULL; p != NULL && *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '_' && *p != '-')
			*p = '_';
	return dir;
}

/* The parent's subagent on disk the reference names, or NULL (caller puts). */
static json_object *
subagent_disk(struct subagent_req *sr)
{
	char *dir = subagent_dir(sr), **names, *path;
	json_object *t = NULL;
	size_t i, n = 0;

	names = dir != NULL ? subagent_metas(dir, &n) : NULL;
	for (i = 0; i < n; i++) {
		if (t == NULL && asprintf(&path, "%s/%s", dir, names[i]) != -1) {
			if ((t = subagent_meta_task(path)) != NULL &&
			    !subagent_match(t, sr->ref)) {
				json_object_put(t);
				t = NULL;
			}
			free(path);
		}
		free(names[i]);
	}
	free(names);
	free(dir);
	return t;
}

/* upstream's 404 for a reference no task of the session matches. */
static void
subagent_not_found(struct subagent_req *sr)
{
	json_object *b = xjson_object_new_object();

	json_object_object_add(b, "error",
	    xjson_object_new_string("Subagent session not found"));
	json_object_object_add(b, "code", xjson_object_new_string("session_not_found"));
	json_object_object_add(b, "sessionId", xjson_object_new_string(sr->id));
	json_object_object_add(b, "subagentRef", xjson_object_new_string(sr->ref));
	http_reply_json(sr->req, 404, b);
}

/* The agent's answer to the cancel, as it is. */
static void
subagent_cancel_cb(void *arg, enum channel_outcome o, json_object *payload)
{
	struct subagent_req *sr = arg;

	if (o == CHANNEL_RESULT)
		http_reply_json(sr->req, 200, payload != NULL ?
		    json_object_get(payload) : xjson_object_new_object());
	else
		subagent_fail(sr, o, payload);
	subagent_free(sr);
}

/* The cancel of the resolved task, sent; 0, or -1 when it could not be. */
static int
subagent_cancel(struct subagent_req *sr, const char *task)
{
	json_object *p = xjson_object_new_object();

	json_object_object_add(p, "sessionId", xjson_object_new_string(sr->id));
	json_object_object_add(p, "taskId", xjson_object_new_string(task));
	json_object_object_add(p, "taskKind", xjson_object_new_string("agent"));
	return channel_request(sr->ch, "qwen/control/session/task/cancel", p,
	    (uint64_t)conf.init_timeout_ms, subagent_cancel_cb, sr) == NULL ?
	    -1 : 0;
}

/* The resolved subagent answered, or its cancel sent: 1 when it was sent. */
static int
subagent_answer(struct subagent_req *sr, json_object *task)
{
	char *vid = subagent_session_id(sr->id, json_get_str(task, "id"));

	if (vid == NULL) {
		http_send_qerr(sr->req, qerr_new("internal", "%s",
		    "Virtual subagent session ids require valid id parts"));
		return 0;
	}
	if (!sr->cancel) {
		http_set_header(sr->req, "Cache-Control", "no-store");
		http_reply_json(sr->req, 200, subagent_resolved(task, vid));
		free(vid);
		return 0;
	}
	free(vid);
	if (subagent_cancel(sr, json_get_str(task, "id")) == 0)
		return 1;
	routes_unavailable(sr->req);
	return 0;
}

/* The agent's tasks: the one the reference names, resolved (or cancelled). */
static void
subagent_tasks_cb(void *arg, enum channel_outcome o, json_object *payload)
{
	struct subagent_req *sr = arg;
	json_object *task, *disk = NULL;
	int sent = 0;

	if (o != CHANNEL_RESULT)
		subagent_fail(sr, o, payload);
	else if ((task = subagent_find(payload, sr->ref)) == NULL &&
	    (task = disk = subagent_disk(sr)) == NULL)
		subagent_not_found(sr);
	else
		sent = subagent_answer(sr, task);
	json_object_put(disk);
	if (!sent)
		subagent_free(sr);
}

/* The reference in the path, checked: caller frees; NULL after the 400. */
static char *
subagent_ref(struct http_ctx *ctx)
{
	const char *t = ctx->path_tail;
	char *raw = xstrndup(t, strcspn(t, "/")), *v = http_uridecode(raw);

	free(raw);
	if (v != NULL && v[0] != '\0' &&
	    subagent_units(v) <= SUBAGENT_REF_MAX)
		return v;
	free(v);
	http_send_qerr(ctx->req, qerr_new("invalid_subagent_ref", "%s",
	    "`subagentRef` must be a non-empty subagent reference"));
	return NULL;
}

/*
 * GET /session/:id/subagents/:subagentRef and POST .../cancel: the
 * session's agent's tasks asked for, the reference resolved among them.
 */
void
route_session_subagent(struct http_ctx *ctx)
{
	struct subagent_req *sr;
	struct session *s;
	json_object *p;
	char *ref;

	if ((ref = subagent_ref(ctx)) == NULL)
		return;
	if ((s = routes_session(ctx)) == NULL) {
		free(ref);
		return;
	}
	sr = xcalloc(1, sizeof(*sr));
	sr->req = ctx->req;
	sr->ch = s->channel;
	sr->ref = ref;
	sr->cancel = http_method(ctx->req) == EVHTTP_REQ_POST;
	strlcpy(sr->id, s->id, sizeof(sr->id));
	p = xjson_object_new_object();
	json_object_object_add(p, "sessionId", xjson_object_new_string(s->id));
	channel_control_begin(sr->ch);
	if (channel_request(s->channel, "qwen/status/session/tasks", p,
	    (uint64_t)conf.init_timeout_ms, subagent_tasks_cb, sr) == NULL) {
		subagent_free(sr);
		http_error(ctx->req, "acp_channel_unavailable", s->id);
	}
}
