/* SPDX-License-Identifier: ISC */
/*
 * tool-errors.c: qwen-test-tool errors, the error catalog for the shell.
 *
 *   errors table                      one TSV line per code: code status
 *                                     errorKind retryable retry-rule exit
 *   errors reasons                    code reason retry-rule per line
 *   errors rest CODE [k=v ...]        "Retry-After: N" or "none", then body
 *   errors jsonrpc CODE [k=v ...]     the JSON-RPC error member
 *   errors classify STATUS BODY [RA]  classification of an HTTP answer
 *   errors classify-rpc JSON          classification of a JSON-RPC error
 *
 * In k=v, v is an integer, true/false, null or else a string.  Special
 * keys: budget_ms=MS, reason=R, message=TEXT, retry_after=S (override, -1
 * none), retryable=0|1 (override).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "tool.h"

#define JSON_OUT \
	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* Print one JSON value on its own line and put it. */
static int
print_json(json_object *o)
{
	if (o == NULL) {
		fprintf(stderr, "errors: out of memory\n");
		return 1;
	}
	printf("%s\n", json_object_to_json_string_ext(o, JSON_OUT));
	json_object_put(o);
	return 0;
}

/* A decimal integer, optionally negative; 0 on success. */
static int
parse_int(const char *s, int64_t *out)
{
	char *end;

	if (*s == '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return errno != 0 || *end != '\0' ? -1 : 0;
}

/* One k=v: a special key or a typed extra. */
static int
apply_arg(struct qerr *e, const char *key, const char *val)
{
	int64_t n;

	if (strcmp(key, "message") == 0)
		return 0;
	if (strcmp(key, "budget_ms") == 0 || strcmp(key, "retry_after") == 0 ||
	    strcmp(key, "retryable") == 0) {
		if (parse_int(val, &n) == -1)
			return -1;
		if (strcmp(key, "budget_ms") == 0)
			qerr_set_budget(e, n);
		else if (strcmp(key, "retry_after") == 0)
			qerr_set_retry_after(e, (int)n);
		else
			qerr_set_retryable(e, n != 0);
		return 0;
	}
	if (strcmp(key, "reason") == 0)
		return qerr_set_reason(e, val);
	if (parse_int(val, &n) == 0)
		return qerr_set_int(e, key, n);
	if (strcmp(val, "true") == 0 || strcmp(val, "false") == 0)
		return qerr_set_bool(e, key, val[0] == 't');
	if (strcmp(val, "null") == 0)
		return qerr_set_json(e, key, NULL);
	return qerr_set_str(e, key, val);
}

/* Build the error named by argv[0] with the k=v arguments after it. */
static struct qerr *
build(int argc, char **argv)
{
	const char *msg = NULL;
	struct qerr *e;
	char key[128];
	const char *eq;
	int i;

	if (argc < 1 || qerr_lookup(argv[0]) == NULL) {
		fprintf(stderr, "errors: unknown error code '%s'\n",
		    argc < 1 ? "" : argv[0]);
		return NULL;
	}
	for (i = 1; i < argc; i++)
		if (strncmp(argv[i], "message=", 8) == 0)
			msg = argv[i] + 8;
	if ((e = msg != NULL ? qerr_new(argv[0], "%s", msg) :
	    qerr_new(argv[0], NULL)) == NULL)
		return NULL;
	for (i = 1; i < argc; i++) {
		if ((eq = strchr(argv[i], '=')) == NULL ||
		    (size_t)(eq - argv[i]) >= sizeof(key) || eq == argv[i]) {
			fprintf(stderr, "errors: bad argument '%s'\n", argv[i]);
			goto fail;
		}
		memcpy(key, argv[i], (size_t)(eq - argv[i]));
		key[eq - argv[i]] = '\0';
		if (apply_arg(e, key, eq + 1) == -1) {
			fprintf(stderr, "errors: cannot set '%s': %s\n", key,
			    strerror(errno ? errno : EINVAL));
			goto fail;
		}
	}
	return e;
fail:
	qerr_free(e);
	return NULL;
}

/* errors table: one TSV line per catalog entry. */
static int
cmd_table(void)
{
	const struct qerr_def *tab;
	char buf[32];
	size_t i, n;

	tab = qerr_catalog(&n);
	for (i = 0; i < n; i++)
		printf("%s\t%d\t%s\t%s\t%s\t%d\n", tab[i].code, tab[i].status,
		    tab[i].kind != NULL ? tab[i].kind : "-",
		    tab[i].retryable ? "true" : "false",
		    qerr_rule_name(&tab[i], buf, sizeof(buf)),
		    tab[i].exit_class);
	return 0;
}

/* errors reasons: the reason rows. */
static int
cmd_reasons(void)
{
	const struct qerr_reason *r;
	size_t i, n;

	r = qerr_reasons(&n);
	for (i = 0; i < n; i++) {
		if (r[i].rule == QERR_RETRY_BUDGET)
			printf("%s\t%s\tbudget\n", r[i].code, r[i].reason);
		else
			printf("%s\t%s\tfixed:%d\n", r[i].code, r[i].reason,
			    r[i].retry_s);
	}
	return 0;
}

/* errors rest|jsonrpc CODE [k=v ...]. */
static int
cmd_build(int argc, char **argv, int rest)
{
	struct qerr *e;
	int ra;

	if ((e = build(argc, argv)) == NULL)
		return 2;
	if (rest) {
		ra = qerr_retry_after(e);
		if (ra >= 0)
			printf("Retry-After: %d\n", ra);
		else
			printf("none\n");
		ra = print_json(qerr_rest_body(e));
	} else
		ra = print_json(qerr_jsonrpc_error(e));
	qerr_free(e);
	return ra;
}

/* errors classify STATUS BODY [RETRY_AFTER]. */
static int
cmd_classify(int argc, char **argv)
{
	struct qerr_class c;
	int64_t status;
	int r;

	if (argc < 2 || argc > 3 || parse_int(argv[0], &status) == -1 ||
	    status < 0 || status > 999) {
		fprintf(stderr, "usage: errors classify STATUS BODY "
		    "[RETRY_AFTER]\n");
		return 2;
	}
	if (qerr_classify_http(&c, (int)status, argv[1], strlen(argv[1]),
	    argc == 3 ? argv[2] : NULL) == -1)
		return 1;
	r = print_json(qerr_class_json(&c));
	qerr_class_clear(&c);
	return r;
}

/* errors classify-rpc JSON. */
static int
cmd_classify_rpc(int argc, char **argv)
{
	struct qerr_class c;
	json_object *err;
	int r;

	if (argc != 1) {
		fprintf(stderr, "usage: errors classify-rpc JSON\n");
		return 2;
	}
	err = json_tokener_parse(argv[0]);	/* garbage gives NULL: fine */
	r = qerr_classify_rpc(&c, err);
	json_object_put(err);
	if (r == -1)
		return 1;
	r = print_json(qerr_class_json(&c));
	qerr_class_clear(&c);
	return r;
}

/* Dispatch the errors subcommands. */
int
tool_errors(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "table") == 0)
		return cmd_table();
	if (argc >= 2 && strcmp(argv[1], "reasons") == 0)
		return cmd_reasons();
	if (argc >= 3 && strcmp(argv[1], "rest") == 0)
		return cmd_build(argc - 2, argv + 2, 1);
	if (argc >= 3 && strcmp(argv[1], "jsonrpc") == 0)
		return cmd_build(argc - 2, argv + 2, 0);
	if (argc >= 2 && strcmp(argv[1], "classify") == 0)
		return cmd_classify(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "classify-rpc") == 0)
		return cmd_classify_rpc(argc - 2, argv + 2);
	fprintf(stderr, "usage: qwen-test-tool errors table|reasons|"
	    "rest CODE [k=v ...]|jsonrpc CODE [k=v ...]|"
	    "classify STATUS BODY [RETRY_AFTER]|classify-rpc JSON\n");
	return 2;
}
