/* SPDX-License-Identifier: ISC */
/*
 * spawn.c: commands built in the parent, forked by us, exec'd with
 * async-signal-safe calls only (spawn.h says why).
 */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"

#define SPAWN_SETUP_FAILED	255	/* what libpipeline's failed exec exits with */
#define SPAWN_DEFAULT_PATH	"/bin:/usr/bin"	/* execvp's, with no $PATH */
#define SPAWN_SHELL		"/bin/sh"	/* execvp's for a program with no #! */

extern char **environ;

struct spawn_env {
	char		*name;
	char		*value;		/* NULL: remove the variable */
};

struct spawn_cmd {
	char		*name;
	char		**argv;		/* argc entries and a NULL */
	size_t		 argc;
	struct spawn_env *env;
	size_t		 nenv;
	char		*dir;
	void		(*pre_exec)(void *);
	void		*pre_arg;
	int		 failed;	/* an allocation failed while building */
};

/* What execve takes, made before the fork: the child only reads it. */
struct spawn_exec {
	char		**envp;		/* environ's strings and ours */
	char		**owned;	/* the "NAME=value" strings we made */
	size_t		 nowned;
	char		**paths;	/* where the program may be, in order */
	char		**sh_argv;	/* /bin/sh, a path (set in the child), the
					   arguments: for a program with no #! */
	char		 msg[256];	/* what a failed exec says */
	size_t		 msglen;
};

/* What spawn_cmd_new() gives when even that fails: spawn_start() says ENOMEM. */
static struct spawn_cmd spawn_oom = { .failed = 1 };

struct spawn_cmd *
spawn_cmd_new(const char *name)
{
	struct spawn_cmd *cmd;
	const char *base = strrchr(name, '/');

	if ((cmd = calloc(1, sizeof(*cmd))) == NULL)
		return &spawn_oom;
	if ((cmd->name = strdup(name)) == NULL)
		cmd->failed = 1;
	spawn_cmd_arg(cmd, base != NULL && base[1] != '\0' ? base + 1 : name);
	return cmd;
}

struct spawn_cmd *
spawn_cmd_new_args(const char *name, ...)
{
	struct spawn_cmd *cmd = spawn_cmd_new(name);
	const char *a;
	va_list ap;

	va_start(ap, name);
	while ((a = va_arg(ap, const char *)) != NULL)
		spawn_cmd_arg(cmd, a);
	va_end(ap);
	return cmd;
}

void
spawn_cmd_arg(struct spawn_cmd *cmd, const char *arg)
{
	char **nv, *s;

	if (cmd->failed)
		return;
	if ((nv = reallocarray(cmd->argv, cmd->argc + 2, sizeof(*nv))) == NULL ||
	    (s = strdup(arg)) == NULL) {
		if (nv != NULL)
			cmd->argv = nv;
		cmd->failed = 1;
		return;
	}
	cmd->argv = nv;
	cmd->argv[cmd->argc++] = s;
	cmd->argv[cmd->argc] = NULL;
}

/* Record one environment change (value NULL: removal). */
static void
spawn_cmd_env(struct spawn_cmd *cmd, const char *name, const char *value)
{
	struct spawn_env *ne, *e;

	if (cmd->failed)
		return;
	if ((ne = reallocarray(cmd->env, cmd->nenv + 1, sizeof(*ne))) == NULL) {
		cmd->failed = 1;
		return;
	}
	cmd->env = ne;
	e = &cmd->env[cmd->nenv];
	e->name = strdup(name);
	e->value = value != NULL ? strdup(value) : NULL;
	cmd->nenv++;
	if (e->name == NULL || (value != NULL && e->value == NULL))
		cmd->failed = 1;
}

void
spawn_cmd_setenv(struct spawn_cmd *cmd, const char *name, const char *value)
{
	spawn_cmd_env(cmd, name, value);
}

void
spawn_cmd_unsetenv(struct spawn_cmd *cmd, const char *name)
{
	spawn_cmd_env(cmd, name, NULL);
}

void
spawn_cmd_chdir(struct spawn_cmd *cmd, const char *dir)
{
	if (cmd->failed)
		return;
	free(cmd->dir);
	if ((cmd->dir = strdup(dir)) == NULL)
		cmd->failed = 1;
}

void
spawn_cmd_pre_exec(struct spawn_cmd *cmd, void (*fn)(void *), void *arg)
{
	if (cmd == &spawn_oom)
		return;
	cmd->pre_exec = fn;
	cmd->pre_arg = arg;
}

void
spawn_cmd_free(struct spawn_cmd *cmd)
{
	if (cmd == NULL || cmd == &spawn_oom)
		return;
	for (size_t i = 0; i < cmd->argc; i++)
		free(cmd->argv[i]);
	for (size_t i = 0; i < cmd->nenv; i++) {
		free(cmd->env[i].name);
		free(cmd->env[i].value);
	}
	free(cmd->argv);
	free(cmd->env);
	free(cmd->name);
	free(cmd->dir);
	free(cmd);
}

/* Whether env entry e ("NAME=value") is the variable name. */
static int
spawn_env_is(const char *e, const char *name)
{
	size_t n = strlen(name);

	return strncmp(e, name, n) == 0 && e[n] == '=';
}

/* The new environment: environ with cmd's changes applied in order. */
static int
spawn_exec_env(struct spawn_exec *x, const struct spawn_cmd *cmd)
{
	size_t n = 0, k, i, j;

	while (environ != NULL && environ[n] != NULL)
		n++;
	if ((x->envp = calloc(n + cmd->nenv + 1, sizeof(*x->envp))) == NULL ||
	    (x->owned = calloc(cmd->nenv + 1, sizeof(*x->owned))) == NULL)
		return -1;
	memcpy(x->envp, environ, n * sizeof(*x->envp));
	for (k = 0; k < cmd->nenv; k++) {
		for (i = j = 0; i < n; i++)
			if (!spawn_env_is(x->envp[i], cmd->env[k].name))
				x->envp[j++] = x->envp[i];
		n = j;
		if (cmd->env[k].value == NULL)
			continue;
		if (asprintf(&x->owned[x->nowned], "%s=%s", cmd->env[k].name,
		    cmd->env[k].value) == -1)
			return -1;
		x->envp[n++] = x->owned[x->nowned++];
	}
	x->envp[n] = NULL;
	return 0;
}

/* Where execvp would look for the program, under the new $PATH. */
static int
spawn_exec_paths(struct spawn_exec *x, const struct spawn_cmd *cmd)
{
	const char *path = SPAWN_DEFAULT_PATH, *p, *end;
	size_t n = 1, i = 0;

	if (strchr(cmd->name, '/') != NULL) {
		if ((x->paths = calloc(2, sizeof(*x->paths))) == NULL ||
		    (x->paths[0] = strdup(cmd->name)) == NULL)
			return -1;
		return 0;
	}
	for (char **e = x->envp; *e != NULL; e++)
		if (spawn_env_is(*e, "PATH"))
			path = *e + 5;
	for (p = path; *p != '\0'; p++)
		n += *p == ':';
	if ((x->paths = calloc(n + 1, sizeof(*x->paths))) == NULL)
		return -1;
	for (p = path; i < n; p = end + 1) {
		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		/* An empty element is the current directory. */
		if (asprintf(&x->paths[i++], "%.*s/%s", (int)(end - p),
		    end == p ? "." : p, cmd->name) == -1) {
			x->paths[i - 1] = NULL;
			return -1;
		}
		if (*end == '\0')
			break;
	}
	return 0;
}

static void
spawn_exec_free(struct spawn_exec *x)
{
	for (size_t i = 0; i < x->nowned; i++)
		free(x->owned[i]);
	for (size_t i = 0; x->paths != NULL && x->paths[i] != NULL; i++)
		free(x->paths[i]);
	free(x->owned);
	free(x->envp);
	free(x->paths);
	free(x->sh_argv);
}

/* argv for /bin/sh running a program execve refused as no executable
   (ENOEXEC), as execvp does: its path goes in slot 1 in the child. */
static int
spawn_exec_sh_argv(struct spawn_exec *x, const struct spawn_cmd *cmd)
{
	if ((x->sh_argv = calloc(cmd->argc + 2, sizeof(*x->sh_argv))) == NULL)
		return -1;
	x->sh_argv[0] = (char *)SPAWN_SHELL;
	for (size_t i = 1; i < cmd->argc; i++)
		x->sh_argv[i + 1] = cmd->argv[i];
	return 0;
}

/* Everything the child needs, before the fork; -1 with errno. */
static int
spawn_exec_make(struct spawn_exec *x, const struct spawn_cmd *cmd)
{
	memset(x, 0, sizeof(*x));
	if (cmd->failed || spawn_exec_env(x, cmd) == -1 ||
	    spawn_exec_paths(x, cmd) == -1 || spawn_exec_sh_argv(x, cmd) == -1) {
		spawn_exec_free(x);
		errno = ENOMEM;
		return -1;
	}
	snprintf(x->msg, sizeof(x->msg), "%s: cannot run %s\n", getprogname(),
	    cmd->name);
	x->msglen = strlen(x->msg);
	return 0;
}

/* In the child: fd becomes target (and loses FD_CLOEXEC); -1 keeps ours. */
static int
spawn_move_fd(int fd, int target)
{
	if (fd == -1)
		return 0;
	if (dup2(fd, target) == -1)
		return -1;
	return close(fd);
}

/*
 * In the child: a caught signal would run the parent's handler until exec
 * (exec resets it only then), so it gets SIG_DFL before the mask opens.
 * Ignored signals stay ignored, as they would across exec.
 */
static void
spawn_reset_signals(const sigset_t *mask)
{
	struct sigaction sa, old;
	int sig;

	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++) {
		if (sigaction(sig, NULL, &old) == -1)
			continue;	/* not a signal, or SIGKILL/SIGSTOP */
		if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)
			sigaction(sig, &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, mask, NULL);
}

/* The forked child: async-signal-safe calls only, then execve. */
static void __attribute__((noreturn))
spawn_child(const struct spawn_cmd *cmd, const struct spawn_exec *x,
    int in_fd, int out_fd, int err_fd)
{
	sigset_t none;

	if (spawn_move_fd(in_fd, STDIN_FILENO) == -1 ||
	    spawn_move_fd(out_fd, STDOUT_FILENO) == -1 ||
	    spawn_move_fd(err_fd, STDERR_FILENO) == -1)
		_exit(SPAWN_SETUP_FAILED);
	sigemptyset(&none);
	spawn_reset_signals(&none);
	if (cmd->dir != NULL && chdir(cmd->dir) == -1)
		_exit(SPAWN_SETUP_FAILED);
	if (cmd->pre_exec != NULL)
		cmd->pre_exec(cmd->pre_arg);
	for (size_t i = 0; x->paths[i] != NULL; i++) {
		execve(x->paths[i], cmd->argv, x->envp);
		if (errno == ENOEXEC) {
			x->sh_argv[1] = x->paths[i];
			execve(SPAWN_SHELL, x->sh_argv, x->envp);
		}
	}
	(void)!write(STDERR_FILENO, x->msg, x->msglen);
	_exit(SPAWN_SETUP_FAILED);
}

static void
spawn_close(int fd)
{
	if (fd != -1)
		close(fd);
}

pid_t
spawn_start(struct spawn_cmd *cmd, int in_fd, int out_fd, int err_fd)
{
	struct spawn_exec x;
	sigset_t all, old;
	pid_t pid = -1;
	int saved;

	if ((in_fd >= 0 && in_fd <= 2) || (out_fd >= 0 && out_fd <= 2) ||
	    (err_fd >= 0 && err_fd <= 2)) {
		spawn_cmd_free(cmd);	/* never close a standard descriptor */
		errno = EINVAL;
		return -1;
	}
	if (spawn_exec_make(&x, cmd) == -1) {
		saved = errno;
		goto out;
	}
	/* A child that exits (a failed exec) must not write our buffers again. */
	fflush(NULL);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	/*
	 * vfork: the child borrows our memory until its execve, so a daemon
	 * with a big heap copies no page tables and takes no copy-on-write
	 * fault afterwards on every page it writes (a fork cost the daemon
	 * more than the child's start).  The child only reads what was made
	 * above and ends in execve or _exit; our thread waits meanwhile.
	 */
	if ((pid = vfork()) == 0)
		spawn_child(cmd, &x, in_fd, out_fd, err_fd);
	saved = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	spawn_exec_free(&x);
out:
	spawn_cmd_free(cmd);
	spawn_close(in_fd);
	spawn_close(out_fd);
	spawn_close(err_fd);
	errno = saved;
	return pid;
}

int
spawn_wait(pid_t pid, int *wstatus)
{
	pid_t r;

	while ((r = waitpid(pid, wstatus, 0)) == -1 && errno == EINTR)
		;
	return r == -1 ? -1 : 0;
}

int
spawn_status(int wstatus)
{
	if (WIFSIGNALED(wstatus))
		return WTERMSIG(wstatus) == SIGPIPE ? 0 : 128 + WTERMSIG(wstatus);
	return WEXITSTATUS(wstatus);
}
