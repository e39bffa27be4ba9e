/* SPDX-License-Identifier: ISC */
/*
 * json.h: typed members of a json-c object.
 *
 * Every getter is NULL-safe on obj and returns NULL when the member is
 * absent or of another type; results are borrowed from obj.
 */
#ifndef QWEN_JSON_H
#define QWEN_JSON_H

#include <json-c/json.h>

/* obj.key when it has the given type, or NULL. */
json_object	*json_get(json_object *obj, const char *key, json_type type);
/* obj.key as a string, or NULL. */
const char	*json_get_str(json_object *obj, const char *key);
/* obj.key when it is an object, or NULL. */
json_object	*json_get_obj(json_object *obj, const char *key);

#endif
