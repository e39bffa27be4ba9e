/* SPDX-License-Identifier: ISC */
/*
 * load.h: one session/new, session/load or session/resume in flight.
 *
 * Built on the loop thread, run (file work) on a worker, finished on the
 * loop thread.  Between submit and done() the worker owns everything in
 * the job, the transcript index included.
 */
#ifndef QWEN_ACP_LOAD_H
#define QWEN_ACP_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "chain.h"
#include "loadwork.h"
#include "profiler.h"

struct appender;
struct child;
struct lease;
struct session;
struct span;
struct transcript;

enum load_job_kind { LOAD_JOB_NEW, LOAD_JOB_LOAD, LOAD_JOB_RESUME };

struct load_job {
	struct lw_job		 lw;		/* first: the worker's handle */
	struct child		*c;		/* loop thread only */
	struct session		*s;		/* loop thread only */
	enum load_job_kind		 kind;
	int			 bulk;		/* replay inside the result */
	int			 refresh;	/* the session was loaded before */
	json_object		*req_id;	/* a private copy */
	char			 sid[37];
	char			*path;
	const char		*data_dir;	/* immutable for the process */
	const char		*cache_dir;	/* likewise */
	const char		*owner_id;
	int			 do_fsync;
	size_t			 replay_max_bytes;
	size_t			 page_size;	/* loadReplayPageSize, 0: none */
	int			 hide_inherited; /* loadReplayHideInherited */
	int			 advertise;	/* the echo agent's model and modes */
	/* Handed to the worker and back. */
	struct transcript	*tx;
	uint64_t		 read0;		/* its bytes read before this job */
	int			 fresh, have_lease, have_app;
	/* Results. */
	int			 exists;
	struct lease		*lease;
	struct lease_pending	*lease_early;	/* taken while the transcript is read */
	struct appender		*app;
	struct tx_chain		 chain;
	int			 have_chain;
	int64_t			 model_history;
	uint64_t		 records;
	char			*tail;
	struct load_job_out {
		char		*base;		/* freed once sent */
		size_t		 off, len;
	}			 out[3];	/* the answer (and notifications), in chunks */
	int			 nout;
	int			 err_code;	/* 0: success */
	const char		*err_kind;
	char			*err_msg;
	struct prof		 prof;
	struct span		*span;
};

struct replay_result;

/* load-answer.c: the answer (and legacy notifications) in j->out[]; a bulk
   replay's encoded updates are taken from rr, not copied.  -1 on OOM. */
int	load_answer_build(struct load_job *, struct replay_result *);

/* terminals.c: load's promptTerminals, from the transcript */
#define TERMINAL_ID_MAX	128	/* a longer daemonPromptId is not one */
struct jbuf;
struct transcript;
/* ,"promptTerminals":[...] for the daemon prompts of ch[from..] into b
   (nothing when there are none). */
void	terminals_write(struct transcript *, const struct tx_chain *, size_t from,
	    struct jbuf *b);

/* modes-state.c: the echo agent's model and modes, as answers advertise them */
#define MODES_ECHO_MODEL	"echo"
/* {models, modes}.  Caller frees. */
json_object *modes_state(void);

#endif
