/* SPDX-License-Identifier: ISC */
/*
 * compact.c: the compact transcript the --agent-acp agent resumes.
 *
 * The agent reads a whole transcript to resume a session, while the
 * model needs only the active chain from its last compression
 * checkpoint on.  So the agent runs with QWEN_RUNTIME_DIR set to a
 * private directory (<data-dir>/agent-runtime, 0700, ours), and before
 * it resumes a session we write there, under the same session id:
 *   - the transcript's first record (the agent checks its cwd), and the
 *     active chain's records before the checkpoint that the agent
 *     rebuilds state from (file history, session model, source, parent,
 *     attribution, goals, the last title, the last telemetry event: its
 *     prompt id numbers the next turn), re-parented into one line of
 *     descent.  The telemetry before the checkpoint (a tenth of a long
 *     session, and most of the agent's resume time) only feeds the
 *     agent's own usage statistics, and is left out;
 *   - the checkpoint, its parent set to the last of those;
 *   - every active record after it, byte for byte.
 * The leaf is the same record as in the real transcript, so what the
 * agent appends hangs from it; mirror.c copies those records back.
 * The chain and the checkpoint come from our own index, never a new
 * parse of the file.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "compact.h"
#include "paths.h"
#include "privdir.h"
#include "rpc-frame.h"
#include "transcript.h"
#include "txscan.h"
#include "xmalloc.h"

/* The runtime directory, checked: a path, or NULL with *cause. */
char *
compact_runtime_dir(const char *data_dir, char **cause)
{
	char *dir;
	int fd;

	xasprintf(&dir, "%s/agent-runtime", data_dir);
	if ((fd = privdir_open("agent runtime directory", dir,
	    PRIVDIR_CREATE | PRIVDIR_PRIVATE, cause)) == -1) {
		free(dir);
		return NULL;
	}
	close(fd);
	return dir;
}

/* Whether a record before the checkpoint carries state the agent rebuilds. */
static int
keep_before(const struct transcript *t, uint32_t rec)
{
	static const char *const kinds[] = {
		"file_history_snapshot", "session_model",
		"session_source", "parent_session", "attribution_snapshot",
		"agent_session_ready", NULL
	};
	const char *sub;

	if (transcript_type(t, rec) != TX_SYSTEM)
		return 0;
	sub = transcript_subtype(t, rec);
	if (strncmp(sub, "goal_", 5) == 0)
		return 1;
	for (size_t i = 0; kinds[i] != NULL; i++)
		if (strcmp(sub, kinds[i]) == 0)
			return 1;
	return 0;
}

static int
write_all(int fd, const char *p, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The fast way: rec's own bytes with its parentUuid string swapped (the
 * top-level key, found by the index's scanner).  1 done, 0 not possible
 * (use json-c), -1 + cause.
 */
static int
splice_parent(struct transcript *t, int fd, uint32_t rec, const char *parent,
    char uuid[64], char **cause)
{
	struct txscan sc;
	const char *b, *e, *v;
	size_t len;
	int r, w;

	if ((r = transcript_record_bytes(t, rec, &b, &len, cause)) != 1)
		return r;
	for (e = b + len; e > b && txscan_isspace((unsigned char)e[-1]); e--)
		;
	memset(&sc, 0, sizeof(sc));
	if (txscan_object(b, e, &sc) != TXSCAN_OK || sc.f[TXF_PARENT].kind != TXK_STR ||
	    sc.f[TXF_UUID].kind != TXK_STR || sc.f[TXF_UUID].len >= 64)
		return 0;
	memcpy(uuid, sc.f[TXF_UUID].p, sc.f[TXF_UUID].len);
	uuid[sc.f[TXF_UUID].len] = '\0';
	v = sc.f[TXF_PARENT].p;		/* inside the quotes */
	if (parent != NULL)
		w = write_all(fd, b, (size_t)(v - b)) == -1 ||
		    write_all(fd, parent, strlen(parent)) == -1 ||
		    write_all(fd, v + sc.f[TXF_PARENT].len,
		    (size_t)(e - v - sc.f[TXF_PARENT].len)) == -1;
	else
		w = write_all(fd, b, (size_t)(v - 1 - b)) == -1 ||
		    write_all(fd, "null", 4) == -1 ||
		    write_all(fd, v + sc.f[TXF_PARENT].len + 1,
		    (size_t)(e - v - sc.f[TXF_PARENT].len - 1)) == -1;
	if (w || write_all(fd, "\n", 1) == -1) {
		transcript_cause(cause, "write: %s", strerror(errno));
		return -1;
	}
	return 1;
}

/* Write rec re-parented to parent (NULL: a root); its uuid into uuid. */
static int
put_reparented(struct transcript *t, int fd, uint32_t rec, const char *parent,
    char uuid[64], char **cause)
{
	json_object *o;
	char *line;
	size_t len;
	int rc;

	if ((rc = splice_parent(t, fd, rec, parent, uuid, cause)) != 0)
		return rc == 1 ? 0 : -1;
	if ((o = transcript_load_record(t, rec, cause)) == NULL)
		return -1;
	json_object_object_add(o, "parentUuid", parent != NULL ?
	    json_object_new_string(parent) : NULL);
	transcript_uuid(t, rec, uuid);
	line = rpc_encode(o, &len);
	json_object_put(o);
	if (line == NULL) {
		transcript_cause(cause, "out of memory");
		return -1;
	}
	rc = write_all(fd, line, len);
	free(line);
	if (rc == -1)
		transcript_cause(cause, "write: %s", strerror(errno));
	return rc;
}

/* Write rec as it is in the transcript (fragments merged), one line. */
static int
put_raw(struct transcript *t, int fd, uint32_t rec, char **cause)
{
	const char *b;
	size_t len;
	json_object *o;
	char *line;
	int r;

	if ((r = transcript_record_bytes(t, rec, &b, &len, cause)) == -1)
		return -1;
	if (r == 1) {
		if (write_all(fd, b, len) == -1 ||
		    (len == 0 || b[len - 1] != '\n' ? write_all(fd, "\n", 1) : 0) == -1) {
			transcript_cause(cause, "write: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	/* Several fragments: the merged record, as upstream reads them. */
	if ((o = transcript_load_record(t, rec, cause)) == NULL)
		return -1;
	line = rpc_encode(o, &len);
	json_object_put(o);
	if (line == NULL || write_all(fd, line, len) == -1) {
		free(line);
		transcript_cause(cause, "write failed");
		return -1;
	}
	free(line);
	return 0;
}

/* The records before the cut that go first, in order, into *out. */
static size_t
pick_before(struct transcript *t, const struct tx_chain *ch, size_t cut,
    uint32_t *out)
{
	size_t n = 0, i;
	int64_t title = -1, tele = -1;

	/* The physical first record (its cwd is the ownership proof). */
	if (cut == 0)
		return 0;	/* no checkpoint: the whole chain, as it is */
	out[n++] = 0;
	for (i = 0; i < cut; i++) {
		uint32_t r = ch->rec[i];
		if (r == 0)
			continue;
		if (transcript_type(t, r) != TX_SYSTEM)
			continue;
		if (strcmp(transcript_subtype(t, r), "custom_title") == 0)
			title = (int64_t)i;
		else if (strcmp(transcript_subtype(t, r), "ui_telemetry") == 0)
			tele = (int64_t)i;
	}
	for (i = 0; i < cut; i++) {
		uint32_t r = ch->rec[i];
		if (r != 0 && (keep_before(t, r) || (int64_t)i == title ||
		    (int64_t)i == tele))
			out[n++] = r;
	}
	return n;
}

static int
write_compact(struct transcript *t, const struct tx_chain *ch, int fd,
    struct compact_stats *st, char **cause)
{
	size_t cut = ch->last_compression > 0 ? (size_t)ch->last_compression : 0;
	uint32_t *pre = xcalloc(cut + 1, sizeof(*pre));
	size_t npre = pick_before(t, ch, cut, pre), i;
	char prev[64] = "", uuid[64];
	int rc = 0;

	transcript_read_ahead(t, pre, npre);
	for (i = 0; i < npre && rc == 0; i++) {
		rc = put_reparented(t, fd, pre[i], prev[0] ? prev : NULL, uuid, cause);
		memcpy(prev, uuid, sizeof(prev));
	}
	transcript_read_ahead(t, NULL, 0);
	free(pre);
	st->before = npre;
	if (rc == -1 || ch->len == 0)
		return rc;
	/* The checkpoint (or the chain's root) hangs from what came first. */
	if (npre > 0)
		rc = put_reparented(t, fd, ch->rec[cut], prev, uuid, cause);
	else
		rc = put_raw(t, fd, ch->rec[cut], cause);
	transcript_read_ahead(t, ch->rec + cut + 1, ch->len - cut - 1);
	for (i = cut + 1; i < ch->len && rc == 0; i++)
		rc = put_raw(t, fd, ch->rec[i], cause);
	transcript_read_ahead(t, NULL, 0);
	st->after = ch->len - cut;
	return rc;
}

int
compact_write(struct transcript *t, const char *dst, struct compact_stats *st,
    char **cause)
{
	struct tx_chain ch = { 0 };
	struct stat sb;
	char *dir, *tmp;
	int fd, rc;

	memset(st, 0, sizeof(*st));
	*cause = NULL;
	if (transcript_refresh(t, cause) == -1 || chain_build(t, &ch, cause) == -1)
		return -1;
	dir = xstrdup(dst);
	if (paths_mkdir_p(dirname(dir), 0700) == -1) {
		transcript_cause(cause, "cannot create the agent's chats directory: %s",
		    strerror(errno));
		free(dir);
		chain_clear(&ch);
		return -1;
	}
	free(dir);
	xasprintf(&tmp, "%s.%ld.tmp", dst, (long)getpid());
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600)) == -1) {
		transcript_cause(cause, "cannot create the compact transcript: %s",
		    strerror(errno));
		free(tmp);
		chain_clear(&ch);
		return -1;
	}
	rc = write_compact(t, &ch, fd, st, cause);
	chain_clear(&ch);
	if (rc == 0 && (fsync(fd) == -1 || fstat(fd, &sb) == -1)) {
		transcript_cause(cause, "cannot sync the compact transcript: %s",
		    strerror(errno));
		rc = -1;
	}
	close(fd);
	if (rc == 0 && rename(tmp, dst) == -1) {
		transcript_cause(cause, "cannot put the compact transcript in place: %s",
		    strerror(errno));
		rc = -1;
	}
	if (rc == -1)
		(void)unlink(tmp);
	else {
		st->bytes = (uint64_t)sb.st_size;
		st->source = transcript_size(t);
	}
	free(tmp);
	return rc;
}

int
compact_link_real(const char *real, const char *dst, char **cause)
{
	char *dir = xstrdup(dst);

	*cause = NULL;
	if (paths_mkdir_p(dirname(dir), 0700) == -1) {
		free(dir);
		transcript_cause(cause, "cannot create the agent's chats directory: %s",
		    strerror(errno));
		return -1;
	}
	free(dir);
	if (unlink(dst) == -1 && errno != ENOENT) {
		transcript_cause(cause, "cannot remove the compact transcript: %s",
		    strerror(errno));
		return -1;
	}
	if (access(real, F_OK) == -1)
		return 0;	/* nothing yet: the agent creates it */
	if (link(real, dst) == -1) {
		transcript_cause(cause, "cannot link the real transcript: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}
