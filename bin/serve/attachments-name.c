/* SPDX-License-Identifier: ISC */
/*
 * attachments-name.c: an attachment's name, which is its id and its file
 * name, and the type its name gives it, as upstream's session attachment
 * store has them: a name is the last path segment of what the client
 * sent (backslashes taken as slashes), trimmed, with no control, "<>:\"|?*"
 * character, no Windows device name, not "." or "..", not ending in ".",
 * valid UTF-8 of at most 255 bytes; a name taken is given " (n)" before
 * its extension.  The type is the extension's (upstream's mime table, the
 * TypeScript ones text/plain), else application/octet-stream.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve.h"
#include "utf8.h"
#include "xmalloc.h"

/* The extensions upstream's mime table knows that a client sends. */
static const struct {
	const char	*ext;
	const char	*type;
} ext_types[] = {
	{ "txt", "text/plain" }, { "text", "text/plain" },
	{ "log", "text/plain" }, { "ini", "text/plain" },
	{ "conf", "text/plain" }, { "ts", "text/plain" },
	{ "mts", "text/plain" }, { "cts", "text/plain" },
	{ "tsx", "text/plain" },
	{ "md", "text/markdown" }, { "markdown", "text/markdown" },
	{ "json", "application/json" }, { "map", "application/json" },
	{ "csv", "text/csv" }, { "html", "text/html" }, { "htm", "text/html" },
	{ "css", "text/css" }, { "js", "text/javascript" },
	{ "mjs", "text/javascript" }, { "xml", "application/xml" },
	{ "yaml", "text/yaml" }, { "yml", "text/yaml" },
	{ "toml", "application/toml" }, { "ics", "text/calendar" },
	{ "png", "image/png" }, { "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" }, { "jpe", "image/jpeg" },
	{ "gif", "image/gif" }, { "webp", "image/webp" }, { "bmp", "image/bmp" },
	{ "svg", "image/svg+xml" }, { "tif", "image/tiff" },
	{ "tiff", "image/tiff" }, { "avif", "image/avif" },
	{ "heic", "image/heic" },
	{ "pdf", "application/pdf" }, { "rtf", "application/rtf" },
	{ "doc", "application/msword" }, { "zip", "application/zip" },
	{ "gz", "application/gzip" }, { "wasm", "application/wasm" },
	{ "mp3", "audio/mpeg" }, { "wav", "audio/wav" },
	{ "mp4", "video/mp4" }, { "webm", "video/webm" },
	{ "woff", "font/woff" }, { "woff2", "font/woff2" },
	{ "ttf", "font/ttf" }, { "otf", "font/otf" },
};

/* The image types a prompt may carry (upstream's supported set). */
static const char *const image_types[] = { "image/bmp", "image/gif",
    "image/jpeg", "image/png", "image/webp", NULL };

/* Whether type is an image type a prompt may carry. */
int
attachments_image_type(const char *type)
{
	for (size_t i = 0; image_types[i] != NULL; i++)
		if (strcmp(type, image_types[i]) == 0)
			return 1;
	return 0;
}

/* The extension of name ("" for none; a leading dot is none). */
static const char *
name_ext(const char *name)
{
	const char *dot = strrchr(name, '.');

	return dot == NULL || dot == name ? "" : dot;
}

/* The type name's extension gives it (a static string). */
const char *
attachments_type(const char *name)
{
	const char *ext = name_ext(name);

	if (*ext == '\0')
		return "application/octet-stream";
	for (size_t i = 0; i < sizeof(ext_types) / sizeof(ext_types[0]); i++)
		if (strcasecmp(ext + 1, ext_types[i].ext) == 0)
			return ext_types[i].type;
	return "application/octet-stream";
}

/* CON, PRN, AUX, NUL, COM1-9, LPT1-9, alone or before a dot. */
static int
name_reserved(const char *s)
{
	static const char *const three[] = { "con", "prn", "aux", "nul", NULL };
	size_t n = 3;
	int hit = 0;

	for (size_t i = 0; three[i] != NULL; i++)
		if (strncasecmp(s, three[i], 3) == 0)
			hit = 1;
	if (!hit && (strncasecmp(s, "com", 3) == 0 ||
	    strncasecmp(s, "lpt", 3) == 0) && s[3] >= '1' && s[3] <= '9') {
		hit = 1;
		n = 4;
	}
	return hit && (s[n] == '\0' || s[n] == '.');
}

/* 1 when s is a name as it is stored (attachments_name(s) is s). */
int
attachments_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > ATTACHMENT_NAME_MAX || strcmp(s, ".") == 0 ||
	    strcmp(s, "..") == 0 || s[n - 1] == '.' || name_reserved(s) ||
	    !utf8_valid(s, n) || isspace((unsigned char)s[0]) ||
	    isspace((unsigned char)s[n - 1]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 31 || c == 127 || c == '/' || c == '\\' ||
		    strchr("<>:\"|?*", c) != NULL)
			return 0;
	}
	return 1;
}

/*
 * The stored name for what the client named: its last path segment,
 * trimmed; NULL when that is no valid name.  Caller frees.
 */
char *
attachments_name(const char *given)
{
	char *s = xstrdup(given), *p, *base, *out;
	size_t n;

	for (p = s; *p != '\0'; p++)
		if (*p == '\\')
			*p = '/';
	while ((n = strlen(s)) > 1 && s[n - 1] == '/')
		s[n - 1] = '\0';
	base = (p = strrchr(s, '/')) != NULL ? p + 1 : s;
	while (isspace((unsigned char)*base))
		base++;
	n = strlen(base);
	while (n > 0 && isspace((unsigned char)base[n - 1]))
		base[--n] = '\0';
	out = attachments_name_ok(base) ? xstrdup(base) : NULL;
	free(s);
	return out;
}

/*
 * The name's n'th alternative: "stem (n).ext", cut to 255 bytes as
 * upstream cuts it (the stem first, the extension after).  Caller frees.
 */
char *
attachments_name_nth(const char *name, unsigned n)
{
	char suffix[16], *out;
	const char *ext = name_ext(name);
	size_t sl, el, stem = (size_t)(ext - name);

	if (n == 0)
		return xstrdup(name);
	snprintf(suffix, sizeof(suffix), " (%u)", n);
	sl = strlen(suffix);
	el = utf8_boundary(ext, strlen(ext), ATTACHMENT_NAME_MAX - sl - 1);
	while (el > 0 && (ext[el - 1] == '.' || ext[el - 1] == ' '))
		el--;
	stem = utf8_boundary(name, stem, ATTACHMENT_NAME_MAX - sl - el);
	xasprintf(&out, "%.*s%s%.*s", (int)stem, name, suffix, (int)el, ext);
	return out;
}
