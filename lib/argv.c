/* SPDX-License-Identifier: ISC */
/*
 * argv.c: split 'CMD ARGS' into an argument vector without a shell, by the
 * quoting rules of libpipeline's pipecmd_new_argstr, but strict: bad
 * quoting is reported instead of silently accepted.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argv.h"
#include "cause.h"

enum quote { Q_NONE, Q_SINGLE, Q_DOUBLE };

/* Append one word (out[0..n)) to the vector; -1 when out of memory. */
static int
push_word(char ***v, int *argc, const char *w, size_t n)
{
	char **nv;

	if ((nv = reallocarray(*v, (size_t)*argc + 2, sizeof(*nv))) == NULL)
		return -1;
	*v = nv;
	if ((nv[*argc] = strndup(w, n)) == NULL)
		return -1;
	nv[++*argc] = NULL;
	return 0;
}

/*
 * Read one word starting at *sp (not a blank) into buf; *sp moves past
 * it.  Returns the word's length or -1 with the reason in *why.
 */
static long
read_word(const char **sp, char *buf, const char **why)
{
	const char *s = *sp;
	enum quote q = Q_NONE;
	size_t n = 0;

	for (; *s != '\0'; s++) {
		if (q == Q_NONE && (*s == ' ' || *s == '\t'))
			break;
		if (q == Q_SINGLE) {
			if (*s == '\'')
				q = Q_NONE;
			else
				buf[n++] = *s;
		} else if (*s == '\\') {
			if (s[1] == '\0') {
				*why = "trailing backslash";
				return -1;
			}
			/* In "...", \ before another character is literal. */
			if (q != Q_DOUBLE || strchr("$`\"\\", s[1]) != NULL)
				s++;
			buf[n++] = *s;
		} else if (*s == '"')
			q = q == Q_DOUBLE ? Q_NONE : Q_DOUBLE;
		else if (*s == '\'' && q == Q_NONE)
			q = Q_SINGLE;
		else
			buf[n++] = *s;
	}
	if (q != Q_NONE) {
		*why = q == Q_SINGLE ? "unterminated single quote" :
		    "unterminated double quote";
		return -1;
	}
	*sp = s;
	return (long)n;
}

int
argv_split(const char *s, char ***argvp, char **cause)
{
	const char *why = "out of memory";
	char **v = NULL, *buf;
	int argc = 0;
	long n;

	*argvp = NULL;
	if ((buf = malloc(strlen(s) + 1)) == NULL)
		goto fail;
	for (;;) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0')
			break;
		if ((n = read_word(&s, buf, &why)) == -1 ||
		    push_word(&v, &argc, buf, (size_t)n) == -1)
			goto fail;
	}
	free(buf);
	if (argc == 0)
		return cause_set(cause, "no command");
	*argvp = v;
	return argc;
fail:
	cause_set(cause, "%s", why);
	free(buf);
	argv_free(v);
	return -1;
}

void
argv_free(char **v)
{
	if (v == NULL)
		return;
	for (char **p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

/* Does w need quoting to survive argv_split as one word? */
static int
needs_quotes(const char *w)
{
	return *w == '\0' || strpbrk(w, " \t'\"\\") != NULL;
}

char *
argv_join(char *const *v)
{
	size_t len = 1;
	char *out, *o;

	for (char *const *p = v; *p != NULL; p++)
		len += 4 * strlen(*p) + 3;
	if ((out = o = malloc(len)) == NULL)
		return NULL;
	for (char *const *p = v; *p != NULL; p++) {
		if (p != v)
			*o++ = ' ';
		if (!needs_quotes(*p)) {
			o = stpcpy(o, *p);
			continue;
		}
		*o++ = '\'';
		for (const char *c = *p; *c != '\0'; c++) {
			if (*c == '\'')
				o = stpcpy(o, "'\\''");
			else
				*o++ = *c;
		}
		*o++ = '\'';
	}
	*o = '\0';
	return out;
}
