/*
 * forkslot.h: keep a failed fork from ending the process.
 *
 * libpipeline's pipeline_start() calls error(FATAL, ...) when fork()
 * fails, which exits.  So before it the caller takes a slot: a forked
 * placeholder child.  If that fork fails, the caller reports the errno (a
 * 503 with Retry-After) and never calls pipeline_start().  Otherwise the
 * placeholder is killed and reaped just before pipeline_start(): the
 * process slot and the memory it held (RLIMIT_NPROC, overcommit) are free
 * for libpipeline's own fork at that moment.
 */
#ifndef QWEN_FORKSLOT_H
#define QWEN_FORKSLOT_H

#include <sys/types.h>

/* Fork the placeholder into *pid; -1 with errno when fork fails. */
int	forkslot_take(pid_t *pid);
/* Kill and reap the placeholder (libpipeline's SIGCHLD handler may reap it). */
void	forkslot_release(pid_t pid);

#endif
