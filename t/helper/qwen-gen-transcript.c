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

#include "gen-corpus.h"

#define MIB		(1024 * 1024)
#define TITLE_REANCHOR	(32 * 1024)
#define DISPLAY_LIMIT	32000

struct opts {
	double mib;
	uint64_t seed;
	int branches, compressions, glued, torn_tail, no_title, max_record_kib;
	const char *out, *data_dir, *workspace, *cwd, *session_id;
};

struct call {
	char id[32];
	const char *name;
	struct sbuf args, output, display;	/* JSON texts */
	size_t output_len;
};

struct gen {
	const struct opts *o;
	struct rng rng;
	struct corpus corpus;
	char sid[64];
	int64_t clock;
	char tail[37];			/* "" = null */
	char (*turn_parents)[37];
	int64_t *ctx_at_turn;
	size_t nturns, capturns;
	int64_t ctx_tokens;
	int turn_no;
	uint64_t bytes, target, cap;
	char title[64];
	int has_title;
	uint64_t since_title;
	struct sbuf rec, out;
	int fd;
	uint64_t *glue_at;
	int nglue, glue_i;
	struct call calls[3];
	char *cwdesc;
	const char *prov;		/* provenance override for the next base() */
};

static const char *const zh[] = {
	"请帮我检查一下这个函数为什么在大文件上这么慢。",
	"把会话恢复的逻辑改成只读取最近的一页记录。",
	"这个测试偶尔会失败，看起来像是竞争条件。",
	"解释一下 parentUuid 链是如何重建的。",
	"帮我把日志输出改成结构化的 JSON 格式 🚀"
};
static const char *const tools[] = { "read_file", "run_shell_command",
	"grep_search", "edit", "glob", "list_directory", "todo_write",
	"web_fetch", "write_file" };
static const int tool_weights[] = { 30, 22, 14, 12, 5, 5, 4, 3, 5 };

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
	static const char hex[] = "0123456789abcdef";
	int i, j;

	memcpy(b, &x, 8);
	memcpy(b + 8, &y, 8);
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	for (i = 0, j = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[j++] = '-';
		out[j++] = hex[b[i] >> 4];
		out[j++] = hex[b[i] & 15];
	}
	out[j] = '\0';
}

/* ISO timestamp of ms since the epoch. */
static void
iso(int64_t ms, char out[80])
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
	iso(g->clock, out);
}

/* Start a record in g->rec with the base fields (left open). */
static void
base(struct gen *g, const char *type, int lo, int hi, char uuid[37])
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

static void emit(struct gen *, const char *, int, int, int, int);

/* The 32 KiB title re-anchor: parent = tail, the tail does not advance. */
static void
reanchor(struct gen *g)
{
	char uuid[37];

	base(g, "system", 1, 3, uuid);
	sb_puts(&g->rec, ",\"subtype\":\"custom_title\",\"systemPayload\":{\"customTitle\":");
	sb_json(&g->rec, g->title, strlen(g->title));
	sb_puts(&g->rec, ",\"titleSource\":\"auto\"}}");
	emit(g, uuid, 0, 0, 0, 1);
}

/* Write g->rec (closed by the caller) as one line, or glued to the next. */
static void
emit(struct gen *g, const char *uuid, int conv, int update_tail,
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

/* Tool output size: mostly lo..hi, 2% 40-160 KiB, 0.1% 0.3-2 MiB (capped). */
static size_t
sized(struct gen *g, int lo, int hi)
{
	double r = rng_real(&g->rng);
	uint64_t n;

	if (r < 0.001)
		n = (uint64_t)rng_range(&g->rng, 300 * 1024, 2 * MIB);
	else if (r < 0.021)
		n = (uint64_t)rng_range(&g->rng, 40 * 1024, 160 * 1024);
	else
		n = (uint64_t)rng_range(&g->rng, lo, hi);
	return n < g->cap ? n : g->cap;
}

/* A user prompt text as a JSON string into sb. */
static void
prompt_text(struct gen *g, struct sbuf *sb)
{
	if (rng_real(&g->rng) < 0.12) {
		const char *s = zh[rng_range(&g->rng, 0, 4)];
		sb_json(sb, s, strlen(s));
		return;
	}
	sb_putc(sb, '"');
	corpus_prose(&g->corpus, &g->rng, sb, rng_range(&g->rng, 40, 600));
	if (rng_real(&g->rng) < 0.15) {
		sb_puts(sb, "\\n\\n```\\n");
		corpus_code(&g->corpus, &g->rng, sb, rng_range(&g->rng, 200, 3000));
		sb_puts(sb, "```");
	}
	sb_putc(sb, '"');
}

/* Escaped text of cwd (no quotes), for building paths inside strings. */
static const char *
cwd_esc(struct gen *g)
{
	return g->cwdesc;
}

/* Count "\n" escapes in escaped text. */
static int
count_nl(const struct sbuf *b, size_t from)
{
	const char *p = b->p + from, *e = b->p + b->len;
	int n = 0;

	while ((p = memmem(p, e - p, "\\n", 2)) != NULL) {
		n++;
		p += 2;
	}
	return n;
}

/* Append escaped text [0, n) of src, cut at a safe point. */
static void
put_cut(struct sbuf *dst, const struct sbuf *src, size_t from, size_t n)
{
	size_t len = src->len - from;

	if (n < len)
		len = corpus_safe_cut(src->p + from, n);
	sb_put(dst, src->p + from, len);
}

/* resultDisplay compaction: > 32000 bytes cut 60/40 around a marker. */
static void
compact_display(struct sbuf *dst, const struct sbuf *body, size_t from)
{
	size_t n = body->len - from, head, tail, t0;

	sb_putc(dst, '"');
	if (n <= DISPLAY_LIMIT) {
		sb_put(dst, body->p + from, n);
	} else {
		head = corpus_safe_cut(body->p + from, (DISPLAY_LIMIT - 120) * 6 / 10);
		sb_put(dst, body->p + from, head);
		sb_printf(dst, "\\n[... truncated for saved session preview; original "
		    "length: %zu characters ...]\\n", n);
		tail = (DISPLAY_LIMIT - 120) * 4 / 10;
		t0 = corpus_safe_cut(body->p + from, n - tail);
		sb_put(dst, body->p + from + t0, n - t0);
	}
	sb_putc(dst, '"');
}

static void
edit_call(struct gen *g, struct call *c, char *rel)
{
	struct sbuf old = { 0 }, new = { 0 }, diff = { 0 };
	const char *p, *e;

	corpus_code(&g->corpus, &g->rng, &old, rng_range(&g->rng, 200, 6000));
	corpus_code(&g->corpus, &g->rng, &new, rng_range(&g->rng, 250, 6800));
	sb_printf(&diff, "--- %s\\n+++ %s\\n@@ -1,%d +1,%d @@\\n+", rel, rel,
	    count_nl(&old, 0), count_nl(&new, 0));
	for (p = new.p, e = new.p + new.len; p < e;) {
		const char *q = memmem(p, e - p, "\\n", 2);
		if (q == NULL) {
			sb_put(&diff, p, e - p);
			break;
		}
		sb_put(&diff, p, q - p);
		sb_puts(&diff, q + 2 < e ? "\\n+" : "\\n");
		p = q + 2;
	}
	if (strcmp(c->name, "edit") == 0) {
		sb_printf(&c->args, "{\"file_path\":\"%s/%s\",\"old_string\":\"", cwd_esc(g), rel);
		put_cut(&c->args, &old, 0, 400);
		sb_puts(&c->args, "\",\"new_string\":\"");
		put_cut(&c->args, &new, 0, 400);
		sb_puts(&c->args, "\"}");
	} else {
		sb_printf(&c->args, "{\"file_path\":\"%s/%s\",\"content\":\"", cwd_esc(g), rel);
		sb_put(&c->args, new.p, new.len);
		sb_puts(&c->args, "\"}");
	}
	sb_printf(&c->output, "\"The file: %s/%s has been updated.\"", cwd_esc(g), rel);
	sb_puts(&c->display, "{\"fileDiff\":\"");
	sb_put(&c->display, diff.p, diff.len);
	sb_printf(&c->display, "\",\"fileName\":\"%s\",\"filePath\":\"%s/%s\","
	    "\"originalContent\":\"", strrchr(rel, '/') + 1, cwd_esc(g), rel);
	put_cut(&c->display, &old, 0, 16000);
	sb_puts(&c->display, "\",\"newContent\":\"");
	put_cut(&c->display, &new, 0, 16000);
	sb_puts(&c->display, "\"}");
	sb_free(&old);
	sb_free(&new);
	sb_free(&diff);
}

static void
todo_call(struct gen *g, struct call *c)
{
	static const char *const st[] = { "pending", "in_progress", "completed" };
	struct sbuf todos = { 0 };
	int i, n = (int)rng_range(&g->rng, 2, 7);

	sb_putc(&todos, '[');
	for (i = 0; i < n; i++) {
		sb_printf(&todos, "%s{\"id\":\"%d\",\"content\":\"", i ? "," : "", i + 1);
		corpus_prose(&g->corpus, &g->rng, &todos, 50);
		sb_printf(&todos, "\",\"status\":\"%s\"}", st[rng_range(&g->rng, 0, 2)]);
	}
	sb_putc(&todos, ']');
	sb_puts(&c->args, "{\"todos\":");
	sb_put(&c->args, todos.p, todos.len);
	sb_puts(&c->args, "}");
	sb_puts(&c->output, "\"Todos have been modified successfully.\"");
	sb_puts(&c->display, "{\"type\":\"todo_list\",\"todos\":");
	sb_put(&c->display, todos.p, todos.len);
	sb_puts(&c->display, "}");
	sb_free(&todos);
}

/* Arguments, output and display of one tool call. */
static void
tool_call(struct gen *g, struct call *c)
{
	static const char *const cmds[] = { "npm test -- --run", "git status --short",
	    "npx tsc --noEmit", "rg -n parentUuid packages", "node scripts/bench.js --mib 80" };
	char rel[128];
	const char *cmd, *pat;
	size_t from;
	int i, n;

	c->args.len = c->output.len = c->display.len = 0;
	snprintf(rel, sizeof rel, "src/%s/%s.ts", corpus_ident(&g->rng), corpus_ident(&g->rng));
	if (strcmp(c->name, "read_file") == 0) {
		sb_printf(&c->args, "{\"absolute_path\":\"%s/%s\"}", cwd_esc(g), rel);
		sb_putc(&c->output, '"');
		corpus_code(&g->corpus, &g->rng, &c->output, sized(g, 1500, 16000));
		sb_putc(&c->output, '"');
		sb_printf(&c->display, "\"Read lines 1-%d of %s\"", count_nl(&c->output, 0) + 1, rel);
	} else if (strcmp(c->name, "run_shell_command") == 0) {
		cmd = cmds[rng_range(&g->rng, 0, 4)];
		sb_printf(&c->args, "{\"command\":\"%s\",\"description\":\"", cmd);
		corpus_prose(&g->corpus, &g->rng, &c->args, 60);
		sb_puts(&c->args, "\",\"is_background\":false}");
		sb_printf(&c->output, "\"Command: %s\\nDirectory: (root)\\nOutput: ", cmd);
		from = c->output.len;
		corpus_code(&g->corpus, &g->rng, &c->output, sized(g, 300, 8000));
		compact_display(&c->display, &c->output, from);
		sb_printf(&c->output, "\\nError: (none)\\nExit Code: 0\\nSignal: (none)\\n"
		    "Process Group PGID: %d\"", (int)rng_range(&g->rng, 1000, 99999));
	} else if (strcmp(c->name, "grep_search") == 0) {
		pat = corpus_ident(&g->rng);
		sb_printf(&c->args, "{\"pattern\":\"%s\",\"path\":\"%s\"}", pat, cwd_esc(g));
		struct sbuf hits = { 0 };
		corpus_code(&g->corpus, &g->rng, &hits, sized(g, 200, 6000));
		n = count_nl(&hits, 0);
		sb_printf(&c->output, "\"Found %d matches for pattern \\\"%s\\\":\\n---\\n", n, pat);
		sb_put(&c->output, hits.p, hits.len);
		sb_putc(&c->output, '"');
		sb_printf(&c->display, "\"Found %d matches\"", n);
		sb_free(&hits);
	} else if (strcmp(c->name, "edit") == 0 || strcmp(c->name, "write_file") == 0) {
		edit_call(g, c, rel);
	} else if (strcmp(c->name, "glob") == 0 || strcmp(c->name, "list_directory") == 0) {
		if (c->name[0] == 'g')
			sb_puts(&c->args, "{\"pattern\":\"**/*.ts\"}");
		else
			sb_printf(&c->args, "{\"path\":\"%s\"}", cwd_esc(g));
		n = (int)rng_range(&g->rng, 3, 80);
		sb_putc(&c->output, '"');
		for (i = 0; i < n; i++)
			sb_printf(&c->output, "%s%s/src/%s/%s.ts", i ? "\\n" : "", cwd_esc(g),
			    corpus_ident(&g->rng), corpus_ident(&g->rng));
		sb_putc(&c->output, '"');
		sb_printf(&c->display, "\"Listed %d entries\"", n - 1);
	} else if (strcmp(c->name, "todo_write") == 0) {
		todo_call(g, c);
	} else {
		sb_printf(&c->args, "{\"url\":\"https://example.com/docs/%s\",\"prompt\":\"",
		    corpus_ident(&g->rng));
		corpus_prose(&g->corpus, &g->rng, &c->args, 80);
		sb_puts(&c->args, "\"}");
		sb_putc(&c->output, '"');
		corpus_prose(&g->corpus, &g->rng, &c->output, sized(g, 800, 10000));
		sb_putc(&c->output, '"');
		sb_puts(&c->display, "\"Content processed\"");
	}
}

static void
prompt_id(struct gen *g, struct sbuf *b)
{
	sb_printf(b, "\"%s########%d\"", g->sid, g->turn_no);
}

/* A ui_telemetry record; the event body is appended by the caller's text. */
static void
telemetry(struct gen *g, const char *event)
{
	char uuid[37], ts[80];

	base(g, "system", 1, 20, uuid);
	iso(g->clock, ts);
	sb_printf(&g->rec, ",\"subtype\":\"ui_telemetry\",\"systemPayload\":{\"uiEvent\":"
	    "{\"event.name\":\"%s\",\"event.timestamp\":\"%s\",%s,\"prompt_id\":",
	    event[0] == 'a' ? "qwen-code.api_response" : "qwen-code.tool_call", ts, event + 1);
	prompt_id(g, &g->rec);
	sb_puts(&g->rec, "}}}");
	emit(g, uuid, 0, 1, 1, 0);
}

/* An assistant record with optional thought/text and the given calls. */
static void
assistant(struct gen *g, int ncalls, int final)
{
	char uuid[37], ev[512];
	int64_t thought = 0, visible = 0, out, prompt = g->ctx_tokens;
	size_t start;
	int i;

	base(g, "assistant", 800, 30000, uuid);
	sb_puts(&g->rec, ",\"model\":\"qwen3-coder-plus\",\"message\":{\"role\":\"model\",\"parts\":[");
	start = g->rec.len;
	if (rng_real(&g->rng) < 0.8) {
		sb_puts(&g->rec, "{\"text\":\"");
		thought = rng_range(&g->rng, 150, 3500);
		corpus_prose(&g->corpus, &g->rng, &g->rec, thought);
		sb_puts(&g->rec, "\",\"thought\":true");
		if (rng_real(&g->rng) < 0.2)
			sb_printf(&g->rec, ",\"thoughtSignature\":\"sig_%016llx%016llx\"",
			    (unsigned long long)rng_next(&g->rng),
			    (unsigned long long)rng_next(&g->rng));
		sb_putc(&g->rec, '}');
	}
	if (final || rng_real(&g->rng) < 0.5) {
		sb_printf(&g->rec, "%s{\"text\":\"", g->rec.len > start ? "," : "");
		visible = rng_range(&g->rng, 80, final ? 2500 : 400);
		corpus_prose(&g->corpus, &g->rng, &g->rec, visible);
		if (final && rng_real(&g->rng) < 0.3) {
			sb_puts(&g->rec, "\\n\\n```ts\\n");
			corpus_code(&g->corpus, &g->rng, &g->rec, rng_range(&g->rng, 200, 4000));
			sb_puts(&g->rec, "```\\n");
		}
		sb_puts(&g->rec, "\"}");
	}
	for (i = 0; i < ncalls; i++) {
		struct call *c = &g->calls[i];
		sb_printf(&g->rec, "%s{\"functionCall\":{\"id\":\"%s\",\"name\":\"%s\",\"args\":",
		    g->rec.len > start ? "," : "", c->id, c->name);
		sb_put(&g->rec, c->args.p, c->args.len);
		sb_puts(&g->rec, "}}");
		visible += (int64_t)c->args.len;
	}
	out = visible / 4 + 5;
	thought /= 4;
	sb_printf(&g->rec, "]},\"usageMetadata\":{\"promptTokenCount\":%lld,"
	    "\"candidatesTokenCount\":%lld,\"totalTokenCount\":%lld,\"thoughtsTokenCount\":%lld,"
	    "\"cachedContentTokenCount\":%lld},\"contextWindowSize\":1000000}",
	    (long long)prompt, (long long)out, (long long)(prompt + out + thought),
	    (long long)thought, (long long)(prompt * 8 / 10));
	emit(g, uuid, 1, 1, 1, 0);
	snprintf(ev, sizeof ev, "a\"response_id\":\"chatcmpl-%016llx\",\"model\":\"qwen3-coder-plus\","
	    "\"status_code\":200,\"duration_ms\":%d,\"input_token_count\":%lld,"
	    "\"output_token_count\":%lld,\"total_token_count\":%lld,\"auth_type\":\"openai\"",
	    (unsigned long long)rng_next(&g->rng), (int)rng_range(&g->rng, 900, 45000),
	    (long long)prompt, (long long)out, (long long)(prompt + out + thought));
	telemetry(g, ev);
}

/* The tool_result record (and its telemetry) of call c. */
static void
tool_result(struct gen *g, struct call *c)
{
	char uuid[37], ev[256];

	base(g, "tool_result", 30, 20000, uuid);
	sb_printf(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"functionResponse\":"
	    "{\"id\":\"%s\",\"name\":\"%s\",\"response\":{\"output\":", c->id, c->name);
	sb_put(&g->rec, c->output.p, c->output.len);
	sb_printf(&g->rec, "}}}]},\"toolCallResult\":{\"callId\":\"%s\",\"status\":\"success\","
	    "\"resultDisplay\":", c->id);
	sb_put(&g->rec, c->display.p, c->display.len);
	sb_puts(&g->rec, "}}");
	emit(g, uuid, 1, 1, 1, 0);
	snprintf(ev, sizeof ev, "t\"function_name\":\"%s\",\"duration_ms\":%d,\"success\":true,"
	    "\"decision\":\"auto_accept\",\"call_id\":\"%s\",\"status\":\"success\","
	    "\"tool_type\":\"native\",\"content_length\":%zu", c->name,
	    (int)rng_range(&g->rng, 3, 20000), c->id, c->output.len);
	telemetry(g, ev);
}

/* A user record with subtype and displayText (mid-turn or notification). */
static void
side_user(struct gen *g, const char *subtype, int lo, int hi, size_t n)
{
	struct sbuf text = { 0 };
	char uuid[37];

	if (strcmp(subtype, "notification") == 0)
		g->prov = "system";
	if (strcmp(subtype, "notification") == 0)
		sb_puts(&text, "Background shell task finished: ");
	corpus_prose(&g->corpus, &g->rng, &text, n);
	base(g, "user", lo, hi, uuid);
	sb_printf(&g->rec, ",\"subtype\":\"%s\",\"message\":{\"role\":\"user\",\"parts\":"
	    "[{\"text\":\"", subtype);
	sb_put(&g->rec, text.p, text.len);
	sb_puts(&g->rec, "\"}]},\"systemPayload\":{\"displayText\":\"");
	sb_put(&g->rec, text.p, text.len);
	if (strcmp(subtype, "notification") == 0)
		sb_printf(&g->rec, "\",\"backgroundTask\":{\"taskId\":\"bg-%08x\","
		    "\"status\":\"completed\",\"kind\":\"shell\"}}}",
		    (unsigned)rng_next(&g->rng));
	else
		sb_puts(&g->rec, "\"}}");
	emit(g, uuid, 1, 1, 1, 0);
	sb_free(&text);
}

/* A title record (first title or finalize(): tail-advancing). */
static void
title(struct gen *g, int lo, int hi, int counts)
{
	char uuid[37];

	base(g, "system", lo, hi, uuid);
	sb_puts(&g->rec, ",\"subtype\":\"custom_title\",\"systemPayload\":{\"customTitle\":");
	sb_json(&g->rec, g->title, strlen(g->title));
	sb_puts(&g->rec, ",\"titleSource\":\"auto\"}}");
	emit(g, uuid, 0, 1, counts, 1);
}

static void
file_history(struct gen *g)
{
	char uuid[37], ts[80];
	const char *id = corpus_ident(&g->rng);

	base(g, "system", 1, 5, uuid);
	iso(g->clock, ts);
	sb_puts(&g->rec, ",\"subtype\":\"file_history_snapshot\",\"systemPayload\":"
	    "{\"snapshots\":[{\"promptId\":");
	prompt_id(g, &g->rec);
	sb_printf(&g->rec, ",\"timestamp\":\"%s\",\"trackedFileBackups\":{\"%s/src/%s.ts\":"
	    "{\"backupFileName\":\"%016llx@v%d\",\"version\":%d,\"backupTime\":\"%s\"}}}]}}",
	    ts, cwd_esc(g), id, (unsigned long long)rng_next(&g->rng), g->turn_no,
	    g->turn_no, ts);
	emit(g, uuid, 0, 1, 1, 0);
}

/* One user turn: prompt, rounds of assistant + tool results, final answer. */
static void
turn(struct gen *g)
{
	static const int rounds[] = { 0, 1, 1, 2, 2, 3, 4, 6 }, ncalls[] = { 1, 1, 1, 2, 3 };
	char uuid[37];
	int r, nr, i, k, n, w;

	g->turn_no++;
	if (g->nturns == g->capturns) {
		g->capturns = g->capturns ? g->capturns * 2 : 256;
		g->turn_parents = reallocarray(g->turn_parents, g->capturns, 37);
		g->ctx_at_turn = reallocarray(g->ctx_at_turn, g->capturns, sizeof(int64_t));
		if (g->turn_parents == NULL || g->ctx_at_turn == NULL)
			err(1, "reallocarray");
	}
	memcpy(g->turn_parents[g->nturns], g->tail, 37);
	g->ctx_at_turn[g->nturns++] = g->ctx_tokens;
	base(g, "user", 5000, 180000, uuid);
	sb_puts(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":");
	prompt_text(g, &g->rec);
	sb_puts(&g->rec, "}]}}");
	emit(g, uuid, 1, 1, 1, 0);
	if (rng_real(&g->rng) < 0.3)
		file_history(g);
	nr = rounds[rng_range(&g->rng, 0, 7)];
	for (r = 0; r < nr; r++) {
		n = ncalls[rng_range(&g->rng, 0, 4)];
		for (i = 0; i < n; i++) {
			w = (int)rng_range(&g->rng, 0, 99);
			for (k = 0; w >= tool_weights[k]; k++)
				w -= tool_weights[k];
			g->calls[i].name = tools[k];
			snprintf(g->calls[i].id, sizeof g->calls[i].id, "call_%016llx%08x",
			    (unsigned long long)rng_next(&g->rng), (unsigned)rng_next(&g->rng));
			tool_call(g, &g->calls[i]);
		}
		assistant(g, n, 0);
		for (i = 0; i < n; i++)
			tool_result(g, &g->calls[i]);
		if (rng_real(&g->rng) < 0.02)
			side_user(g, "mid_turn_user_message", 100, 4000,
			    rng_range(&g->rng, 20, 200));
	}
	assistant(g, 0, 1);
	if (!g->has_title && !g->o->no_title) {
		struct sbuf t = { 0 };
		corpus_prose(&g->corpus, &g->rng, &t, 40);
		snprintf(g->title, sizeof g->title, "%.*s", (int)(t.len < 60 ? t.len : 60), t.p);
		sb_free(&t);
		g->has_title = 1;
		title(g, 500, 3000, 1);
		g->since_title = 0;
	}
	if (rng_real(&g->rng) < 0.01) {
		side_user(g, "notification", 1000, 60000, 80);
		assistant(g, 0, 1);
	}
}

/* A chat_compression checkpoint (30% manual, inside /compress slash records). */
static void
compression(struct gen *g)
{
	char uuid[37], suuid[37];
	int manual = rng_real(&g->rng) < 0.3, i, n;
	int64_t orig = g->ctx_tokens, newt;
	struct sbuf h = { 0 };

	if (manual) {
		base(g, "system", 2000, 20000, suuid);
		sb_puts(&g->rec, ",\"subtype\":\"slash_command\",\"systemPayload\":"
		    "{\"phase\":\"invocation\",\"rawCommand\":\"/compress\"}}");
		emit(g, suuid, 0, 1, 1, 0);
	}
	sb_puts(&h, "[{\"role\":\"user\",\"parts\":[{\"text\":\"<state_snapshot>\\n<overall_goal>");
	corpus_prose(&g->corpus, &g->rng, &h, 200);
	sb_puts(&h, "</overall_goal>\\n<key_knowledge>");
	corpus_prose(&g->corpus, &g->rng, &h, rng_range(&g->rng, 1500, 6000));
	sb_puts(&h, "</key_knowledge>\\n<file_system_state>");
	corpus_code(&g->corpus, &g->rng, &h, rng_range(&g->rng, 300, 2000));
	sb_puts(&h, "</file_system_state>\\n<recent_actions>");
	corpus_prose(&g->corpus, &g->rng, &h, rng_range(&g->rng, 800, 3000));
	sb_puts(&h, "</recent_actions>\\n<current_plan>");
	corpus_prose(&g->corpus, &g->rng, &h, 600);
	sb_puts(&h, "</current_plan>\\n</state_snapshot>\"}]},{\"role\":\"model\","
	    "\"parts\":[{\"text\":\"Got it. Thanks for the additional context!\"}]}");
	if (rng_real(&g->rng) < 0.6) {
		sb_puts(&h, ",{\"role\":\"user\",\"parts\":[");
		n = (int)rng_range(&g->rng, 1, 3);
		for (i = 0; i < n; i++) {
			sb_printf(&h, "%s{\"text\":\"Recently read file %s/src/%s.ts:\\n",
			    i ? "," : "", cwd_esc(g), corpus_ident(&g->rng));
			corpus_code(&g->corpus, &g->rng, &h, rng_range(&g->rng, 2000, 20000));
			sb_puts(&h, "\"}");
		}
		sb_puts(&h, "]}");
	}
	sb_putc(&h, ']');
	newt = (int64_t)h.len / 4 + 14000;
	base(g, "system", 3000, 60000, uuid);
	sb_printf(&g->rec, ",\"subtype\":\"chat_compression\",\"systemPayload\":{\"info\":"
	    "{\"originalTokenCount\":%lld,\"newTokenCount\":%lld,\"compressionStatus\":1,"
	    "\"triggerReason\":\"%s\",\"originalTokenCountIsEstimated\":false,"
	    "\"newTokenCountIsEstimated\":true},\"compressedHistory\":", (long long)orig,
	    (long long)newt, manual ? "manual" : "token_limit");
	sb_put(&g->rec, h.p, h.len);
	sb_puts(&g->rec, ",\"completedToolCallIds\":[]}}");
	sb_free(&h);
	emit(g, uuid, 0, 1, 1, 0);
	g->ctx_tokens = newt;
	if (manual) {
		base(g, "system", 5, 50, suuid);
		sb_printf(&g->rec, ",\"subtype\":\"slash_command\",\"systemPayload\":{\"phase\":"
		    "\"result\",\"rawCommand\":\"/compress\",\"outputHistoryItems\":[{\"type\":"
		    "\"info\",\"text\":\"Chat history compressed from %lld to %lld tokens.\"}]}}",
		    (long long)orig, (long long)newt);
		emit(g, suuid, 0, 1, 1, 0);
	}
}

/* /rewind 1-3 turns back: the tail goes to that turn's parent. */
static void
rewind_turns(struct gen *g)
{
	char uuid[37];
	size_t back, target;

	if (g->nturns < 2)
		return;
	back = (size_t)rng_range(&g->rng, 1, g->nturns - 1 < 3 ? (int64_t)g->nturns - 1 : 3);
	target = g->nturns - back;
	memcpy(g->tail, g->turn_parents[target], 37);
	g->ctx_tokens = g->ctx_at_turn[target];
	g->nturns = target;
	base(g, "system", 2000, 30000, uuid);
	sb_printf(&g->rec, ",\"subtype\":\"rewind\",\"systemPayload\":{\"truncatedCount\":%d}}",
	    (int)rng_range(&g->rng, 2 * (int64_t)back, 12 * (int64_t)back));
	emit(g, uuid, 0, 1, 1, 0);
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
		turn(g);
		if (ci < g->o->compressions && g->bytes >= comp[ci]) {
			ci++;
			compression(g);
		}
		if (ri < g->o->branches && g->bytes >= rew[ri] && g->nturns >= 2) {
			ri++;
			rewind_turns(g);
		}
	}
	if (!g->o->no_title && g->has_title)
		title(g, 100, 2000, 0);
	if (g->o->torn_tail) {
		base(g, "user", 1000, 5000, uuid);
		sb_puts(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":");
		prompt_text(g, &g->rec);
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
