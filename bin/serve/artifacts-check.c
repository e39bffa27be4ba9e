/* SPDX-License-Identifier: ISC */
/*
 * artifacts-check.c: an artifact a client adds, checked and normalized as
 * upstream's session artifact store checks a client's: a title (1 to 200
 * characters), an optional description (1000), mimeType (120), no control
 * character and no markup in them; exactly one locator: a workspacePath
 * inside the workspace (resolved, links followed), an opaque managedId or
 * an http(s) URL without credentials; storage inferred from it or given
 * (published is reserved to trusted publishers); kind given or inferred;
 * sizeBytes a non-negative integer (a workspace file's own size wins);
 * metadata an object; retention restorable (the default: ours persists)
 * or ephemeral.  A refusal names upstream's field and message.
 */
#include "config.h"

#include <sys/stat.h>

#include <ctype.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "serve.h"
#include "utf8.h"
#include "xmalloc.h"

#define METADATA_MAX	4096	/* bytes of its JSON */

static const char *const kinds[] = { "file", "link", "html", "image",
    "video", "audio", "pdf", "notebook", "document", "other", NULL };

/* Fail with field and message. */
static int
bad(struct artifact_err *e, const char *field, const char *msg)
{
	e->field = field;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	return -1;
}

/* Upstream's control characters (line whitespace allowed when lines). */
static int
has_control(const char *s, int lines)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p != '\0') {
		unsigned c = *p;

		if (c < 0x80) {
			if (!(lines && (c == 9 || c == 10 || c == 13)) &&
			    (c <= 31 || c == 127))
				return 1;
			p++;
			continue;
		}
		/* U+200B-U+200F, U+2028-U+202E, U+2066-U+2069, U+FEFF. */
		if (p[0] == 0xe2 && p[1] == 0x80 && ((p[2] >= 0x8b &&
		    p[2] <= 0x8f) || (p[2] >= 0xa8 && p[2] <= 0xae)))
			return 1;
		if (p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
			return 1;
		if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
			return 1;
		p++;
	}
	return 0;
}

/* Markup a display field may not carry (tags, entities, script URLs, on*=). */
static int
unsafe_markup(const char *s)
{
	static regex_t re[2];
	static int ready;

	if (!ready) {
		if (regcomp(&re[0], "<[[:space:]]*/?[a-z!]|&(#[0-9]+|#x[0-9a-f]+|"
		    "[a-z][a-z0-9]+);|javascript[[:space:]]*:|data[[:space:]]*:"
		    "[[:space:]]*(text/(html|javascript)|application/javascript|"
		    "image/svg\\+xml)", REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0 ||
		    regcomp(&re[1], "(^|[[:space:]\"'`<])on[a-z][a-z0-9-]*"
		    "[[:space:]]*=", REG_EXTENDED | REG_ICASE | REG_NOSUB) != 0)
			return 1;
		ready = 1;
	}
	return regexec(&re[0], s, 0, NULL, 0) == 0 ||
	    regexec(&re[1], s, 0, NULL, 0) == 0;
}

/*
 * A string member as upstream's normalizeString: absent or blank is NULL
 * (-1 when required), else trimmed, at most max characters.  *out is
 * malloc'd.  0, or -1 with e.
 */
static int
str(json_object *body, const char *field, size_t max, int required,
    char **out, struct artifact_err *e)
{
	json_object *v;
	const char *s;
	size_t n, chars = 0;
	static char msg[96];

	*out = NULL;
	if (!json_object_object_get_ex(body, field, &v) || v == NULL)
		goto absent;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(msg, sizeof(msg), "%s must be a string", field);
		return bad(e, field, msg);
	}
	s = json_object_get_string(v);
	if (strlen(s) != (size_t)json_object_get_string_len(v) ||
	    !utf8_valid(s, strlen(s))) {
		snprintf(msg, sizeof(msg), "%s contains control characters", field);
		return bad(e, field, msg);
	}
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n == 0)
		goto absent;
	*out = xstrndup(s, n);
	for (size_t i = 0; i < n; i++)
		chars += ((unsigned char)s[i] & 0xc0) != 0x80;
	if (chars > max)
		snprintf(msg, sizeof(msg), "%s exceeds %zu characters", field, max);
	else if (has_control(*out, strcmp(field, "description") == 0))
		snprintf(msg, sizeof(msg), "%s contains control characters", field);
	else if (strcmp(field, "url") != 0 && unsafe_markup(*out))
		snprintf(msg, sizeof(msg), "%s contains unsafe markup", field);
	else
		return 0;
	free(*out);
	*out = NULL;
	return bad(e, field, msg);
absent:
	if (!required)
		return 0;
	snprintf(msg, sizeof(msg), "%s is required", field);
	return bad(e, field, msg);
}

/* A workspace path: relative, inside ws once resolved.  Caller frees. */
static int
workspace_path(const char *ws, const char *raw, char **out, struct stat *st,
    int *exists, struct artifact_err *e)
{
	char *segs = xstrdup(raw), *rel = xcalloc(1, strlen(raw) + 1), *tok, *sv;
	char *abs, *real;
	size_t n = 0, wl = strlen(ws);

	*out = NULL;
	if (raw[0] == '/') {
		free(segs);
		free(rel);
		return bad(e, "workspacePath",
		    "workspacePath must be relative to the workspace");
	}
	for (tok = strtok_r(segs, "/", &sv); tok != NULL;
	    tok = strtok_r(NULL, "/", &sv)) {
		char *sl;

		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			if (n-- == 0)
				break;
			if ((sl = strrchr(rel, '/')) != NULL)
				*sl = '\0';
			else
				rel[0] = '\0';
			continue;
		}
		if (n++ > 0)
			strcat(rel, "/");
		strcat(rel, tok);
	}
	free(segs);
	if (n == 0 || n == (size_t)-1 || rel[0] == '\0') {
		free(rel);
		return bad(e, "workspacePath",
		    "workspacePath must stay inside the workspace");
	}
	xasprintf(&abs, "%s/%s", ws, rel);
	*exists = (real = realpath(abs, NULL)) != NULL && stat(real, st) == 0;
	free(abs);
	if (real != NULL && (strncmp(real, ws, wl) != 0 || (real[wl] != '/' &&
	    real[wl] != '\0') || real[wl] == '\0')) {
		free(real);
		free(rel);
		return bad(e, "workspacePath",
		    "workspacePath must stay inside the workspace");
	}
	free(real);
	*out = rel;
	return 0;
}

/* An http(s) URL without credentials, scheme and host lower-cased. */
static int
url_check(char *u, struct artifact_err *e)
{
	size_t scheme = strncasecmp(u, "https://", 8) == 0 ? 8 :
	    strncasecmp(u, "http://", 7) == 0 ? 7 : 0;
	size_t host = scheme != 0 ? strcspn(u + scheme, "/?#") : 0;

	if (strpbrk(u, " \t\n<>\"`{}|\\^") != NULL || (scheme != 0 &&
	    host == 0) || strncasecmp(u, "javascript:", 11) == 0)
		return bad(e, "url", "url must be valid");
	if (scheme == 0)
		return bad(e, "url", "url must use http or https");
	if (memchr(u + scheme, '@', host) != NULL)
		return bad(e, "url", "url must not include credentials");
	for (size_t i = 0; i < scheme + host; i++)
		u[i] = (char)tolower((unsigned char)u[i]);
	return 0;
}

/* Upstream's kind for a locator given none. */
static const char *
kind_of(const char *wp, const char *url)
{
	static const struct { const char *ext, *kind; } ext[] = {
		{ ".html", "html" }, { ".htm", "html" }, { ".png", "image" },
		{ ".jpg", "image" }, { ".jpeg", "image" }, { ".gif", "image" },
		{ ".webp", "image" }, { ".svg", "image" }, { ".mp4", "video" },
		{ ".mov", "video" }, { ".webm", "video" }, { ".mp3", "audio" },
		{ ".wav", "audio" }, { ".m4a", "audio" }, { ".ogg", "audio" },
		{ ".pdf", "pdf" }, { ".ipynb", "notebook" }, { ".doc", "document" },
		{ ".docx", "document" }, { ".xls", "document" },
		{ ".xlsx", "document" }, { ".ppt", "document" },
		{ ".pptx", "document" }, { ".odt", "document" },
	};
	const char *dot, *slash;

	if (url != NULL)
		return "link";
	if (wp == NULL)
		return "other";
	slash = strrchr(wp, '/');
	if ((dot = strrchr(wp, '.')) != NULL && (slash == NULL || dot > slash + 1))
		for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
			if (strcasecmp(dot, ext[i].ext) == 0)
				return ext[i].kind;
	return "file";
}

/* storage: given (one of upstream's four, published refused) or inferred. */
static int
storage_of(json_object *body, const char *wp, const char *mid,
    const char **out, struct artifact_err *e)
{
	static const char *const ok[] = { "workspace", "external_url",
	    "managed", NULL };
	json_object *v;
	const char *s;

	*out = wp != NULL ? "workspace" : mid != NULL ? "managed" : "external_url";
	if (!json_object_object_get_ex(body, "storage", &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return bad(e, "storage", "storage must be a string");
	if ((s = json_object_get_string(v))[0] == '\0')
		return 0;
	if (strcmp(s, "published") == 0)
		return bad(e, "storage",
		    "published artifacts are reserved for trusted publishers");
	for (size_t i = 0; ok[i] != NULL; i++)
		if (strcmp(s, ok[i]) == 0) {
			*out = ok[i];
			return 0;
		}
	return bad(e, "storage",
	    "storage must be workspace, external_url, managed, or published");
}

/* Exactly one locator, the one its storage needs. */
static int
locator_check(const char *storage, const char *wp, const char *mid,
    const char *url, struct artifact_err *e)
{
	if ((wp != NULL) + (mid != NULL) + (url != NULL) != 1)
		return bad(e, NULL,
		    "provide exactly one of workspacePath, managedId, or url");
	if (strcmp(storage, "workspace") == 0 && wp == NULL)
		return bad(e, "workspacePath", "workspace storage requires workspacePath");
	if (strcmp(storage, "managed") == 0 && mid == NULL)
		return bad(e, "managedId", "managed storage requires managedId");
	if (strcmp(storage, "external_url") == 0 && url == NULL)
		return bad(e, "url", "external_url storage requires url");
	return 0;
}

/* kind, retention, sizeBytes, metadata, clientRetained into o. */
static int
extras(json_object *body, json_object *o, const char *wp, const char *url,
    struct artifact_err *e)
{
	const char *k = json_get_str(body, "kind"), *r;
	json_object *v;
	size_t i;

	if (json_object_object_get_ex(body, "kind", &v) && v != NULL && k == NULL)
		return bad(e, "kind", "kind must be a supported artifact kind");
	for (i = 0; k != NULL && kinds[i] != NULL && strcmp(k, kinds[i]) != 0; i++)
		;
	if (k != NULL && kinds[i] == NULL)
		return bad(e, "kind", "kind must be a supported artifact kind");
	json_object_object_add(o, "kind", xjson_object_new_string(k != NULL ?
	    k : kind_of(wp, url)));
	r = "restorable";
	if (json_object_object_get_ex(body, "retention", &v) && v != NULL) {
		r = json_get_str(body, "retention");
		if (r != NULL && strcmp(r, "pinned") == 0)
			return bad(e, "retention", "pinned retention is not "
			    "supported by session_artifacts_persistence");
		if (r == NULL || (strcmp(r, "ephemeral") != 0 &&
		    strcmp(r, "restorable") != 0))
			return bad(e, "retention",
			    "retention must be ephemeral or restorable");
	}
	json_object_object_add(o, "retention", xjson_object_new_string(r));
	if (json_object_object_get_ex(body, "sizeBytes", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 0 ||
		    json_object_get_int64(v) > 9007199254740991LL)
			return bad(e, "sizeBytes",
			    "sizeBytes must be a non-negative safe integer");
		json_object_object_add(o, "sizeBytes", json_object_get(v));
	}
	if (json_object_object_get_ex(body, "metadata", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_object))
			return bad(e, "metadata", "metadata must be an object");
		if (strlen(json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN)) > METADATA_MAX)
			return bad(e, "metadata", "metadata exceeds 4096 bytes");
		if (json_object_object_length(v) > 0)
			json_object_object_add(o, "metadata", json_object_get(v));
	}
	v = NULL;
	json_object_object_get_ex(body, "clientRetained", &v);
	json_object_object_add(o, "clientRetained", xjson_object_new_boolean(
	    v == NULL || json_object_get_boolean(v)));
	return 0;
}

/* A string member of o when s is set (s freed). */
static void
put_str(json_object *o, const char *k, char *s)
{
	if (s != NULL)
		json_object_object_add(o, k, xjson_object_new_string(s));
	free(s);
}

/* The strings of a check, freed together. */
struct art_strs {
	char	*title, *desc, *wpraw, *wp, *mid, *url, *mime;
};

/* The checks of the string members, in upstream's order: 0 or -1. */
static int
strings(const char *ws, json_object *body, struct art_strs *a,
    struct stat *st, int *exists, struct artifact_err *e)
{
	if (str(body, "title", 200, 1, &a->title, e) == -1 ||
	    str(body, "description", 1000, 0, &a->desc, e) == -1 ||
	    str(body, "workspacePath", 500, 0, &a->wpraw, e) == -1 ||
	    (a->wpraw != NULL && workspace_path(ws, a->wpraw, &a->wp, st,
	    exists, e) == -1) ||
	    str(body, "managedId", 200, 0, &a->mid, e) == -1)
		return -1;
	if (a->mid != NULL && (strchr(a->mid, '/') != NULL ||
	    strchr(a->mid, '\\') != NULL || strstr(a->mid, "..") != NULL ||
	    (isalpha((unsigned char)a->mid[0]) && a->mid[1] == ':')))
		return bad(e, "managedId",
		    "managedId must be an opaque managed resource id");
	if (str(body, "url", 2048, 0, &a->url, e) == -1 ||
	    (a->url != NULL && url_check(a->url, e) == -1))
		return -1;
	return str(body, "mimeType", 120, 0, &a->mime, e);
}

/*
 * A client's artifact (the body), checked: its record {kind, storage,
 * source, status, title, ...} (caller frees) and its identity key in *key
 * (caller frees), or NULL with e.
 */
json_object *
artifacts_check(const char *ws, json_object *body, char **key,
    struct artifact_err *e)
{
	struct art_strs a = { 0 };
	const char *storage;
	json_object *o = NULL;
	struct stat st;
	int exists = 0;

	*key = NULL;
	if (strings(ws, body, &a, &st, &exists, e) == -1 ||
	    storage_of(body, a.wp, a.mid, &storage, e) == -1 ||
	    locator_check(storage, a.wp, a.mid, a.url, e) == -1)
		goto out;
	o = xjson_object_new_object();
	if (extras(body, o, a.wp, a.url, e) == -1) {
		json_object_put(o);
		o = NULL;
		goto out;
	}
	xasprintf(key, "%s:%s", a.wp != NULL ? "workspace" : a.mid != NULL ?
	    "managed" : "url", a.wp != NULL ? a.wp : a.mid != NULL ? a.mid : a.url);
	json_object_object_add(o, "storage", xjson_object_new_string(storage));
	json_object_object_add(o, "source", xjson_object_new_string("client"));
	json_object_object_add(o, "status", xjson_object_new_string(
	    a.wp != NULL && !exists ? "missing" : "available"));
	if (a.wp != NULL && exists && S_ISREG(st.st_mode))
		json_object_object_add(o, "sizeBytes",
		    xjson_object_new_int64((int64_t)st.st_size));
	put_str(o, "title", a.title);
	put_str(o, "description", a.desc);
	put_str(o, "workspacePath", a.wp);
	put_str(o, "managedId", a.mid);
	put_str(o, "url", a.url);
	put_str(o, "mimeType", a.mime);
	free(a.wpraw);
	a = (struct art_strs){ 0 };
out:
	free(a.title);
	free(a.desc);
	free(a.wpraw);
	free(a.wp);
	free(a.mid);
	free(a.url);
	free(a.mime);
	return o;
}
