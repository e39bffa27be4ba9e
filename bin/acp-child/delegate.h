/* SPDX-License-Identifier: ISC */
/*
 * delegate.h: --agent-acp, the real ACP agent behind this child.
 *
 * The child keeps serving load/resume/replay with its own loader; a
 * session's prompts go to one ACP agent process (started on the first
 * prompt, once per child), which resumes the session and from then on
 * gets its prompts, cancels and permission answers.  It resumes a
 * compact transcript whose new records the child copies back under its
 * writer lease (compact.h), or with --agent-compact=no (or after a
 * refusal) the real one, which it then writes itself (no lease of ours).
 */
#ifndef QWEN_ACP_DELEGATE_H
#define QWEN_ACP_DELEGATE_H

#include "rpc-frame.h"

struct child;
struct session;

/* session/prompt for s (delegated mode): the agent answers it. */
void	delegate_prompt(struct child *, struct rpc_msg *, struct session *);
/* Cancel s's running turn at the agent; queued=1: the waiting ones too. */
void	delegate_cancel(struct child *, struct session *, int queued);
/* An answer from our parent to a request we forwarded (permission). */
void	delegate_parent_answer(struct child *, struct rpc_msg *);
/* Shutdown: close the agent's stdin, SIGTERM its process group, SIGKILL
   it after a grace; 1 while it still runs (its exit ends the wait). */
int	delegate_shutdown(struct child *);
/* Whether the agent's process is still there (not yet reaped). */
int	delegate_running(struct child *);
/* --agent-prestart: start the agent now, with the child. */
void	delegate_prestart(struct child *);
/* s's load or resume was answered: resume it at the agent in the background. */
void	delegate_session_ready(struct child *, struct session *);
/* s's index is back from being kept: a background resume that waited for it. */
void	delegate_index_back(struct child *, struct session *);
/* The session goes: forget it at the agent's side. */
void	delegate_session_gone(struct child *, struct session *);
/* delegate-pass.c: an agent-level session call the agent answers: 1 when
   it was taken (passed, or refused because the agent is not ready). */
int	delegate_pass(struct child *, struct rpc_msg *);

#endif
