/* SPDX-License-Identifier: ISC */
/*
 * restore.h: qwen-restore, the command-line client of qwen-serve.
 *
 * The program is split by role: main.c (options, dispatch, commands),
 * http.c (libcurl requests and streams), sse.c (the incremental SSE
 * parser), state.c (the state directory: capability cache, clientIds,
 * locks), heal.c (prompt admission with the clientId self-heal of seed 001
 * and auto-resume), timeout.c (the restore timeout of seed 000) and
 * output.c (error classification, messages, exit codes, progress).
 */
#ifndef QWEN_RESTORE_H
#define QWEN_RESTORE_H

#include <sys/queue.h>

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "json.h"

#define RESTORE_ID_MAX		128	/* session and client ids */
#define RESTORE_FETCH_DEFAULT_MS 30000	/* SDK default fetchTimeoutMs */
#define LIST_DEFAULT	100	/* list without --limit */
#define LIST_MAX	10000	/* the daemon's largest ?limit (--all) */

struct state;

/* Where a timeout came from (for -v and the tests). */
enum timeout_source {
	TIMEOUT_PER_REQUEST,	/* --timeout-ms */
	TIMEOUT_FETCH_FLAG,	/* --fetch-timeout-ms */
	TIMEOUT_FETCH_ENV,	/* QWEN_FETCH_TIMEOUT_MS */
	TIMEOUT_CAPABILITY,	/* cached limits.sessionRestoreTimeoutMs + 10 s */
	TIMEOUT_DEFAULT,	/* 70 s (restore) or 30 s (other requests) */
};

/* The global options and what every command shares. */
struct rctx {
	char		*socket_path;	/* NULL when talking to base_url */
	char		*socket_tried;	/* the default places looked at */
	char		*base_url;	/* no trailing slash */
	char		*addr_key;	/* "unix:PATH" or the URL: state key */
	char		*token;		/* NULL: no Authorization */
	char		*cwd;		/* absolute */
	int		 help;		/* --help: of the command, if one is named */
	char		*state_dir;	/* NULL: the default */
	int64_t		 fetch_timeout_ms;	/* -1 when not given */
	enum timeout_source fetch_source;	/* FLAG or ENV when given */
	int64_t		 timeout_ms;	/* --timeout-ms, -1 when not given */
	int64_t		 last_event_id;	/* --last-event-id, -1 when not given */
	int		 json;
	int		 quiet;
	int		 verbose;
	int		 retry;		/* --retry N */
	int		 no_auto_resume;
	int		 no_wait;
	int		 parallel;
	int64_t		 page_size;	/* load --page-size, -1 when not given */
	const char	*replay_mode;	/* load --replay-mode full|summary */
	int64_t		 deadline_ms;	/* prompt --deadline-ms, -1 */
	const char	*new_id;	/* new --session-id */
	const char	*approval_mode;	/* new --approval-mode */
	const char	*model_service;	/* new --model-service */
	int64_t		 limit;		/* transcript, list --limit, -1 */
	int		 all;		/* list --all */
	int		 no_header;	/* list --no-header */
	int64_t		 max_time_ms;	/* prompt --max-time, -1 */
	int		 follow;	/* show --follow, follow */
	const char	*before;	/* transcript --before RECORD */
	const char	*at;		/* branch --at RECORD */
	const char	*name;		/* branch --name NAME */
	int		 approve;	/* enum approve_mode */
	int		 cols;		/* output width, 0: no limit */
	const char	*command;
	const char	*session_id;	/* NULL for capabilities/list/new */
	char		*session_id_full; /* owned: a prefix completed */
	struct state	*state;
};

/* ---- http.c ------------------------------------------------------------ */

/* One answer; every string is owned by the struct (http_resp_clear()). */
struct http_resp {
	long		 status;	/* 0: no HTTP answer (see cerr) */
	char		*body;		/* NUL-terminated, may be NULL */
	size_t		 len;
	char		*retry_after;	/* the header value or NULL */
	char		*content_type;
	int		 cerr;		/* CURLcode, 0 when an answer came */
	char		 errbuf[256];	/* libcurl's message for cerr */
	int		 timed_out;	/* our deadline fired */
	int64_t		 timeout_ms;	/* the deadline that applied, 0 none */
	int		 os_errno;	/* of a failed connect, 0 none */
	const char	*socket_path;	/* borrowed from the rctx: what was */
	const char	*socket_tried;	/* tried, for the error message */
	const char	*url;
};

/* Streaming callbacks: on_open once the 2xx event-stream headers are in. */
struct http_stream_cb {
	void	(*on_open)(void *arg);
	/* Return -1 to stop the stream (it then ends without an error). */
	int	(*on_data)(void *arg, const char *buf, size_t len);
	/* Polled; nonzero stops the stream. */
	int	(*should_stop)(void *arg);
	void	*arg;
};

/* A request.  body is borrowed (NULL: no body, no content type). */
struct http_req {
	const char	*method;
	const char	*path;		/* already escaped, with query */
	json_object	*body;
	const char	*client_id;	/* NULL or "": no X-Qwen-Client-Id */
	int64_t		 last_event_id;	/* -1: no Last-Event-ID */
	int64_t		 timeout_ms;	/* whole request; 0: no timer */
	int		 progress;	/* show the restore progress line */
};

/*
 * Clear req and set what every request has: method, path (borrowed), body
 * (borrowed, may be NULL), client_id (may be NULL), the whole-request
 * timer (0: none), no Last-Event-ID and no progress line.
 */
void	http_req_init(struct http_req *req, const char *method,
	    const char *path, json_object *body, const char *client_id,
	    int64_t timeout_ms);

int	http_global_init(void);
void	http_global_cleanup(void);

/* Run req and collect the answer into *resp (cleared first).  0 or -1. */
int	http_do(const struct rctx *, const struct http_req *,
	    struct http_resp *resp);

/*
 * Open an SSE stream: req.timeout_ms bounds the phase until the headers
 * only.  A 2xx text/event-stream answer is passed to cb->on_data until the
 * stream ends or cb stops it; any other answer is collected into *resp.
 * Returns 0 when the stream was opened (resp->status is its status),
 * -1 when it was not (resp holds the error).
 */
int	http_stream(const struct rctx *, const struct http_req *,
	    const struct http_stream_cb *cb, struct http_resp *resp);

void	http_resp_clear(struct http_resp *);
int	http_ok(const struct http_resp *);	/* 2xx */

/* "/session/<escaped id><suffix>"; caller frees. */
char	*http_session_path(const char *id, const char *suffix);

/* The body parsed as a JSON object, or NULL; caller puts. */
json_object *http_resp_json(const struct http_resp *);

/* ---- address.c --------------------------------------------------------- */

/* The first default socket that exists (ctx->socket_path, socket_tried). */
void	address_default_socket(struct rctx *);
/* Why a socket or a URL cannot be reached, as one message into buf. */
void	address_explain(const char *path, const char *tried, char *buf,
	    size_t len);
void	address_explain_url(const char *url, int os_errno,
	    const char *curlmsg, char *buf, size_t len);
/* <dir>/token beside the first default socket place with one, or NULL. */
char	*address_default_token(void);

/* ---- human.c ------------------------------------------------------------ */

/* Display width of s in terminal columns (wcwidth). */
size_t	human_width(const char *s);
/*
 * Print s cleaned of control characters in at most max columns (0: no
 * limit, a cut marked "…"), padded to pad columns; the columns printed.
 */
size_t	human_put(const char *s, size_t max, size_t pad);
/* list: an aligned table of the sessions answer (borrowed). */
void	human_list(const struct rctx *, json_object *answer);
/* status, capabilities, heartbeat: "key  value" lines of obj (borrowed). */
void	human_keyvalue(json_object *obj);

/* ---- sse.c -------------------------------------------------------------- */

struct sse_event {
	const char	*id;		/* NULL when no id field */
	const char	*event;		/* "message" when none */
	const char	*data;		/* lines joined with \n */
	long		 retry;		/* -1 when none */
};

typedef int (*sse_cb)(void *arg, const struct sse_event *);

struct sse_parser;

#define SSE_MAX_BUFFER	(16u * 1024 * 1024)

/* A new parser calling cb for each event; caller frees.  NULL on ENOMEM. */
struct sse_parser *sse_new(sse_cb cb, void *arg);
void	sse_free(struct sse_parser *);
/*
 * Feed bytes in any slicing.  Returns 0, 1 when cb asked to stop (nonzero
 * return), or -1 on a frame over SSE_MAX_BUFFER or ENOMEM.
 */
int	sse_feed(struct sse_parser *, const char *buf, size_t len);
/* Comment lines seen so far (": heartbeat"). */
unsigned long sse_comments(const struct sse_parser *);

/* ---- state.c ------------------------------------------------------------ */

/* Open (creating, 0700) the state for ctx's daemon.  NULL + *cause. */
struct state *state_open(const char *dir, const char *addr_key, char **cause);
void	state_free(struct state *);

/* The cached restore budget in ms, or -1 when none is cached. */
int64_t	state_cap_restore_ms(struct state *);
/* Store the capability answer (borrowed); a missing/invalid budget clears. */
int	state_cap_store(struct state *, json_object *caps);

/* The stored clientId of sid into buf ("" when none).  0 or -1. */
int	state_client_get(struct state *, const char *sid, char *buf,
	    size_t len);
/* Store ("" or NULL removes) the clientId of sid, mode 0600.  0 or -1. */
int	state_client_put(struct state *, const char *sid, const char *id);
/* Take the per-session lock (blocking flock); returns an fd or -1. */
int	state_lock(struct state *, const char *sid);
void	state_unlock(int fd);

/* Whether id is usable as a file name part: [A-Za-z0-9._:-], no leading '.'. */
int	state_id_valid(const char *id);

/* ---- timeout.c ---------------------------------------------------------- */

/*
 * The restore timeout for load/resume (0: no timer), its source in *src
 * and whether a value over 2^31-1 (not an explicit 0) disabled the timer
 * in *disabled.  Never
 * makes a request: the capability comes from the cache only.
 */
int64_t	timeout_restore_ms(const struct rctx *, enum timeout_source *src,
	    int *disabled);
/* The timeout of any other request (0: no timer) and its source. */
int64_t	timeout_fetch_ms(const struct rctx *, enum timeout_source *src);
const char *timeout_source_name(enum timeout_source);

/* ---- output.c ----------------------------------------------------------- */

#define EXIT_OK		0
#define EXIT_FAIL	1
#define EXIT_USAGE	2
#define EXIT_NOTFOUND	3
#define EXIT_MAXTIME	124	/* prompt --max-time passed (timeout(1)'s) */
#define EXIT_INTERRUPT	130	/* prompt ended by ^C (128 + SIGINT) */
#define EXIT_UNREACH	69
#define EXIT_RETRY	75

/* A classified failure of one request. */
struct rerr {
	char		 code[64];	/* wire code, or a client-side one */
	char		 message[512];
	int		 exit_code;
	int		 retryable;
	int		 retry_after;	/* seconds, -1 unknown */
	int		 status;	/* HTTP status, 0 none */
	int64_t		 timeout_ms;	/* restore timeouts: the budget */
};

/* Classify a failed answer (status 0: transport error). */
void	output_classify(const struct http_resp *, struct rerr *);
/* Classify a client-side error built from code and a message. */
void	output_local(struct rerr *, const char *code, int exit_code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Report a failed request: one line on stderr, or with --json the daemon's
 * body (or a synthesised one) on stdout.  Returns the exit code.
 */
int	output_error(const struct rctx *, const struct http_resp *,
	    const struct rerr *);
/* Print a usage/local error line and return its exit code. */
int	output_fail(const struct rctx *, const struct rerr *);

/* -v / informational lines on stderr (prefixed "qwen-restore: "). */
void	output_verbose(const struct rctx *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* Abbreviated id for messages ("3f2a9c1d…"). */
const char *output_short_id(const char *id, char *buf, size_t len);

/* The restore progress line on a terminal (stderr). */
void	output_progress(const struct rctx *, double elapsed_s,
	    int64_t deadline_ms);
void	output_progress_end(const struct rctx *);
int	output_progress_enabled(const struct rctx *);

/* ---- heal.c ------------------------------------------------------------- */

/* Prompt admission state shared by the prompts of one process. */
struct heal {
	struct rctx	*ctx;
	const char	*sid;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	char		 client_id[RESTORE_ID_MAX + 1];
	int		 inflight;	/* a reattach is running */
	unsigned	 gen;		/* reattaches started */
	unsigned	 fail_gen;	/* the last one that failed */
	struct http_resp fail_resp;	/* its answer */
	int		 resumes;	/* resumes this process sent */
};

void	heal_init(struct heal *, struct rctx *, const char *sid);
void	heal_destroy(struct heal *);

/*
 * POST the prompt body (borrowed) under the self-heal rules: an
 * invalid_client_id (and, unless --no-auto-resume, a session_not_found)
 * answer reattaches once (single-flight, in-process and across processes)
 * and retries once.  *resp gets the last answer.  Returns 0 when the
 * admission succeeded (2xx), -1 otherwise.
 */
int	heal_prompt(struct heal *, json_object *body, struct http_resp *resp);

/* The current clientId into buf ("" none). */
void	heal_client_id(struct heal *, char *buf, size_t len);

/* ---- events.c ------------------------------------------------------------ */

struct qev {
	TAILQ_ENTRY(qev)	 entry;
	json_object		*env;	/* the envelope, owned */
};

/* The subscription: a thread filling a queue of envelopes. */
struct sub {
	struct rctx		*ctx;
	const char		*sid;
	char			 client_id[RESTORE_ID_MAX + 1];
	int64_t			 cursor;	/* Last-Event-ID, -1 none */
	pthread_t		 thread;
	int			 started;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	TAILQ_HEAD(, qev)	 q;
	int			 opened, ended, stop;
	struct http_resp	 resp;		/* the answer when not opened */
	int64_t			 last_id;	/* highest envelope id seen */
	struct sse_parser	*parser;
	json_tokener		*tok;
	int			 bad;		/* framing error */
};

/*
 * Start a subscription of sid from cursor (-1: live only) and wait until
 * it is open (0) or failed (-1: s->resp holds the answer).  Either way
 * events_stop() frees it.
 */
int	events_start(struct sub *s, struct rctx *ctx, const char *sid,
	    const char *client_id, int64_t cursor);
void	events_stop(struct sub *s);
/* The next envelope (caller puts), or NULL once the stream ended. */
json_object *events_next(struct sub *s);
#define SUB_TICK_MS	100	/* how often events_next_until() looks */
/*
 * events_next(), or NULL too once *flag != seen (a signal came) or the
 * monotonic deadline in ms (0: none) passed, the stream still open.
 */
json_object *events_next_until(struct sub *s, uint64_t deadline,
	    volatile sig_atomic_t *flag, sig_atomic_t seen);
/* Whether an envelope ends the session's stream (closed, died, evicted). */
int	events_session_end(json_object *env);

/* events ID: return the exit code. */
int	cmd_events(struct rctx *);

/* ---- approve.c ----------------------------------------------------------- */

enum approve_mode { APPROVE_NONE, APPROVE_ALL, APPROVE_ASK };
/* "ask", "all", "none" or -1. */
int	approve_parse(const char *);
/* Answer a permission_request envelope (borrowed) by ctx->approve. */
void	approve_request(struct rctx *, const char *client_id, json_object *env);
/* -v: thoughts and tool calls of a session/update (borrowed) on stderr. */
void	approve_show_update(const struct rctx *, json_object *update);
/* permission ID REQUEST-ID allow|deny. */
int	cmd_permission(struct rctx *, char **args);

/* ---- prompt.c ------------------------------------------------------------ */

/* prompt ID [TEXT|-]: return the exit code. */
int	cmd_prompt(struct rctx *, const char *text);

/* ---- commands.c: one function per command, returning the exit code ----- */

int	cmd_capabilities(struct rctx *, char **args);
int	cmd_list(struct rctx *, char **args);
int	cmd_new(struct rctx *, char **args);
int	cmd_attach(struct rctx *, char **args);
int	cmd_load(struct rctx *, char **args);
int	cmd_resume(struct rctx *, char **args);
int	cmd_prompt_args(struct rctx *, char **args);
int	cmd_events_args(struct rctx *, char **args);
int	cmd_cancel(struct rctx *, char **args);
int	cmd_heartbeat(struct rctx *, char **args);
int	cmd_detach(struct rctx *, char **args);
int	cmd_close(struct rctx *, char **args);
int	cmd_status(struct rctx *, char **args);
/* POST /session/ID/cancel, printing nothing but an error; exit code. */
int	commands_cancel(struct rctx *);
/*
 * GET the workspace's sessions, at most limit (caller clears *resp);
 * 0 or the exit code, reported unless quiet.
 */
int	commands_list_get(struct rctx *, long limit, struct http_resp *resp,
	    int quiet);
/*
 * A session request with the stored clientId; prints the answer (print:
 * as key/value lines unless --json).  body: NULL none, else taken.
 */
int	commands_call(struct rctx *, const char *method, const char *suffix,
	    json_object *body, int print);
/*
 * POST /session/sid/<action> (load or resume) with the workspace cwd and
 * client_id (NULL: none), under the restore timeout; stores the returned
 * clientId.  0 on 2xx, -1 otherwise (*resp holds the answer).
 */
int	commands_restore_session(const struct rctx *, const char *action,
	    const char *sid, const char *client_id, struct http_resp *resp,
	    char *new_id, size_t new_id_len);

/* ---- modes.c: model and approval mode of a live session -------------- */

int	cmd_model(struct rctx *, char **args);
int	cmd_mode(struct rctx *, char **args);

/* ---- history.c: transcript pages and branches --------------------------- */

int	cmd_transcript(struct rctx *, char **args);
int	cmd_branch(struct rctx *, char **args);

/* ---- render.c: events as a conversation -------------------------------- */

struct render {
	const char	*kind;	/* the open paragraph's kind, NULL none */
	int		 bol;	/* the cursor is at the start of a line */
};

void	render_init(struct render *);
/* One event envelope (borrowed) as text on stdout. */
void	render_event(struct render *, json_object *env);
/* Close the open paragraph and flush. */
void	render_end(struct render *);

/* ---- prefix.c: short session ids --------------------------------------- */

/* Complete a short ctx->session_id; 0, or the exit code (ambiguous). */
int	prefix_resolve(struct rctx *);

/* ---- main.c: shared with heal.c and prompt.c ---------------------------- */

/*
 * --retry: when e is retryable and fewer than ctx->retry attempts were
 * made, wait its Retry-After (1 s when unknown), count the attempt and
 * return 1; else 0.
 */
int	restore_retry_wait(const struct rctx *, const struct rerr *,
	    int *attempt);


#endif
