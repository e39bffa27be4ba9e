/* SPDX-License-Identifier: ISC */
/*
 * fuzz-jtape.c: libFuzzer harness, the replay fast path's record reader
 * (jtape) against json-c.
 *
 * The input is one record.  When jt_parse() takes it, json-c (through the
 * reference loader's transcript_json_parse(), whose tokener lives on from input to
 * input as it does from record to record) must take it too,
 * jt_write() must give the bytes jsonw_value() gives for json-c's parse,
 * and every top-level string member must decode (jt_get_str) to json-c's
 * string.  Whatever json-c takes, jsonw_value() must write valid UTF-8.
 * ASan/LSan catch memory errors and leaks.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "jtape.h"
#include "transcript-int.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Every string member of the root decodes as json-c decoded it. */
static void
check_members(struct jtape *t, json_object *o)
{
	const char *s;
	int oom = 0;

	if (t->n[0].type != JT_OBJ)
		return;
	json_object_object_foreach(o, key, val) {
		if (jt_get(t, 0, key) < 0)
			abort();
		if (!json_object_is_type(val, json_type_string))
			continue;
		if ((s = jt_get_str(t, 0, key, &oom)) == NULL) {
			if (!oom)
				abort();
			continue;
		}
		if (strlen(s) != (size_t)json_object_get_string_len(val) ||
		    memcmp(s, json_object_get_string(val), strlen(s)) != 0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct transcript *tx;
	struct jtape t;
	struct jbuf fast = { NULL, 0, 0, 0 }, ref = { NULL, 0, 0, 0 };
	const char *p = (const char *)data;
	json_object *o;
	int rc, valid;

	if (size > (1u << 20))
		return 0;
	if (tx == NULL && (tx = calloc(1, sizeof *tx)) == NULL)
		abort();
	memset(&t, 0, sizeof t);
	rc = jt_parse(&t, p, size);
	o = transcript_json_parse(tx, p, size, &valid);
	if (valid) {
		jsonw_value(&ref, o);
		if (!ref.oom && !utf8_valid(ref.p, ref.len))
			abort();
	}
	if (rc == JT_OK) {
		if (!valid)
			abort();	/* jtape took what json-c refuses */
		jt_write(&fast, &t, 0);
		if (!fast.oom && !ref.oom && (fast.len != ref.len ||
		    memcmp(fast.p, ref.p, fast.len) != 0))
			abort();	/* the two paths disagree */
		check_members(&t, o);
	}
	json_object_put(o);
	jbuf_free(&fast);
	jbuf_free(&ref);
	jt_free(&t);
	return 0;
}
