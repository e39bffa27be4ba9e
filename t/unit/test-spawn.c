/*
 * test-spawn.c: lib/spawn.c, our fork with libpipeline's exec: the pipes,
 * the command's environment, exit statuses as pipeline_wait() gives them,
 * and the signal state the command starts with.  (A failing fork is
 * t/2503 and t/2504, with the failfork shim.)
 */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"
#include "tap.h"

static void
on_usr1(int sig)
{
	(void)sig;
}

/* A pre-exec hook: a SIGUSR1 that a parent's handler must not catch. */
static void
raise_usr1(void *arg)
{
	(void)arg;
	raise(SIGUSR1);
}

/* Run sh -c script to the end; its spawn_status(), or -1. */
static int
run_sh(const char *script, pipecmd_function_type *hook)
{
	pipecmd *cmd = pipecmd_new_args("/bin/sh", "-c", script, (void *)NULL);
	pid_t pid;
	int st;

	if (hook != NULL)
		pipecmd_pre_exec(cmd, hook, NULL, NULL);
	if ((pid = spawn_cmd(cmd, -1, -1, -1)) == -1 || spawn_wait(pid, &st) == -1)
		return -1;
	return spawn_status(st);
}

static void
test_pipes_env(void)
{
	int in[2], out[2], st = -1;
	char buf[64];
	ssize_t n, got = 0;
	pipecmd *cmd;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		return;
	cmd = pipecmd_new_args("/bin/sh", "-c", "read x; echo \"$x $SPAWN_T\"",
	    (void *)NULL);
	pipecmd_setenv(cmd, "SPAWN_T", "env-ok");
	pid = spawn_cmd(cmd, in[0], out[1], -1);
	ok(pid > 0, "spawn_cmd starts the command");
	ok(fcntl(in[0], F_GETFD) == -1 && errno == EBADF,
	    "the child's stdin end is closed in the parent");
	ok(fcntl(out[1], F_GETFD) == -1 && errno == EBADF,
	    "the child's stdout end is closed in the parent");
	ok(write(in[1], "hello\n", 6) == 6, "write its stdin");
	close(in[1]);
	while ((n = read(out[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got < 0 ? 0 : got] = '\0';
	close(out[0]);
	is_str(buf, "hello env-ok\n", "stdin, stdout and the environment change");
	is_int(spawn_wait(pid, &st), 0, "spawn_wait reaps it");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0");
}

static void
test_status(void)
{
	is_int(run_sh("exit 7", NULL), 7, "an exit status as it is");
	is_int(run_sh("kill -KILL $$", NULL), 128 + SIGKILL, "a signal: 128 + it");
	is_int(run_sh("kill -PIPE $$", NULL), 0, "SIGPIPE counts as 0");
}

static void
test_exec_fails(void)
{
	pid_t pid;
	int st = 0, err;

	pid = spawn_cmd(pipecmd_new("/nonexistent/spawn-test"), -1, -1, -1);
	ok(pid > 0, "a missing program still forks");
	spawn_wait(pid, &st);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 255,
	    "and its child exits 255, as libpipeline's does");
	pid = spawn_cmd(pipecmd_new("/bin/true"), STDOUT_FILENO, -1, -1);
	err = errno;
	is_int(pid, -1, "a standard descriptor as a pipe end is refused");
	is_int(err, EINVAL, "with EINVAL");
	is_int(spawn_wait(getpid(), &st), -1, "spawn_wait on no child fails");
}

/*
 * Until exec the child has our handlers: a signal then must not run them
 * (in the daemon they write to libevent's signal socket, which the child
 * shares).  And the command starts with nothing blocked.
 */
static void
test_signals(void)
{
	struct sigaction sa;
	sigset_t term, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	is_int(run_sh("exit 3", raise_usr1), 128 + SIGUSR1,
	    "a signal before exec takes its default action, not our handler");
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &old);
	is_int(run_sh("kill -TERM $$; exit 3", NULL), 128 + SIGTERM,
	    "a signal we block is not blocked in the command");
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int
main(void)
{
	signal(SIGPIPE, SIG_DFL);	/* whatever the harness left */
	test_pipes_env();
	test_status();
	test_exec_fails();
	test_signals();
	return done_testing();
}
