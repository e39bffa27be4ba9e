/* SPDX-License-Identifier: ISC */
/*
 * channel-int.h: what channel.c (the child's lifecycle), channel-rpc.c
 * (the JSON-RPC traffic with it), channel-idle.c (the idle policy) and
 * channel-corpse.c (an idle child that ends apart from its channel)
 * share, and how child-cmd.c hands channel.c the command to start.
 * Private to those five files.
 */
#ifndef QWEN_SERVE_CHANNEL_INT_H
#define QWEN_SERVE_CHANNEL_INT_H

#include <sys/types.h>

#include <event2/bufferevent.h>

#include "serve.h"
#include "spawn.h"

#define CHANNEL_KILL_GRACE_MS	2000
#define CHANNEL_STDERR_LINE	8192
#define CHANNEL_BATCH		8
#define CHANNEL_PIPE_SIZE		(1024 * 1024)
/* Read at most this much of the child's output per loop turn: reading
   (and scanning) a whole pipe of a big answer held the loop for ms. */
#define CHANNEL_READ_SLICE		(256 * 1024)
/* A line buffered past this is a big answer: read it a slice at a time. */
#define CHANNEL_READ_LONG		(64 * 1024)

enum channel_state { CH_IDLE, CH_STARTING, CH_READY, CH_DYING };

struct channel_req {
	TAILQ_ENTRY(channel_req)	 entry;		/* waiting for initialize */
	struct channel		*ch;
	channel_cb			 cb;
	void			(*sent)(void *arg);	/* on the wire, or NULL */
	void			*arg;
	json_object		*msg;		/* unsent request */
	uint64_t		 timeout_ms;
	int			 forgotten;
};

struct channel {
	TAILQ_ENTRY(channel)	 entry;
	char			*workspace;
	enum channel_state		 state;
	pid_t			 pid;
	int			 pidfd;
	struct event		*pid_ev;
	struct bufferevent	*in, *err;
	int			 out_fd;	/* read directly: 2.1's bufferevents read 4 KiB at a time */
	struct event		*out_ev;
	int			 out_eof;
	struct rpc_reader	*rd;
	struct rpc_pending	*pending;
	struct event		*deadline_ev;
	struct event		*idle_ev;
	struct event		*warm_ev;	/* a kept-warm child's restart */
	uint64_t		 started_ms;	/* monotonic, of the current child */
	long			 warm_backoff_ms;
	struct event		*kill_ev;
	struct event		*more_ev;
	int			 kill_stage;
	int			 killed;	/* we ended it */
	int			 idle_end;	/* for idleness: channel-corpse.c may take it */
	TAILQ_HEAD(, channel_req)	 waiting;
	TAILQ_HEAD(, channel_req)	 respawn;	/* arrived while an idle child ended */
	size_t			 nsessions;
	unsigned		 control_ops;	/* transcript reads, branches in flight */
	char			 secret[48];
	unsigned		 serial;	/* of the current child */
};

void	channel_req_finish(struct channel_req *, enum channel_outcome,
	    json_object *payload);
void	channel_req_send(struct channel *, struct channel_req *);
void	channel_arm_deadline(struct channel *);
void	channel_on_deadline(evutil_socket_t, short, void *);
void	channel_on_out_ready(evutil_socket_t, short, void *);
/* Take everything the child left in the pipe (it has exited). */
void	channel_out_drain(struct channel *);
void	channel_on_in_event(struct bufferevent *, short, void *);
/* Log the whole lines in in as child pid's; a line past the limit is dropped. */
void	channel_err_lines(struct evbuffer *, pid_t);
void	channel_on_err_read(struct bufferevent *, void *);
void	channel_on_err_event(struct bufferevent *, short, void *);
void	channel_on_more(evutil_socket_t, short, void *);
void	channel_start(struct channel *);
/* The child's command, cwd and environment (spawn_start() frees it). */
struct spawn_cmd *child_cmd_new(const char *workspace, const char *secret);
void	channel_end(struct channel *, int hard);
/* TERM, then KILL when ev fires again after the grace. */
void	channel_kill_step(pid_t, int *stage, struct event *ev);
/* Reap an exited child: its code or signal, counted and logged. */
void	channel_reap(pid_t, int killed, int *code, int *sig);
/* Free what is left of the channel's child; the channel is idle after. */
void	channel_release(struct channel *);
/* A request while the child ends for idleness: a fresh one now. */
void	channel_restart_ended(struct channel *);

/* What the channel tells the modules above it (channel_set_events()). */
extern const struct channel_events *channel_hooks;

/* channel-idle.c */
/* Apply the idle policy to a channel whose work may be over. */
void	channel_check_idle(struct channel *);
/* The idle timer: end the child if it still has nothing to do. */
void	channel_on_idle(evutil_socket_t, short, void *);
/* A kept-warm child that exited: start another after a backoff. */
void	channel_rewarm(struct channel *);

/* channel-corpse.c */
/* Take the channel's idly ending child apart from it: 0, or -1. */
int	channel_corpse_take(struct channel *);
/* Ended children not yet reaped. */
size_t	channel_corpses(void);

/* channel-close.c */
/* Hold r (1) when it restores an id whose close is pending. */
int	channel_close_hold(struct channel *, struct channel_req *);

#endif
