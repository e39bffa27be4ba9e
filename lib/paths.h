/* SPDX-License-Identifier: ISC */
/*
 * paths.h: where qwen-code keeps transcripts and leases, and which session
 * ids may name a file.
 *
 * The layout is the real qwen-code one, so a user's existing sessions load
 * as they are: <data-dir>/projects/<sanitized cwd>/chats/<id>.jsonl, with
 * every byte of the cwd outside [A-Za-z0-9] turned into '-'.
 */
#ifndef QWEN_PATHS_H
#define QWEN_PATHS_H

#include <stddef.h>
#include <stdint.h>

/* Upstream's file-name rule: ^[0-9a-fA-F-]{32,36}$.  1 when valid. */
int	paths_valid_session_id(const char *id);

/*
 * The data directory: dir when non-NULL, else $QWEN_HOME, else ~/.qwen
 * ($HOME unset: the password entry, else /tmp/.qwen).  Caller frees.
 */
char	*paths_data_dir(const char *dir);

/*
 * The cache directory (transcript index caches): dir when non-NULL, else
 * $CACHE_DIRECTORY's first entry, else $XDG_CACHE_HOME/qwen-serve, else
 * ~/.cache/qwen-serve.  Caller frees.
 */
char	*paths_cache_dir(const char *dir);

/* <data>/projects/<sanitized cwd>/chats.  Caller frees. */
char	*paths_chats_dir(const char *data_dir, const char *cwd);

/* <chats dir>/<id>.jsonl; id must be valid.  Caller frees. */
char	*paths_transcript(const char *data_dir, const char *cwd, const char *id);

/* <data>/tmp/session-writer-locks.  Caller frees. */
char	*paths_lock_dir(const char *data_dir);

/* mkdir -p with mode for each created component.  0 or -1 with errno. */
int	paths_mkdir_p(const char *path, unsigned mode);

#endif
