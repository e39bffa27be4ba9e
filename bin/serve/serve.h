/* SPDX-License-Identifier: ISC */
/*
 * serve.h: qwen-serve internals shared by its files.
 *
 * One file per role: main.c (options, signals, lifecycle), checkconf.c
 * (--check-config), pidfile.c, sockact.c (socket activation), sdnotify.c
 * and ready.c (readiness), listen.c (sockets), gate.c (request gates),
 * peer.c (who the peer is), token.c (the bearer), conn.c
 * (connections from their accept on), conn-input.c
 * (what they send), http.c (routing, bodies, replies;
 * /workspaces/:w/acp), names.c (session ids, the workspaces, the
 * transcript directories), routes-session.c (session routes),
 * routes-agent.c (permission answers, model and mode routes), modes.c
 * (a session's model and approval mode, switched through its agent),
 * routes-history.c (transcript pages), routes-branch.c (branches,
 * bounded), routes-daemon.c (health, capabilities, daemon status, workspace listing route), metrics.c
 * (GET /metrics), audit.c (--audit-log), ratelimit.c (--rate-limit),
 * drain.c (SIGTERM's drain), listing.c (the
 * listing itself, a slice per loop turn), web.c (the console's files),
 * bus.c
 * (event buses and their replay rings), sse.c (their SSE subscribers),
 * inflight.c (in-flight spawns and
 * restores: the seam of the restore state machine; restore-fsm.c the
 * machine, inflight-ops.c its callbacks, inflight-reply.c the public
 * answers, inflight-fence.c fences and early events), channel.c and
 * channel-rpc.c (the qwen-acp-child process and its JSON-RPC traffic),
 * clients.c (client registry), sessions.c (session map, reaping,
 * tombstones), prompts.c (a session's prompt FIFO and deadlines), acp*.c (ACP over HTTP and WebSocket: acp.h), ws.c and
 * ws-upgrade.c (WebSocket: ws.h).  Everything runs on one libevent loop;
 * nothing here is thread-safe.
 */
#ifndef QWEN_SERVE_H
#define QWEN_SERVE_H

#include <sys/queue.h>
#include <sys/tree.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>
#include <json-c/json.h>

#include "uuid.h"

#define SERVE_MAX_BODY		(10u * 1024 * 1024)
#define SERVE_MAX_HEADERS	(64u * 1024)
#define SERVE_SESSION_ID_MAX	128
/* reqid.c: a client's X-Request-Id at most; a trace id in hex. */
#define REQID_MAX		64
#define REQID_TRACE_LEN		32
#define SERVE_CLIENT_ID_MAX	128
/* Clients registered per session; the least recently seen makes room. */
#define SERVE_MAX_CLIENTS	256
#define SERVE_MAX_SUBSCRIBERS	64
#define SERVE_SSE_RETRY_MS	3000
#define SERVE_SSE_QUEUE_BYTES	(2u * 1024 * 1024)
#define SERVE_SSE_REPLAY_BYTES	(8u * 1024 * 1024)
/* A bus's replay ring (and an ACP stream's queue) in bytes. */
#define SERVE_RING_BYTES	(2 * SERVE_SSE_REPLAY_BYTES)
#define SERVE_TOMBSTONE_MS	60000
/* A prompt goes to the child this long after its 202 was queued. */
#define SERVE_PROMPT_DISPATCH_MS	5
/* How long a prompt past its deadline may take to end after its cancel. */
#define SERVE_PROMPT_CANCEL_GRACE_MS	5000
/* How often clients may poll a session's live state (capabilities). */
#define SERVE_LIVE_STATE_POLL_MS	5000

/* Options, filled by main.c and read everywhere. */
struct serve_conf {
	char		*socket_path;	/* NULL with no_socket */
	int		 no_socket;
	int		 socket_default;	/* the private default location */
	char		*hostname;
	int		 port;
	int		 no_tcp;
	char		*token;		/* NULL: no bearer configured */
	char		*token_file;	/* --token-file, or NULL */
	int		 token_generated;	/* made by us: gates TCP only */
	int		 require_auth;
	char		**allow_origin;
	size_t		 n_allow_origin;
	int		 max_connections;
	char		*workspace;	/* the primary: workspaces[0] */
	char		**workspaces;	/* --workspace, canonical, in order */
	size_t		 n_workspaces;
	char		*child_path;
	char		**child_argv;	/* --child-command, split; or NULL */
	char		*data_dir;	/* NULL: the child's default */
	char		*cache_dir;	/* likewise (transcript index caches) */
	char		*agent_command;
	char		*agent_acp;	/* passed to qwen-acp-child */
	int		 agent_prestart;	/* --agent-prestart yes (default) */
	int		 agent_compact;	/* --agent-compact yes (default) */
	char		*log_file;
	char		*audit_log;	/* --audit-log, or NULL */
	int		 rate_limit;		/* --rate-limit */
	int		 rate_limit_prompt;	/* per window and client */
	int		 rate_limit_mutation;
	int		 rate_limit_read;
	int64_t		 rate_limit_window_ms;
	int		 rate_limit_own_uid;	/* our own uid counted too */
	char		**trusted_proxy;	/* --trusted-proxy addresses */
	size_t		 n_trusted_proxy;
	char		**allow_host;		/* --allow-host: Host names */
	size_t		 n_allow_host;
	int64_t		 drain_grace_ms;	/* SIGTERM: turns may finish */
	char		*trace_file;
	char		*otlp_endpoint;		/* --otlp-endpoint, or NULL */
	int64_t		 init_timeout_ms;
	int64_t		 restore_timeout_ms;	/* effective (budget_restore_ms) */
	int64_t		 permission_timeout_ms;	/* 0: wait for an answer forever */
	int64_t		 channel_idle_timeout_ms;
	int64_t		 session_idle_timeout_ms;
	int64_t		 session_reap_interval_ms;
	int64_t		 sse_heartbeat_ms;
	int64_t		 prompt_deadline_ms;	/* 0: no absolute prompt deadline */
	int64_t		 writer_idle_timeout_ms;	/* 0: stalled streams stay */
	size_t		 event_ring_size;
	size_t		 compacted_replay_max_bytes;
	int		 max_sessions;		/* 0: unlimited */
	int		 max_total_sessions;	/* 0: unlimited */
	int		 child_max_sessions;	/* -1: derived, 0: unlimited */
	int		 max_pending_prompts;	/* 0: unlimited */
	int		 no_web;		/* --no-web: no console at / */
	int		 session_shell;		/* --enable-session-shell */
	char		*web_dir;	/* --web-dir; NULL: env or pkgdatadir */
	int		 tcp_loopback;		/* derived from hostname */
	int		 bound_port;		/* after listen */
	char		*pidfile;		/* --pidfile, or NULL */
	int		 check_config;		/* --check-config */
	int		 activated;		/* sockets passed by systemd */
	int		 act_unix_fd;		/* passed Unix listener, or -1 */
	int		 act_tcp_fd;		/* passed TCP listener, or -1 */
	uint64_t	 started_mono_ms;	/* for uptime */
	uint64_t	 started_wall_ms;
};

/* ---- serve.c: what the whole daemon shares (set by main.c) ----------- */
extern struct serve_conf conf;
extern struct event_base *serve_base;
struct trace_sink;
extern struct trace_sink *serve_trace;
extern struct otlp *serve_otlp;		/* NULL: no OTLP export */
int	serve_shutting_down(void);	/* serve_request_shutdown() has run */
void	serve_shutdown_begin(void);

/* main.c */
void	serve_request_shutdown(void);

/* ---- names.c: session ids, workspaces and transcript directories ------ */
int	names_session_id_ok(const char *id);	/* 1..128 of [A-Za-z0-9._:-], no leading . */
char	*names_transcript_dir(void);	/* caller frees; NULL without a data dir */
char	*names_transcript_dir_ws(const char *workspace);	/* likewise */
/* The registered workspace equal to dir (canonical), else the deepest one
   that dir is inside of (a subdirectory of a project), or NULL. */
const char *names_workspace(const char *dir);
/* The id of workspaces[i] in capabilities: "primary", "ws1", ... */
void	names_workspace_id(size_t i, char *buf, size_t size);

/* ---- listen.c ---------------------------------------------------------- */
struct evhttp;
/* Bind (or adopt the systemd-passed) listeners and hand them to http. */
int	listen_start(struct evhttp *http);
/*
 * The address our own listener answers on (the Unix socket, else TCP with
 * a wildcard turned into loopback), for the readiness probe: its family,
 * or -1 when there is no listener.
 */
int	listen_probe_addr(struct sockaddr_storage *ss, socklen_t *len);
int	listen_is_loopback_host(const char *host);
/*
 * Open the socket directory dir and check it (creating the private
 * default): its descriptor, or -1 with *cause saying why it is refused
 * (the caller logs it: fatal for the socket, a warning for the token).
 */
int	listen_check_dir(const char *dir, char **cause);
void	listen_stop(void);
void	listen_fd_freed(void);	/* a connection closed: resume accepting */
void	listen_accepted(void);	/* a connection was accepted */

/* ---- gate.c ------------------------------------------------------------ */
/*
 * The transport gates for one request: peer credentials, Host allowlist,
 * Origin, bearer token.  Returns 0 to go on, or sends the error reply and
 * returns -1.  GATE_HEALTH: GET /health (pre-auth unless --require-auth);
 * GATE_PUBLIC: the console's static files (no bearer, but for a TCP peer
 * that is not the daemon's user when the token is the generated one).
 * A loopback TCP peer running as the daemon's user needs no generated
 * token.
 */
enum gate_kind { GATE_API, GATE_HEALTH, GATE_PUBLIC };
int	gate_request(struct evhttp_request *req, enum gate_kind kind);
/* Answer an allowed CORS preflight without the bearer; 1 when answered. */
int	gate_preflight(struct evhttp_request *req);

/* ---- gate-cors.c: the CORS headers of a reply (a leaf) ------------------ */
/* Extra response headers for an allowed cross-origin request. */
void	gate_cors_headers(struct evhttp_request *req);

/* ---- token.c: the bearer token --------------------------------------- */
/* --token's value (caller frees), wiped from argv, with a warning. */
char	*token_from_argv(char *arg);
/* --token-file, --token (takes ownership), credential, env; exits 2. */
char	*token_resolve(const char *file, char *flag);
void	 token_set(const char *token);	/* keep its digest */
int	 token_check(const char *auth);	/* the Authorization value */
void	 token_generate(void);	/* TCP with no token: make and write one */
void	 token_unlink(void);

/* ---- peer.c: who is on the other end ----------------------------------- */
int	 peer_unix_trusted(int fd);	/* SO_PEERCRED: us or root */
long	 peer_tcp_uid(int fd);		/* sock_diag; -1 when unknown */
int	 peer_tcp_trusted(int fd);	/* loopback peer runs as us */
#define PEER_ADDR_MAX	64		/* an INET6 address and more */
long	 peer_unix_uid(struct evhttp_request *);	/* -1: not the Unix socket */
/* The client's numeric address (X-Forwarded-For from a --trusted-proxy),
   "unix" or "unknown". */
void	 peer_client_addr(struct evhttp_request *, char *buf, size_t len);

/* ---- sockact.c: socket activation (LISTEN_FDS) ------------------------ */
/*
 * Take the listeners systemd passed (conf.act_unix_fd, conf.act_tcp_fd,
 * conf.activated, socket path, TCP address) and unset LISTEN_PID,
 * LISTEN_FDS and LISTEN_FDNAMES.  Returns 1 when activated, 0 when not
 * (no variables, or meant for another pid), -1 with *cause (caller frees).
 */
int	sockact_take(char **cause);

/* ---- sdnotify.c: the sd_notify protocol (NOTIFY_SOCKET) ----------------- */
/* Read and unset NOTIFY_SOCKET: 1 notifying, 0 not asked, -1 unusable. */
int	sdnotify_init(void);
int	sdnotify_enabled(void);
void	sdnotify_send(const char *msg);
/* READY=1, MAINPID, STATUS=; then STATUS= on each change (rate-limited). */
void	sdnotify_ready(void);
void	sdnotify_stopping(void);	/* STOPPING=1 */
void	sdnotify_free(void);

/* ---- ready.c: the readiness probe (our own GET /capabilities) ---------- */
/* Probe until the daemon answers 200, then call done once. */
void	ready_probe_start(void (*done)(void));
void	ready_probe_free(void);

/* ---- pidfile.c --------------------------------------------------------- */
/* Write path atomically and keep it locked; -1 with *cause (caller frees). */
int	pidfile_take(const char *path, char **cause);
/* -1 with *cause when a running daemon holds path (or it is unreadable). */
int	pidfile_check(const char *path, char **cause);
/* Remove the pidfile if it is still ours (only in the creating process). */
void	pidfile_release(void);

/* ---- child-cmd.c ------------------------------------------------------- */
/* --child-command: split line into conf.child_argv, or exit 2. */
void	child_cmd_option(const char *line);
/* Options that exclude each other (--child, --child-command, --agent-*): exit 2. */
void	child_cmd_check(void);
/* The command a child is started as, for people to read.  Caller frees. */
char	*child_cmd_describe(void);

/* ---- permission.c ------------------------------------------------------ */
struct channel;
struct session;
/* The child asks (rpc_id, params borrowed): hold it for the clients. */
void	permission_ask(struct channel *, json_object *rpc_id,
	    json_object *params);
enum permission_answer { PERMISSION_ACCEPTED, PERMISSION_NOT_FOUND,
	    PERMISSION_BAD_OUTCOME, PERMISSION_BAD_OPTION };
/*
 * A client's answer {outcome:"selected",optionId}|{outcome:"cancelled"}
 * (borrowed) to request_id of session_id (NULL: any session).  voter: the
 * answering clientId or NULL.
 */
enum permission_answer permission_answer(const char *session_id,
	    const char *request_id, json_object *outcome, const char *voter);
/* The session a held request belongs to, or NULL. */
const char *permission_session_of(const char *request_id);
size_t	permission_pending(const struct session *);
/* Every unanswered request of s as status shows it (caller owns). */
json_object *permission_interactions(const struct session *);
size_t	permission_questions(const struct session *);
/* Cancel the session's requests (answering the child if it still runs). */
void	permission_cancel_session(struct session *, int child_alive);
/* The session is going: cancel quietly (its bus is ending). */
void	permission_forget_session(struct session *);

/* ---- checkconf.c ------------------------------------------------------- */
/* --check-config: report on stdout/stderr; the exit status (0 or 1). */
int	checkconf_run(void);
/* The data, cache and runtime directories are ours alone, when they exist. */
int	checkconf_dirs(char **cause);

/* ---- http.c ------------------------------------------------------------ */
struct http_ctx {
	struct evhttp_request	*req;
	json_object		*body;		/* the parsed object, or {} */
	const char		*path_id;	/* canonical session id, or NULL */
	const char		*path_tail;	/* R_TAIL routes: the last segment */
	const char		*client_id;	/* header value, NULL if absent */
	const char		*workspace;	/* chosen by cwd (routes_check_cwd) */
	const char		*bound;		/* /workspaces/:ws/session/:id/: ws */
	int			 client_id_bad;	/* header present but malformed */
	struct evkeyvalq	*query;
};

struct evhttp	*http_new(struct event_base *);
void		 http_free(struct evhttp *);
/* The request callback, set once at startup (routes_request()). */
void	http_set_routes(void (*)(struct evhttp_request *));
struct qerr;
/*
 * An in-process caller's capture of a reply to its own request: 1 when it
 * took it (body, e borrowed; e is http_send_qerr()'s, else NULL).
 */
typedef int (*http_capture_fn)(struct evhttp_request *, int status,
    json_object *body, struct qerr *e);
void	http_capture_add(http_capture_fn);	/* at startup, asked in order */
/* Whether one of them took the reply (then it is not to be sent). */
int	http_captured(struct evhttp_request *, int status, json_object *body,
	    struct qerr *e);
/*
 * The body as a JSON object (*out, caller frees); non-objects count as
 * {}.  -1: malformed, -2: over the value budget, refused unparsed.
 */
int	http_body_parse(struct evhttp_request *, json_object **out);
/* Replies.  body: takes ownership; NULL sends an empty body. */
void	http_reply_json(struct evhttp_request *, int status, json_object *body);
void	http_reply_empty(struct evhttp_request *, int status);
void	http_set_retry_after(struct evhttp_request *, int seconds);
const char *http_query(const struct http_ctx *, const char *name);
const char *http_header(struct evhttp_request *, const char *name);
const char *http_path(struct evhttp_request *);
enum evhttp_cmd_type http_method(struct evhttp_request *);
char	*http_uridecode(const char *);
void	http_write_size(struct evhttp_request *, size_t bytes);
void	http_set_header(struct evhttp_request *, const char *name,
	    const char *value);
void	http_reply_raw(struct evhttp_request *, int status, struct evbuffer *);
struct iovec;
int	http_body_iov(struct evhttp_request *, struct iovec **, size_t *len);
void	http_reply_file(struct evhttp_request *, int status, int fd, off_t size);
/* A reply streamed in chunks: start, chunks, end; backlog -1: client gone. */
void	http_stream_start(struct evhttp_request *, int status);
void	http_stream_chunk(struct evhttp_request *, struct evbuffer *);
void	http_stream_end(struct evhttp_request *);
ssize_t	http_stream_backlog(struct evhttp_request *);
/* Send e (takes ownership; NULL: a bare 500) with its status and Retry-After. */
void	http_send_qerr(struct evhttp_request *, struct qerr *e);
/* The catalog's error for code with its default message; sessionId extra. */
void	http_error(struct evhttp_request *, const char *code,
	    const char *session_id);
/* Map a JSON-RPC error object from the child (borrowed) to a REST reply. */
void	http_error_rpc(struct evhttp_request *, json_object *rpc_error,
	    const char *session_id);
/* ---- conn.c: every connection from its accept on (registry, caps) ---- */
struct sse_sub;
void	conn_init(void);	/* raise RLIMIT_NOFILE, derive the cap */
int	conn_limit(void);	/* the connection cap in force */
void	conn_install(struct evhttp *);
/* A request on the connection was authenticated (bearer or our uid). */
void	conn_authed(struct evhttp_request *);
size_t	conn_count(void);

/* ---- conn-input.c: what a connection sends, request by request ------- */
void	conn_request(struct evhttp_request *);	/* a whole request arrived */
void	conn_set_sub(struct evhttp_request *, struct sse_sub *);
void	conn_streaming(struct evhttp_request *);	/* input discarded */
void	conn_taken(struct evhttp_request *);	/* WebSocket takeover */
/* gone(arg) when req's client goes away before its answer; NULL clears. */
void	conn_watch_gone(struct evhttp_request *, void (*gone)(void *), void *);
/* The memory of a request or message of len bytes back to the system on
   the next loop turn, once its buffer is freed (from 256 KiB up). */
void	conn_release_later(size_t len);

/* ---- routes.c: the route table, a request's way to its route ---------- */
void	routes_request(struct evhttp_request *);

/* ---- routes-session.c -------------------------------------------------- */
void	route_session_create(struct http_ctx *);
void	route_session_load(struct http_ctx *);
void	route_session_resume(struct http_ctx *);
void	route_session_prompt(struct http_ctx *);
void	route_session_cancel(struct http_ctx *);
void	route_session_heartbeat(struct http_ctx *);
void	route_session_detach(struct http_ctx *);
void	route_session_delete(struct http_ctx *);
void	route_session_status(struct http_ctx *);
void	route_session_events(struct http_ctx *);
/* The request's Last-Event-ID (decimal up to 2^53-1), else -1. */
int64_t	routes_last_event_id(struct evhttp_request *);
/* 503 acp_channel_unavailable, reason channel_closed. */
void	routes_unavailable(struct evhttp_request *);
/*
 * body.cwd picks ctx->workspace (absent: the primary): 0, or -1 after 400
 * workspace_mismatch for a directory that is not one of ours.
 */
int	routes_check_cwd(struct http_ctx *);
/* The live session of the path, client checked, or NULL (replied). */
struct session *routes_session(struct http_ctx *);

/* ---- routes-agent.c ---------------------------------------------------- */
void	route_session_permission(struct http_ctx *);
void	route_permission(struct http_ctx *);	/* legacy POST /permission/:requestId */
void	route_session_model(struct http_ctx *);
void	route_session_approval_mode(struct http_ctx *);

/* ---- routes-history.c --------------------------------------------------- */
void	route_session_transcript(struct http_ctx *);
void	route_session_turn_index(struct http_ctx *);

/* ---- routes-branch.c ---------------------------------------------------- */
void	route_session_branch(struct http_ctx *);
void	route_session_side_task(struct http_ctx *);

/* ---- branch-live.c: a branch resumed and attached ---------------------- */
/*
 * Resume new_id (in workspace, for client_id) and answer req 201 with the
 * restored session and branch's keys (takes ownership of branch).
 */
void	branch_live_start(struct evhttp_request *req, const char *workspace,
	    const char *new_id, const char *client_id, json_object *branch);
/* A reply to the resume's own request: handled (1) or not ours (0). */
struct qerr;
int	branch_live_capture(struct evhttp_request *req, int status,
	    json_object *body, struct qerr *e);

/* ---- routes-fork.c: a session forked through its agent ----------------- */
void	route_session_fork(struct http_ctx *);

/* ---- routes-pass.c: the agent's own session calls, passed to it ------- */
void	route_session_pass(struct http_ctx *);
void	route_session_pass_workflow(struct http_ctx *);
void	route_session_pass_task(struct http_ctx *);

/* ---- routes-attachments.c: a session's attachments ----------------------- */
void	route_session_attachment_put(struct http_ctx *);
void	route_session_attachments(struct http_ctx *);
void	route_session_attachment_read(struct http_ctx *);
void	route_session_attachment_remove(struct http_ctx *);

/* ---- routes-artifacts.c: a session's artifacts ---------------------------- */
void	route_session_artifacts(struct http_ctx *);
void	route_session_artifact_add(struct http_ctx *);
void	route_session_artifact_remove(struct http_ctx *);
void	route_session_artifact_content(struct http_ctx *);

/* ---- routes-sources.c: a session's sources, the agent's ------------------ */
void	route_session_sources(struct http_ctx *);
void	route_session_source_upsert(struct http_ctx *);
void	route_session_source_remove(struct http_ctx *);
/* ---- routes-subagent.c: a session's subagents, among its tasks ------- */
void	route_session_subagent(struct http_ctx *);

/* ---- routes-shell.c: upstream's direct session shell ------------------ */
void	route_session_shell(struct http_ctx *);
void	route_shell_free_all(void);	/* at exit: every run killed */

/* ---- routes-generate.c: upstream's stateless generation, streamed ---- */
void	route_session_generate(struct http_ctx *);
/* A qwen/notify/... notification of the child's (a generation's event). */
void	route_generate_notify(struct channel *, const char *method,
	    json_object *params);
void	route_generate_free_all(void);	/* at exit: every stream dropped */

/* ---- autoturn.c: the turns the agent starts itself -------------------- */
/* _qwencode/start_turn, the agent's request: {accepted}. */
json_object	*autoturn_start(struct channel *, json_object *params);
/* _qwencode/start_turn (a goal's) and _qwencode/end_turn notifications. */
void		 autoturn_notify(struct channel *, const char *method,
		    json_object *params);
/* The running background turn's id (its updates' promptId), or NULL. */
const char	*autoturn_prompt_id(const struct session *);
void		 autoturn_clear(struct session *);	/* the session goes */

/* ---- routes-midturn.c: a session's mid-turn messages ------------------ */
void	route_session_midturn_post(struct http_ctx *);
void	route_session_midturn_get(struct http_ctx *);
void	route_session_midturn_delete(struct http_ctx *);

/* ---- midturn.c: the mid-turn queue, drained and promoted -------------- */
#define SERVE_MIDTURN_ID_MAX	128	/* a messageId, in UTF-16 units */
size_t	 midturn_units(const char *);	/* JavaScript's length */
/* s->midturn's list k ("queue", "settled", "promoted"; borrowed). */
json_object *midturn_list(struct session *, const char *k);
void	 midturn_remember(struct session *, const char *k, const char *id);
int	 midturn_in(json_object *list, const char *id);
json_object *midturn_find(struct session *, const char *id, size_t *at);
/* The child's craft/drainMidTurnQueue: its answer (caller owns). */
json_object *midturn_drain(struct channel *, json_object *params);
/* The last turn ended (prompts.c's idle hook): the rest promoted. */
void	 midturn_settle(struct session *);

/* ---- routes-queue.c: a session's prompt queue ------------------------- */
void	route_session_pending(struct http_ctx *);
void	route_session_pending_remove(struct http_ctx *);
void	route_session_turn(struct http_ctx *);
void	route_session_continue(struct http_ctx *);

/* ---- routes-daemon.c --------------------------------------------------- */
void	route_health(struct http_ctx *);
void	route_capabilities(struct http_ctx *);
void	route_workspace_sessions(struct http_ctx *);
void	route_workspace_sessions_page(struct http_ctx *);
json_object *routes_capabilities_json(void);
void	route_daemon_status(struct http_ctx *);

/* ---- listing.c: the persisted sessions, a slice per loop turn --------- */
/* Answer req with the newest persisted sessions from skip on, at most max
   (never blocking the loop); paged: with nextCursor when more follow;
   group (non-NULL: view=organized) filters and puts pinned ones first;
   filter (may be NULL) keeps the sessions of a parent or a source.
   Free the jobs and the prompt cache at exit. */
/* upstream's list filters: a parent session, a source (NULL: any). */
struct listing_filter {
	const char	*parent, *source_type, *source_id;
};
void	listing_start(struct evhttp_request *req, const char *workspace,
	    size_t skip, size_t max, int paged, int archived,
	    const char *group, const struct listing_filter *filter);
/* A catalog member's page: "sessions":[...] and its "nextCursor", as
   the body of GET /workspace/:ws/sessions without its braces and
   workspaceCwd (taken: done frees it); NULL when the job is freed
   unfinished (exit). */
typedef void (*listing_member_fn)(void *arg, struct evbuffer *page);
/* listing_start()'s paged job whose page goes to done, not to a client. */
void	listing_member(const char *workspace, size_t skip, size_t max,
	    int archived, const char *group, const struct listing_filter *filter,
	    listing_member_fn done, void *arg);
/* Answer req with the newest max sessions whose search text holds q. */
void	listing_search(struct evhttp_request *req, const char *workspace,
	    const char *q, size_t max);
void	listing_free_all(void);

/* ---- search.c: a transcript's searchable text ------------------------- */
#define SEARCH_TEXT_MAX		(16 * 1024)	/* text kept of one session */
/* Titles, user and assistant text of fd's transcript up to to; *full
   when it takes no more.  Caller frees. */
char	*search_text_read(int fd, int64_t to, int *full);
/* old (taken) with the text of the whole lines of buf[0..len) added. */
char	*search_text_extend(char *old, char *buf, size_t len, int *full);
/* 1 when text holds q (ASCII case folded), *snippet (caller frees). */
int	search_match(const char *text, const char *q, char **snippet);

/* ---- attachments.c: a session's attachments on disk --------------------- */
#define ATTACHMENT_ITEM_MAX	(8u * 1024 * 1024)	/* upstream's, a file */
#define ATTACHMENT_SESSION_MAX	256u			/* files a session */
#define ATTACHMENT_SESSION_BYTES (64u * 1024 * 1024)
#define ATTACHMENT_TOTAL_BYTES	(1024u * 1024 * 1024)	/* the daemon's */
struct iovec;
/* Store an upload: its reference (caller frees), or NULL, *status, *cause. */
json_object *attachments_put(const char *ws, const char *sid,
	    const char *name, const char *type, const struct iovec *, int iovcnt,
	    size_t len, int *status, char **cause);
/* The session's references, oldest first (caller frees); NULL, *cause. */
json_object *attachments_list(const char *ws, const char *sid, char **cause);
/* A descriptor to read attachment aid (size in *size), or -1 (ENOENT). */
int	attachments_open(const char *ws, const char *sid, const char *aid,
	    off_t *size);
int	attachments_has(const char *ws, const char *sid, const char *aid);
char	*attachments_read(const char *ws, const char *sid, const char *aid,
	    size_t *len);				/* caller frees; NULL */
int	attachments_copy(const char *ws, const char *from, const char *to,
	    char **cause);
/* 1 removed, 0 none such, -1 failed. */
int	attachments_remove(const char *ws, const char *sid, const char *aid);
/* ---- artifacts.c: a session's artifacts, persisted ---------------------- */
#define ARTIFACT_MAX		200	/* a session's, upstream's */
#define ARTIFACT_FILE_MAX	(4u * 1024 * 1024)
json_object *artifacts_list(const char *ws, const char *sid, char **cause);
json_object *artifacts_add(const char *ws, const char *sid, const char *client,
	    json_object *in, const char *key, int *status, char **cause);
json_object *artifacts_remove(const char *ws, const char *sid,
	    const char *client, const char *aid, int *status, char **cause);
void	artifacts_delete(const char *ws, const char *sid);
/* ---- artifacts-check.c: a client's artifact checked as upstream's ------- */
struct artifact_err {
	const char	*field;		/* NULL: the artifact as a whole */
	char		 msg[128];
};
json_object *artifacts_check(const char *ws, json_object *body, char **key,
	    struct artifact_err *);
/* ---- sources.c: a session source checked as upstream checks it --------- */
#define SOURCE_URL_MAX	2048
/* {title, locator, description?} (caller frees), or NULL with *cause. */
json_object *sources_check(json_object *in, char **cause);
/* ---- attachments-dir.c: the private state directories ------------------- */
/* A private state directory for ws ("attachments", "artifacts"): fd or -1. */
int	attachments_state_open(const char *ws, const char *leaf, int create,
	    char **cause);
/* A session's attachments directory: fd, or -1 (ENOENT: none yet). */
int	attachments_dir_open(const char *ws, const char *sid, int create,
	    char **cause);
struct stat;
int	attachments_entry_stat(int dfd, const char *name, struct stat *);
void	attachments_dir_usage(int dfd, size_t *count, uint64_t *bytes);
uint64_t attachments_total(void);
void	attachments_total_adjust(int64_t delta);
/* The session's data was deleted: remove its attachments. */
void	attachments_delete(const char *ws, const char *sid);
/* ---- attachments-name.c: an attachment's name and type ------------------- */
#define ATTACHMENT_NAME_MAX	255	/* bytes */
int	 attachments_image_type(const char *type);
const char *attachments_type(const char *name);	/* static */
int	 attachments_name_ok(const char *name);
char	*attachments_name(const char *given);		/* caller frees; NULL */
char	*attachments_name_nth(const char *name, unsigned n);	/* caller frees */
/* ---- attachments-ref.c: content blocks naming an attachment ------------ */
int	 attachments_ref_is(json_object *block);
int	 attachments_ref_check(const char *ws, const char *sid,
	    json_object *content, struct qerr **);
json_object *attachments_ref_resolve(const char *ws, const char *sid,
	    json_object *content, struct qerr **);	/* new; NULL */
json_object *attachments_ref_degrade(const char *ws, const char *sid,
	    json_object *content, json_object *refs);	/* new */
/* ---- catalog.c: session data archived, unarchived, deleted ------------ */
#define CATALOG_ACTIVE		1
#define CATALOG_ARCHIVED	2
struct lease;
uint64_t	 catalog_revision(void);
/* The daemon's writer lease on id: NULL and *code (*cause) when refused. */
struct lease	*catalog_lease_take(const char *id, const char **code,
	    char **cause);
void		 catalog_lease_drop(struct lease *);	/* NULL-safe */
/* 1 when id is neither live nor being restored, else 0 and *code. */
int		 catalog_idle(const char *id, const char **code);
int		 catalog_where(const char *workspace, const char *id);
const char	*catalog_workspace_of(const char *id);
/* 0 removed, 1 not found, -1 refused or failed (*code, *cause freed by
   the caller). */
int	catalog_delete(const char *id, const char **code, char **cause);
/* 0 moved, 1 already there, 2 not found, 3 a conflict resolved (resolve:
   the other side's copy deleted), -1 refused or failed. */
int	catalog_archive(const char *id, int archive, int resolve,
	    const char **code, char **cause);
void	catalog_counts(const char *workspace, size_t *active, size_t *archived);
/* At start: finish interrupted moves, empty the trash. */
void	catalog_sweep(void);

/* ---- metadata.c: a persisted session's title -------------------------- */
/* Append a custom_title record (not live; under the lease; archived: to
   the archive's copy): 0, or -1. */
int	metadata_set_title(const char *ws, const char *id, int archived,
	    const char *title, const char **code, char **cause);
/* The last custom title in buf (caller frees) or NULL. */
char	*metadata_title_in(const char *buf);

/* ---- routes-groups.c: session groups and organization ------------------ */
void	route_session_groups(struct http_ctx *);
void	route_session_group_create(struct http_ctx *);
void	route_session_group_update(struct http_ctx *);
void	route_session_group_delete(struct http_ctx *);
void	route_session_organization(struct http_ctx *);
/* Workspace ws's organization document (caller puts); NULL: unreadable. */
json_object *routes_org_load(const char *ws);
/* Whether doc (borrowed, NULL-safe) holds the group named id. */
int	routes_org_has_group(json_object *doc, const char *id);
/* doc's {groups, colorOptions} as GET .../session-groups answers them
   (caller frees). */
json_object *routes_org_groups(json_object *doc);

/* ---- standalone.c: standalone sessions' private working directories ---- */
#define STANDALONE_MAX	1024	/* standalone sessions the daemon keeps */
/* Their directories named in one run (kept: listings hold them). */
#define STANDALONE_NAMES_MAX	(4 * STANDALONE_MAX)
/* id's working directory (kept for the process), NULL when id is none
   (known: only an existing one). */
const char	*standalone_dir(const char *id, int known);
int		 standalone_known(const char *id);
const char	*standalone_workspace_of(const char *id);
/* Make or remake id's directory: 0 and *state (1 remade), or -1, *code. */
int		 standalone_prepare(const char *id, int create, int *state,
		    const char **code);
void		 standalone_mark_recreated(const char *id);
json_object	*standalone_state_json(int recreated);	/* new */
void		 standalone_kind_add(json_object *);	/* borrowed */
void		 standalone_decorate(json_object *, const char *workspace);
int		 standalone_remove(const char *id);
void		 standalone_vacate(const char *id);
/* Ids with a directory, at most max; *out and its strings caller frees. */
size_t		 standalone_scan(char ***out, size_t max);

/* ---- routes-standalone.c: /standalone/... ------------------------------ */
void	route_standalone_create(struct http_ctx *);
void	route_standalone_load(struct http_ctx *);
void	route_standalone_resume(struct http_ctx *);
void	route_standalone_repair(struct http_ctx *);
void	route_standalone_metadata(struct http_ctx *);
void	route_standalone_export(struct http_ctx *);
void	route_standalone_archive(struct http_ctx *);
void	route_standalone_unarchive(struct http_ctx *);
void	route_standalone_delete(struct http_ctx *);
#define STANDALONE_PAGE_MAX	100	/* size= and sessionIds[] */
/* 400 invalid_request with msg; the query's keys all allowed (0, -1). */
void	route_standalone_bad(struct http_ctx *, const char *msg);
int	route_standalone_query_only(struct http_ctx *, const char *const *);

/* ---- routes-standalone-list.c: GET /standalone/sessions[/:id] ---------- */
void	route_standalone_list(struct http_ctx *);
void	route_standalone_get(struct http_ctx *);

/* ---- routes-catalog.c: POST /sessions/catalog -------------------------- */
void	route_sessions_catalog(struct http_ctx *);

/* ---- routes-manage.c: session management routes ----------------------- */
void	route_sessions_delete(struct http_ctx *);
void	route_sessions_archive(struct http_ctx *);
void	route_sessions_unarchive(struct http_ctx *);
void	route_workspace_session_info(struct http_ctx *);
void	route_workspace_live_state(struct http_ctx *);
void	route_workspace_sessions_search(struct http_ctx *);
void	route_session_export(struct http_ctx *);
void	route_session_archive_export(struct http_ctx *);
void	route_session_metadata(struct http_ctx *);
/* 409 session_archived or session_conflict for a restore: -1 when sent. */
int	routes_check_archived(struct http_ctx *);

/* ---- export-doc.c: upstream's export documents, a record at a time ---- */
enum export_fmt { EXPORT_HTML, EXPORT_MD, EXPORT_JSON, EXPORT_JSONL };
int	export_format(const char *name);	/* NULL: html; -1 unknown */
const char *export_format_name(int fmt);
const char *export_mime(int fmt);
struct evbuffer;
struct export_doc;
/* A document of session id as fmt; meta (taken): upstream's metadata. */
struct export_doc *export_doc_new(const char *id, int fmt, json_object *meta);
void	export_doc_free(struct export_doc *);	/* NULL-safe */
/* What precedes a pass's messages; one record's (borrowed) messages. */
void	export_doc_head(struct export_doc *, struct evbuffer *out);
void	export_doc_record(struct export_doc *, json_object *rec,
	    struct evbuffer *out);
/* What follows them: 1 when another pass over the records follows. */
int	export_doc_tail(struct export_doc *, struct evbuffer *out);
/* s escaped as a header field of an html (html) or md document. */
void	export_doc_text(struct evbuffer *out, const char *s, int html);

/* ---- export-stats.c: the export's token and file statistics ----------- */
struct export_stats;
struct export_stats *export_stats_new(void);	/* caller frees */
void	export_stats_free(struct export_stats *);	/* NULL-safe */
/* One record of the active chain, in order (borrowed). */
void	export_stats_record(struct export_stats *, json_object *rec);
/* The statistics into meta (borrowed), in upstream's order. */
void	export_stats_meta(struct export_stats *, json_object *meta);
/* meta's statistics in an md header, an html page's. */
void	export_stats_md(json_object *meta, struct evbuffer *out);
void	export_stats_html(json_object *meta, struct evbuffer *out);

/* ---- export-job.c: an export streamed from the active chain ----------- */
/* path's session id as fmt onto req, indexed on a thread, then streamed. */
void	export_job_start(struct evhttp_request *, const char *path,
	    const char *id, int fmt);
void	export_job_free_all(void);

/* ---- web.c: the browser console's static files ------------------------- */
const char *web_dir(void);	/* --web-dir, QWEN_SERVE_WEB_DIR, pkgdatadir/web */
void	web_check(void);	/* startup warning when the files are missing */
/* Answer a console file (1), or 0 when path is not one or --no-web. */
int	web_route(struct evhttp_request *, const char *path);

/* ---- bus.c ------------------------------------------------------------- */
struct bus;
struct bus	*bus_new(const char *session_id, size_t ring_size);
/*
 * A message stream (ACP over HTTP): frames "id: N\nevent: message\ndata:
 * <message>" from bus_publish_raw(), no synthetic events; a stream opened
 * without Last-Event-ID first gets what no stream has been given yet.
 */
struct bus	*bus_new_raw(const char *name, size_t ring_size);
void		 bus_publish_raw(struct bus *, const char *json, size_t len);
void		 bus_free(struct bus *);	/* ends every subscriber; NULL-safe */
const char	*bus_epoch(const struct bus *);
uint64_t	 bus_last_id(const struct bus *);
size_t		 bus_subscriber_count(const struct bus *);
/*
 * Publish an event with the next id.  data: takes ownership.  prompt_id,
 * client_id may be NULL.  A terminal event ends every stream after it.
 */
void	bus_publish(struct bus *, const char *type, json_object *data,
	    const char *prompt_id, const char *client_id, int terminal);
/*
 * Assign the next id to a replayed update without keeping it in the ring
 * (load's compactedReplay); returns the envelope (caller owns).
 */
json_object *bus_seed(struct bus *, const char *type, json_object *data);
/* Just the next id of a seeded update (its envelope made elsewhere). */
uint64_t	 bus_seed_id(struct bus *);
/*
 * In-process listeners (ACP connections): fn gets every published
 * envelope (borrowed) before the SSE subscribers, with terminal set for
 * the bus's last event; env NULL when the bus is freed (the listener is
 * freed right after).  fn must not publish on, free or unlisten other
 * listeners of this bus; unlistening itself is fine.
 */
struct bus_listener;
typedef void	(*bus_listen_fn)(void *arg, json_object *env, int terminal);
struct bus_listener *bus_listen(struct bus *, bus_listen_fn fn, void *arg);
void	bus_unlisten(struct bus_listener *);	/* NULL-safe */
/*
 * The SSE subscribers' side of every bus (sse.c's), handed over once at
 * startup: the bus writes its frames through it and names no stream.
 */
struct bus_subscribers {
	/* Write frame f to every subscriber of b; a terminal one ends them. */
	void	(*fan_out)(struct bus *b, const char *f, size_t len,
		    int terminal);
	void	(*end_all)(struct bus *b);	/* end every subscriber of b */
};
void	bus_set_subscribers(const struct bus_subscribers *);

/* ---- sse.c ------------------------------------------------------------- */
/*
 * Open a stream on req: headers, retry:, replay from last_event_id (-1 =
 * none), replay_complete, then live.  epoch: the client's X-Qwen-Event-Epoch
 * or NULL.  snapshot (taken, NULL for none): session_snapshot's data, sent
 * after the replay.  Sends the reply itself (including pre-stream errors).
 */
void	sse_subscribe(struct bus *, struct evhttp_request *req,
	    int64_t last_event_id, const char *epoch, int max_queued,
	    json_object *snapshot);
/* Connection of sub closed (from http.c). */
void	sse_sub_closed(struct sse_sub *);
/* What main.c hands the bus (bus_set_subscribers()). */
extern const struct bus_subscribers sse_subscribers;

/* ---- tick.c: many timers of one interval as one event ------------------ */
/* One queue entry (embedded in its owner); zeroed before its first arm. */
struct tick {
	TAILQ_ENTRY(tick)	 entry;
	uint64_t		 due;		/* clock_mono_ms() */
	int			 armed;
	void			(*fn)(void *);
	void			*arg;
};
/* Entries of one interval: { TAILQ_HEAD_INITIALIZER(q.q), NULL, 0 }. */
struct tick_queue {
	TAILQ_HEAD(, tick)	 q;
	struct event		*ev;
	int64_t			 every_ms;	/* set before the first arm; 0: off */
};
/* Run fn(arg) every tq->every_ms (a few ms late at most) until disarmed. */
void	tick_arm(struct tick_queue *tq, struct tick *t, void (*fn)(void *),
	    void *arg);
void	tick_disarm(struct tick_queue *tq, struct tick *t);	/* idempotent */

/* ---- channel.c --------------------------------------------------------- */
enum channel_outcome {
	CHANNEL_RESULT,		/* payload: the result */
	CHANNEL_ERROR,		/* payload: the JSON-RPC error object */
	CHANNEL_TIMEOUT,		/* payload NULL */
	CHANNEL_CLOSED,		/* the channel died; payload NULL */
	CHANNEL_INIT_TIMEOUT,	/* initialize timed out; payload NULL */
};
typedef void	(*channel_cb)(void *arg, enum channel_outcome,
	    json_object *payload);

struct channel;
struct channel_req;

/* The channel for the workspace, started on demand. */
struct channel	*channel_get(const char *workspace);
/*
 * What a channel tells the modules above it (sessions, in-flight work,
 * permissions, metrics), handed over once at startup by main.c: the
 * channel calls none of them by name.
 */
struct rfsm_chan_view;
struct channel_events {
	void	(*child_started)(int restart);
	void	(*child_exited)(int killed);	/* reaped */
	/* The child died: its sessions end (session_died), then its restores. */
	void	(*sessions_died)(struct channel *, int exit_code,
		    int signal_code, int killed);
	void	(*inflight_died)(struct channel *);
	/* Its in-flight restores, for the idle policy (restore-fsm.h). */
	void	(*inflight_view)(struct channel *, struct rfsm_chan_view *);
	/* A session/update notification; a permission request. */
	void	(*update)(struct channel *, json_object *params);
	void	(*permission)(struct channel *, json_object *rpc_id,
		    json_object *params);
	/* A request of the child's we answer: its result, or NULL (-32601). */
	json_object *(*request)(struct channel *, const char *method,
		    json_object *params);
	/* Another qwen/notify/... notification (a generation's event). */
	void	(*notify)(struct channel *, const char *method,
		    json_object *params);
};
void	channel_set_events(const struct channel_events *);

/* ---- channel-rpc.c ---------------------------------------------------- */
/*
 * Send a request (params: takes ownership).  timeout_ms 0: none.  cb is
 * called exactly once, never before this returns, unless the handle is
 * forgotten.  Returns a handle, or NULL (then cb is not called) when the
 * channel cannot take requests.
 */
struct channel_req	*channel_request(struct channel *, const char *method,
		    json_object *params, uint64_t timeout_ms, channel_cb cb,
		    void *arg);
/*
 * As channel_request, and sent(arg) runs once when the request goes on the
 * wire: at once when the child is ready (before this returns), else after
 * its initialize.  Budgets of the child's own work start there.
 */
struct channel_req	*channel_request_sent(struct channel *,
			    const char *method, json_object *params,
			    uint64_t timeout_ms, channel_cb cb,
			    void (*sent)(void *arg), void *arg);
/* The caller is gone: the answer will be dropped. */
void	channel_forget(struct channel_req *);
/*
 * Answer a request the child made (id borrowed, result: takes ownership);
 * dropped when the child that asked (serial) is no longer the one running.
 */
void	channel_reply(struct channel *, unsigned serial, json_object *id,
	    json_object *result);
/* Send a notification (params: takes ownership). */
void	channel_notify(struct channel *, const char *method,
	    json_object *params);
/* ---- channel-close.c -------------------------------------------------- */
/*
 * Close session id at the child; a load, resume or create of the id sent
 * before the close is answered waits for it.
 */
void	channel_close_session(struct channel *, const char *id);

/* ---- channel.c (continued) ------------------------------------------- */
/*
 * A workspace-control operation (a transcript read, a branch) in flight on
 * the channel: visible work that keeps its child (seed 000).
 */
void	channel_control_begin(struct channel *);
void	channel_control_end(struct channel *);
unsigned channel_control_ops(const struct channel *);
/* Session accounting for the idle policy. */
void	channel_session_added(struct channel *);
void	channel_session_removed(struct channel *);
int	channel_alive(const struct channel *);
size_t	channel_nsessions(const struct channel *);
const char *channel_workspace(const struct channel *);
int	channel_idle_pending(const struct channel *);	/* idle reap armed */
unsigned channel_serial(const struct channel *);	/* of the current child */
/* Apply the idle/condemnation policy again (restore state changed). */
void	channel_reconsider(struct channel *);
/* Mark dying now, TERM the child now and KILL it after a grace. */
void	channel_kill(struct channel *);
/* Shutdown: end every child; returns the number still running. */
size_t	channel_shutdown(void);
size_t	channel_running(void);
void	channel_free_all(void);

/* ---- channel-idle.c ---------------------------------------------------- */
/* --agent-acp: every workspace's child (and its agent) started now. */
void	channel_prestart(void);
/* Whether a channel's child is kept warm while it has no session. */
int	channel_kept_warm(void);

/* ---- clients.c --------------------------------------------------------- */
struct client {
	TAILQ_ENTRY(client)	 entry;
	char			 id[SERVE_CLIENT_ID_MAX + 1];
	unsigned		 refs;
	uint64_t		 last_seen_ms;	/* wall */
};
TAILQ_HEAD(client_list, client);

int	client_id_valid(const char *id);
/* Register requested (NULL or unknown: mint client_<uuid>); returns the id. */
const char *clients_register(struct client_list *, const char *requested);
struct client *clients_find(struct client_list *, const char *id);
/* Drop one reference; returns 1 when id was registered. */
int	clients_release(struct client_list *, const char *id);
size_t	clients_count(const struct client_list *);
void	clients_clear(struct client_list *);

/* ---- sessions.c -------------------------------------------------------- */
struct prompt;
TAILQ_HEAD(prompt_list, prompt);

struct session {
	TAILQ_ENTRY(session)	 entry;
	RB_ENTRY(session)	 by_id;		/* sessions.c's map */
	char			 id[SERVE_SESSION_ID_MAX + 1];
	struct channel		*channel;
	struct bus		*bus;
	struct client_list	 clients;
	unsigned		 attach_count;
	uint64_t		 created_wall_ms;
	uint64_t		 last_seen_wall_ms;
	uint64_t		 last_active_mono_ms;
	json_object		*state;		/* the restore response state */
	json_object		*replay;	/* load's compactedReplay (envelopes) */
	json_object		*replay_flags;	/* partial, replayError, historyHasMore */
	int			 is_default;
	struct prompt		*active;
	struct prompt_list	 queue;
	size_t			 queued;
	struct event		*pump_ev;	/* starts the next prompt */
	/*
	 * A prompt past its deadline that the child was told to cancel: until
	 * the child answers it (or the grace ends) the next prompt waits and
	 * the session's updates, late output of the expired one, are dropped.
	 */
	struct prompt		*expired;
	struct event		*grace_ev;
	char			 approval_mode[16];	/* as the agent last said */
	json_object		*turn_error;	/* the last turn's {message, code,
						   errorKind}, until the next starts */
	json_object		*turns;		/* settled turns' statuses, oldest
						   first (SERVE_TURNS_KEPT) */
	json_object		*midturn;	/* midturn.c's queue and rings */
	json_object		*bg_turn;	/* autoturn.c: the agent's own turn */
	int			 goal_turn;
	char			 log_rid[REQID_MAX + 1];	/* reqid.c */
	char			 log_tid[REQID_TRACE_LEN + 1];
};

struct session	*sessions_find(const char *id);
/* The ids last known for session id (len bytes), for the log's lines. */
void		 sessions_log_lookup(const char *id, size_t len,
		    const char **rid, const char **tid);
struct session	*sessions_first(void);
struct session	*sessions_next(struct session *);
size_t		 sessions_count(void);
size_t		 sessions_active_prompts(void);
size_t		 sessions_subscribers(void);	/* SSE streams of every session */
/* Prompts queued and permission requests pending, over every session. */
void		 sessions_totals(size_t *queued, size_t *perms);
/* Create a live session on ch (registered, counted).  NULL on ENOMEM. */
struct session	*session_new(const char *id, struct channel *ch);
/* Publish session_closed (reason) and remove; closes it on the child too. */
void	session_close(struct session *, const char *reason,
	    const char *closed_by);
/* The channel died: session_died to each session of ch, then remove. */
void	sessions_channel_died(struct channel *, int exit_code, int signal_code,
	    int killed);
/* A session/update notification from the child. */
void	sessions_route_update(struct channel *, json_object *params);
int	session_tombstoned(const char *id);
void	session_tombstone(const char *id);	/* (re)start the 60 s tombstone */
/* Whether anything still holds the session (clients, subscribers, work). */
int	session_held(const struct session *);
struct session *sessions_default(const char *workspace);
void	sessions_start_reaper(void);
void	sessions_close_all(const char *reason);
/*
 * Capacity in workspace: live + in-flight spawns and restores, against
 * --max-sessions there and --max-total-sessions everywhere.  0 when full,
 * with *total (may be NULL) set when the daemon-wide cap is the one reached.
 */
int	sessions_capacity_left(const char *workspace, int *total);
void	sessions_inflight_add(int delta);
void	sessions_free(void);

/* ---- prompts.c: a session's prompt FIFO and deadlines ----------------- */
/* The FIFO's events (0, or -1 on ENOMEM); prompts_clear frees them all. */
int	prompts_init(struct session *);
void	prompts_clear(struct session *);
/*
 * Admit a prompt: returns its id (borrowed), or NULL with errno EINVAL (not
 * a non-empty array of content blocks), ENOBUFS (the queue is full) or
 * ENOMEM.  cont:
 * the continuation of a cut-off turn (_meta SERVE_CONTINUE_META, which a
 * client's own prompt never carries).
 */
#define SERVE_CONTINUE_META	"qwen.daemon.continueLastTurn"
const char *prompts_admit(struct session *, json_object *body,
	    const char *client_id, int cont);
/* As prompts_admit, the prompt's id id (at most SERVE_PROMPT_ID_MAX bytes). */
#define SERVE_PROMPT_ID_MAX	(SERVE_MIDTURN_ID_MAX * 3)
const char *prompts_admit_id(struct session *, json_object *body,
	    const char *client_id, const char *id);
/* Called when a turn has ended and none waits (main.c: midturn_settle). */
void	prompts_set_idle(void (*)(struct session *));
size_t	prompts_pending(const struct session *);
/* The running prompt's id (and its client, if client_id), or NULL. */
const char *prompts_active(const struct session *, const char **client_id);
void	prompts_cancel(struct session *, const char *client_id);
/* A session/update for s from the child (params borrowed). */
void	prompts_update(struct session *, json_object *params);
/* GET /session/:id/pending-prompts' array (caller owns). */
json_object *prompts_list(struct session *);
/* Remove a queued prompt: 1 removed, 0 when it is not queued. */
int	prompts_remove(struct session *, const char *prompt_id);
/* Status: activeWorkState, hasTurnError and turnError into o. */
void	prompts_status(struct session *, json_object *o);
/*
 * The status of prompt_id while it runs or waits (NULL: the running one,
 * else the queue's head), or NULL: not pending (caller owns).
 */
json_object *prompts_turn(struct session *, const char *prompt_id);

/* ---- turns.c: turn statuses (GET /session/:id/turns/...) ------------- */
/* Settled turns a live session keeps (upstream's terminal overlay). */
#define SERVE_TURNS_KEPT	64
/* Caps, in UTF-16 code units as upstream counts them. */
#define SERVE_TURN_TEXT_MAX	32768
#define SERVE_TURN_ERROR_MAX	4096
#define SERVE_TURN_CODE_MAX	256
struct turn_facts {
	const char	*state;		/* queued, running, completed, ... */
	const char	*prompt_id;
	json_object	*content;	/* the prompt's blocks (borrowed) */
	uint64_t	 queued_at_ms;	/* wall clock; 0: omitted */
	uint64_t	 started_at_ms;	/* wall clock; 0: omitted */
	const char	*client_id;	/* NULL or "": omitted */
};
/* A turn's status object from f (caller owns). */
json_object *turns_new(struct session *, const struct turn_facts *f);
/*
 * Keep st (owned) as its prompt's settled status, with endedAt, stop
 * (NULL-safe) and an error of message and code when message is not NULL.
 */
void	turns_settle(struct session *, json_object *st, const char *stop,
	    const char *message, const char *code);
/* The kept status of prompt_id, the newest for NULL; NULL (borrowed). */
json_object *turns_find(struct session *, const char *prompt_id);
/*
 * The settled status of prompt_id (NULL: the newest) from the kept ones
 * and the agent's persisted turn_result rec (borrowed, NULL-safe): for
 * the same prompt the kept outcome stands and rec adds its resultText;
 * else the one that ended last.  NULL when neither has it (caller owns).
 */
json_object *turns_merge(struct session *, const char *prompt_id,
	    json_object *rec);

/* ---- inflight.c: in-flight spawns and restores (the lifecycle seam) --- */
enum inflight_action { OP_SPAWN, OP_LOAD, OP_RESUME };

struct inflight;

const char	*inflight_action_name(enum inflight_action);
struct inflight	*inflight_find(const char *id);
/* The request and trace ids of the spawn or restore of id (log lines). */
void	inflight_log_ids(const char *id, const char **rid, const char **tid);
struct inflight	*inflight_default_spawn(const char *workspace);
/* Spawns and restores not yet given back to capacity, in workspace. */
size_t		 inflight_count_ws(const char *workspace);
/* Coalesce a caller onto op; it gets op's result with attached:true. */
void	inflight_join(struct inflight *, struct evhttp_request *,
	    const char *client_id);
int	inflight_transcript_exists(const char *id);
/*
 * A session/new (id NULL: the child picks it) under the initialize budget
 * and the same lifecycle machine as a restore.
 */
void	inflight_spawn(const char *workspace, const char *id, int is_default,
	    json_object *body, struct evhttp_request *, const char *client_id);
/* Admit a load/resume (body borrowed) and dispatch it with inflight_start(). */
void	inflight_restore(const char *workspace, enum inflight_action,
	    const char *id, json_object *body, struct evhttp_request *,
	    const char *client_id);
/*
 * The one place a restore goes to the child: from there its restore-fsm
 * machine owns it (deadline, public result, settlement) and frees it.
 */
void	inflight_start(struct inflight *);
size_t	inflight_count(void);
/*
 * A same-id load/resume/spawn while op owns the id: coalesce (same action
 * and shape, op active) or 409 restore_in_progress (reason
 * restore_in_progress or awaiting_abandoned_cleanup).  body borrowed.
 */
void	inflight_same_id(struct inflight *, struct evhttp_request *,
	    const char *client_id, enum inflight_action, json_object *body);
/* A spawn of op's that a same-id create may join (active, not a restore). */
int	inflight_is_active_spawn(const struct inflight *);
/*
 * Fresh work that is not a session (a branch) on ch: 0, or -1 after the
 * 503 acp_channel_unavailable of a quarantined or overdue channel.
 */
int	inflight_admit_control(struct evhttp_request *, struct channel *);
#ifdef QWEN_SERVE_RESTORE_FSM_H	/* for the files that include restore-fsm.h */
/*
 * Admit a fresh spawn/load/resume on ch (NULL: none yet) by
 * rfsm_admit_fresh(): the channel's state (quarantine, overdue
 * settlement; the 503 acp_channel_unavailable is sent here), then
 * capacity (RFSM_ADMIT_CAPACITY: the caller answers).
 */
enum rfsm_admit	inflight_admit(struct evhttp_request *, struct channel *);
/* What ch holds, for rfsm_chan_reap() (visible work, abandoned restores). */
void	inflight_chan_view(struct channel *, struct rfsm_chan_view *);
#endif
/* ch's child exited: every restore on it settles; its fences go. */
void	inflight_channel_exited(struct channel *);
/* Restores not yet settled (active or abandoned), and other counts. */
void	inflight_stats(size_t *active, size_t *unsettled, size_t *overdue,
	    size_t *quarantined);

/* ---- inflight-reply.c -------------------------------------------------- */
/* The 200 body of create/load/resume for s (caller frees). */
json_object *inflight_session_json(struct session *, enum inflight_action,
	    int attached, const char *client_id);

/* ---- modes.c: a session's model and approval mode, through its agent - */
/* s->approval_mode from the agent's state (modes.currentModeId). */
void	modes_seed(struct session *);
/* session_snapshot's data: model, approval mode (caller owns). */
json_object *modes_snapshot(struct session *);
/*
 * session/set_model; model_switched or model_switch_failed to every
 * subscriber, then cb(arg, outcome, payload) (cb may be NULL).  -1: the
 * channel is gone (nothing sent, cb never runs).
 */
int	modes_model(struct session *, const char *model, const char *client_id,
	    channel_cb cb, void *arg);
/*
 * The approval mode (plan_mode -1: absent); on success approval_mode_changed
 * and cb gets CHANNEL_RESULT with the REST answer (borrowed).  -1 as above.
 */
int	modes_mode(struct session *, const char *mode, int plan_mode,
	    const char *client_id, channel_cb cb, void *arg);
/* The HTTP answer to a switch that failed with outcome o. */
void	modes_http_error(struct evhttp_request *, enum channel_outcome,
	    json_object *payload, const char *session_id);
struct modes_caller {
	struct evhttp_request	*req;
	const char		*client_id;	/* registered; may be NULL */
};
/*
 * Answer the callers of a create, load or resume of s (the first one
 * attached or not, the others attached) once body's modelServiceId (a
 * create) and approvalMode are applied.  body borrowed.
 */
void	modes_reply(struct session *, enum inflight_action, int attached,
	    json_object *body, const struct modes_caller *, size_t n);

/* ---- replay-raw.c: load's compactedReplay from the child's bytes ------- */
struct rpc_raw;
struct rpc_reader;
/* Have rd keep a bulk replay's updates as bytes (unless the environment
   says QWEN_SERVE_REPLAY_REENCODE=1). */
void		 replay_raw_setup(struct rpc_reader *rd);
/* A transcript page's events (an array the reader kept as bytes, raw):
   an array that writes those bytes as they are.  Caller puts; it holds a
   reference to raw. */
json_object	*replay_raw_array(struct rpc_raw *raw);
/* A session id encoded as a JSON string, for replay_raw_envelope()
   (caller frees). */
char		*replay_raw_sid(const char *session_id);
/* The bus envelope of update i of raw with bus id id: an object that
   encodes as {"id","v","type":"session_update","data":{sessionId,update},
   "_meta":{serverTimestamp}} around the update's bytes; sid_json from
   replay_raw_sid().  Caller puts; it holds a reference to raw. */
json_object	*replay_raw_envelope(struct rpc_raw *raw, size_t i, uint64_t id,
		    const char *sid_json, uint64_t wall_ms);
/* An element of a compactedReplay as a json-c tree: env itself (a new
   reference) or, for an envelope made here, its bytes parsed (caller
   puts; NULL if they do not parse, which json-c's own encoding does). */
json_object	*replay_raw_expand(json_object *env);
struct evbuffer;
/* The encoded length of an envelope made here, 0 for any other value. */
size_t		 replay_raw_len(json_object *env);
/* Add an envelope made here, encoded, to out; -1 for any other value. */
int		 replay_raw_add(json_object *env, struct evbuffer *out);

/* ---- reply-slice.c: a big JSON reply written a slice per loop turn ---- */
/*
 * Reply status with body (takes ownership) as http_reply_json() does, but
 * when arr (borrowed), a value at body's top level, holds a few slices of
 * envelopes kept as the child's bytes, write its elements a slice per
 * loop turn (QWEN_SERVE_TEST_REPLY_SLICE: bytes per slice).
 */
void	reply_slice_json(struct evhttp_request *, int status, json_object *body,
	    json_object *arr);
/* At exit: drop the replies still being written. */
void	reply_slice_free_all(void);

/* ---- inflight-fence.c -------------------------------------------------- */
/* An update for an id with no live session: 1 when buffered or fenced. */
int	inflight_route_early(struct channel *, const char *id,
	    json_object *params);
/* Session ids fenced against late notifications, on every channel. */
size_t	inflight_fences_count(void);

/* ---- audit.c: --audit-log, who changed what -------------------------- */
int	audit_open(const char *path);	/* 0, or -1 with errno */
int	audit_reopen(void);		/* SIGHUP */
/* A state-changing request: recorded once its answer is sent. */
void	audit_begin(struct evhttp_request *, const char *what,
	    const char *session_id);
void	audit_done(struct evhttp_request *);	/* the answer went out */
void	audit_forget(struct evhttp_request *);	/* a new request at this address */
void	audit_free(void);

/* ---- drain.c: SIGTERM's drain before the shutdown (--drain-grace-ms) -- */
int	drain_active(void);	/* /health fails, no new sessions or turns */
/* SIGTERM; a second one ends the drain; then shutdown() runs. */
void	drain_begin(void (*shutdown)(void));
void	drain_free(void);

/* ---- ratelimit.c: --rate-limit, per client and route class ---------- */
enum { RL_PROMPT, RL_MUTATION, RL_READ, RL_NCLASSES };
/* 0 to go on (X-RateLimit-* set), or the 429 sent and -1; cls < 0: exempt. */
int	ratelimit_admit(struct evhttp_request *, int cls);
/* {prompt, mutation, read}: refusals since the start (caller frees). */
json_object *ratelimit_rejected_json(void);
void	ratelimit_free(void);

/* ---- reqid.c: request and trace ids of the JSON log's lines ---------- */
struct span;
/* The log's lookup of sessions' ids for their later lines (main.c's). */
void	reqid_init(void (*lookup)(const char *id, size_t len,
	    const char **rid, const char **tid));
/* A request begins (X-Request-Id answered; the log context) or ends. */
void	reqid_begin(struct evhttp_request *);
void	reqid_end(void);
void	reqid_session(struct session *);	/* the request acts on it */
void	reqid_session_span(struct session *, const struct span *);
void	reqid_session_set(struct session *, const char *rid, const char *tid);
/* The request's ids (REQID_MAX + 1, REQID_TRACE_LEN + 1 bytes), the
   trace id the span's when there is one. */
void	reqid_current(char *rid, char *tid, const struct span *);

/* ---- metrics.c: GET /metrics (Prometheus text format) ------------------ */
void	route_metrics(struct http_ctx *);
/*
 * The gauges /metrics reads from the other modules when it is scraped,
 * handed over once at startup by main.c: metrics.c calls none by name.
 */
struct metrics_gauges {
	size_t	(*sessions)(void);		/* live sessions */
	size_t	(*prompts_running)(void);
	void	(*prompts_waiting)(size_t *queued, size_t *perms);
	size_t	(*sse_subscribers)(void);
	void	(*restores)(size_t *active, size_t *unsettled,
		    size_t *overdue, size_t *quarantined);
	size_t	(*ws_conns)(void);
	size_t	(*acp_conns)(void);
	size_t	(*children)(void);		/* children running */
};
void	metrics_set_gauges(const struct metrics_gauges *);
/* A restore's public answer: action (enum inflight_action), outcome
   (enum rfsm_result), ms since its start. */
void	metrics_restore(int action, int outcome, uint64_t ms);
/* A prompt ended: "complete", "error" or "deadline_exceeded". */
void	metrics_prompt(const char *result, uint64_t ms);
void	metrics_sse_evicted(size_t dropped);	/* frames never sent */
void	metrics_conn_open(int is_unix);
void	metrics_conn_closed(int is_unix);
/* A connection or request refused before its route (reason: error code). */
void	metrics_refusal(int is_unix, const char *reason);
void	metrics_child_started(int restart);
void	metrics_child_exited(int killed);
void	metrics_permission_asked(void);
/* Transcript bytes the listing and the search read. */
void	metrics_listing_read(uint64_t bytes);
/* The listing's kept file: "loaded", "missing", "rejected", "written",
   "failed". */
void	metrics_listing_kept(const char *event);

#endif
