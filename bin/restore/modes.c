/* SPDX-License-Identifier: ISC */
/*
 * modes.c: the model and approval-mode commands of qwen-restore, over
 * upstream's routes: model ID MODEL (POST /session/:id/model {modelId})
 * and mode ID MODE (POST /session/:id/approval-mode {mode}).  The daemon
 * asks the agent; its answer (or error) is printed as for any command.
 */
#include "config.h"

#include "approval.h"
#include "restore.h"
#include "xmalloc.h"

static int
usage_fail(struct rctx *ctx, const char *text)
{
	struct rerr	e;

	output_local(&e, "bad_request", EXIT_USAGE, "%s", text);
	return output_fail(ctx, &e);
}

/* model ID MODEL: one of the models the agent advertises. */
int
cmd_model(struct rctx *ctx, char **args)
{
	json_object	*b;

	if (args[0] == NULL || args[0][0] == '\0')
		return usage_fail(ctx, "model: usage: model ID MODEL");
	b = xjson_object_new_object();
	json_object_object_add(b, "modelId", xjson_object_new_string(args[0]));
	return commands_call(ctx, "POST", "/model", b, 1);
}

/* mode ID MODE: plan, default, auto-edit, auto or yolo. */
int
cmd_mode(struct rctx *ctx, char **args)
{
	json_object	*b;

	/* A typo is a usage error, not a round trip. */
	if (!approval_mode_known(args[0]))
		return usage_fail(ctx, "mode: usage: mode ID "
		    "plan|default|auto-edit|auto|yolo");
	b = xjson_object_new_object();
	json_object_object_add(b, "mode", xjson_object_new_string(args[0]));
	return commands_call(ctx, "POST", "/approval-mode", b, 1);
}
