/* SPDX-License-Identifier: ISC */
/*
 * delegate-int.h: what delegate.c (the sessions and turns at the
 * --agent-acp agent) and delegate-proc.c (its process and wire) share.
 */
#ifndef QWEN_ACP_DELEGATE_INT_H
#define QWEN_ACP_DELEGATE_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stdint.h>

#include <json-c/json.h>
#include "spawn.h"

#include "rpc-frame.h"

struct bufferevent;
struct child;
struct event;

/* CALL_UP: the agent's request passed up to our parent, which answers it. */
enum call_kind { CALL_INIT, CALL_RESUME, CALL_PROMPT, CALL_UP, CALL_PASS };

/* A request in flight: ours to the agent, or the agent's to our parent. */
struct call {
	TAILQ_ENTRY(call)	 entry;
	enum call_kind		 kind;
	int64_t			 id;		/* ours (to the agent, or to the parent) */
	json_object		*peer_id;	/* parent's prompt id / agent's request id */
	json_object		*params;	/* CALL_RESUME: the prompt to send next */
	uint64_t		 sent_ms;	/* monotonic, when it went to the agent */
	int			 loading;	/* CALL_RESUME by session/load */
	char			 sid[37];
};

struct delegate {
	enum { D_DOWN, D_STARTING, D_READY } state;
	pid_t			 pid;
	int			 pidfd;
	struct bufferevent	*in, *out;
	struct event		*ev_exit;
	struct rpc_reader	*rd;
	int64_t			 next_id;
	TAILQ_HEAD(, call)	 calls;
	TAILQ_HEAD(, call)	 waiting;	/* prompts until the agent is ready */
	char			 secret[48];
	struct event		*restart_ev;	/* the backoff after an exit */
	struct event		*kill_ev;	/* SIGKILL after SIGTERM's grace */
	uint64_t		 started_ms;	/* monotonic, of the last start */
	long			 backoff_ms;
	int			 load_only;	/* it offers session/load, not resume */
	char			*rtdir;		/* the agent's QWEN_RUNTIME_DIR (compact
						   transcripts), NULL: none */
};


extern struct delegate dlg;

/* A call (copies peer_id and params); NULL on ENOMEM. */
struct call	*delegate_call_new(enum call_kind, const char *sid, json_object *peer_id,
		    json_object *params);
void		 delegate_call_free(struct call *);
/* Write one message to the agent (takes msg). */
void		 delegate_write(json_object *msg);
/* Send a request to the agent and remember it (takes params). */
void		 delegate_call(struct call *, const char *method, json_object *params);
/*
 * Start the agent and send initialize; -1 when it cannot run at all, with
 * *cause (caller frees; NULL when unknown).
 */
int		 delegate_start(struct child *, char **cause);
/* Start the agent unless it runs or its backoff is not over; prompts that
   waited fail when it cannot start. */
void		 delegate_restart(struct child *);
/* The agent is gone: start it again after the backoff. */
void		 delegate_schedule_restart(struct child *);
/* Whether a restart waits for the backoff. */
int		 delegate_backing_off(void);
/* delegate.c: prompts waiting for the agent run, or fail with cause. */
void		 delegate_release_waiting(struct child *, int ready, const char *cause);
/* delegate.c: one message from the agent (borrowed). */
void		 delegate_message(struct child *, struct rpc_msg *);
/* delegate.c: the agent's process is gone. */
void		 delegate_gone(struct child *);
/* delegate-pass.c: the agent's answer to a passed call (borrowed), or
   none ever. */
void		 delegate_pass_answer(struct child *, struct call *, struct rpc_msg *);
void		 delegate_pass_gone(struct child *, struct call *);
/* delegate-turns.c: the agent's own turns, followed so that its exit ends
   them at the daemon.  asked: a start_turn's params; result: the daemon's
   answer to it (both borrowed). */
void		 delegate_turns_asked(struct child *, json_object *asked);
void		 delegate_turns_answered(struct child *, json_object *asked,
		    json_object *result);
void		 delegate_turns_note(struct child *, const char *method, json_object *params);
void		 delegate_turns_end_all(struct child *);
/* nodecache.c: NODE_COMPILE_CACHE on the agent's command: our private
   directory unless the user chose; a refused one is logged, not set. */
void		 nodecache_env(struct child *, struct spawn_cmd *);

#endif
