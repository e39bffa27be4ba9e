/* SPDX-License-Identifier: ISC */
/*
 * token.c: the bearer token.  Where it comes from (--token-file, systemd's
 * credentials directory, QWEN_SERVER_TOKEN, or --token, which is wiped
 * from the process list), the one the daemon makes for itself when TCP is
 * on without one (written 0600 beside the socket, where qwen-restore finds
 * it), and the comparison: SHA-256 of both sides, compared with
 * timingsafe_bcmp, so neither the content nor the length leaks.
 */
#include "config.h"

#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sha2.h>

#include "base64.h"
#include "log.h"
#include "privdir.h"
#include "serve.h"
#include "xmalloc.h"

#define TOKEN_FILE_MAX	4096
#define TOKEN_CRED_NAME	"qwen-serve-token"

static unsigned char token_digest[SHA256_DIGEST_LENGTH];
static char *written_path;	/* the generated token's file, to remove */

/* Trim blanks around s in place; NULL when nothing is left. */
static char *
token_trim(char *s)
{
	char *p = s;
	size_t n;

	while (*p == ' ' || *p == '\t')
		p++;
	n = strlen(p);
	while (n > 0 && strchr(" \t\r\n", p[n - 1]) != NULL)
		p[--n] = '\0';
	if (n == 0)
		return NULL;
	memmove(s, p, n + 1);
	return s;
}

/*
 * Read a token file: a regular file (a link to one is fine: mounted
 * secrets are links), owned by us (or root)
 * and, when strict, not readable by group or others (as ssh refuses a
 * key).  Exits 2 with a message otherwise.
 */
static char *
token_read_file(const char *path, int strict)
{
	char buf[TOKEN_FILE_MAX + 1];
	struct stat st;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		err(2, "token file %s", path);
	}
	if (!S_ISREG(st.st_mode))
		errx(2, "token file %s: not a regular file", path);
	if (strict && (st.st_mode & 077) != 0)
		errx(2, "token file %s: mode %04o lets group or others read it; "
		    "refusing it (chmod 600 %s)", path,
		    (unsigned)(st.st_mode & 07777), path);
	if (strict && st.st_uid != geteuid() && st.st_uid != 0)
		errx(2, "token file %s: owned by uid %u, not us", path,
		    (unsigned)st.st_uid);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		err(2, "token file %s", path);
	if (n > TOKEN_FILE_MAX)
		errx(2, "token file %s: larger than 4096 bytes", path);
	buf[n] = '\0';
	if (token_trim(buf) == NULL || strpbrk(buf, "\r\n") != NULL)
		errx(2, "token file %s: %s", path,
		    strpbrk(buf, "\r\n") != NULL ? "more than one line" : "empty");
	return xstrdup(buf);
}

/*
 * Take --token's value and wipe it from argv, so that ps(1) and
 * /proc/PID/cmdline show no secret; warn that it was there at all.
 */
char *
token_from_argv(char *arg)
{
	char *t = xstrdup(arg);

	explicit_bzero(arg, strlen(arg));
	warnx("warning: --token is visible to other users until it is wiped; "
	    "use --token-file, LoadCredential= or QWEN_SERVER_TOKEN");
	return t;
}

/*
 * The configured token, in order: --token-file, --token, the systemd
 * credential, QWEN_SERVER_TOKEN.  NULL when none.  Exits 2 on a bad file.
 */
char *
token_resolve(const char *file, char *flag)
{
	const char *env, *dir;
	char *path, *t;

	if (file != NULL) {
		free(flag);
		return token_read_file(file, 1);
	}
	if (flag != NULL)
		return flag;
	if ((dir = getenv("CREDENTIALS_DIRECTORY")) != NULL && dir[0] == '/') {
		xasprintf(&path, "%s/%s", dir, TOKEN_CRED_NAME);
		/* systemd guards the directory; the file is ours alone. */
		t = access(path, F_OK) == 0 ? token_read_file(path, 0) : NULL;
		free(path);
		if (t != NULL)
			return t;
	}
	if ((env = getenv("QWEN_SERVER_TOKEN")) != NULL) {
		if (token_trim(t = xstrdup(env)) == NULL) {
			free(t);
			t = NULL;
		}
		return t;
	}
	return NULL;
}

#ifndef HAVE_TIMINGSAFE_BCMP
/* libbsd's timingsafe_bcmp, for a libbsd that lacks it (0.11.7). */
static int
timingsafe_bcmp(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *p = a, *q = b;
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= p[i] ^ q[i];
	return diff != 0;
}
#endif

/* Remember the token's digest (the only form compared). */
void
token_set(const char *token)
{
	SHA2_CTX ctx;

	SHA256Init(&ctx);
	SHA256Update(&ctx, (const unsigned char *)token, strlen(token));
	SHA256Final(token_digest, &ctx);
}

/* Whether the Authorization header carries the token; constant time. */
int
token_check(const char *auth)
{
	unsigned char given[SHA256_DIGEST_LENGTH];
	SHA2_CTX ctx;
	const char *t;

	if (conf.token == NULL || auth == NULL ||
	    strncasecmp(auth, "Bearer ", 7) != 0)
		return 0;
	t = auth + 7;
	SHA256Init(&ctx);
	SHA256Update(&ctx, (const unsigned char *)t, strlen(t));
	SHA256Final(given, &ctx);
	return timingsafe_bcmp(given, token_digest, sizeof(given)) == 0;
}

/* Write token and a newline to fd, make it durable and close fd. */
static int
token_put(int fd, const char *token)
{
	if (dprintf(fd, "%s\n", token) < 0 || fsync(fd) == -1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/*
 * Write the generated token to <socket dir>/token, mode 0600: a fresh
 * file renamed into place, so no link or stale file is ever written
 * through, in a directory checked as the socket's is (with --no-socket
 * too: the private default is created), and used through the descriptor
 * that was checked.  Failure is logged; the daemon runs on (same-uid
 * peers need no token).
 */
static void
token_write(const char *token)
{
	char *dir, *cause = NULL, tmp[32];
	int dfd, fd;

	if (conf.socket_path == NULL || (dir = privdir_of(conf.socket_path)) == NULL)
		return;
	if ((dfd = listen_check_dir(dir, &cause)) == -1) {
		log_warnx("%s: not writing the token file in %s",
		    cause != NULL ? cause : "out of memory", dir);
		free(cause);
		free(dir);
		return;
	}
	if ((fd = privdir_mktemp(dfd, ".token.", tmp, sizeof(tmp))) == -1 ||
	    token_put(fd, token) == -1 ||
	    renameat(dfd, tmp, dfd, "token") == -1) {
		log_warn("cannot write the token file in %s", dir);
		if (fd != -1)
			(void)unlinkat(dfd, tmp, 0);
		close(dfd);
		free(dir);
		return;
	}
	close(dfd);
	xasprintf(&written_path, "%s/token", dir);
	printf("qwen-serve: token in %s\n", written_path);
	free(dir);
}

/* A 128-bit token as 22 URL-safe characters, kept in conf and its file. */
void
token_generate(void)
{
	unsigned char raw[16];
	char tok[23];

	arc4random_buf(raw, sizeof(raw));
	base64_encode(BASE64_URL, raw, sizeof(raw), tok, sizeof(tok));
	explicit_bzero(raw, sizeof(raw));
	conf.token = xstrdup(tok);
	conf.token_generated = 1;
	token_set(tok);
	token_write(tok);
	explicit_bzero(tok, sizeof(tok));
	fflush(stdout);
}

/* Remove the generated token's file (at shutdown). */
void
token_unlink(void)
{
	if (written_path != NULL)
		unlink(written_path);
	free(written_path);
	written_path = NULL;
}
