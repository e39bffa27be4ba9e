/* SPDX-License-Identifier: ISC */
/*
 * sources.c: a session source as a client gives it, checked and
 * normalized as upstream's daemon checks it before the agent (which keeps
 * a session's sources) sees it: {title, description?, locator} with no
 * other member, the title 1 to 200 characters, the description at most
 * 1000, neither with a control or format character; the locator one of
 * {type: "workspace_file", workspacePath} (relative, its "." and ".."
 * resolved, never above the workspace), {type: "attachment",
 * attachmentId} and {type: "url", url} (http or https, a host, no
 * credentials, at most 2048 characters).
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "serve.h"
#include "utf8.h"
#include "xmalloc.h"

/* Whether o is an object with no member outside fields. */
static int
only(json_object *o, const char *const *fields)
{
	size_t i;

	if (o == NULL || !json_object_is_type(o, json_type_object))
		return 0;
	json_object_object_foreach(o, k, v) {
		(void)v;
		for (i = 0; fields[i] != NULL; i++)
			if (strcmp(k, fields[i]) == 0)
				break;
		if (fields[i] == NULL)
			return 0;
	}
	return 1;
}

/* The code point at *p (valid UTF-8), *p moved past it. */
static unsigned
next_cp(const unsigned char **p)
{
	const unsigned char *s = *p;
	unsigned c = s[0];
	int n = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

	if (n > 1)
		c &= 0x3f >> (n - 1);
	for (int i = 1; i < n; i++)
		c = (c << 6) | (s[i] & 0x3f);
	*p = s + n;
	return c;
}

/* Unicode's control (Cc) and format (Cf) characters, the common ones. */
static int
cc_or_cf(unsigned c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0xad ||
	    (c >= 0x600 && c <= 0x605) || c == 0x61c || c == 0x6dd ||
	    c == 0x70f || c == 0x180e || (c >= 0x200b && c <= 0x200f) ||
	    (c >= 0x202a && c <= 0x202e) || (c >= 0x2060 && c <= 0x2064) ||
	    (c >= 0x2066 && c <= 0x206f) || c == 0xfeff ||
	    (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f);
}

/*
 * A text member: a string without Cc/Cf characters, trimmed when trim,
 * non-empty unless empty_ok, at most limit characters.  Caller frees; NULL
 * with *cause.
 */
static char *
text(json_object *v, const char *field, size_t limit, int empty_ok, int trim,
    char **cause)
{
	const unsigned char *p;
	const char *s;
	char *out;
	size_t n, chars = 0;

	if (v == NULL || !json_object_is_type(v, json_type_string) ||
	    strlen(s = json_object_get_string(v)) !=
	    (size_t)json_object_get_string_len(v) || !utf8_valid(s, strlen(s))) {
		xasprintf(cause, "Invalid %s", field);
		return NULL;
	}
	for (p = (const unsigned char *)s; *p != '\0'; chars++)
		if (cc_or_cf(next_cp(&p))) {
			xasprintf(cause, "Invalid %s", field);
			return NULL;
		}
	if (trim)
		while (isspace((unsigned char)*s))
			s++, chars--;
	out = xstrdup(s);
	n = strlen(out);
	while (trim && n > 0 && isspace((unsigned char)out[n - 1]))
		out[--n] = '\0', chars--;
	if ((!empty_ok && n == 0) || chars > limit) {
		free(out);
		xasprintf(cause, "Invalid %s length (maximum %zu)", field, limit);
		return NULL;
	}
	return out;
}

/* A relative workspace path with "." and ".." resolved: caller frees. */
static char *
workspace_path(json_object *v, char **cause)
{
	char *s = text(v, "workspacePath", 500, 0, 0, cause), *out, *seg, *save;
	char *sl;
	size_t n = 0;

	if (s == NULL)
		return NULL;
	for (char *p = s; *p != '\0'; p++)
		if (*p == '\\')
			*p = '/';
	if (s[0] == '/' || (isalpha((unsigned char)s[0]) && s[1] == ':')) {
		free(s);
		xasprintf(cause, "Workspace path must be relative");
		return NULL;
	}
	out = xcalloc(1, strlen(s) + 1);
	for (seg = strtok_r(s, "/", &save); seg != NULL;
	    seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			if (n == 0) {
				free(s);
				free(out);
				xasprintf(cause, "Workspace path escapes its root");
				return NULL;
			}
			n--;
			if ((sl = strrchr(out, '/')) != NULL)
				*sl = '\0';
			else
				out[0] = '\0';
			continue;
		}
		if (n++ > 0)
			strcat(out, "/");
		strcat(out, seg);
	}
	free(s);
	if (n == 0) {
		free(out);
		xasprintf(cause, "Workspace path must identify a file");
		return NULL;
	}
	return out;
}

/*
 * An http(s) URL with a host and no credentials, its scheme and host
 * lower-cased and an empty path made "/", as a WHATWG URL's href: caller
 * frees; NULL with *cause.
 */
static char *
url(json_object *v, char **cause)
{
	char *s = text(v, "url", SOURCE_URL_MAX, 0, 1, cause), *out;
	size_t scheme, host;
	const char *auth;

	if (s == NULL)
		return NULL;
	scheme = strncasecmp(s, "https://", 8) == 0 ? 8 :
	    strncasecmp(s, "http://", 7) == 0 ? 7 : 0;
	auth = s + scheme;
	host = strcspn(auth, "/?#");
	if (scheme == 0 || host == 0 || memchr(auth, '@', host) != NULL ||
	    strpbrk(s, " \t\n<>\"`{}|\\^") != NULL || auth[0] == ':') {
		free(s);
		xasprintf(cause, scheme == 0 || host == 0 ? "Invalid source URL" :
		    "Source URL must be HTTP(S) without credentials");
		return NULL;
	}
	for (size_t i = 0; i < scheme + host; i++)
		s[i] = (char)tolower((unsigned char)s[i]);
	xasprintf(&out, "%.*s%s%s", (int)(scheme + host), s,
	    auth[host] == '/' ? "" : "/", auth + host);
	free(s);
	if (strlen(out) > SOURCE_URL_MAX) {
		free(out);
		xasprintf(cause, "Source URL is too long (maximum %d characters "
		    "after normalization)", SOURCE_URL_MAX);
		return NULL;
	}
	return out;
}

/* The locator, checked: {type, and its one member} (caller frees), or NULL. */
static json_object *
locator(json_object *raw, char **cause)
{
	static const char *const any[] = { "type", "workspacePath",
	    "attachmentId", "url", NULL };
	static const char *const wf[] = { "type", "workspacePath", NULL };
	static const char *const at[] = { "type", "attachmentId", NULL };
	static const char *const ur[] = { "type", "url", NULL };
	const char *type = json_get_str(raw, "type"), *key;
	const char *const *fields;
	json_object *o, *v = NULL;
	char *val;

	if (!only(raw, any)) {
		xasprintf(cause, raw != NULL && json_object_is_type(raw,
		    json_type_object) ? "Unknown source field" :
		    "Source must be an object");
		return NULL;
	}
	if (type != NULL && strcmp(type, "workspace_file") == 0)
		fields = wf, key = "workspacePath";
	else if (type != NULL && strcmp(type, "attachment") == 0)
		fields = at, key = "attachmentId";
	else if (type != NULL && strcmp(type, "url") == 0)
		fields = ur, key = "url";
	else {
		xasprintf(cause, "Unknown source locator type");
		return NULL;
	}
	if (!only(raw, fields)) {
		xasprintf(cause, "Unknown source field");
		return NULL;
	}
	json_object_object_get_ex(raw, key, &v);
	val = fields == wf ? workspace_path(v, cause) : fields == ur ?
	    url(v, cause) : text(v, "attachmentId", 200, 0, 0, cause);
	if (val == NULL)
		return NULL;
	o = xjson_object_new_object();
	json_object_object_add(o, "type", xjson_object_new_string(type));
	json_object_object_add(o, key, xjson_object_new_string(val));
	free(val);
	return o;
}

/*
 * The source a client gave, checked and normalized: {title, locator,
 * description?} (caller frees), or NULL with *cause (upstream's message;
 * the code is invalid_source).
 */
json_object *
sources_check(json_object *in, char **cause)
{
	static const char *const top[] = { "title", "description", "locator",
	    NULL };
	json_object *o, *loc, *v = NULL;
	char *title, *desc = NULL;

	if (!only(in, top)) {
		xasprintf(cause, in != NULL && json_object_is_type(in,
		    json_type_object) ? "Unknown source field" :
		    "Source must be an object");
		return NULL;
	}
	json_object_object_get_ex(in, "title", &v);
	if ((title = text(v, "title", 200, 0, 1, cause)) == NULL)
		return NULL;
	if (json_object_object_get_ex(in, "description", &v) &&
	    (desc = text(v, "description", 1000, 1, 1, cause)) == NULL) {
		free(title);
		return NULL;
	}
	v = NULL;
	json_object_object_get_ex(in, "locator", &v);
	if ((loc = locator(v, cause)) == NULL) {
		free(title);
		free(desc);
		return NULL;
	}
	o = xjson_object_new_object();
	json_object_object_add(o, "title", xjson_object_new_string(title));
	json_object_object_add(o, "locator", loc);
	if (desc != NULL)
		json_object_object_add(o, "description",
		    xjson_object_new_string(desc));
	free(title);
	free(desc);
	return o;
}
