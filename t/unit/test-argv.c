/* SPDX-License-Identifier: ISC */
/* test-argv.c: 'CMD ARGS' split by libpipeline's quoting rules, strictly. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "argv.h"
#include "tap.h"

/* Split s and compare with the expected words joined by '|'. */
static void
split_is(const char *s, const char *want)
{
	char *err = NULL, **v, buf[512] = "";
	int n;

	n = argv_split(s, &v, &err);
	if (n == -1) {
		ok(0, "split [%s]: %s", s, err);
		free(err);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (i > 0)
			strlcat(buf, "|", sizeof(buf));
		strlcat(buf, v[i], sizeof(buf));
	}
	ok(v[n] == NULL, "split [%s]: NULL-terminated", s);
	is_str(buf, want, "split [%s]", s);
	argv_free(v);
}

static void
split_fails(const char *s, const char *why)
{
	char *err = NULL, **v = (char **)1;

	ok(argv_split(s, &v, &err) == -1 && v == NULL,
	    "split [%s] fails", s);
	is_str(err, why, "split [%s]: reason", s);
	free(err);
}

/* join then split gives the same words back. */
static void
round_trip(const char *s)
{
	char **v, **w, *j;
	int n, m, same;

	n = argv_split(s, &v, NULL);
	j = argv_join(v);
	m = argv_split(j, &w, NULL);
	same = n == m;
	for (int i = 0; same && i < n; i++)
		same = strcmp(v[i], w[i]) == 0;
	ok(same, "round trip [%s] via [%s]", s, j);
	free(j);
	argv_free(v);
	argv_free(w);
}

int
main(void)
{
	split_is("qwen --acp", "qwen|--acp");
	split_is("  node\t/opt/q/cli.js   --acp  ", "node|/opt/q/cli.js|--acp");
	split_is("sh -c 'echo $HOME; ls *'", "sh|-c|echo $HOME; ls *");
	split_is("a \"b c\" d", "a|b c|d");
	split_is("a\\ b c", "a b|c");
	split_is("\"x\\\"y\" \"p\\q\" \"\\$v\"", "x\"y|p\\q|$v");
	split_is("it's' 'fine'", "its|fine");
	split_is("'it'\\''s fine'", "it's fine");
	split_is("a '' b", "a||b");
	split_is("\"it's\"", "it's");
	split_fails("", "no command");
	split_fails("   \t ", "no command");
	split_fails("qwen 'x", "unterminated single quote");
	split_fails("qwen \"x", "unterminated double quote");
	split_fails("qwen x\\", "trailing backslash");
	round_trip("node '/opt/my dir/cli.js' --acp \"it's\" 'a\\b' ''");
	round_trip("plain words only");
	return done_testing();
}
