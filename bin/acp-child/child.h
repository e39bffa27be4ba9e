/*
 * child.h: the qwen-acp-child process state shared by its modules.
 *
 * Everything here is used on the event-loop thread only; worker threads
 * see nothing but their job (loadwork.h).
 */
#ifndef ACP_CHILD_H
#define ACP_CHILD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "rpc-frame.h"
#include "session.h"

struct event;
struct event_base;
struct evbuffer;
struct lagmon;
struct loadwork;
struct trace_sink;

#define CHILD_OUT_HIGH		(64u * 1024 * 1024)	/* stop reading input */
#define CHILD_OUT_LOW		(16u * 1024 * 1024)	/* read again */
#define CHILD_MAX_SESSIONS	4096
#define CHILD_MAX_QUEUED	64			/* per session */

struct child_opts {
	char		*data_dir;	/* resolved */
	char		*workspace;	/* realpath */
	const char	*agent_command;	/* NULL: echo agent */
	const char	*trace_file;	/* NULL: no spans */
	size_t		 replay_max_bytes;
	size_t		 max_frame;
	int		 do_fsync;
	const char	*parent_capability;	/* NULL: not checked */
};

struct child {
	struct event_base	*base;
	struct child_opts	 opts;
	struct rpc_reader	*reader;
	struct evbuffer		*out;
	struct event		*ev_in, *ev_out, *ev_term, *ev_int, *ev_exit;
	int			 in_direct, out_direct;	/* not pollable: plain I/O */
	int			 in_paused, in_eof, out_dead;
	int			 closing;
	int			 initialized, denied;
	struct session_tree	 sessions;
	size_t			 nsessions;
	struct loadwork		*work;
	struct lagmon		*lag;
	struct trace_sink	*trace;
	char			 owner_id[37];
	int			 exit_code;
};

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
/* Whether output is over the high-water mark (producers should wait). */
int	child_out_full(const struct child *);
/* Re-check shutdown: exit the loop once nothing is left in flight. */
void	child_check_done(struct child *);
/* Stop reading, cancel prompts, exit the loop once the rest is done. */
void	child_begin_shutdown(struct child *);
/* io.c: events for stdin and stdout.  0 or -1. */
int	child_setup_io(struct child *);
/* io.c: write queued output now; -1 when stdout is gone. */
int	child_flush(struct child *);

/* rpc.c: handle one message read from stdin (takes ownership of msg). */
void	rpc_dispatch(struct child *, struct rpc_msg *msg);
/* rpc.c: a string member of o (borrowed), or NULL. */
const char *rpc_str(json_object *o, const char *key);
/* rpc.c: {errorKind: kind}.  Caller owns. */
json_object *rpc_error_data(const char *kind);
/* rpc.c: the session is no longer busy: run its queue, or drop it if it
   never registered (its queued requests are dispatched again). */
void	session_idle(struct child *, struct session *s);
/* rpc.c: at shutdown, cancel prompts and free idle sessions. */
void	rpc_shutdown_sessions(struct child *);
/* rpc.c: "Resource not found: session:<id>" with data.uri. */
void	rpc_send_not_found(struct child *, json_object *id, const char *sid);

/* restore.c: session/new, session/load, session/resume. */
void	restore_new(struct child *, struct rpc_msg *msg);
void	restore_start(struct child *, struct rpc_msg *msg, struct session *s,
	    const char *sid, int resume);

/* prompt.c: session/prompt and session/cancel. */
void	prompt_start(struct child *, struct rpc_msg *msg, struct session *s);
/* Cancel the running prompt; queued: answer queued prompts "cancelled" too. */
void	prompt_cancel(struct child *, struct session *s, int queued);
void	prompt_pause_all(struct child *, int paused);

#endif
