/* SPDX-License-Identifier: ISC */
/*
 * human.c: qwen-restore's output for people (without --json).
 *
 * list is an aligned table (id, size, modified as local time, live, first
 * prompt), cut to the terminal width; status, capabilities and heartbeat
 * are "key  value" lines, nested keys joined with dots, times in local
 * time.  Control characters in daemon strings are shown as spaces so an
 * answer cannot move the cursor or recolour the terminal.  Widths are
 * terminal columns (wcwidth: a CJK character takes two), not bytes or
 * code points.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

#include "json.h"
#include "restore.h"

#define KEY_MAX	128

/*
 * The next code point of s (UTF-8; a bad byte is U+FFFD, one byte) into
 * *cp; returns its length in bytes.
 */
static size_t
utf8_next(const unsigned char *s, wchar_t *cp)
{
	size_t	n, i;
	wchar_t	c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
	c = n == 4 ? s[0] & 0x07 : n == 3 ? s[0] & 0x0f : s[0] & 0x1f;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			break;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (n == 0 || i < n) {
		*cp = 0xfffd;
		return 1;
	}
	*cp = c;
	return n;
}

/* Columns a code point takes on a terminal: 0, 1 or 2 (CJK, emoji). */
static int
cp_width(wchar_t c)
{
	int	w;

	if (c < 0x20 || c == 0x7f)
		return 1;	/* shown as a space */
	if ((w = wcwidth(c)) < 0)
		return 1;
	return w;
}

/* Display width of s in terminal columns. */
size_t
human_width(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t	 w = 0;
	wchar_t	 c;

	while (*p != '\0') {
		p += utf8_next(p, &c);
		w += (size_t)cp_width(c);
	}
	return w;
}

/*
 * Print s with control characters as spaces, at most max terminal columns
 * (0: no limit), "…" marking a cut; pad with spaces to pad columns.
 * Returns the columns printed.
 */
size_t
human_put(const char *s, size_t max, size_t pad)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t	 cols = 0, n, w;
	wchar_t	 c;

	if (max > 0 && human_width(s) > max) {
		while (*p != '\0') {
			n = utf8_next(p, &c);
			w = (size_t)cp_width(c);
			if (cols + w + 1 > max)
				break;
			if (c < 0x20 || c == 0x7f)
				putchar(' ');
			else
				fwrite(p, 1, n, stdout);
			cols += w;
			p += n;
		}
		fputs("\xe2\x80\xa6", stdout);
		cols++;
	} else {
		for (; *p != '\0'; p++)
			putchar(*p < 0x20 || *p == 0x7f ? ' ' : *p);
		cols = human_width(s);
	}
	for (; cols < pad; cols++)
		putchar(' ');
	return cols;
}

/* The old name: no padding. */
static void
put_clean(const char *s, size_t max)
{
	(void)human_put(s, max, 0);
}

/* Local time of an epoch in ms: "2026-12-01 14:38". */
static void
fmt_time(int64_t ms, int seconds, char *buf, size_t len)
{
	time_t		t = (time_t)(ms / 1000);
	struct tm	tm;

	if (localtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, seconds ? "%Y-%m-%d %H:%M:%S" :
	    "%Y-%m-%d %H:%M", &tm) == 0)
		snprintf(buf, len, "%lld", (long long)ms);
}

/* A size as ls -h prints it: 512, 1.5K, 12K, 3.4M. */
static void
fmt_size(int64_t n, char *buf, size_t len)
{
	const char	*units = "KMGTP";
	double		 v = (double)n;
	int		 u = -1;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%lld", (long long)n);
	else if (v < 10)
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else
		snprintf(buf, len, "%.0f%c", v, units[u]);
}

/* Member key of o as an int64 (0 when absent). */
static int64_t
get_i64(json_object *o, const char *key)
{
	return json_object_get_int64(json_get(o, key, json_type_int));
}

/* list: the table. */
void
human_list(const struct rctx *ctx, json_object *answer)
{
	json_object	*list = NULL, *e, *v;
	const char	*id, *first;
	char		 size[16], when[32];
	size_t		 i, n, idw = 2, used;

	if (json_object_object_get_ex(answer, "sessions", &v) &&
	    json_object_is_type(v, json_type_array))
		list = v;
	n = list != NULL && json_object_is_type(list, json_type_array) ?
	    json_object_array_length(list) : 0;
	if (n == 0) {
		fprintf(stderr, "%s: no sessions in %s\n", getprogname(),
		    ctx->cwd);
		return;
	}
	for (i = 0; i < n; i++)
		if ((id = json_get_str(json_object_array_get_idx(list, i),
		    "sessionId")) != NULL && strlen(id) > idw)
			idw = strlen(id);
	used = idw + 6 + 16 + 4 + 4;
	if (!ctx->no_header) {
		printf("%-*s %6s %-16s %-4s ", (int)idw, "ID", "SIZE",
		    "MODIFIED", "LIVE");
		put_clean("FIRST PROMPT", ctx->cols > 0 &&
		    (size_t)ctx->cols > used ? (size_t)ctx->cols - used : 0);
		putchar('\n');
	}
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(list, i);
		id = json_get_str(e, "sessionId");
		fmt_size(get_i64(e, "size"), size, sizeof(size));
		fmt_time(get_i64(e, "mtime"), 0, when, sizeof(when));
		printf("%-*s %6s %-16s %-4s ", (int)idw, id ? id : "?", size,
		    when, json_object_object_get_ex(e, "live", &v) &&
		    json_object_get_boolean(v) ? "yes" : "no");
		first = json_get_str(e, "firstPrompt");
		if (ctx->cols > 0 && (size_t)ctx->cols <= used + 1)
			first = NULL;
		put_clean(first != NULL ? first : "-",
		    ctx->cols > 0 ? (size_t)ctx->cols - used : 0);
		putchar('\n');
	}
}

/* Whether key names a time in epoch ms ("lastSeenAt", "mtime"). */
static int
is_time_key(const char *key, json_object *v)
{
	size_t	len = strlen(key);

	return json_object_is_type(v, json_type_int) &&
	    json_object_get_int64(v) > 100000000000LL &&
	    ((len > 2 && strcmp(key + len - 2, "At") == 0) ||
	    strcmp(key, "mtime") == 0);
}

/* Print one flattened level, or only measure its keys into *maxw. */
static void
kv_walk(json_object *obj, const char *prefix, int width, size_t *maxw)
{
	char		 key[KEY_MAX], when[32];
	json_object	*e;
	size_t		 i;

	json_object_object_foreach(obj, k, v) {
		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." :
		    "", k);
		if (v != NULL && json_object_is_type(v, json_type_object) &&
		    json_object_object_length(v) > 0) {
			kv_walk(v, key, width, maxw);
			continue;
		}
		if (maxw != NULL) {
			if (strlen(key) > *maxw)
				*maxw = strlen(key);
			continue;
		}
		printf("%-*s  ", width, key);
		if (v == NULL)
			fputs("-", stdout);
		else if (is_time_key(k, v)) {
			fmt_time(json_object_get_int64(v), 1, when, sizeof(when));
			fputs(when, stdout);
		} else if (json_object_is_type(v, json_type_boolean))
			fputs(json_object_get_boolean(v) ? "yes" : "no", stdout);
		else if (json_object_is_type(v, json_type_array)) {
			for (i = 0; i < json_object_array_length(v); i++) {
				e = json_object_array_get_idx(v, i);
				if (i > 0)
					fputs(", ", stdout);
				put_clean(e != NULL &&
				    json_object_is_type(e, json_type_string) ?
				    json_object_get_string(e) :
				    json_object_to_json_string_ext(e,
				    JSON_C_TO_STRING_PLAIN), 0);
			}
		} else
			put_clean(json_object_is_type(v, json_type_string) ?
			    json_object_get_string(v) :
			    json_object_to_json_string_ext(v,
			    JSON_C_TO_STRING_PLAIN), 0);
		putchar('\n');
	}
}

/* status, capabilities, heartbeat: aligned "key  value" lines. */
void
human_keyvalue(json_object *obj)
{
	size_t	w = 0;

	kv_walk(obj, "", 0, &w);
	kv_walk(obj, "", (int)w, NULL);
}
