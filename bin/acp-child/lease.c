/* SPDX-License-Identifier: ISC */
/* lease.c: exclusive writer lock files with dead-owner reclaim. */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "clock.h"
#include "json.h"
#include "lease.h"
#include "paths.h"
#include "xmalloc.h"

#define LEASE_MAX_FILE	(64 * 1024)

struct lease {
	char	*path;
	char	*owner_id;
};

/* "linux:<boot_id>:<starttime>" of pid, or NULL when unknown. */
static char *
lease_start_identity(pid_t pid)
{
	char path[64], buf[1024], boot[64] = "", *p, *out = NULL;
	unsigned long long start = 0;
	ssize_t n;
	FILE *f;
	int fd, i;

	if ((f = fopen("/proc/sys/kernel/random/boot_id", "re")) != NULL) {
		if (fgets(boot, sizeof(boot), f) == NULL)
			boot[0] = '\0';
		boot[strcspn(boot, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	/* Field 22 (starttime); the comm field (2) may hold spaces. */
	if ((p = strrchr(buf, ')')) == NULL)
		return NULL;
	for (i = 2; i < 22 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &start) != 1)
		return NULL;
	if (asprintf(&out, "linux:%s:%llu", boot, start) == -1)
		return NULL;
	return out;
}

/* The lock's JSON document. Caller puts. */
static json_object *
lease_doc(const char *session_id, const char *owner_id)
{
	json_object *o = xjson_object_new_object();
	char host[256] = "", when[32], *ident;

	gethostname(host, sizeof(host) - 1);
	clock_iso_now(when);
	ident = lease_start_identity(getpid());
	json_object_object_add(o, "schema_version", xjson_object_new_int(2));
	json_object_object_add(o, "state", xjson_object_new_string("active"));
	json_object_object_add(o, "session_id", xjson_object_new_string(session_id));
	json_object_object_add(o, "owner_id", xjson_object_new_string(owner_id));
	json_object_object_add(o, "pid", xjson_object_new_int64(getpid()));
	if (ident != NULL)
		json_object_object_add(o, "process_start_identity",
		    xjson_object_new_string(ident));
	json_object_object_add(o, "hostname", xjson_object_new_string(host));
	json_object_object_add(o, "process_kind",
	    xjson_object_new_string("qwen-acp-child"));
	json_object_object_add(o, "acquired_at", xjson_object_new_string(when));
	json_object_object_add(o, "qwen_version",
	    xjson_object_new_string(PACKAGE_VERSION));
	free(ident);
	return o;
}

/*
 * Write doc to a fresh temp file in dir.  Caller frees the name.  No
 * fsync: after a crash the owner is dead anyway (the boot id in the start
 * identity changes), and an empty or torn lock counts as dead, so
 * durability buys nothing and costs milliseconds on every restore.
 */
static char *
lease_write_temp(const char *dir, const char *session_id, json_object *doc)
{
	const char *s = json_object_to_json_string_ext(doc,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t len = strlen(s);
	char *tmp;
	int fd;

	if (asprintf(&tmp, "%s/.%s.%ld.%08x.tmp", dir, session_id,
	    (long)getpid(), arc4random()) == -1)
		return NULL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1) {
		free(tmp);
		return NULL;
	}
	if (write(fd, s, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		if (errno == 0)
			errno = EIO;
		close(fd);
		unlink(tmp);
		free(tmp);
		return NULL;
	}
	close(fd);
	return tmp;
}

/* Read and parse a lock file.  NULL when absent or unreadable. */
static json_object *
lease_read(const char *path)
{
	char buf[LEASE_MAX_FILE];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return json_tokener_parse(buf);
}

/*
 * Whether the holder described by doc is provably dead on this host: same
 * hostname, and its pid is gone or now names a process that started at a
 * different time.  An unreadable lock (torn by a crash) counts as dead.
 */
static int
lease_owner_dead(json_object *doc)
{
	char host[256] = "", *now;
	const char *h, *ident;
	json_object *v;
	int64_t pid;
	int dead;

	if (doc == NULL)
		return 1;
	gethostname(host, sizeof(host) - 1);
	if ((h = json_get_str(doc, "hostname")) == NULL || strcmp(h, host) != 0)
		return 0;
	if (!json_object_object_get_ex(doc, "pid", &v) ||
	    (pid = json_object_get_int64(v)) <= 0 || pid > 0x3fffffff)
		return 0;
	if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
		return 1;
	if ((ident = json_get_str(doc, "process_start_identity")) == NULL)
		return 0;
	now = lease_start_identity((pid_t)pid);
	dead = now != NULL && strcmp(now, ident) != 0;
	free(now);
	return dead;
}

/* A message naming the live holder.  Caller frees. */
static char *
lease_conflict_cause(const char *session_id, json_object *doc)
{
	json_object *v;
	const char *host = json_get_str(doc, "hostname");
	long long pid = -1;
	char *out;

	if (doc != NULL && json_object_object_get_ex(doc, "pid", &v))
		pid = (long long)json_object_get_int64(v);
	if (asprintf(&out, "session %s is being written by another process "
	    "(pid %lld on %s)", session_id, pid, host != NULL ? host : "?") == -1)
		return NULL;
	return out;
}

/*
 * Under an flock on <lock>.reclaim: if the lock still holds the dead
 * owner's bytes, remove it and link ours.  0 won, 1 conflict, -1 error.
 */
static int
lease_reclaim(const char *lock, const char *tmp, const char *stale_owner)
{
	char *side;
	json_object *doc;
	const char *owner;
	int fd, rc = 1;

	if (asprintf(&side, "%s.reclaim", lock) == -1)
		return -1;
	fd = open(side, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(side);
	if (fd == -1 || flock(fd, LOCK_EX) == -1) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	doc = lease_read(lock);
	owner = json_get_str(doc, "owner_id");
	if (doc == NULL ? stale_owner == NULL :
	    (owner != NULL && stale_owner != NULL && strcmp(owner, stale_owner) == 0)) {
		if (unlink(lock) == -1 && errno != ENOENT)
			rc = -1;
		else if (link(tmp, lock) == 0)
			rc = 0;
		else
			rc = errno == EEXIST ? 1 : -1;
	} else if (doc == NULL && link(tmp, lock) == 0)
		rc = 0;
	json_object_put(doc);
	close(fd);
	return rc;
}

/* Link tmp into place, reclaiming a dead owner's lock once. */
static enum lease_result
lease_link(const char *lock, const char *tmp, const char *session_id, char **cause)
{
	json_object *doc;
	char *stale = NULL;
	int rc;

	if (link(tmp, lock) == 0)
		return LEASE_OK;
	if (errno != EEXIST) {
		if (asprintf(cause, "cannot create writer lease %s: %s", lock,
		    strerror(errno)) == -1)
			*cause = NULL;
		return LEASE_ERROR;
	}
	doc = lease_read(lock);
	if (!lease_owner_dead(doc)) {
		*cause = lease_conflict_cause(session_id, doc);
		json_object_put(doc);
		return LEASE_CONFLICT;
	}
	if (json_get_str(doc, "owner_id") != NULL)
		stale = xstrdup(json_get_str(doc, "owner_id"));
	json_object_put(doc);
	rc = lease_reclaim(lock, tmp, stale);
	free(stale);
	if (rc == 0)
		return LEASE_OK;
	if (rc == 1) {
		doc = lease_read(lock);
		*cause = lease_conflict_cause(session_id, doc);
		json_object_put(doc);
		return LEASE_CONFLICT;
	}
	if (asprintf(cause, "cannot reclaim writer lease %s: %s", lock,
	    strerror(errno)) == -1)
		*cause = NULL;
	return LEASE_ERROR;
}

enum lease_result
lease_acquire(const char *data_dir, const char *session_id,
    const char *owner_id, struct lease **out, char **cause)
{
	char *dir = NULL, *lock = NULL, *tmp = NULL;
	enum lease_result r = LEASE_ERROR;
	json_object *doc;

	*out = NULL;
	*cause = NULL;
	if ((dir = paths_lock_dir(data_dir)) == NULL ||
	    asprintf(&lock, "%s/%s.lock", dir, session_id) == -1) {
		lock = NULL;
		goto done;
	}
	if (paths_mkdir_p(dir, 0700) == -1) {
		if (asprintf(cause, "cannot create %s: %s", dir, strerror(errno)) == -1)
			*cause = NULL;
		goto done;
	}
	doc = lease_doc(session_id, owner_id);
	tmp = lease_write_temp(dir, session_id, doc);
	json_object_put(doc);
	if (tmp == NULL) {
		if (asprintf(cause, "cannot write writer lease in %s: %s", dir,
		    strerror(errno)) == -1)
			*cause = NULL;
		goto done;
	}
	r = lease_link(lock, tmp, session_id, cause);
	unlink(tmp);
	if (r == LEASE_OK) {
		if ((*out = calloc(1, sizeof(**out))) == NULL ||
		    ((*out)->owner_id = strdup(owner_id)) == NULL) {
			free(*out);
			*out = NULL;
			unlink(lock);
			r = LEASE_ERROR;
		} else {
			(*out)->path = lock;
			lock = NULL;
		}
	}
done:
	if (r != LEASE_CONFLICT && r != LEASE_OK && *cause == NULL)
		*cause = strdup("cannot acquire writer lease: out of memory");
	free(dir);
	free(lock);
	free(tmp);
	return r;
}

void
lease_release(struct lease *l)
{
	json_object *doc;
	const char *owner;

	if (l == NULL)
		return;
	doc = lease_read(l->path);
	owner = json_get_str(doc, "owner_id");
	if (owner != NULL && strcmp(owner, l->owner_id) == 0)
		unlink(l->path);
	json_object_put(doc);
	free(l->path);
	free(l->owner_id);
	free(l);
}

struct lease_pending {
	pthread_t		 tid;
	char			*data_dir, *session_id, *owner_id;
	enum lease_result	 r;
	struct lease		*lease;
	char			*cause;
};

static void *
pending_main(void *arg)
{
	struct lease_pending *p = arg;

	p->r = lease_acquire(p->data_dir, p->session_id, p->owner_id, &p->lease,
	    &p->cause);
	return NULL;
}

static void
pending_free(struct lease_pending *p)
{
	free(p->data_dir);
	free(p->session_id);
	free(p->owner_id);
	free(p);
}

struct lease_pending *
lease_acquire_start(const char *data_dir, const char *session_id,
    const char *owner_id)
{
	struct lease_pending *p;

	if ((p = calloc(1, sizeof *p)) == NULL)
		return NULL;
	if ((p->data_dir = strdup(data_dir)) == NULL ||
	    (p->session_id = strdup(session_id)) == NULL ||
	    (p->owner_id = strdup(owner_id)) == NULL ||
	    pthread_create(&p->tid, NULL, pending_main, p) != 0) {
		pending_free(p);
		return NULL;
	}
	return p;
}

enum lease_result
lease_acquire_finish(struct lease_pending *p, struct lease **out, char **cause)
{
	enum lease_result r;

	pthread_join(p->tid, NULL);
	r = p->r;
	*out = p->lease;
	*cause = p->cause;
	pending_free(p);
	return r;
}
