/* SPDX-License-Identifier: ISC */
/*
 * catalog.c: the session data on disk, archived, unarchived and deleted
 * so that a SIGKILL at any point leaves every session whole or gone.
 *
 * A session is its transcript chats/<id>.jsonl (archived: chats/archive/
 * <id>.jsonl); its ledger <id>.ledger.jsonl follows it.  Every step is one
 * rename(2), so the transcript is always in exactly one place: archive and
 * unarchive move it with RENAME_NOREPLACE (never over another copy), delete
 * moves it into chats/.trash/ and only then unlinks it.  The ledger moves
 * second; catalog_sweep() at start puts a ledger left behind by a kill
 * beside its transcript again, and empties the trash.  While it works the
 * daemon holds the session's writer lease, so no child of ours (nor any
 * other qwen-code process honouring the lease) writes the file under it.
 */
#include "config.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../acp-child/lease.h"
#include "log.h"
#include "paths.h"
#include "serve.h"
#include "xmalloc.h"

#define CATALOG_ARCHIVE	"archive"
#define CATALOG_TRASH	".trash"

static uint64_t catalog_rev;

/* The catalog's revision: bumped by every change made here. */
uint64_t
catalog_revision(void)
{
	return catalog_rev;
}

/* Open a directory below dfd (or the path when dfd is -1), no symlink. */
static int
dir_open(int dfd, const char *name)
{
	return openat(dfd == -1 ? AT_FDCWD : dfd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Open (making it, 0700) a private sub-directory of dfd; ours or refused. */
static int
subdir_open(int dfd, const char *name)
{
	struct stat st;
	int fd;

	if (mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((fd = dir_open(dfd, name)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/* Whether dfd/name is a regular file (not followed). */
static int
reg_at(int dfd, const char *name)
{
	struct stat st;

	return dfd != -1 && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

/* rename(2) that never replaces: 0, or -1 with errno (EEXIST). */
static int
move_noreplace(int from, const char *a, int to, const char *b)
{
	if (renameat2(from, a, to, b, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* A filesystem without RENAME_NOREPLACE: link, then unlink. */
	if (linkat(from, a, to, b, 0) == -1)
		return -1;
	return unlinkat(from, a, 0);
}

/*
 * Test hold point: with QWEN_SERVE_TEST_MANAGE_HOLD=PATH (a FIFO), the
 * daemon creates PATH.reached once the transcript has moved and waits for
 * a writer on the FIFO, so a test can SIGKILL it mid-operation.
 */
static void
catalog_hold(void)
{
	const char *path = getenv("QWEN_SERVE_TEST_MANAGE_HOLD");
	char *mark, b;
	int fd;

	if (path == NULL || *path == '\0')
		return;
	xasprintf(&mark, "%s.reached", path);
	if ((fd = open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) != -1)
		close(fd);
	free(mark);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		(void)read(fd, &b, 1);
		close(fd);
	}
}

/*
 * Where id's transcript is in workspace: CATALOG_ACTIVE and/or
 * CATALOG_ARCHIVED bits, 0 when nowhere.
 */
int
catalog_where(const char *workspace, const char *id)
{
	char *dir = names_transcript_dir_ws(workspace), name[SERVE_SESSION_ID_MAX + 8];
	int dfd, afd, where = 0;

	if (dir == NULL || (dfd = dir_open(-1, dir)) == -1) {
		free(dir);
		return 0;
	}
	free(dir);
	snprintf(name, sizeof name, "%s.jsonl", id);
	if (reg_at(dfd, name))
		where |= CATALOG_ACTIVE;
	if ((afd = dir_open(dfd, CATALOG_ARCHIVE)) != -1) {
		if (reg_at(afd, name))
			where |= CATALOG_ARCHIVED;
		close(afd);
	}
	close(dfd);
	return where;
}

/* The workspace holding id's transcript (active or archived): a
   registered one, else a standalone session's directory. */
const char *
catalog_workspace_of(const char *id)
{
	for (size_t i = 0; i < conf.n_workspaces; i++)
		if (catalog_where(conf.workspaces[i], id) != 0)
			return conf.workspaces[i];
	return standalone_workspace_of(id);
}

/* Take id's writer lease for the daemon: NULL and *code when refused. */
struct lease *
catalog_lease_take(const char *id, const char **code, char **cause)
{
	char *base = paths_data_dir(conf.data_dir), *owner;
	struct lease *l = NULL;
	enum lease_result r;

	if (base == NULL) {
		*code = "internal";
		return NULL;
	}
	xasprintf(&owner, "qwen-serve-catalog-%ld", (long)getpid());
	r = lease_acquire(base, id, owner, &l, cause);
	free(owner);
	free(base);
	if (r != LEASE_OK)
		*code = r == LEASE_CONFLICT ? "session_writer_conflict" : "internal";
	return r == LEASE_OK ? l : NULL;
}

/* Give the lease back (NULL-safe). */
void
catalog_lease_drop(struct lease *l)
{
	lease_release(l);
}

/* Whether id may be changed now: not live, not being restored here. */
int
catalog_idle(const char *id, const char **code)
{
	if (sessions_find(id) != NULL || inflight_find(id) != NULL) {
		*code = "live_session_active";
		return 0;
	}
	return 1;
}

/* Delete id's transcript in dfd (and its ledger): its trash name first. */
static int
delete_in(int dfd, const char *id)
{
	char name[SERVE_SESSION_ID_MAX + 16], trash[SERVE_SESSION_ID_MAX + 32];
	int tfd, rc = -1;

	if ((tfd = subdir_open(dfd, CATALOG_TRASH)) == -1)
		return -1;
	snprintf(name, sizeof name, "%s.jsonl", id);
	snprintf(trash, sizeof trash, "%s.%08x.jsonl", id, arc4random());
	/* The one step that makes the session gone. */
	if (renameat(dfd, name, tfd, trash) == 0) {
		catalog_rev++;
		catalog_hold();
		snprintf(name, sizeof name, "%s.ledger.jsonl", id);
		(void)unlinkat(dfd, name, 0);
		(void)unlinkat(tfd, trash, 0);
		rc = 0;
	}
	close(tfd);
	return rc;
}

/*
 * Delete the data of session id wherever it is (active and archived).
 * 0 removed, 1 not found, -1 refused or failed (*code, *cause).
 */
int
catalog_delete(const char *id, const char **code, char **cause)
{
	const char *ws = catalog_workspace_of(id);
	struct lease *l;
	char *dir;
	int dfd, afd, where, rc = 0;

	if (ws == NULL)
		return 1;
	if (!catalog_idle(id, code) || (l = catalog_lease_take(id, code, cause)) == NULL)
		return -1;
	where = catalog_where(ws, id);
	dir = names_transcript_dir_ws(ws);
	if ((dfd = dir_open(-1, dir)) == -1)
		rc = -1;
	if (rc == 0 && (where & CATALOG_ACTIVE) && delete_in(dfd, id) == -1)
		rc = -1;
	if (rc == 0 && (where & CATALOG_ARCHIVED)) {
		if ((afd = dir_open(dfd, CATALOG_ARCHIVE)) == -1 ||
		    delete_in(afd, id) == -1)
			rc = -1;
		if (afd != -1)
			close(afd);
	}
	if (rc == -1) {
		*code = "internal";
		xasprintf(cause, "cannot delete session %s: %s", id,
		    strerror(errno));
	}
	if (rc == 0) {
		attachments_delete(ws, id);
		artifacts_delete(ws, id);
	}
	if (dfd != -1)
		close(dfd);
	free(dir);
	lease_release(l);
	return rc;
}

/* Move id's transcript, then its ledger, from one directory to the other. */
static int
move_session(int from, int to, const char *id)
{
	char name[SERVE_SESSION_ID_MAX + 16];

	snprintf(name, sizeof name, "%s.jsonl", id);
	if (move_noreplace(from, name, to, name) == -1)
		return -1;
	catalog_rev++;
	catalog_hold();
	snprintf(name, sizeof name, "%s.ledger.jsonl", id);
	if (move_noreplace(from, name, to, name) == -1 && errno != ENOENT)
		log_warnx("session %s: its ledger stays behind (%s)", id,
		    strerror(errno));
	return 0;
}

/*
 * A copy on both sides, resolved as upstream's resolveConflicts: the
 * side the session is moved to keeps its copy, the other copy (and its
 * ledger) is deleted through the trash.  3, or -1.
 */
static int
resolve_conflict(int dfd, int afd, const char *id, int archive)
{
	if (delete_in(archive ? dfd : afd, id) == -1)
		return -1;
	return 3;
}

/*
 * Archive (archive = 1) or unarchive id.  0 moved, 1 already there,
 * 2 not found, 3 a copy on both sides resolved (resolve set), -1 refused
 * or failed (*code, *cause).
 */
int
catalog_archive(const char *id, int archive, int resolve, const char **code,
    char **cause)
{
	const char *ws = catalog_workspace_of(id);
	struct lease *l;
	char *dir;
	int where, dfd, afd = -1, rc, conflict;

	if (ws == NULL)
		return 2;
	where = catalog_where(ws, id);
	conflict = where == (CATALOG_ACTIVE | CATALOG_ARCHIVED);
	if (conflict && !resolve) {
		*code = "session_conflict";
		return -1;
	}
	if (where == (archive ? CATALOG_ARCHIVED : CATALOG_ACTIVE))
		return 1;
	if (!catalog_idle(id, code) || (l = catalog_lease_take(id, code, cause)) == NULL)
		return -1;
	dir = names_transcript_dir_ws(ws);
	rc = -1;
	if ((dfd = dir_open(-1, dir)) != -1 &&
	    (afd = subdir_open(dfd, CATALOG_ARCHIVE)) != -1)
		rc = conflict ? resolve_conflict(dfd, afd, id, archive) :
		    archive ? move_session(dfd, afd, id) : move_session(afd, dfd, id);
	if (rc == -1) {
		*code = errno == EEXIST ? "session_conflict" : "internal";
		xasprintf(cause, "cannot move session %s: %s", id, strerror(errno));
	}
	if (afd != -1)
		close(afd);
	if (dfd != -1)
		close(dfd);
	free(dir);
	lease_release(l);
	return rc;
}

/* Count the transcripts (not ledgers) of a directory; -1 when it is none. */
static long
count_in(int dfd)
{
	struct dirent *de;
	size_t n;
	long c = 0;
	DIR *d;

	if (dfd == -1 || (d = fdopendir(dup(dfd))) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (de->d_name[0] != '.' && n > 6 &&
		    strcmp(de->d_name + n - 6, ".jsonl") == 0 &&
		    !(n > 13 && strcmp(de->d_name + n - 13, ".ledger.jsonl") == 0) &&
		    (de->d_type == DT_REG || (de->d_type == DT_UNKNOWN &&
		    reg_at(dfd, de->d_name))))
			c++;
	}
	closedir(d);
	return c;
}

/* Active and archived transcripts of workspace. */
void
catalog_counts(const char *workspace, size_t *active, size_t *archived)
{
	char *dir = names_transcript_dir_ws(workspace);
	int dfd = dir != NULL ? dir_open(-1, dir) : -1, afd;
	long n;

	*active = *archived = 0;
	free(dir);
	if (dfd == -1)
		return;
	*active = (n = count_in(dfd)) > 0 ? (size_t)n : 0;
	if ((afd = dir_open(dfd, CATALOG_ARCHIVE)) != -1) {
		*archived = (n = count_in(afd)) > 0 ? (size_t)n : 0;
		close(afd);
	}
	close(dfd);
}

/*
 * Put the ledgers of dir `from` whose transcript lives in `to` beside it
 * (an archive or unarchive killed between its two renames).
 */
static void
sweep_ledgers(int from, int to)
{
	char id[SERVE_SESSION_ID_MAX + 16], name[SERVE_SESSION_ID_MAX + 32];
	struct dirent *de;
	size_t n;
	DIR *d;

	if (from == -1 || to == -1 || (d = fdopendir(dup(from))) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n <= 13 || n - 13 > SERVE_SESSION_ID_MAX ||
		    strcmp(de->d_name + n - 13, ".ledger.jsonl") != 0)
			continue;
		memcpy(id, de->d_name, n - 13);
		id[n - 13] = '\0';
		snprintf(name, sizeof name, "%s.jsonl", id);
		if (!reg_at(from, name) && reg_at(to, name))
			(void)move_noreplace(from, de->d_name, to, de->d_name);
	}
	closedir(d);
}

/* Empty dfd's trash: the ledgers of its ids first, then the transcripts. */
static void
sweep_trash(int dfd)
{
	char id[SERVE_SESSION_ID_MAX + 16], name[SERVE_SESSION_ID_MAX + 32];
	struct dirent *de;
	size_t n;
	int tfd;
	DIR *d;

	if (dfd == -1 || (tfd = dir_open(dfd, CATALOG_TRASH)) == -1)
		return;
	if ((d = fdopendir(tfd)) == NULL) {
		close(tfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		/* <id>.<8 hex digits>.jsonl */
		n = strlen(de->d_name);
		if (de->d_name[0] == '.' || n <= 15 || n - 15 > SERVE_SESSION_ID_MAX)
			continue;
		memcpy(id, de->d_name, n - 15);
		id[n - 15] = '\0';
		snprintf(name, sizeof name, "%s.jsonl", id);
		if (!reg_at(dfd, name)) {
			snprintf(name, sizeof name, "%s.ledger.jsonl", id);
			(void)unlinkat(dfd, name, 0);
		}
		(void)unlinkat(tfd, de->d_name, 0);
	}
	closedir(d);
}

/* At start: finish what a killed daemon left half done, every workspace. */
void
catalog_sweep(void)
{
	char *dir;
	int dfd, afd;

	for (size_t i = 0; i < conf.n_workspaces; i++) {
		dir = names_transcript_dir_ws(conf.workspaces[i]);
		dfd = dir != NULL ? dir_open(-1, dir) : -1;
		free(dir);
		if (dfd == -1)
			continue;
		afd = dir_open(dfd, CATALOG_ARCHIVE);
		sweep_ledgers(dfd, afd);
		sweep_ledgers(afd, dfd);
		sweep_trash(dfd);
		sweep_trash(afd);
		if (afd != -1)
			close(afd);
		close(dfd);
	}
}
