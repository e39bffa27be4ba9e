/*
 * project-title.c: how the agent presents a built-in tool call in its
 * replay: "DisplayName: description" titles, ACP kinds and locations, as
 * qwen-code 0.24.4's tools describe themselves.  Paths are shown relative
 * to the record's working directory, as the agent shows them relative to
 * its workspace.  A tool the agent's registry lacks is titled with its
 * name, kind "other": list_directory by default (the agent registers its
 * ls tool only when configured to).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "project-int.h"

enum pres { P_NONE, P_SHELL, P_READ, P_WRITE, P_EDIT, P_GLOB, P_GREP };

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
	{ "web_fetch", "WebFetch", "fetch", P_NONE },
	{ "web_search", "WebSearch", "fetch", P_NONE },
	{ "todo_write", "TodoList", "think", P_NONE },
	{ "save_memory", "SaveMemory", "think", P_NONE },
	{ "exit_plan_mode", "ExitPlanMode", "switch_mode", P_NONE },
	{ "enter_plan_mode", "EnterPlanMode", "switch_mode", P_NONE },
	{ NULL, NULL, NULL, P_NONE }
};

const char *
pj_provenance(const char *name, const char **server, size_t *n)
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
shell_desc(const struct pj_args *a, char *d, size_t n)
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
read_desc(const struct pj_args *a, const char *rel, char *d, size_t n)
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

/* The description of a call the tool accepts; 0, or -1 when the tool
   would refuse its arguments (the agent then falls back). */
static int
describe(const struct tool *t, const struct pj_args *a, const char *cwd,
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
	case P_NONE:
		break;
	}
	return -1;
}

const char *
pj_tool_present(const char *name, const struct pj_args *a, const char *cwd,
    char *title, size_t tsize, const char **path, double *line)
{
	const struct tool *t;
	const char *why;
	char d[1024];

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
