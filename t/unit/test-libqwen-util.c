/* test-libqwen-util.c: libqwen's uuid.c, json.c getters and ISO time. */
#include "config.h"

#include <ctype.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "json.h"
#include "tap.h"
#include "uuid.h"

static void
uuids(void)
{
	static const uint8_t bin[16] = { 0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b,
	    0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00 };
	const char *text = "123e4567-e89b-12d3-a456-426614174000";
	char out[UUID_LEN + 1], prev[UUID_LEN + 1] = "";
	uint8_t b[16];
	int lower = 1;

	uuid_format(bin, out);
	is_str(out, text, "format");
	ok(uuid_parse(text, strlen(text), b) == 0 && memcmp(b, bin, 16) == 0,
	    "parse round trip");
	ok(uuid_parse("123E4567-e89b-12d3-a456-426614174000", 36, b) == -1,
	    "parse refuses upper case (not canonical)");
	ok(uuid_parse(text, 35, b) == -1, "parse refuses a short length");
	ok(uuid_parse("123e4567+e89b-12d3-a456-426614174000", 36, b) == -1,
	    "parse refuses a missing dash");
	ok(uuid_parse("123e4567-e89b-12d3-a456-42661417400g", 36, b) == -1,
	    "parse refuses a non-hex digit");
	for (int i = 0; i < 20; i++) {
		uuid_new(out);
		for (const char *p = out; *p != '\0'; p++)
			if (isupper((unsigned char)*p))
				lower = 0;
		ok(strlen(out) == UUID_LEN && out[14] == '4' &&
		    strchr("89ab", out[19]) != NULL && uuid_valid(out) &&
		    strcmp(out, prev) != 0, "new v4 #%d: %s", i, out);
		strlcpy(prev, out, sizeof(prev));
	}
	ok(lower, "new uuids are lowercase");
	ok(uuid_valid("123E4567-E89B-12D3-A456-426614174000"), "valid: any case");
	ok(!uuid_valid("123e4567-e89b-62d3-a456-426614174000"), "invalid: version 6");
	ok(!uuid_valid("123e4567-e89b-12d3-c456-426614174000"), "invalid: variant");
	ok(!uuid_valid("123e4567e89b12d3a456426614174000"), "invalid: no dashes");
	ok(!uuid_valid(""), "invalid: empty");
}

static void
getters(void)
{
	json_object *o = json_tokener_parse(
	    "{\"s\":\"x\",\"n\":1,\"o\":{\"a\":2},\"z\":null}");

	is_str(json_get_str(o, "s"), "x", "string member");
	ok(json_get_str(o, "n") == NULL, "a number is not a string");
	ok(json_get_str(o, "z") == NULL, "null is not a string");
	ok(json_get_str(o, "missing") == NULL, "absent member");
	ok(json_get_obj(o, "o") != NULL, "object member");
	ok(json_get_obj(o, "s") == NULL, "a string is not an object");
	ok(json_get(o, "n", json_type_int) != NULL, "typed: int");
	ok(json_get(o, "n", json_type_string) == NULL, "typed: wrong type");
	ok(json_get_str(NULL, "s") == NULL, "NULL obj is absent");
	ok(json_get_obj(NULL, "o") == NULL, "NULL obj is absent (object)");
	json_object_put(o);
}

static void
iso(void)
{
	char out[CLOCK_ISO_LEN];

	clock_iso_time(1785596473619ULL, out);
	is_str(out, "2026-08-01T15:01:13.619Z", "ISO time with milliseconds");
	clock_iso_time(0, out);
	is_str(out, "1970-01-01T00:00:00.000Z", "the epoch");
	clock_iso_now(out);
	ok(strlen(out) == 24 && out[23] == 'Z', "now: %s", out);
}

int
main(void)
{
	uuids();
	getters();
	iso();
	return done_testing();
}
