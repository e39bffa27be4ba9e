/* SPDX-License-Identifier: ISC */
/* test-libqwen-util.c: libqwen's uuid.c, json.c getters, json-limit.c, ISO
   time; xmalloc.c. */
#include "config.h"

#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cause.h"
#include "clock.h"
#include "json.h"
#include "json-limit.h"
#include "log.h"
#include "tap.h"
#include "uuid.h"
#include "xmalloc.h"

static void
uuids(void)
{
	static const uint8_t bin[16] = { 0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b,
	    0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00 };
	const char *text = "123e4567-e89b-12d3-a456-426614174000";
	char out[UUID_LEN + 1], prev[UUID_LEN + 1] = "";
	uint8_t b[16];
	int lower = 1;

	uuid_format(bin, out);
	is_str(out, text, "format");
	ok(uuid_parse(text, strlen(text), b) == 0 && memcmp(b, bin, 16) == 0,
	    "parse round trip");
	ok(uuid_parse("123E4567-e89b-12d3-a456-426614174000", 36, b) == -1,
	    "parse refuses upper case (not canonical)");
	ok(uuid_parse(text, 35, b) == -1, "parse refuses a short length");
	ok(uuid_parse("123e4567+e89b-12d3-a456-426614174000", 36, b) == -1,
	    "parse refuses a missing dash");
	ok(uuid_parse("123e4567-e89b-12d3-a456-42661417400g", 36, b) == -1,
	    "parse refuses a non-hex digit");
	for (int i = 0; i < 20; i++) {
		uuid_new(out);
		for (const char *p = out; *p != '\0'; p++)
			if (isupper((unsigned char)*p))
				lower = 0;
		ok(strlen(out) == UUID_LEN && out[14] == '4' &&
		    strchr("89ab", out[19]) != NULL && uuid_valid(out) &&
		    strcmp(out, prev) != 0, "new v4 #%d: %s", i, out);
		strlcpy(prev, out, sizeof(prev));
	}
	ok(lower, "new uuids are lowercase");
	ok(uuid_valid("123E4567-E89B-12D3-A456-426614174000"), "valid: any case");
	ok(!uuid_valid("123e4567-e89b-62d3-a456-426614174000"), "invalid: version 6");
	ok(!uuid_valid("123e4567-e89b-12d3-c456-426614174000"), "invalid: variant");
	ok(!uuid_valid("123e4567e89b12d3a456426614174000"), "invalid: no dashes");
	ok(!uuid_valid(""), "invalid: empty");
}

/* A byte at a time: 0 and the 16 bytes, or -1. */
static int
ref_uuid_parse(const char *s, uint8_t out[16])
{
	static const char hex[] = "0123456789abcdef";
	const char *h;
	int i, d = 0;

	for (i = 0; i < UUID_LEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -1;
			continue;
		}
		if (s[i] == '\0' || (h = strchr(hex, s[i])) == NULL)
			return -1;
		if (d % 2 == 0)
			out[d / 2] = (uint8_t)((h - hex) << 4);
		else
			out[d / 2] |= (uint8_t)(h - hex);
		d++;
	}
	return 0;
}

/* Every byte value at every digit of a uuid, against the byte-at-a-time
   reference (the parse reads eight digits a word). */
static void
uuid_every_byte(void)
{
	char text[UUID_LEN + 1];
	uint8_t b[16], want[16];
	int pos, c, r, wrong = 0, tried = 0;

	for (pos = 0; pos < UUID_LEN; pos++) {
		for (c = 0; c < 256; c++) {
			strlcpy(text, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
			    sizeof text);
			text[pos] = (char)c;
			tried++;
			r = ref_uuid_parse(text, want);
			if (uuid_parse(text, UUID_LEN, b) != r ||
			    (r == 0 && memcmp(b, want, 16) != 0))
				wrong++;
		}
	}
	ok(wrong == 0, "parse: every byte at each of the 36 places (%d tried, "
	    "%d wrong)", tried, wrong);
}

static void
getters(void)
{
	json_object *o = json_tokener_parse(
	    "{\"s\":\"x\",\"n\":1,\"o\":{\"a\":2},\"z\":null}");

	is_str(json_get_str(o, "s"), "x", "string member");
	ok(json_get_str(o, "n") == NULL, "a number is not a string");
	ok(json_get_str(o, "z") == NULL, "null is not a string");
	ok(json_get_str(o, "missing") == NULL, "absent member");
	ok(json_get_obj(o, "o") != NULL, "object member");
	ok(json_get_obj(o, "s") == NULL, "a string is not an object");
	ok(json_get(o, "n", json_type_int) != NULL, "typed: int");
	ok(json_get(o, "n", json_type_string) == NULL, "typed: wrong type");
	ok(json_get_str(NULL, "s") == NULL, "NULL obj is absent");
	ok(json_get_obj(NULL, "o") == NULL, "NULL obj is absent (object)");
	json_object_put(o);
}

static void
iso(void)
{
	char out[CLOCK_ISO_LEN];

	clock_iso_time(1785596473619ULL, out);
	is_str(out, "2026-08-01T15:01:13.619Z", "ISO time with milliseconds");
	clock_iso_time(0, out);
	is_str(out, "1970-01-01T00:00:00.000Z", "the epoch");
	clock_iso_now(out);
	ok(strlen(out) == 24 && out[23] == 'Z', "now: %s", out);
}

/* Run fn in a child with stderr captured: its exit status, its output. */
static int
in_child(void (*fn)(void), char *out, size_t size)
{
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fds) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while ((size_t)got < size - 1 &&
	    (n = read(fds[0], out + got, size - 1 - (size_t)got)) > 0)
		got += n;
	out[got] = '\0';
	close(fds[0]);
	if (waitpid(pid, &status, 0) == -1 || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void
call_fatalx(void)
{
	log_init("test", LOG_LEVEL_INFO);
	fatalx("boom %d", 7);
}

static void
call_fatal(void)
{
	log_init("test", LOG_LEVEL_INFO);
	errno = ENOENT;
	fatal("open %s", "x");
}

static void
null_json(void)
{
	log_init("test", LOG_LEVEL_INFO);
	(void)xjson_checked(NULL);
}

static void
allocation(void)
{
	char out[512], *s, *p;

	is_int(in_child(call_fatalx, out, sizeof(out)), 1, "fatalx exits 1");
	ok(strstr(out, "fatal: boom 7") != NULL, "fatalx logs its message");
	is_int(in_child(call_fatal, out, sizeof(out)), 1, "fatal exits 1");
	ok(strstr(out, "fatal: open x: No such file or directory") != NULL,
	    "fatal logs its message and errno's words");
	is_int(in_child(null_json, out, sizeof(out)), 1,
	    "a NULL json-c result is fatal");
	ok(strstr(out, "out of memory") != NULL, "... and says so");
	s = xstrdup("abc");
	is_str(s, "abc", "xstrdup");
	free(s);
	ok((p = xmalloc(0)) != NULL, "xmalloc(0) is not NULL");
	free(p);
	is_int(xasprintf(&s, "%s-%d", "x", 2), 3, "xasprintf length");
	is_str(s, "x-2", "xasprintf text");
	free(s);
}

/* cause_set and cause_errno: the message, -1, errno kept or set. */
static void
causes(void)
{
	char *cause = NULL;

	errno = EINTR;
	is_int(cause_set(&cause, "open %s: %d", "x", 7), -1, "cause_set returns -1");
	is_str(cause, "open x: 7", "cause_set formats the message");
	is_int(errno, EINTR, "cause_set keeps errno");
	free(cause);
	cause = NULL;
	is_int(cause_errno(&cause, EPERM, "%s", "no"), -1, "cause_errno returns -1");
	is_str(cause, "no", "cause_errno formats the message");
	is_int(errno, EPERM, "cause_errno sets errno");
	free(cause);
	is_int(cause_set(NULL, "%s", "nobody wants it"), -1,
	    "a NULL cause is allowed");
}

/* Every kind of value counts once; strings hide their brackets. */
static void
limits(void)
{
	static const struct {
		const char	*text;
		size_t		 values, depth;
	} c[] = {
		{ "", 0, 0 },
		{ "{}", 1, 1 },
		{ "[{},{},{}]", 4, 2 },
		{ "{\"a\":1,\"b\":[true,null,-2.5e3]}", 8, 2 },
		{ "\"[[[{{{\\\"]]]\"", 1, 0 },
		{ " [ 1 , \"x\" ] ", 3, 1 },
		{ "[[[[]]]]", 4, 4 },
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *t = c[i].text;
		size_t n = strlen(t);

		is_int((int)json_limit_count(t, n, 0), (int)c[i].values,
		    "values of '%s'", t);
		ok(json_limit_ok(t, n, c[i].values, c[i].depth),
		    "'%s' within its own counts", t);
		if (c[i].values > 1)	/* (0 is no limit) */
			ok(!json_limit_ok(t, n, c[i].values - 1, 0),
			    "'%s' over one value fewer", t);
		if (c[i].depth > 1)
			ok(!json_limit_ok(t, n, 0, c[i].depth - 1),
			    "'%s' over one level fewer", t);
	}
	/* Counting stops past its stop: a huge text costs no full pass. */
	is_int((int)json_limit_count("[1,2,3,4,5,6]", 13, 2), 3, "stops past 2");
}

int
main(void)
{
	uuids();
	uuid_every_byte();
	getters();
	limits();
	iso();
	allocation();
	causes();
	return done_testing();
}
