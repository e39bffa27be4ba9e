/* SPDX-License-Identifier: ISC */
/*
 * qwen-gen-transcript: fast, deterministic generator of qwen-code style JSONL
 * session transcripts (the real record shapes of upstream-transcript.md 2:
 * users, assistants with thought/text/functionCall and usage, tool results,
 * ui_telemetry, titles and their 32 KiB re-anchors, file-history snapshots,
 * compressions, rewinds that leave dead branches, `}{`-glued records and a
 * torn tail).  Same seed, same options => byte-identical output.
 *
 *   qwen-gen-transcript --mib N --seed S [--branches K] [--compressions C]
 *       [--glued G] [--torn-tail] [--no-title] [--cwd DIR] [--session-id ID]
 *       [--max-record-kib K] (--out DIR | --data-dir D --workspace W)
 *
 * Writes <DIR>/<sessionId>.jsonl (or D/projects/<sanitized W>/chats/...)
 * and prints its path.
 */
#include "config.h"

#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "uuid.h"

/* Flush the output buffer. */
static void
flush_out(struct gen *g)
{
	size_t off = 0;
	ssize_t n;

	while (off < g->out.len) {
		n = write(g->fd, g->out.p + off, g->out.len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			err(1, "write");
		off += (size_t)n;
	}
	g->out.len = 0;
}

static void
new_uuid(struct gen *g, char out[37])
{
	uint8_t b[16];
	uint64_t x = rng_next(&g->rng), y = rng_next(&g->rng);

	memcpy(b, &x, 8);
	memcpy(b + 8, &y, 8);
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	uuid_format(b, out);
}

/* ISO timestamp of ms since the epoch. */
void
gen_iso(int64_t ms, char out[80])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	ms %= 1000;
	snprintf(out, 80, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    (int)ms);
}

static void
tick(struct gen *g, int lo, int hi, char out[80])
{
	g->clock += rng_range(&g->rng, lo, hi);
	gen_iso(g->clock, out);
}

/* Start a record in g->rec with the base fields (left open). */
void
gen_base(struct gen *g, const char *type, int lo, int hi, char uuid[37])
{
	static const char *const prov[][2] = { { "user", "real_user" },
	    { "assistant", "assistant_output" }, { "tool_result", "tool_result" } };
	const char *p = "system";
	char ts[80];
	int i;

	new_uuid(g, uuid);
	tick(g, lo, hi, ts);
	for (i = 0; i < 3; i++)
		if (strcmp(type, prov[i][0]) == 0)
			p = prov[i][1];
	if (g->prov != NULL)
		p = g->prov;
	g->prov = NULL;
	g->rec.len = 0;
	sb_printf(&g->rec, "{\"uuid\":\"%s\",\"parentUuid\":", uuid);
	if (g->tail[0])
		sb_printf(&g->rec, "\"%s\"", g->tail);
	else
		sb_puts(&g->rec, "null");
	sb_printf(&g->rec, ",\"sessionId\":");
	sb_json(&g->rec, g->sid, strlen(g->sid));
	sb_printf(&g->rec, ",\"timestamp\":\"%s\",\"type\":\"%s\",\"provenance\":\"%s\","
	    "\"cwd\":", ts, type, p);
	sb_json(&g->rec, g->o->cwd, strlen(g->o->cwd));
	sb_puts(&g->rec, ",\"version\":\"0.24.4\",\"gitBranch\":\"feature/session-loader\"");
}

/* The 32 KiB title re-anchor: parent = tail, the tail does not advance. */
static void
reanchor(struct gen *g)
{
	char uuid[37];

	gen_base(g, "system", 1, 3, uuid);
	sb_puts(&g->rec, ",\"subtype\":\"custom_title\",\"systemPayload\":{\"customTitle\":");
	sb_json(&g->rec, g->title, strlen(g->title));
	sb_puts(&g->rec, ",\"titleSource\":\"auto\"}}");
	gen_emit(g, uuid, 0, 0, 0, 1);
}

/* Write g->rec (closed by the caller) as one line, or glued to the next. */
void
gen_emit(struct gen *g, const char *uuid, int conv, int update_tail,
    int counts_for_title, int is_title)
{
	int glue = g->glue_i < g->nglue && g->bytes >= g->glue_at[g->glue_i];
	size_t n = g->rec.len + !glue;

	if (glue)
		g->glue_i++;
	sb_put(&g->out, g->rec.p, g->rec.len);
	if (!glue)
		sb_putc(&g->out, '\n');
	if (g->out.len >= MIB)
		flush_out(g);
	g->bytes += n;
	if (update_tail)
		strlcpy(g->tail, uuid, sizeof g->tail);
	if (conv)
		g->ctx_tokens += (int64_t)n / 4;
	if (g->has_title && counts_for_title && !is_title) {
		g->since_title += n;
		if (g->since_title >= TITLE_REANCHOR) {
			g->since_title = 0;
			reanchor(g);
		}
	}
}

static void
run(struct gen *g)
{
	uint64_t *comp = calloc(g->o->compressions + 1, sizeof *comp);
	uint64_t *rew = calloc(g->o->branches + 1, sizeof *rew);
	int ci = 0, ri = 0, i;
	char uuid[37];

	if (comp == NULL || rew == NULL || (g->glue_at = calloc(g->o->glued + 1, 8)) == NULL)
		err(1, "calloc");
	g->nglue = g->o->glued;
	for (i = 0; i < g->o->glued; i++)
		g->glue_at[i] = g->target * (i + 1) / (g->o->glued + 1);
	for (i = 0; i < g->o->compressions; i++)
		comp[i] = g->target * (i + 1) / (g->o->compressions + 1);
	for (i = 0; i < g->o->branches; i++)
		rew[i] = (uint64_t)(g->target * (i + 0.55) / g->o->branches);
	while (g->bytes < g->target || ci < g->o->compressions || ri < g->o->branches) {
		gen_turn(g);
		if (ci < g->o->compressions && g->bytes >= comp[ci]) {
			ci++;
			gen_compression(g);
		}
		if (ri < g->o->branches && g->bytes >= rew[ri] && g->nturns >= 2) {
			ri++;
			gen_rewind(g);
		}
	}
	if (!g->o->no_title && g->has_title)
		gen_title(g, 100, 2000, 0);
	if (g->o->torn_tail) {
		gen_base(g, "user", 1000, 5000, uuid);
		sb_puts(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":");
		gen_prompt_text(g, &g->rec);
		sb_puts(&g->rec, "}]}}");
		sb_put(&g->out, g->rec.p, g->rec.len / 2 ? g->rec.len / 2 : 1);
	}
	flush_out(g);
	free(comp);
	free(rew);
}

/* mkdir -p. */
static void
mkdirs(const char *path)
{
	char *p = strdup(path), *s;

	if (p == NULL)
		err(1, "strdup");
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) == -1 && errno != EEXIST)
			err(1, "mkdir %s", p);
		*s = '/';
	}
	if (mkdir(p, 0755) == -1 && errno != EEXIST)
		err(1, "mkdir %s", p);
	free(p);
}

static void
usage(void)
{
	fprintf(stderr, "usage: %s --mib N --seed S [--branches K] [--compressions C] "
	    "[--glued G] [--torn-tail] [--no-title] [--cwd DIR] [--session-id ID] "
	    "[--max-record-kib K] (--out DIR | --data-dir D --workspace W)\n", getprogname());
	exit(2);
}

/* A numeric option value. */
static long long
num(const char *s, long long lo, long long hi, const char *what)
{
	const char *e;
	long long v = strtonum(s, lo, hi, &e);

	if (e != NULL)
		errx(2, "%s: %s", what, e);
	return v;
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "mib", required_argument, NULL, 'm' }, { "seed", required_argument, NULL, 's' },
		{ "branches", required_argument, NULL, 'b' },
		{ "compressions", required_argument, NULL, 'c' },
		{ "glued", required_argument, NULL, 'g' }, { "torn-tail", no_argument, NULL, 't' },
		{ "no-title", no_argument, NULL, 'n' }, { "cwd", required_argument, NULL, 'C' },
		{ "session-id", required_argument, NULL, 'i' },
		{ "max-record-kib", required_argument, NULL, 'k' },
		{ "out", required_argument, NULL, 'o' }, { "data-dir", required_argument, NULL, 'd' },
		{ "workspace", required_argument, NULL, 'w' }, { NULL, 0, NULL, 0 }
	};
	char *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'm':
			o->mib = strtod(optarg, &end);
			if (*end != '\0' || !(o->mib > 0 && o->mib <= 1 << 20))
				errx(2, "--mib: invalid size");
			break;
		case 's': o->seed = (uint64_t)num(optarg, 0, LLONG_MAX, "--seed"); break;
		case 'b': o->branches = (int)num(optarg, 0, 100000, "--branches"); break;
		case 'c': o->compressions = (int)num(optarg, 0, 100000, "--compressions"); break;
		case 'g': o->glued = (int)num(optarg, 0, 100000, "--glued"); break;
		case 't': o->torn_tail = 1; break;
		case 'n': o->no_title = 1; break;
		case 'C': o->cwd = optarg; break;
		case 'i': o->session_id = optarg; break;
		case 'k': o->max_record_kib = (int)num(optarg, 1, 1 << 20, "--max-record-kib"); break;
		case 'o': o->out = optarg; break;
		case 'd': o->data_dir = optarg; break;
		case 'w': o->workspace = optarg; break;
		default: usage();
		}
	}
	if (optind != argc || o->mib <= 0 ||
	    (o->out == NULL) == (o->data_dir == NULL || o->workspace == NULL))
		usage();
	if (o->cwd == NULL)
		o->cwd = o->workspace ? o->workspace : "/home/dev/projects/acme-service";
}

/* The output directory (created). Caller frees. */
static char *
out_dir(const struct opts *o)
{
	char *dir, *s;

	if (o->out != NULL) {
		if ((dir = strdup(o->out)) == NULL)
			err(1, "strdup");
	} else {
		if (asprintf(&dir, "%s/projects/%s/chats", o->data_dir, o->workspace) == -1)
			err(1, "asprintf");
		for (s = dir + strlen(o->data_dir) + strlen("/projects/");
		    *s != '\0' && strcmp(s, "/chats") != 0; s++)
			if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
			    (*s >= '0' && *s <= '9')))
				*s = '-';
	}
	mkdirs(dir);
	return dir;
}

int
main(int argc, char **argv)
{
	struct opts o = { .max_record_kib = 2048 };
	struct gen g;
	struct sbuf esc = { 0 };
	char *dir, *path, sid[37];
	int i;

	parse_opts(argc, argv, &o);
	memset(&g, 0, sizeof g);
	g.o = &o;
	rng_seed(&g.rng, o.seed);
	corpus_init(&g.corpus, &g.rng);
	new_uuid(&g, sid);
	snprintf(g.sid, sizeof g.sid, "%s", o.session_id ? o.session_id : sid);
	if (strchr(g.sid, '/') != NULL || strlen(g.sid) == 0)
		errx(2, "--session-id: invalid id");
	g.clock = 1785571200000LL + (int64_t)(o.seed % 1000) * 3600000;
	g.target = (uint64_t)(o.mib * MIB);
	g.cap = (uint64_t)o.max_record_kib * 1024;
	if (g.cap > (g.target / 8 > 64 * 1024 ? g.target / 8 : 64 * 1024))
		g.cap = g.target / 8 > 64 * 1024 ? g.target / 8 : 64 * 1024;
	sb_json(&esc, o.cwd, strlen(o.cwd));
	esc.p[esc.len - 1] = '\0';
	g.cwdesc = esc.p + 1;
	dir = out_dir(&o);
	if (asprintf(&path, "%s/%s.jsonl", dir, g.sid) == -1)
		err(1, "asprintf");
	if ((g.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1)
		err(1, "%s", path);
	run(&g);
	if (close(g.fd) == -1)
		err(1, "%s", path);
	printf("%s\n", path);
	for (i = 0; i < 3; i++) {
		sb_free(&g.calls[i].args);
		sb_free(&g.calls[i].output);
		sb_free(&g.calls[i].display);
	}
	sb_free(&g.rec);
	sb_free(&g.out);
	sb_free(&esc);
	corpus_free(&g.corpus);
	free(g.turn_parents);
	free(g.ctx_at_turn);
	free(g.glue_at);
	free(dir);
	free(path);
	return 0;
}
