/* SPDX-License-Identifier: ISC */
/*
 * txpage.h: qwen/status/session/transcript (and _qwen/session/transcript),
 * pages of a session's active history
 * answered from an index cache (txpage.c).
 */
#ifndef QWEN_ACP_TXPAGE_H
#define QWEN_ACP_TXPAGE_H

struct child;
struct rpc_msg;

/* Answer (or queue) one request; a queued msg is moved (left empty). */
void	txpage_request(struct child *, struct rpc_msg *m);
/* Whether method is a transcript page or a branch (either spelling). */
int	txpage_is_method(const char *method);
/* Drop the index caches (at exit). */
void	txpage_free(void);

#endif
