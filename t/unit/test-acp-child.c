/* SPDX-License-Identifier: ISC */
/*
 * test-acp-child: the small pure modules of qwen-acp-child: session id and
 * path rules, UTF-8 cleaning across reads, lag percentiles, the JSON
 * writer (byte-identical to json-c), the profiler's stage accounting and
 * the appender's truncate-back on a short write.
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "append.h"
#include "jsonw.h"
#include "lagmon.h"
#include "paths.h"
#include "profiler.h"
#include "tap.h"
#include "utf8.h"
#include "uuid.h"

static void
test_paths(void)
{
	char uuid[37], *p;

	ok(paths_valid_session_id("6ca613de-dd80-4a4b-a95c-b6f902cad22f"), "uuid is valid");
	ok(paths_valid_session_id("6CA613DEDD804A4BA95CB6F902CAD22F"), "32 hex is valid");
	ok(!paths_valid_session_id("../../etc/passwd"), "traversal is invalid");
	ok(!paths_valid_session_id("6ca613de-dd80-4a4b-a95c-b6f902cad22f/"), "slash is invalid");
	ok(!paths_valid_session_id("6ca613de"), "short is invalid");
	ok(!paths_valid_session_id("6ca613de-dd80-4a4b-a95c-b6f902cad22f0"), "37 chars is invalid");
	ok(!paths_valid_session_id(""), "empty is invalid");
	ok(!paths_valid_session_id(NULL), "NULL is invalid");
	uuid_new(uuid);
	ok(strlen(uuid) == 36 && uuid[14] == '4' && strchr("89ab", uuid[19]) != NULL,
	    "new uuid is v4: %s", uuid);
	ok(paths_valid_session_id(uuid), "new uuid is a valid id");
	p = paths_transcript("/d", "/home/dev/projects/acme-service", uuid);
	ok(p != NULL && strncmp(p, "/d/projects/-home-dev-projects-acme-service/chats/", 50) == 0,
	    "transcript path sanitises the cwd: %s", p);
	free(p);
	p = paths_chats_dir("/d", "/a.b_c d/\xe4\xbd\xa0");
	is_str(p, "/d/projects/-a-b-c-d----/chats", "every non-alphanumeric byte is '-'");
	free(p);
	ok(paths_transcript("/d", "/w", "../x") == NULL, "invalid id gives no path");
	setenv("QWEN_HOME", "/qh", 1);
	p = paths_data_dir(NULL);
	is_str(p, "/qh", "QWEN_HOME is the default data dir");
	free(p);
	p = paths_data_dir("/explicit");
	is_str(p, "/explicit", "--data-dir wins");
	free(p);
	unsetenv("QWEN_HOME");
	setenv("HOME", "/home/u", 1);
	p = paths_data_dir(NULL);
	is_str(p, "/home/u/.qwen", "~/.qwen otherwise");
	free(p);
}

static void
test_utf8(void)
{
	struct utf8_carry c = { { 0 }, 0 };
	char *s;
	size_t n;

	s = utf8_clean(&c, "ab\xe4", 3, 0, &n);
	ok(n == 2 && memcmp(s, "ab", 2) == 0 && c.len == 1, "split character is carried");
	free(s);
	s = utf8_clean(&c, "\xbd\xa0!", 3, 0, &n);
	ok(n == 4 && memcmp(s, "\xe4\xbd\xa0!", 4) == 0 && c.len == 0, "and completed");
	free(s);
	s = utf8_clean(&c, "x\xff" "y", 3, 0, &n);
	ok(n == 5 && memcmp(s, "x\xef\xbf\xbdy", 5) == 0, "invalid byte becomes U+FFFD");
	free(s);
	s = utf8_clean(&c, "\xed\xa0\x80", 3, 0, &n);
	ok(n == 9, "a surrogate is three replacement characters (%zu)", n);
	free(s);
	s = utf8_clean(&c, "\xf0\x9f", 2, 0, &n);
	ok(n == 0 && c.len == 2, "partial 4-byte sequence is held");
	free(s);
	s = utf8_clean(&c, "", 0, 1, &n);
	ok(n == 6 && c.len == 0, "final flush replaces the incomplete tail");
	free(s);
	is_int(utf8_boundary("a\xe4\xbd\xa0" "b", 5, 2), 1, "boundary backs off a continuation byte");
	is_int(utf8_boundary("abc", 3, 10), 3, "boundary clamps to the length");
}

/* utf8_valid by its definition: every sequence from the start whole. */
static int
utf8_valid_ref(const unsigned char *s, size_t n)
{
	size_t i = 0;
	int k;

	while (i < n) {
		if ((k = utf8_seq(s + i, n - i)) <= 0)
			return 0;
		i += (size_t)k;
	}
	return 1;
}

/* Bytes that make or break UTF-8: each is put at every offset of an ASCII
   text, on both sides of the 32-byte steps of the vector check. */
static const char *const utf8_pieces[] = {
	"\xc3\xa9", "\xe4\xbd\xa0", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
	"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf",
	"\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", "\xed\xa0\x80", "\xed\xbf\xbf",
	"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xfe", "\x80",
	"\xbf", "\xe4\xbd", "\xf0\x9f\x98", "\xc3", "\xe4" "a", "\xc3\xa9\xa9",
	"\xe4\xbd\xa0\xa0", "\xed\x9f\xbf", "\xee\x80\x80",
};

static void
test_utf8_valid(void)
{
	unsigned char buf[320];
	size_t i, len, at, n, bad = 0, runs = 0, pl;
	uint32_t x = 12345;

	for (i = 0; i < sizeof(utf8_pieces) / sizeof(utf8_pieces[0]); i++) {
		pl = strlen(utf8_pieces[i]);
		for (len = 60; len < 140; len += 7)
			for (at = 0; at + pl <= len; at++) {
				memset(buf, 'a', len);
				memcpy(buf + at, utf8_pieces[i], pl);
				runs++;
				bad += utf8_valid((char *)buf, len) !=
				    utf8_valid_ref(buf, len);
			}
	}
	ok(bad == 0, "utf8_valid agrees with utf8_seq for each piece at each "
	    "offset (%zu of %zu differ)", bad, runs);
	/* Random texts: mostly ASCII and whole characters, a stray byte now
	   and then, every length to past three vector steps and a half. */
	for (bad = 0, i = 0; i < 40000; i++) {
		len = i % 300;
		for (n = 0; n < len;) {
			x = x * 1103515245 + 12345;
			if ((x >> 16) % 50 == 0)
				buf[n++] = (unsigned char)(x >> 8);
			else if ((x >> 16) % 7 == 0 && n + 4 <= len) {
				pl = strlen(utf8_pieces[(x >> 20) % 4]);
				memcpy(buf + n, utf8_pieces[(x >> 20) % 4], pl);
				n += pl;
			} else
				buf[n++] = (unsigned char)('a' + (x >> 24) % 26);
		}
		bad += utf8_valid((char *)buf, len) != utf8_valid_ref(buf, len);
	}
	ok(bad == 0, "utf8_valid agrees with utf8_seq on random texts (%zu differ)",
	    bad);
	memset(buf, 'a', 200);
	ok(utf8_valid((char *)buf, 200), "ASCII is valid");
	memcpy(buf + 197, "\xe4\xbd\xa0", 3);
	ok(utf8_valid((char *)buf, 200), "a character that ends the text");
	ok(!utf8_valid((char *)buf, 199), "a character the text cuts");
	buf[100] = 0x80;
	ok(!utf8_valid((char *)buf, 200), "a stray continuation byte mid-text");
}

static void
test_lagmon(void)
{
	struct lagmon *lm = lagmon_new(NULL, 50, 100);
	struct lag_snapshot s;
	int i;

	lagmon_snapshot(lm, &s);
	ok(s.samples == 0 && s.max_ms == 0, "empty window is zeros");
	for (i = 1; i <= 100; i++)
		lagmon_record(lm, i);
	lagmon_snapshot(lm, &s);
	ok(s.samples == 100 && s.p50_ms == 50 && s.p99_ms == 99 && s.max_ms == 100 &&
	    s.mean_ms == 50.5, "percentiles: p50 %.1f p99 %.1f max %.1f mean %.2f",
	    s.p50_ms, s.p99_ms, s.max_ms, s.mean_ms);
	for (i = 0; i < 100; i++)
		lagmon_record(lm, 1);
	lagmon_snapshot(lm, &s);
	ok(s.max_ms == 1 && s.samples == 100, "the window forgets old samples");
	lagmon_free(lm);
}

static void
test_jsonw(void)
{
	static const char *docs[] = {
		"{\"a\":\"x\\\"y\\\\z\\n\\t\\r\\b\\f\\u0001\\u001f/\",\"b\":[1,-2,3.5,true,false,null],"
		"\"c\":{\"d\":\"\\u4f60\\u597d \\ud83d\\ude00\"},\"e\":18446744073709551615,\"f\":{}}",
		"[]",
		"\"plain\"",
		"[1e300,0.1,-0.0]",
	};
	struct jbuf b = { NULL, 0, 0, 0 };
	json_object *o;
	size_t i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		o = json_tokener_parse(docs[i]);
		b.len = 0;
		jsonw_value(&b, o);
		is_str(b.p, json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
		    "jsonw matches json-c on document %zu", i);
		json_object_put(o);
	}
	jbuf_free(&b);
}

static void
test_profiler(void)
{
	struct prof p;

	profiler_init(&p);
	ok(p.failed == -1, "no failure at start");
	profiler_begin(&p, PROFILER_EXISTENCE_CHECK);
	profiler_begin(&p, PROFILER_TRANSCRIPT_READ);	/* ends the previous as ok */
	usleep(2000);
	profiler_end(&p, 0);
	profiler_begin(&p, PROFILER_CHAIN_RECONSTRUCT);
	profiler_end(&p, 0);
	ok(p.ran[PROFILER_EXISTENCE_CHECK] && p.ran[PROFILER_TRANSCRIPT_READ], "stages ran");
	ok(p.stage_ns[PROFILER_TRANSCRIPT_READ] >= 2000000, "durations are measured");
	is_int(p.failed, PROFILER_TRANSCRIPT_READ, "the first failure wins");
	is_str(profiler_stage_name(PROFILER_RESPONSE_BUILD), "response_build", "stage names");
	ok(!p.ran[PROFILER_HISTORY_REPLAY], "stages not reached are not reported");
}

static void
test_append(void)
{
	char dir[] = "/tmp/test-acp-child.XXXXXX", path[256], uuid[37], *cause = NULL;
	struct appender *a;
	json_object *rec;
	struct stat st;
	off_t size1;

	if (mkdtemp(dir) == NULL)
		return;
	/* Read once per process, at the first record write. */
	setenv("QWEN_ACP_FAULT_SHORT_WRITE", "2", 1);
	snprintf(path, sizeof(path), "%s/sub/dir/s.jsonl", dir);
	a = appender_new(path, 0, 1);
	rec = append_record_new("user", NULL, "sid", "/w", NULL, "hi", 2, uuid);
	ok(appender_append(a, rec, &cause) == 0, "append creates the file and dirs");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "file mode 0600");
	size1 = st.st_size;
	ok(appender_append(a, rec, &cause) == -1 && cause != NULL &&
	    strstr(cause, "short write") != NULL, "the hooked write fails: %s",
	    cause ? cause : "");
	free(cause);
	ok(stat(path, &st) == 0 && st.st_size == size1, "and is truncated back");
	ok(appender_append(a, rec, &cause) == 0, "the next write works");
	ok(stat(path, &st) == 0 && st.st_size == 2 * size1, "two whole records");
	json_object_put(rec);
	appender_free(a);
	a = appender_new(path, 0, 1);
	rec = append_record_new("assistant", uuid, "sid", "/w", "m", "yo", 2, uuid);
	ok(appender_append(a, rec, &cause) == -1, "create refuses an existing file");
	free(cause);
	json_object_put(rec);
	appender_free(a);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path) != 0)
		diag("cleanup failed");
}

int
main(void)
{
	test_paths();
	test_utf8();
	test_utf8_valid();
	test_lagmon();
	test_jsonw();
	test_profiler();
	test_append();
	return done_testing();
}
