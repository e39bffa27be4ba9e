/* SPDX-License-Identifier: ISC */
/* test-restore-sse: qwen-restore's incremental SSE parser (bin/restore/sse.c). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../../bin/restore/restore.h"
#include "tap.h"

/* What the callback saw, as one string: "id|event|data|retry;" per event. */
struct seen {
	char	buf[4096];
	int	count;
	int	stop_after;	/* ask to stop after this many, 0 never */
};

static int
collect(void *arg, const struct sse_event *ev)
{
	struct seen	*s = arg;
	char		 one[1024];

	snprintf(one, sizeof(one), "%s|%s|%s|%ld;", ev->id ? ev->id : "-",
	    ev->event, ev->data, ev->retry);
	strlcat(s->buf, one, sizeof(s->buf));
	s->count++;
	return s->stop_after && s->count >= s->stop_after;
}

/* Parse text fed in slices of at most step bytes (0: split at cut only). */
static void
parse(const char *text, size_t step, size_t cut, struct seen *s)
{
	struct sse_parser	*p = sse_new(collect, s);
	size_t			 len = strlen(text), off = 0, n;

	memset(s->buf, 0, sizeof(s->buf));
	s->count = 0;
	if (step == 0) {
		sse_feed(p, text, cut);
		sse_feed(p, text + cut, len - cut);
	} else
		for (; off < len; off += n) {
			n = len - off < step ? len - off : step;
			if (sse_feed(p, text + off, n) != 0)
				break;
		}
	sse_free(p);
}

/* The same events for every slicing of text. */
static void
check_all_slicings(const char *name, const char *text, const char *want)
{
	struct seen	s = { .stop_after = 0 };
	size_t		cut, len = strlen(text);
	int		bad = 0;

	parse(text, 1, 0, &s);
	is_str(s.buf, want, "%s: byte by byte", name);
	parse(text, 4096, 0, &s);
	is_str(s.buf, want, "%s: in one piece", name);
	for (cut = 0; cut <= len; cut++) {
		parse(text, 0, cut, &s);
		if (strcmp(s.buf, want) != 0) {
			bad++;
			printf("#   cut %zu: got %s\n", cut, s.buf);
		}
	}
	is_int(bad, 0, "%s: every two-piece split", name);
}

int
main(void)
{
	struct seen		 s = { .stop_after = 0 };
	struct sse_parser	*p;
	char			*big;

	check_all_slicings("LF frames",
	    "retry: 3000\n\nid: 1\nevent: session_update\ndata: {\"a\":1}\n\n"
	    "data: x\n\n",
	    "1|session_update|{\"a\":1}|-1;-|message|x|-1;");
	check_all_slicings("CRLF frames",
	    "id: 7\r\nevent: turn_complete\r\ndata: {}\r\n\r\n"
	    "data: y\r\n\r\n",
	    "7|turn_complete|{}|-1;-|message|y|-1;");
	check_all_slicings("lone CR line ends", "data: a\r\rdata: b\r\r",
	    "-|message|a|-1;-|message|b|-1;");
	check_all_slicings("comments are not events",
	    ": heartbeat\n\n: more\ndata: z\n\n", "-|message|z|-1;");
	check_all_slicings("multi-line data joins with LF",
	    "data: one\ndata: two\ndata\n\n", "-|message|one\ntwo\n|-1;");
	check_all_slicings("one space after the colon is dropped",
	    "data:x\ndata:  y\n\n", "-|message|x\n y|-1;");
	check_all_slicings("retry is reported with its event",
	    "retry: 250\ndata: r\n\nretry: x1\ndata: s\n\n",
	    "-|message|r|250;-|message|s|-1;");
	check_all_slicings("an event without data is dropped",
	    "id: 3\nevent: ping\n\ndata: q\n\n", "-|message|q|-1;");
	check_all_slicings("unknown fields are ignored",
	    "foo: bar\ndata: w\n\n", "-|message|w|-1;");
	check_all_slicings("no dispatch without the blank line",
	    "data: pending\n", "");

	/* The callback can stop the parser. */
	s.stop_after = 1;
	p = sse_new(collect, &s);
	memset(s.buf, 0, sizeof(s.buf));
	s.count = 0;
	is_int(sse_feed(p, "data: 1\n\ndata: 2\n\n", 18), 1,
	    "a nonzero callback stops the feed");
	is_int(s.count, 1, "no event after the stop");
	sse_free(p);

	/* Comments are counted. */
	s.stop_after = 0;
	p = sse_new(collect, &s);
	sse_feed(p, ": a\n: b\n\n", 9);
	is_int(sse_comments(p), 2, "two comment lines counted");
	sse_free(p);

	/* A frame that never ends is refused, not buffered forever. */
	p = sse_new(collect, &s);
	big = malloc(1024 * 1024);
	memset(big, 'x', 1024 * 1024);
	memcpy(big, "data: ", 6);
	{
		int i, rc = 0;

		for (i = 0; i < 17 && rc == 0; i++)
			rc = sse_feed(p, i == 0 ? big : big + 6,
			    i == 0 ? 1024 * 1024 : 1024 * 1024 - 6);
		is_int(rc, -1, "a frame over 16 MiB fails the feed");
	}
	free(big);
	sse_free(p);
	return done_testing();
}
