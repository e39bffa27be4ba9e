/* SPDX-License-Identifier: ISC */
/*
 * child.h: the qwen-acp-child process state shared by its modules.
 *
 * Everything here is used on the event-loop thread only; worker threads
 * see nothing but their job (loadwork.h).
 */
#ifndef QWEN_ACP_CHILD_H
#define QWEN_ACP_CHILD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rpc-frame.h"
#include "session.h"

struct child;
struct event;
struct event_base;
struct evbuffer;
struct lagmon;
struct loadwork;
struct trace_sink;
struct txpage_entry;

#define CHILD_OUT_HIGH		(64u * 1024 * 1024)	/* stop reading input */
#define CHILD_OUT_LOW		(16u * 1024 * 1024)	/* read again */
#define CHILD_MAX_SESSIONS	4096	/* --max-sessions's default */
#define CHILD_MAX_QUEUED	64			/* per session */
/* Room for an answer besides its replay: a replay gets the frame cap less this. */
#define ANSWER_RESERVE		(64u * 1024)

struct child_opts {
	char		*data_dir;	/* resolved */
	char		*cache_dir;	/* resolved: transcript index caches */
	char		*workspace;	/* realpath */
	const char	*agent_command;	/* NULL: echo agent */
	char		**agent_acp;	/* --agent-acp argv, or NULL */
	int		 agent_prestart;	/* start the agent and warm sessions */
	int		 agent_compact;	/* resume it from compact transcripts */
	const char	*trace_file;	/* NULL: no spans */
	const char	*otlp_endpoint;	/* --otlp-endpoint, or NULL */
	size_t		 replay_max_bytes;
	size_t		 max_frame;
	size_t		 max_sessions;	/* --max-sessions, 0: no cap */
	int		 do_fsync;
	const char	*parent_capability;	/* NULL: not checked */
};

/*
 * The layers above the process core (main.c fills it): io.c and child.c
 * reach the dispatcher, the session queues and the prompts only here.
 */
struct child_ops {
	/* One message read from stdin (takes ownership of its contents). */
	void	(*dispatch)(struct child *, struct rpc_msg *);
	void	(*session_idle)(struct child *, struct session *);
	/* Shutdown began: cancel prompts, free idle sessions. */
	void	(*stop_sessions)(struct child *);
	/* Output is over (1) or back under (0) its water marks. */
	void	(*pause_producers)(struct child *, int paused);
	/* A process of theirs still runs (the --agent-acp agent): shutdown
	   waits for it, and child_check_done() is called once it is gone. */
	int	(*running)(struct child *);
};

struct child {
	const struct child_ops	*ops;
	struct event_base	*base;
	struct child_opts	 opts;
	struct rpc_reader	*reader;
	struct evbuffer		*out;
	struct event		*ev_in, *ev_out, *ev_term, *ev_int, *ev_exit;
	int			 in_direct, out_direct;	/* not pollable: plain I/O */
	int			 in_paused, in_eof, out_dead;
	/* Prompts paused for a full output since the last wake: a wake with
	   none walks no sessions (one a write, with thousands of sessions). */
	size_t			 npaused;
	int			 closing;
	int			 initialized, denied;
	struct session_tree	 sessions;
	size_t			 nsessions;
	struct loadwork		*work;
	struct lagmon		*lag;
	struct trace_sink	*trace;
	struct otlp		*otlp;		/* NULL: no OTLP export */
	char			 owner_id[37];
	int			 exit_code;
};

/* child.c */
/* Set up the loop, signals and stdin/stdout; ops borrowed.  0 or -1. */
int	child_setup(struct child *, const struct child_ops *ops);
/* Free sessions (releasing leases), flush stdout, free the rest. */
void	child_teardown(struct child *);
/* Re-check shutdown: exit the loop once nothing is left in flight. */
void	child_check_done(struct child *);
/* Stop reading, cancel prompts, exit the loop once the rest is done. */
void	child_begin_shutdown(struct child *);
/* The session is no longer busy (ops->session_idle). */
void	child_session_idle(struct child *, struct session *s);
/* Pause (1) or wake (0) what produces output (ops->pause_producers). */
void	child_pause_producers(struct child *, int paused);

/* io.c */
/* Queue an encoded message on stdout; takes ownership of msg. */
void	child_send(struct child *, json_object *msg);
/* Queue bytes already encoded (whole lines); takes ownership of buf. */
void	child_send_raw(struct child *, char *buf, size_t len);
/* Send base[off, off+len) without copying; base is freed once written. */
void	child_send_ref(struct child *, char *base, size_t off, size_t len);
/* A JSON-RPC error answer to id (borrowed; may be NULL); data taken. */
void	child_send_error(struct child *, json_object *id, int code,
	    const char *message, json_object *data);
/* A result answer to id (borrowed); result taken. */
void	child_send_result(struct child *, json_object *id, json_object *result);
/* {errorKind: kind}.  Caller owns. */
json_object *child_error_data(const char *kind);
/* "Resource not found: session:<id>" with data.uri. */
void	child_send_not_found(struct child *, json_object *id, const char *sid);
/* Whether output is over the high-water mark (producers should wait). */
int	child_out_full(const struct child *);
/* Events for stdin and stdout.  0 or -1. */
int	child_setup_io(struct child *);
/* Write queued output now; -1 when stdout is gone. */
int	child_flush(struct child *);

/* modes.c */
/* session/set_model, session/set_mode or qwen/control/session/approval_mode. */
int	modes_is_switch(const char *method);
/* Answer one of those for a registered session, at once. */
void	modes_request(struct child *, struct rpc_msg *);

/* rpc.c */
/* Handle one message read from stdin (takes ownership of msg). */
void	rpc_dispatch(struct child *, struct rpc_msg *msg);
/* The session is no longer busy: run its queue, or drop it if it never
   registered (its queued requests are dispatched again). */
void	rpc_session_idle(struct child *, struct session *s);
/* At shutdown, cancel prompts and free idle sessions. */
void	rpc_shutdown_sessions(struct child *);

/* load.c: session/new, session/load, session/resume. */
void	load_new(struct child *, struct rpc_msg *msg);
void	load_start(struct child *, struct rpc_msg *msg, struct session *s,
	    const char *sid, int resume);

/* cache-write.c: keeping a session's transcript index in the cache directory
   after its restore answered, on a worker, so the answer never waits. */
/* When s's index changed since it was last kept, write it on a worker: s
   is busy (its requests wait) until that is done. */
void	cache_write_start(struct child *, struct session *);
/* The same for the index of a transcript page's entry e (idle), so that
   the next child's page reads only the page: 1 when the write started (e
   is busy until it is done; txpage_entry_release then), 0 when there is
   nothing to keep. */
int	cache_write_entry_start(struct child *, struct txpage_entry *e);

/* continue.c: qwen/control/session/continue and the continuation turn. */
/* Answer {accepted, interruption} from the end of s's history. */
void	continue_request(struct child *, struct rpc_msg *msg, struct session *s);
/* Whether a prompt's params ask for the continuation of the last turn. */
int	continue_marked(json_object *params);
/* The text of the unanswered user record s ends with (caller frees), or
   NULL when s does not end with one. */
char	*continue_text(struct session *, size_t *len);

/* prompt.c: session/prompt and session/cancel. */
void	prompt_start(struct child *, struct rpc_msg *msg, struct session *s);
/* Cancel the running prompt; queued: answer queued prompts "cancelled" too. */
void	prompt_cancel(struct child *, struct session *s, int queued);
void	prompt_pause_all(struct child *, int paused);
/* The error data of an agent that did not start (cause may be NULL). */
json_object *prompt_agent_error_data(const char *cause);

/* title.c: _qwen/session/update_metadata, a live session's title. */
int	title_is_method(const char *method);
void	title_set(struct child *, struct rpc_msg *msg, struct session *s);

#endif
