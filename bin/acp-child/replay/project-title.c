/* SPDX-License-Identifier: ISC */
/*
 * project-title.c: how the agent presents a built-in tool call in its
 * replay: "DisplayName: description" titles, ACP kinds and locations, as
 * qwen-code 0.24.4's tools describe themselves.  Paths are shown relative
 * to the record's working directory, as the agent shows them relative to
 * its workspace.  A tool the agent's registry lacks is titled with its
 * name, kind "other": list_directory by default (the agent registers its
 * ls tool only when configured to).  Tools the agent registers only when
 * configured (web_search with a search provider, a skill the agent knows)
 * are presented as registered: the agent that wrote the call had them.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "project-int.h"

enum pres { P_NONE, P_SHELL, P_READ, P_WRITE, P_EDIT, P_GLOB, P_GREP,
    P_FETCH, P_SEARCH, P_AGENT, P_SKILL };

static const struct tool {
	const char	*name;
	const char	*display;
	const char	*kind;
	enum pres	 pres;
} tools[] = {
	{ "run_shell_command", "Shell", "execute", P_SHELL },
	{ "read_file", "ReadFile", "read", P_READ },
	{ "write_file", "WriteFile", "edit", P_WRITE },
	{ "edit", "Edit", "edit", P_EDIT },
	{ "replace", "Edit", "edit", P_EDIT },
	{ "glob", "Glob", "search", P_GLOB },
	{ "grep_search", "Grep", "search", P_GREP },
	{ "search_file_content", "Grep", "search", P_GREP },
	{ "web_fetch", "WebFetch", "fetch", P_FETCH },
	{ "web_search", "WebSearch", "search", P_SEARCH },
	{ "agent", "Agent", "other", P_AGENT },
	{ "skill", "Skill", "read", P_SKILL },
	{ "todo_write", "TodoList", "think", P_NONE },
	{ "save_memory", "SaveMemory", "think", P_NONE },
	{ "exit_plan_mode", "ExitPlanMode", "switch_mode", P_NONE },
	{ "enter_plan_mode", "EnterPlanMode", "switch_mode", P_NONE },
	{ NULL, NULL, NULL, P_NONE }
};

const char *
project_provenance(const char *name, const char **server, size_t *n)
{
	const char *s, *e;

	*server = NULL;
	*n = 0;
	if (strncmp(name, "mcp__", 5) == 0) {
		s = name + 5;
		if ((e = strstr(s, "__")) != NULL && e > s) {
			*server = s;
			*n = (size_t)(e - s);
			return "mcp";
		}
	}
	return "builtin";
}

/* path relative to cwd when inside it ("." for cwd itself), else path. */
static const char *
relative(const char *path, const char *cwd)
{
	size_t n = cwd ? strlen(cwd) : 0;

	while (n > 1 && cwd[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(path, cwd, n) != 0)
		return path;
	if (path[n] == '\0')
		return ".";
	if (n == 1 && cwd[0] == '/')
		return path[1] ? path + 1 : ".";
	if (path[n] == '/')
		return path[n + 1] ? path + n + 1 : ".";
	return path;
}

/* A number as JavaScript's template strings print an integer. */
static void
num_text(char *buf, size_t n, double v)
{
	if (v == (double)(long long)v)
		snprintf(buf, n, "%lld", (long long)v);
	else
		snprintf(buf, n, "%.17g", v);
}

/* The shell tool's description: command [in dir] [background|timeout] (why). */
static void
shell_desc(const struct project_args *a, char *d, size_t n)
{
	const char *cmd = a->str(a->arg, "command"), *dir = a->str(a->arg, "directory");
	const char *why = a->str(a->arg, "description");
	char num[48];
	double t;
	size_t i, l;

	snprintf(d, n, "%s", cmd);
	if (dir != NULL && *dir != '\0')
		snprintf(d + strlen(d), n - strlen(d), " [in %s]", dir);
	if (a->istrue(a->arg, "is_background"))
		snprintf(d + strlen(d), n - strlen(d), " [background]");
	else if (a->num(a->arg, "timeout", &t) == 0 && t != 0) {
		num_text(num, sizeof num, t);
		snprintf(d + strlen(d), n - strlen(d), " [timeout: %sms]", num);
	}
	if (why != NULL && *why != '\0') {
		l = strlen(d);
		snprintf(d + l, n - l, " (%s)", why);
		for (i = l; d[i] != '\0'; i++)
			if (d[i] == '\n')
				d[i] = ' ';
	}
}

/* read_file: path [(lines a-b) | (from line a) | (first n lines)]. */
static void
read_desc(const struct project_args *a, const char *rel, char *d, size_t n)
{
	const char *pages = a->str(a->arg, "pages");
	char x[48], y[48];
	double off, lim;
	int ho = a->num(a->arg, "offset", &off) == 0;
	int hl = a->num(a->arg, "limit", &lim) == 0;

	if (pages != NULL && *pages != '\0')
		snprintf(d, n, "%s (pages %s)", rel, pages);
	else if (ho && hl) {
		num_text(x, sizeof x, off + 1);
		num_text(y, sizeof y, off + lim);
		snprintf(d, n, "%s (lines %s-%s)", rel, x, y);
	} else if (ho) {
		num_text(x, sizeof x, off + 1);
		snprintf(d, n, "%s (from line %s)", rel, x);
	} else if (hl) {
		num_text(y, sizeof y, lim);
		snprintf(d, n, "%s (first %s lines)", rel, y);
	} else
		snprintf(d, n, "%s", rel);
}

/* s is absent, or blank as JavaScript's trim() sees ASCII whitespace. */
static int
blank(const char *s)
{
	return s == NULL || s[strspn(s, " \t\n\r\f\v")] == '\0';
}

/* The length of UTF-8 s in UTF-16 code units (JavaScript's length). */
static size_t
utf16_len(const char *s, size_t n)
{
	size_t i, u = 0;

	for (i = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			u++;
		if (((unsigned char)s[i] & 0xf8) == 0xf0)
			u++;			/* a surrogate pair */
	}
	return u;
}

/* The length of s without surrounding whitespace, in UTF-16 units. */
static size_t
trimmed_len(const char *s)
{
	size_t n;

	s += strspn(s, " \t\n\r\f\v");
	for (n = strlen(s); n > 0 && strchr(" \t\n\r\f\v", s[n - 1]) != NULL; n--)
		;
	return utf16_len(s, n);
}

/* The bytes of s's first units UTF-16 code units (whole characters). */
static size_t
utf16_prefix(const char *s, size_t units)
{
	size_t i = 0, u = 0, w;

	while (s[i] != '\0') {
		w = ((unsigned char)s[i] & 0xf8) == 0xf0 ? 2 : 1;
		if (u + w > units)
			break;
		u += w;
		do
			i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80);
	}
	return i;
}

/* The URL web_fetch fetches: a GitHub blob page becomes its raw file (in
   buf), any other URL stays as it is. */
static const char *
fetch_url(const char *url, char *buf, size_t n)
{
	const char *host = strstr(url, "//") + 2, *path, *p;
	size_t hl = strcspn(host, ":/?#"), sl = (size_t)(host - 3 - url);
	int i;

	if (!((hl == 10 && strncasecmp(host, "github.com", 10) == 0) ||
	    (hl == 14 && strncasecmp(host, "www.github.com", 14) == 0)))
		return url;
	path = host + strcspn(host, "/?#");
	for (p = path, i = 0; i < 2 && *p == '/' && p[1] != '/' && p[1] != '\0'; i++)
		p += 1 + strcspn(p + 1, "/?#");
	if (i < 2 || strncmp(p, "/blob/", 6) != 0)
		return url;
	snprintf(buf, n, "%.*s://raw.githubusercontent.com%.*s%.*s%s", (int)sl, url,
	    (int)(path - host - hl), host + hl, (int)(p - path), path, p + 5);
	for (i = 0; i < (int)sl; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
	return buf;
}

/* web_fetch: the URL and a prompt cut to 100 UTF-16 units (97 and "..."),
   when the tool accepts them (an http(s) URL without credentials). */
static int
fetch_desc(const struct project_args *a, char *d, size_t n)
{
	const char *url = a->str(a->arg, "url"), *prompt = a->str(a->arg, "prompt");
	const char *fmt = a->str(a->arg, "format"), *host, *end;
	char raw[2048];
	size_t p;

	if (blank(url) || blank(prompt) || (strncasecmp(url, "http://", 7) != 0 &&
	    strncasecmp(url, "https://", 8) != 0))
		return -1;
	host = strstr(url, "//") + 2;
	end = host + strcspn(host, "/?#");
	if (memchr(host, '@', (size_t)(end - host)) != NULL || end == host)
		return -1;
	if (fmt != NULL && strcmp(fmt, "auto") != 0 && strcmp(fmt, "markdown") != 0 &&
	    strcmp(fmt, "html") != 0 && strcmp(fmt, "text") != 0)
		return -1;
	p = utf16_len(prompt, strlen(prompt)) > 100 ? utf16_prefix(prompt, 97) : strlen(prompt);
	snprintf(d, n, "Fetching content from %s (format: %s) and processing with "
	    "prompt: \"%.*s%s\"", fetch_url(url, raw, sizeof raw), fmt ? fmt : "auto",
	    (int)p, prompt,
	    prompt[p] != '\0' ? "..." : "");
	return 0;
}

/* skill: its name and its arguments, Markdown-escaped, cut to 120 units. */
static int
skill_desc(const struct project_args *a, char *d, size_t n)
{
	const char *skill = a->str(a->arg, "skill"), *args = a->str(a->arg, "args");
	size_t l, i, p;

	if (blank(skill))
		return -1;
	l = (size_t)snprintf(d, n, "Use skill: \"%s\"", skill);
	if (args == NULL || l >= n)
		return 0;
	p = utf16_len(args, strlen(args)) > 120 ? utf16_prefix(args, 117) : strlen(args);
	l += (size_t)snprintf(d + l, n - l, " with args: \"");
	for (i = 0; i < p && l + 3 < n; i++) {
		if (strchr("\\`*_{}[]()#+-.!|>", args[i]) != NULL)
			d[l++] = '\\';
		d[l++] = args[i];
	}
	d[l] = '\0';
	snprintf(d + l, n - l, "%s\"", args[p] != '\0' ? "..." : "");
	return 0;
}

/* The description of a call the tool accepts; 0, or -1 when the tool
   would refuse its arguments (the agent then falls back). */
static int
describe(const struct tool *t, const struct project_args *a, const char *cwd,
    char *d, size_t n, const char **path, double *line)
{
	const char *fp = a->str(a->arg, "file_path"), *s, *p;

	switch (t->pres) {
	case P_SHELL:
		if ((s = a->str(a->arg, "command")) == NULL ||
		    s[strspn(s, " \t\n\r")] == '\0')
			return -1;
		shell_desc(a, d, n);
		return 0;
	case P_READ:
	case P_WRITE:
	case P_EDIT:
		if (fp == NULL || fp[0] != '/')
			return -1;
		*path = fp;
		if (t->pres == P_READ) {
			if (a->num(a->arg, "offset", line) != 0)
				*line = -1;
			read_desc(a, relative(fp, cwd), d, n);
		} else if (t->pres == P_WRITE)
			snprintf(d, n, "Writing to %s", relative(fp, cwd));
		else if ((s = a->str(a->arg, "old_string")) != NULL && *s == '\0')
			snprintf(d, n, "Create %s", relative(fp, cwd));
		else if (s != NULL && (p = a->str(a->arg, "new_string")) != NULL &&
		    strcmp(s, p) == 0)
			snprintf(d, n, "No file changes to %s", relative(fp, cwd));
		else
			snprintf(d, n, "%s", relative(fp, cwd));
		return 0;
	case P_GLOB:
	case P_GREP:
		if ((s = a->str(a->arg, "pattern")) == NULL)
			return -1;
		p = a->str(a->arg, "path");
		if (t->pres == P_GREP || (p != NULL && *p != '\0'))
			snprintf(d, n, "'%s' in %s", s, p && *p ? relative(p, cwd) : ".");
		else
			snprintf(d, n, "'%s'", s);
		if (t->pres == P_GREP && (p = a->str(a->arg, "glob")) != NULL && *p)
			snprintf(d + strlen(d), n - strlen(d), " (filter: '%s')", p);
		return 0;
	case P_FETCH:
		return fetch_desc(a, d, n);
	case P_SEARCH:
		if ((s = a->str(a->arg, "query")) == NULL || trimmed_len(s) < 2)
			return -1;
		snprintf(d, n, "Searching the web for: \"%s\"", s);
		return 0;
	case P_AGENT:
		if (blank(s = a->str(a->arg, "description")) ||
		    blank(a->str(a->arg, "prompt")))
			return -1;
		snprintf(d, n, "%s", s);
		return 0;
	case P_SKILL:
		return skill_desc(a, d, n);
	case P_NONE:
		break;
	}
	return -1;
}

const char *
project_tool_present(const char *name, const struct project_args *a, const char *cwd,
    char *title, size_t tsize, const char **path, double *line)
{
	const struct tool *t;
	const char *why;
	char d[PROJECT_TITLE_MAX];

	*path = NULL;
	*line = -1;
	for (t = tools; t->name != NULL; t++)
		if (strcmp(t->name, name) == 0)
			break;
	if (t->name == NULL) {			/* not a built-in: its name */
		snprintf(title, tsize, "%s", name);
		return "other";
	}
	if (describe(t, a, cwd, d, sizeof d, path, line) == 0) {
		snprintf(title, tsize, "%s: %s", t->display, d);
		return t->kind;
	}
	*path = NULL;
	*line = -1;
	if ((why = a->str(a->arg, "description")) != NULL)
		snprintf(title, tsize, "%s: %s", t->display, why);
	else
		snprintf(title, tsize, "%s", t->display);
	return t->kind;
}

const char *
project_tool_start(struct pctx *x, const char *name, const char *id, size_t idx,
    const struct project_args *a, char buf[128], char title[PROJECT_TITLE_MAX],
    const char **kind, const char **path, double *line)
{
	id = project_alloc_id(x, project_call_id(x, id, idx, buf), 0);
	*kind = project_tool_present(name, a, x->cwd, title, PROJECT_TITLE_MAX, path, line);
	project_pending_add(x, id, name);
	return id;
}
