/* SPDX-License-Identifier: ISC */
/*
 * routes-branch.c: POST /session/:id/branch forks a session into a new
 * one whose transcript the child writes whole (qwen/control/session/branch):
 * 201, and without atRecordId the new session is resumed and attached
 * (branch-live.c).  POST /session/:id/side-task {name?} is upstream's
 * branch of a live session for a side question: the same copy, asked of
 * the agent as qwen/control/session/side_task, always resumed and
 * attached, answered with parentSessionId where a branch has forkedFrom
 * (our qwen-acp-child has no such method: 500 and its -32601).  Either
 * gets a copy of the source's attachments, as upstream's.
 *
 * A branch costs a copy of the transcript (every record is rewritten, and
 * the real agent reads only its own file, so no new file can point at the
 * source's records instead), so it is bounded: at most
 * BRANCH_MAX_SESSION in flight per source session and BRANCH_MAX_WORKSPACE
 * per workspace (429 branch_limit_exceeded).  When the restore budget
 * passes the caller gets its 504 but the branch stays counted (and keeps
 * the child, as control work does) until the child answers; the copy it
 * then made, or the staging file it left, is removed: nobody learnt its
 * id.  One more budget without an answer and it is given up, cleaned the
 * same way.
 */
#include "config.h"

#include <sys/queue.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "errors.h"
#include "json.h"
#include "log.h"
#include "serve.h"
#include "uuid.h"
#include "xmalloc.h"

#define TRANSCRIPT_RECORD_ID_MAX	200
#define BRANCH_MAX_SESSION		2	/* in flight per source session */
#define BRANCH_MAX_WORKSPACE		8	/* in flight per workspace */
#define SIDE_NAME_MAX			200	/* a side task name's characters */

struct branch_req {
	TAILQ_ENTRY(branch_req)	 entry;
	struct evhttp_request	*req;		/* NULL once abandoned */
	struct channel		*ch;	/* counts it as control work (seed 000) */
	struct channel_req		*rpc;
	struct event		*timer;
	int			 overdue;	/* the second budget runs */
	int			 sending;	/* inside channel_request() */
	int			 finished;	/* answered while sending */
	char			 id[SERVE_SESSION_ID_MAX + 1];
	char			 new_id[UUID_LEN + 1];
	char			*name;
	int			 live;	/* without atRecordId: resumed */
	int			 side;	/* a side task: "Side task of ..." */
	char			 client_id[SERVE_CLIENT_ID_MAX + 1];	/* "" none */
};

static TAILQ_HEAD(, branch_req) branches = TAILQ_HEAD_INITIALIZER(branches);

/* The source's name for forkedFrom.displayName: its id, shortened. */
static json_object *
short_name(const char *id)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "Session %.8s", id);
	return xjson_object_new_string(buf);
}

/* Branches in flight (abandoned ones too) from id, or on ch. */
static size_t
branches_count(const char *id, const struct channel *ch)
{
	struct branch_req *br;
	size_t n = 0;

	TAILQ_FOREACH(br, &branches, entry)
		if (id != NULL ? strcmp(br->id, id) == 0 : br->ch == ch)
			n++;
	return n;
}

/* 429 when the session or the workspace has its branches in flight. */
static int
branch_admit(struct evhttp_request *req, const char *id, const struct channel *ch)
{
	size_t ns = branches_count(id, NULL), nw = branches_count(NULL, ch);
	int by_session = ns >= BRANCH_MAX_SESSION;
	struct qerr *e;

	if (!by_session && nw < BRANCH_MAX_WORKSPACE)
		return 0;
	e = qerr_new("branch_limit_exceeded", NULL);
	if (e != NULL) {
		qerr_set_str(e, "sessionId", id);
		qerr_set_str(e, "scope", by_session ? "session" : "workspace");
		qerr_set_int(e, "limit", by_session ? BRANCH_MAX_SESSION :
		    BRANCH_MAX_WORKSPACE);
		qerr_set_int(e, "inFlight", (int64_t)(by_session ? ns : nw));
	}
	log_info("session %s: branch refused: %zu in flight for the %s",
	    id, by_session ? ns : nw, by_session ? "session" : "workspace");
	http_send_qerr(req, e);
	return -1;
}

/*
 * An abandoned branch is nobody's: remove its transcript and any staging
 * file (.<id>.<nonce>.tmp) the child left in the workspace's chats.
 */
static void
branch_remove(struct branch_req *br, const char *nid)
{
	char *dir = names_transcript_dir_ws(channel_workspace(br->ch)), *path;
	char pfx[UUID_LEN + 3];
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (dir == NULL)
		return;
	if (asprintf(&path, "%s/%s.jsonl", dir, nid) != -1) {
		n += unlink(path) == 0;
		free(path);
	}
	snprintf(pfx, sizeof(pfx), ".%s.", nid);
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strncmp(de->d_name, pfx, strlen(pfx)) == 0 &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0)
				n++;
		closedir(d);
	}
	log_info("session %s: abandoned branch %s removed (%d file%s)", br->id,
	    nid, n, n == 1 ? "" : "s");
	free(dir);
}

/* The branch is over: out of the count, the control work ends. */
static void
branch_free(struct branch_req *br)
{
	TAILQ_REMOVE(&branches, br, entry);
	if (br->timer != NULL)
		event_free(br->timer);
	channel_control_end(br->ch);
	free(br->name);
	free(br);
}

/*
 * The source's attachments copied to the branch, as upstream's branch
 * (and side task) copies them; a failure is logged, the branch stands.
 */
static void
branch_attachments(struct branch_req *br)
{
	char *cause = NULL;

	if (attachments_copy(channel_workspace(br->ch), br->id, br->new_id,
	    &cause) == -1) {
		log_warnx("session %s: attachments not copied to branch %s: %s",
		    br->id, br->new_id, cause != NULL ? cause : "?");
		free(cause);
	}
}

/* {sessionId, displayName, forkedFrom: {sessionId, displayName}}; a side
   task's {sessionId, displayName, parentSessionId}. */
static void
branch_reply(struct branch_req *br, json_object *payload)
{
	json_object *body, *ff;
	const char *title;
	char buf[96];

	title = json_get_str(payload, "displayName");
	body = xjson_object_new_object();
	json_object_object_add(body, "sessionId", xjson_object_new_string(br->new_id));
	if (br->name == NULL)
		snprintf(buf, sizeof(buf), "%s of %.8s",
		    br->side ? "Side task" : "Branch", br->id);
	json_object_object_add(body, "displayName",
	    xjson_object_new_string(br->name != NULL ? br->name :
	    title != NULL ? title : buf));
	/* Upstream's side task answers its parent instead of forkedFrom. */
	if (br->side)
		json_object_object_add(body, "parentSessionId",
		    xjson_object_new_string(br->id));
	else {
		ff = xjson_object_new_object();
		json_object_object_add(ff, "sessionId", xjson_object_new_string(br->id));
		json_object_object_add(ff, "displayName", short_name(br->id));
		json_object_object_add(body, "forkedFrom", ff);
	}
	log_info("session %s branched into %s", br->id, br->new_id);
	branch_attachments(br);
	if (br->live)
		branch_live_start(br->req, channel_workspace(br->ch),
		    br->new_id, br->client_id, body);
	else
		http_reply_json(br->req, 201, body);
}

/* The child's answer: to the caller, or, abandoned, its copy removed. */
static void
on_branch(void *arg, enum channel_outcome o, json_object *payload)
{
	struct branch_req *br = arg;
	const char *nid;

	/* A real agent picks the new id and title itself. */
	if (o == CHANNEL_RESULT &&
	    (nid = json_get_str(payload, "newSessionId")) != NULL &&
	    strlen(nid) == UUID_LEN && names_session_id_ok(nid))
		strlcpy(br->new_id, nid, sizeof(br->new_id));
	if (br->req == NULL)
		branch_remove(br, br->new_id);
	else if (o == CHANNEL_RESULT)
		branch_reply(br, payload);
	else if (o == CHANNEL_ERROR)
		http_error_rpc(br->req, payload, br->id);
	else
		routes_unavailable(br->req);
	if (br->sending)
		br->finished = 1;	/* freed by the route, after the send */
	else
		branch_free(br);
}

/* The budget passed: 504 to the caller; a second one: given up. */
static void
on_branch_timer(evutil_socket_t fd, short what, void *arg)
{
	struct branch_req *br = arg;
	struct timeval tv;
	struct qerr *e;

	(void)fd; (void)what;
	if (br->overdue) {
		log_warnx("session %s: abandoned branch %s unanswered; given up",
		    br->id, br->new_id);
		channel_forget(br->rpc);
		branch_remove(br, br->new_id);
		branch_free(br);
		return;
	}
	if ((e = qerr_new("transcript_read_timeout", NULL)) != NULL) {
		qerr_set_str(e, "sessionId", br->id);
		qerr_set_int(e, "timeoutMs", conf.restore_timeout_ms);
	}
	http_send_qerr(br->req, e);
	br->req = NULL;
	br->overdue = 1;
	log_info("session %s: branch %s abandoned at its budget", br->id, br->new_id);
	tv.tv_sec = conf.restore_timeout_ms / 1000;
	tv.tv_usec = (conf.restore_timeout_ms % 1000) * 1000;
	evtimer_add(br->timer, &tv);
}

/* name (a string) and atRecordId (a record id): 0, or -1 after the 400. */
static int
branch_body(struct http_ctx *ctx, const char **name, const char **at)
{
	json_object *v;

	*name = *at = NULL;
	if (json_object_object_get_ex(ctx->body, "name", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) > 256) {
			http_send_qerr(ctx->req, qerr_new("bad_request", "%s",
			    "`name` must be a string"));
			return -1;
		}
		*name = json_object_get_string(v);
	}
	if (json_object_object_get_ex(ctx->body, "atRecordId", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) == 0 ||
		    json_object_get_string_len(v) > TRANSCRIPT_RECORD_ID_MAX) {
			http_error(ctx->req, "invalid_turn_anchor", NULL);
			return -1;
		}
		*at = json_object_get_string(v);
	}
	return 0;
}

/* A new branch request on ch, counted; NULL when out of memory. */
static struct branch_req *
branch_new(struct channel *ch, struct http_ctx *ctx, const char *name,
    const char *at)
{
	struct branch_req *br;

	if ((br = calloc(1, sizeof(*br))) == NULL ||
	    (name != NULL && (br->name = strdup(name)) == NULL) ||
	    (br->timer = evtimer_new(serve_base, on_branch_timer, br)) == NULL) {
		if (br != NULL)
			free(br->name);
		free(br);
		return NULL;
	}
	br->req = ctx->req;
	br->ch = ch;
	br->live = at == NULL;
	if (ctx->client_id != NULL)
		strlcpy(br->client_id, ctx->client_id, sizeof(br->client_id));
	strlcpy(br->id, ctx->path_id, sizeof(br->id));
	uuid_new(br->new_id);
	TAILQ_INSERT_TAIL(&branches, br, entry);
	channel_control_begin(ch);
	return br;
}

/*
 * Ask the child for the branch (method) of ctx's session: 201 when it
 * answers, its error, or 504 at the restore budget.
 */
static void
branch_start(struct http_ctx *ctx, struct session *s, const char *name,
    const char *at, int side)
{
	const char *method = side ? "qwen/control/session/side_task" :
	    "qwen/control/session/branch";
	json_object *params;
	struct channel *ch;
	struct branch_req *br;
	struct timeval tv;

	/* A running or queued prompt is still writing the history. */
	if (s != NULL && prompts_pending(s) > 0) {
		http_error(ctx->req, "branch_while_prompt_active", s->id);
		return;
	}
	ch = s != NULL ? s->channel : channel_get(ctx->workspace);
	/* A branch is fresh work: not on a quarantined or overdue channel. */
	if (ch != NULL && (inflight_admit_control(ctx->req, ch) == -1 ||
	    branch_admit(ctx->req, ctx->path_id, ch) == -1))
		return;
	if (ch == NULL || (br = branch_new(ch, ctx, name, at)) == NULL) {
		http_error(ctx->req, "internal", NULL);
		return;
	}
	br->side = side;
	params = xjson_object_new_object();
	json_object_object_add(params, "sessionId", xjson_object_new_string(ctx->path_id));
	json_object_object_add(params, "cwd", xjson_object_new_string(channel_workspace(ch)));
	json_object_object_add(params, "newSessionId", xjson_object_new_string(br->new_id));
	if (at != NULL)
		json_object_object_add(params, "atRecordId", xjson_object_new_string(at));
	if (side && name != NULL)
		json_object_object_add(params, "name", xjson_object_new_string(name));
	/* Counted before it goes: a request that fails at once is answered now. */
	br->sending = 1;
	br->rpc = channel_request(ch, method, params, 0, on_branch, br);
	br->sending = 0;
	if (br->rpc == NULL || br->finished) {
		if (br->rpc == NULL)
			routes_unavailable(ctx->req);
		branch_free(br);
		return;
	}
	tv.tv_sec = conf.restore_timeout_ms / 1000;
	tv.tv_usec = (conf.restore_timeout_ms % 1000) * 1000;
	evtimer_add(br->timer, &tv);
}

void
route_session_branch(struct http_ctx *ctx)
{
	const char *name, *at;

	if (routes_check_cwd(ctx) == -1 || branch_body(ctx, &name, &at) == -1)
		return;
	branch_start(ctx, sessions_find(ctx->path_id), name, at, 0);
}

/*
 * A side task's name as upstream takes it: a string only (anything else
 * is no name), without C0, DEL and C1 controls, its first 200 characters;
 * NULL when nothing is left (caller frees).
 */
static char *
side_name(struct http_ctx *ctx)
{
	const unsigned char *s;
	char *out, *o;
	size_t chars = 0;

	if ((s = (const unsigned char *)json_get_str(ctx->body, "name")) == NULL)
		return NULL;
	o = out = xmalloc(strlen((const char *)s) + 1);
	for (; *s != '\0'; s++) {
		if (*s < 0x20 || *s == 0x7f)
			continue;
		if (*s == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f) {
			s++;		/* U+0080..U+009F */
			continue;
		}
		if ((*s & 0xc0) != 0x80 && chars++ == SIDE_NAME_MAX)
			break;
		*o++ = (char)*s;
	}
	*o = '\0';
	if (out[0] == '\0') {
		free(out);
		return NULL;
	}
	return out;
}

/* POST /session/:id/side-task {name?}: of a live session only. */
void
route_session_side_task(struct http_ctx *ctx)
{
	struct session *s;
	char *name;

	if ((s = routes_session(ctx)) == NULL)
		return;
	/* Upstream's body has no atRecordId: a side task forks the whole. */
	name = side_name(ctx);
	branch_start(ctx, s, name, NULL, 1);
	free(name);
}
