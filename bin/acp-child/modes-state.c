/* SPDX-License-Identifier: ISC */
/*
 * modes-state.c: what the echo agent advertises in session/new, load and
 * resume answers: its one model and upstream's five approval modes
 * (switched by modes.c).
 */
#include "config.h"

#include "approval.h"
#include "load.h"
#include "xmalloc.h"

static json_object *
named(const char *key, const char *id, const char *name)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, key, xjson_object_new_string(id));
	json_object_object_add(o, "name", xjson_object_new_string(name));
	return o;
}

/* {models, modes} as session/new, load and resume answer them.  Caller frees. */
json_object *
modes_state(void)
{
	static const char *const names[] = { "Plan", "Default", "Auto Edit", "Auto", "YOLO" };
	json_object *st = xjson_object_new_object(), *o, *a;
	size_t i;

	o = xjson_object_new_object();
	json_object_object_add(o, "currentModelId", xjson_object_new_string(MODES_ECHO_MODEL));
	a = xjson_object_new_array();
	json_object_array_add(a, named("modelId", MODES_ECHO_MODEL, MODES_ECHO_MODEL));
	json_object_object_add(o, "availableModels", a);
	json_object_object_add(st, "models", o);
	o = xjson_object_new_object();
	json_object_object_add(o, "currentModeId", xjson_object_new_string("default"));
	a = xjson_object_new_array();
	for (i = 0; approval_modes[i] != NULL; i++)
		json_object_array_add(a, named("id", approval_modes[i], names[i]));
	json_object_object_add(o, "availableModes", a);
	json_object_object_add(st, "modes", o);
	return st;
}
