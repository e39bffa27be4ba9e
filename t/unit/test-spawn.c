/* SPDX-License-Identifier: ISC */
/*
 * test-spawn.c: lib/spawn.c, our fork and exec: the pipes, the command's
 * environment and directory, $PATH, exit statuses as pipeline_wait()
 * gives them, the signal state the command starts with, and no
 * allocation between fork and exec.  (A failing fork is
 * t/2503 and t/2504, with the failfork shim.)
 */
#include "config.h"

#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spawn.h"
#include "tap.h"

/*
 * Between fork and exec the child may call only async-signal-safe
 * functions: malloc in it can deadlock on a lock another thread of the
 * parent held at the fork.  This program's own malloc, calloc and realloc
 * (they take the place of libc's) end any process but the test's own with
 * status 99, so an allocation in a spawned child shows as its exit status.
 * (Sanitizers bring their own allocator: not there.)
 */
#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
static pid_t test_pid;

static void
spawn_alloc_check(void)
{
	static const char msg[] = "test-spawn: malloc between fork and exec\n";

	if (test_pid != 0 && getpid() != test_pid) {
		(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
		_exit(99);
	}
}

void *
malloc(size_t n)
{
	spawn_alloc_check();
	return __libc_malloc(n);
}

void *
calloc(size_t n, size_t size)
{
	spawn_alloc_check();
	return __libc_calloc(n, size);
}

void *
realloc(void *p, size_t n)
{
	spawn_alloc_check();
	return __libc_realloc(p, n);
}
#endif

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
run_sh(const char *script, void (*hook)(void *))
{
	struct spawn_cmd *cmd = spawn_cmd_new_args("/bin/sh", "-c", script, (void *)NULL);
	pid_t pid;
	int st;

	if (hook != NULL)
		spawn_cmd_pre_exec(cmd, hook, NULL);
	if ((pid = spawn_start(cmd, -1, -1, -1)) == -1 || spawn_wait(pid, &st) == -1)
		return -1;
	return spawn_status(st);
}

static void
test_pipes_env(void)
{
	int in[2], out[2], st = -1;
	char buf[64];
	ssize_t n, got = 0;
	struct spawn_cmd *cmd;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		return;
	cmd = spawn_cmd_new_args("/bin/sh", "-c", "read x; echo \"$x $SPAWN_T\"",
	    (void *)NULL);
	spawn_cmd_setenv(cmd, "SPAWN_T", "env-ok");
	pid = spawn_start(cmd, in[0], out[1], -1);
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

/* Read fd to its end into buf (size bytes, NUL-terminated). */
static void
read_all(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t n;

	while (got < size - 1 && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/*
 * A bare name is looked up on the command's own $PATH (set in the
 * parent, no allocation in the child), argv[0] is the name's last
 * component, the directory changes, removals and settings apply in order.
 */
static void
test_path_dir_env(void)
{
	struct spawn_cmd *cmd;
	char buf[256];
	int out[2], st = -1;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) == -1)
		return;
	setenv("SPAWN_GONE", "still here", 1);
	cmd = spawn_cmd_new_args("sh", "-c",
	    "pwd; echo \"$0 ${SPAWN_GONE-gone} $SPAWN_TWICE\"", (void *)NULL);
	spawn_cmd_setenv(cmd, "PATH", "/nonexistent:/bin:/usr/bin");
	spawn_cmd_unsetenv(cmd, "SPAWN_GONE");
	spawn_cmd_setenv(cmd, "SPAWN_TWICE", "first");
	spawn_cmd_setenv(cmd, "SPAWN_TWICE", "second");
	spawn_cmd_chdir(cmd, "/");
	pid = spawn_start(cmd, -1, out[1], -1);
	read_all(out[0], buf, sizeof(buf));
	spawn_wait(pid, &st);
	is_str(buf, "/\nsh gone second\n", "$PATH, argv[0], directory, environment");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status 0");
	cmd = spawn_cmd_new_args("/bin/sh", "-c", "exit 0", (void *)NULL);
	spawn_cmd_chdir(cmd, "/nonexistent");
	pid = spawn_start(cmd, -1, -1, -1);
	spawn_wait(pid, &st);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 255,
	    "a directory it cannot change to: 255");
	unsetenv("SPAWN_GONE");
}

/*
 * A program without a #! line (execve says ENOEXEC) runs under /bin/sh
 * with its arguments, as execvp and libpipeline ran it, found by path
 * or on $PATH.
 */
static void
test_no_shebang(void)
{
	char dir[] = "/tmp/test-spawn.XXXXXX", path[64], buf[128];
	struct spawn_cmd *cmd;
	int fd, out[2], st = -1;
	pid_t pid;

	if (mkdtemp(dir) == NULL)
		return;
	snprintf(path, sizeof(path), "%s/plain", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755)) == -1)
		return;
	if (write(fd, "echo \"$0 $1 $2\"; exit 6\n", 24) != 24)
		diag("write %s failed", path);
	close(fd);
	if (pipe2(out, O_CLOEXEC) == -1)
		return;
	pid = spawn_start(spawn_cmd_new_args(path, "a b", "c", (void *)NULL),
	    -1, out[1], -1);
	read_all(out[0], buf, sizeof(buf));
	spawn_wait(pid, &st);
	ok(strstr(buf, "/plain a b c\n") != NULL, "a script without #! runs under "
	    "/bin/sh with its arguments");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 6, "its exit status");
	cmd = spawn_cmd_new("plain");
	spawn_cmd_setenv(cmd, "PATH", dir);
	pid = spawn_start(cmd, -1, open("/dev/null", O_WRONLY | O_CLOEXEC), -1);
	spawn_wait(pid, &st);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 6, "found on $PATH too");
	unlink(path);
	rmdir(dir);
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

	pid = spawn_start(spawn_cmd_new("/nonexistent/spawn-test"), -1, -1, -1);
	ok(pid > 0, "a missing program still forks");
	spawn_wait(pid, &st);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 255,
	    "and its child exits 255, as libpipeline's does");
	pid = spawn_start(spawn_cmd_new("/bin/true"), STDOUT_FILENO, -1, -1);
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
#ifndef __SANITIZE_ADDRESS__
	test_pid = getpid();
#endif
	test_pipes_env();
	test_path_dir_env();
	test_status();
	test_exec_fails();
	test_no_shebang();
	test_signals();
	return done_testing();
}
