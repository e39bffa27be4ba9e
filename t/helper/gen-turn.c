/* SPDX-License-Identifier: ISC */
/*
 * gen-turn.c: the record kinds of qwen-gen-transcript: user turns with
 * assistant rounds and tool results, telemetry, titles, file-history
 * snapshots, side messages, compressions and rewinds.
 */
#include "config.h"

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

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


/* A user prompt text as a JSON string into sb. */
void
gen_prompt_text(struct gen *g, struct sbuf *sb)
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

	gen_base(g, "system", 1, 20, uuid);
	gen_iso(g->clock, ts);
	sb_printf(&g->rec, ",\"subtype\":\"ui_telemetry\",\"systemPayload\":{\"uiEvent\":"
	    "{\"event.name\":\"%s\",\"event.timestamp\":\"%s\",%s,\"prompt_id\":",
	    event[0] == 'a' ? "qwen-code.api_response" : "qwen-code.tool_call", ts, event + 1);
	prompt_id(g, &g->rec);
	sb_puts(&g->rec, "}}}");
	gen_emit(g, uuid, 0, 1, 1, 0);
}

/* An assistant record with optional thought/text and the given calls. */
static void
assistant(struct gen *g, int ncalls, int final)
{
	char uuid[37], ev[512];
	int64_t thought = 0, visible = 0, out, prompt = g->ctx_tokens;
	size_t start;
	int i;

	gen_base(g, "assistant", 800, 30000, uuid);
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
	gen_emit(g, uuid, 1, 1, 1, 0);
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

	gen_base(g, "tool_result", 30, 20000, uuid);
	sb_printf(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"functionResponse\":"
	    "{\"id\":\"%s\",\"name\":\"%s\",\"response\":{\"output\":", c->id, c->name);
	sb_put(&g->rec, c->output.p, c->output.len);
	sb_printf(&g->rec, "}}}]},\"toolCallResult\":{\"callId\":\"%s\",\"status\":\"success\","
	    "\"resultDisplay\":", c->id);
	sb_put(&g->rec, c->display.p, c->display.len);
	sb_puts(&g->rec, "}}");
	gen_emit(g, uuid, 1, 1, 1, 0);
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
	gen_base(g, "user", lo, hi, uuid);
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
	gen_emit(g, uuid, 1, 1, 1, 0);
	sb_free(&text);
}

/* A title record (first title or finalize(): tail-advancing). */
void
gen_title(struct gen *g, int lo, int hi, int counts)
{
	char uuid[37];

	gen_base(g, "system", lo, hi, uuid);
	sb_puts(&g->rec, ",\"subtype\":\"custom_title\",\"systemPayload\":{\"customTitle\":");
	sb_json(&g->rec, g->title, strlen(g->title));
	sb_puts(&g->rec, ",\"titleSource\":\"auto\"}}");
	gen_emit(g, uuid, 0, 1, counts, 1);
}

static void
file_history(struct gen *g)
{
	char uuid[37], ts[80];
	const char *id = corpus_ident(&g->rng);

	gen_base(g, "system", 1, 5, uuid);
	gen_iso(g->clock, ts);
	sb_puts(&g->rec, ",\"subtype\":\"file_history_snapshot\",\"systemPayload\":"
	    "{\"snapshots\":[{\"promptId\":");
	prompt_id(g, &g->rec);
	sb_printf(&g->rec, ",\"timestamp\":\"%s\",\"trackedFileBackups\":{\"%s/src/%s.ts\":"
	    "{\"backupFileName\":\"%016llx@v%d\",\"version\":%d,\"backupTime\":\"%s\"}}}]}}",
	    ts, g->cwdesc, id, (unsigned long long)rng_next(&g->rng), g->turn_no,
	    g->turn_no, ts);
	gen_emit(g, uuid, 0, 1, 1, 0);
}

/* One user turn: prompt, rounds of assistant + tool results, final answer. */
void
gen_turn(struct gen *g)
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
	gen_base(g, "user", 5000, 180000, uuid);
	sb_puts(&g->rec, ",\"message\":{\"role\":\"user\",\"parts\":[{\"text\":");
	gen_prompt_text(g, &g->rec);
	sb_puts(&g->rec, "}]}}");
	gen_emit(g, uuid, 1, 1, 1, 0);
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
			gen_tool_call(g, &g->calls[i]);
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
		gen_title(g, 500, 3000, 1);
		g->since_title = 0;
	}
	if (rng_real(&g->rng) < 0.01) {
		side_user(g, "notification", 1000, 60000, 80);
		assistant(g, 0, 1);
	}
}

/* A chat_compression checkpoint (30% manual, inside /compress slash records). */
void
gen_compression(struct gen *g)
{
	char uuid[37], suuid[37];
	int manual = rng_real(&g->rng) < 0.3, i, n;
	int64_t orig = g->ctx_tokens, newt;
	struct sbuf h = { 0 };

	if (manual) {
		gen_base(g, "system", 2000, 20000, suuid);
		sb_puts(&g->rec, ",\"subtype\":\"slash_command\",\"systemPayload\":"
		    "{\"phase\":\"invocation\",\"rawCommand\":\"/compress\"}}");
		gen_emit(g, suuid, 0, 1, 1, 0);
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
			    i ? "," : "", g->cwdesc, corpus_ident(&g->rng));
			corpus_code(&g->corpus, &g->rng, &h, rng_range(&g->rng, 2000, 20000));
			sb_puts(&h, "\"}");
		}
		sb_puts(&h, "]}");
	}
	sb_putc(&h, ']');
	newt = (int64_t)h.len / 4 + 14000;
	gen_base(g, "system", 3000, 60000, uuid);
	sb_printf(&g->rec, ",\"subtype\":\"chat_compression\",\"systemPayload\":{\"info\":"
	    "{\"originalTokenCount\":%lld,\"newTokenCount\":%lld,\"compressionStatus\":1,"
	    "\"triggerReason\":\"%s\",\"originalTokenCountIsEstimated\":false,"
	    "\"newTokenCountIsEstimated\":true},\"compressedHistory\":", (long long)orig,
	    (long long)newt, manual ? "manual" : "token_limit");
	sb_put(&g->rec, h.p, h.len);
	sb_puts(&g->rec, ",\"completedToolCallIds\":[]}}");
	sb_free(&h);
	gen_emit(g, uuid, 0, 1, 1, 0);
	g->ctx_tokens = newt;
	if (manual) {
		gen_base(g, "system", 5, 50, suuid);
		sb_printf(&g->rec, ",\"subtype\":\"slash_command\",\"systemPayload\":{\"phase\":"
		    "\"result\",\"rawCommand\":\"/compress\",\"outputHistoryItems\":[{\"type\":"
		    "\"info\",\"text\":\"Chat history compressed from %lld to %lld tokens.\"}]}}",
		    (long long)orig, (long long)newt);
		gen_emit(g, suuid, 0, 1, 1, 0);
	}
}

/* /rewind 1-3 turns back: the tail goes to that turn's parent. */
void
gen_rewind(struct gen *g)
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
	gen_base(g, "system", 2000, 30000, uuid);
	sb_printf(&g->rec, ",\"subtype\":\"rewind\",\"systemPayload\":{\"truncatedCount\":%d}}",
	    (int)rng_range(&g->rng, 2 * (int64_t)back, 12 * (int64_t)back));
	gen_emit(g, uuid, 0, 1, 1, 0);
}

