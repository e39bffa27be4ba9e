/* SPDX-License-Identifier: ISC */
/* test-base64.c: RFC 4648 vectors, both alphabets, strict decoding. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "tap.h"

static void
vectors(void)
{
	static const char *const in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const std[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
	    "Zm9vYmE=", "Zm9vYmFy" };
	static const char *const url[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg",
	    "Zm9vYmE", "Zm9vYmFy" };
	char out[64], dec[64];
	long n;

	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		base64_encode(BASE64_STD, in[i], strlen(in[i]), out, sizeof(out));
		is_str(out, std[i], "std encode \"%s\"", in[i]);
		base64_encode(BASE64_URL, in[i], strlen(in[i]), out, sizeof(out));
		is_str(out, url[i], "url encode \"%s\"", in[i]);
		n = base64_decode(BASE64_STD, std[i], strlen(std[i]), dec, sizeof(dec));
		ok(n == (long)strlen(in[i]) && memcmp(dec, in[i], (size_t)n) == 0,
		    "std decode \"%s\"", std[i]);
		n = base64_decode(BASE64_URL, url[i], strlen(url[i]), dec, sizeof(dec));
		ok(n == (long)strlen(in[i]) && memcmp(dec, in[i], (size_t)n) == 0,
		    "url decode \"%s\"", url[i]);
		n = base64_decode(BASE64_URL, std[i], strlen(std[i]), dec, sizeof(dec));
		ok(n == (long)strlen(in[i]), "url decode accepts padding \"%s\"", std[i]);
	}
}

static void
alphabets_and_errors(void)
{
	static const char *const bad_std[] = { "Zg", "Zg=", "Zm9", "Z", "Zh==",
	    "Zm9v\n", "Zm 9v", "Zm-v", "Zm_v", "=Zm9", "Zg===", "Zm9vY", "AAAA==" };
	static const char *const bad_url[] = { "Z", "Zh", "Zm+v", "Zm/v", "Zg=",
	    "Zm9vY" };
	unsigned char raw[3] = { 0xfb, 0xff, 0xfe };
	char out[16], dec[16];

	base64_encode(BASE64_STD, raw, 3, out, sizeof(out));
	is_str(out, "+//+", "std uses + and /");
	base64_encode(BASE64_URL, raw, 3, out, sizeof(out));
	is_str(out, "-__-", "url uses - and _");
	for (size_t i = 0; i < sizeof(bad_std) / sizeof(bad_std[0]); i++)
		is_int(base64_decode(BASE64_STD, bad_std[i], strlen(bad_std[i]), dec,
		    sizeof(dec)), -1, "std rejects \"%s\"", bad_std[i]);
	for (size_t i = 0; i < sizeof(bad_url) / sizeof(bad_url[0]); i++)
		is_int(base64_decode(BASE64_URL, bad_url[i], strlen(bad_url[i]), dec,
		    sizeof(dec)), -1, "url rejects \"%s\"", bad_url[i]);
	is_int(base64_encode(BASE64_STD, "foo", 3, out, 4), -1, "short output refused");
	is_int(base64_decode(BASE64_STD, "Zm9vYmFy", 8, dec, 5), -1,
	    "short decode buffer refused");
	is_int(base64_encoded_len(BASE64_STD, 16), 24, "16 bytes -> 24 chars");
	is_int(base64_encoded_len(BASE64_URL, 16), 22, "16 bytes -> 22 url chars");
}

/* Every length 0..64 of random bytes round-trips in both alphabets. */
static void
round_trips(void)
{
	unsigned char raw[64], dec[64];
	char enc[128];
	int bad = 0;

	for (size_t n = 0; n <= sizeof(raw); n++) {
		for (int a = BASE64_STD; a <= BASE64_URL; a++) {
			long m;

			arc4random_buf(raw, n);
			if (base64_encode(a, raw, n, enc, sizeof(enc)) !=
			    (long)base64_encoded_len(a, n))
				bad++;
			m = base64_decode(a, enc, strlen(enc), dec, sizeof(dec));
			if (m != (long)n || memcmp(raw, dec, n) != 0)
				bad++;
		}
	}
	is_int(bad, 0, "130 random round trips");
}

int
main(void)
{
	vectors();
	alphabets_and_errors();
	round_trips();
	return done_testing();
}
