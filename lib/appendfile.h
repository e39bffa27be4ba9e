/* SPDX-License-Identifier: ISC */
/*
 * appendfile.h: the append-only files a process writes while it runs (the
 * log, the trace file), opened and reopened one way.
 */
#ifndef QWEN_APPENDFILE_H
#define QWEN_APPENDFILE_H

/* Open path for appending (created 0600, close-on-exec): fd or -1 + errno. */
int	appendfile_open(const char *path);

/*
 * Reopen path onto fd after rotation: 0, or -1 with errno and fd still
 * writing to the old file.  Async-signal-safe.
 */
int	appendfile_reopen(int fd, const char *path);

#endif
