/* SPDX-License-Identifier: ISC */
/* json.c: typed member getters over json-c, one definition for all. */
#include "config.h"

#include "json.h"

/* json_object_object_get_ex() already treats a NULL obj as "absent". */
json_object *
json_get(json_object *obj, const char *key, json_type type)
{
	json_object *v;

	if (obj == NULL || !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* The string stays valid until obj's member is replaced or obj is put. */
const char *
json_get_str(json_object *obj, const char *key)
{
	json_object *v = json_get(obj, key, json_type_string);

	return v != NULL ? json_object_get_string(v) : NULL;
}

/* Objects are the common case: params, meta, result. */
json_object *
json_get_obj(json_object *obj, const char *key)
{
	return json_get(obj, key, json_type_object);
}
