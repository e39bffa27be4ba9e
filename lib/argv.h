/* SPDX-License-Identifier: ISC */
/*
 * argv.h: a command line given as one string ('CMD ARGS'), split into an
 * argument vector by libpipeline's rules (pipecmd_new_argstr): words end
 * at unquoted blanks; '...' keeps everything literally; inside "..." a
 * backslash escapes only $ ` " \; outside quotes a backslash escapes any
 * character.  No shell: no globs, variables, redirections or pipes.
 * Unlike libpipeline, an unterminated quote or a trailing backslash is an
 * error, not a guess, and so is a line with no command.
 */
#ifndef QWEN_ARGV_H
#define QWEN_ARGV_H

#include <stddef.h>

/*
 * Split s into a NULL-terminated vector; caller frees it with argv_free().
 * Returns the number of words (at least 1), or -1 with a message in
 * *cause (lib/cause.h; the caller frees it; cause may be NULL).
 */
int	argv_split(const char *s, char ***argvp, char **cause);

/* Free a vector from argv_split (NULL-safe). */
void	argv_free(char **);

/*
 * The vector as one line a user can read and paste into argv_split (words
 * with blanks, quotes or backslashes single-quoted).  Caller frees.
 */
char	*argv_join(char *const *);

#endif
