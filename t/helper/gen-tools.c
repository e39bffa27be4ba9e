/* SPDX-License-Identifier: ISC */
/*
 * gen-tools.c: tool calls of qwen-gen-transcript (arguments, outputs and
 * resultDisplay values shaped like the real tools').
 */
#include "config.h"

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

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
void
gen_tool_call(struct gen *g, struct call *c)
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

