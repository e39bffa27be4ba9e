/* SPDX-License-Identifier: ISC */
/*
 * prefix.c: session ids typed short, as git takes commit prefixes.
 *
 * An ID of 4 to 35 hex digits and dashes (the start of a UUID, as git
 * takes 4 or more hex digits of a commit) is looked up among the
 * workspace's persisted sessions: a unique prefix becomes the full id, an
 * ambiguous one is a usage error naming the candidates, and one that
 * matches nothing is "not found" (exit 3).  When the sessions cannot be
 * listed the id is sent as typed, for the daemon to judge.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "restore.h"
#include "xmalloc.h"

#define PREFIX_FULL_LEN	36	/* a UUID: nothing to complete */
#define PREFIX_MIN_LEN	4	/* git's shortest abbreviation */
#define PREFIX_SHOWN	5	/* candidates named in the error */

/* Whether id may be the start of a UUID: hex digits and dashes. */
static int
prefix_like(const char *id, size_t len)
{
	if (len < PREFIX_MIN_LEN || len >= PREFIX_FULL_LEN)
		return 0;
	return strspn(id, "0123456789abcdefABCDEF-") == len;
}

/* The candidates of an ambiguous prefix, as the error line. */
static int
prefix_ambiguous(const struct rctx *ctx, json_object *list, size_t n)
{
	struct rerr	 e;
	char		 names[PREFIX_SHOWN * (RESTORE_ID_MAX + 2)] = "";
	const char	*id;
	size_t		 i, shown = 0;

	for (i = 0; i < json_object_array_length(list); i++) {
		id = json_get_str(json_object_array_get_idx(list, i),
		    "sessionId");
		if (id == NULL || strncmp(id, ctx->session_id,
		    strlen(ctx->session_id)) != 0 || shown == PREFIX_SHOWN)
			continue;
		if (shown++ > 0)
			strlcat(names, ", ", sizeof(names));
		strlcat(names, id, sizeof(names));
	}
	output_local(&e, "bad_request", EXIT_USAGE,
	    "session ID '%s' is ambiguous: %zu sessions start with it (%s%s)",
	    ctx->session_id, n, names, n > shown ? ", ..." : "");
	return output_fail(ctx, &e);
}

/*
 * Replace a short ctx->session_id by the one persisted session it starts.
 * 0 (kept or replaced), or the exit code of an ambiguous or unknown one.
 */
int
prefix_resolve(struct rctx *ctx)
{
	struct http_resp resp;
	json_object	*obj = NULL, *list;
	const char	*id, *match = NULL;
	size_t		 i, n = 0, len = strlen(ctx->session_id);
	int		 rc = 0;

	if (!prefix_like(ctx->session_id, len))
		return 0;
	if (commands_list_get(ctx, LIST_MAX, &resp, 1) != 0 ||
	    (obj = http_resp_json(&resp)) == NULL ||
	    (list = json_get(obj, "sessions", json_type_array)) == NULL) {
		output_verbose(ctx, "cannot list the sessions: '%s' sent as "
		    "typed", ctx->session_id);
		goto out;
	}
	for (i = 0; i < json_object_array_length(list); i++) {
		id = json_get_str(json_object_array_get_idx(list, i),
		    "sessionId");
		if (id == NULL || strncmp(id, ctx->session_id, len) != 0)
			continue;
		if (strcmp(id, ctx->session_id) == 0) {
			n = 1;	/* an exact id wins over longer ones */
			match = id;
			break;
		}
		n++;
		match = id;
	}
	if (n > 1)
		rc = prefix_ambiguous(ctx, list, n);
	else if (n == 0) {
		struct rerr e;

		output_local(&e, "session_not_found", EXIT_NOTFOUND,
		    "no session of %s starts with '%s'", ctx->cwd,
		    ctx->session_id);
		rc = output_fail(ctx, &e);
	}
	else if (n == 1 && state_id_valid(match)) {
		output_verbose(ctx, "session %s", match);
		ctx->session_id = ctx->session_id_full = xstrdup(match);
	}
out:
	json_object_put(obj);
	http_resp_clear(&resp);
	return rc;
}
