/* SPDX-License-Identifier: ISC */
/*
 * child-cmd.c: what a workspace child is started as.  Either our own
 * qwen-acp-child (--child, given our options), or any ACP agent
 * (--child-command 'CMD ARGS', split without a shell, run as is).  Either
 * way it gets what upstream's daemon gives its child: the workspace as
 * cwd, the private-parent secret in QWEN_CODE_PRIVATE_ACP_CAPABILITY,
 * QWEN_CODE_NO_RELAUNCH=true and QWEN_CODE_SERVE=1, and our environment
 * minus our secrets and the loader variables (an LD_PRELOAD or a
 * NODE_OPTIONS meant for the daemon's own start must not ride into an
 * agent that runs tools).  The agent's configuration (endpoint, keys,
 * settings) is its own business: we pass the environment, read none of it.
 */
#include "config.h"

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "argv.h"
#include "channel-int.h"

extern char **environ;

/* qwen-acp-child's own default session cap (its --max-sessions). */
#define CHILD_CMD_MAX_SESSIONS	4096

/* Secrets of ours or upstream's that no child may see. */
static const char *const scrubbed[] = {
	"QWEN_SERVER_TOKEN", "QWEN_DAEMON_TOKEN",
	"QWEN_CODE_EXTERNAL_TOOL_GUARD_TOKEN", "QWEN_CODE_SIMPLE",
	"QWEN_ACP_PARENT_CAPABILITY", "NODE_OPTIONS",
};

/* Loader variables: ld.so's (LD_PRELOAD, LD_AUDIT, ...) and dyld's. */
static int
is_loader_var(const char *entry)
{
	return strncmp(entry, "LD_", 3) == 0 || strncmp(entry, "DYLD_", 5) == 0;
}

void
child_cmd_option(const char *line)
{
	char *cause = NULL, **v;

	if (argv_split(line, &v, &cause) == -1)
		errx(2, "--child-command: %s", cause != NULL ? cause : "out of memory");
	argv_free(conf.child_argv);
	conf.child_argv = v;
}

/* One line on stderr and exit 2. */
static void __attribute__((noreturn))
usage_conflict(const char *what)
{
	errx(2, "%s", what);
}

void
child_cmd_check(void)
{
	if (conf.agent_acp != NULL && conf.agent_command != NULL)
		usage_conflict("--agent-acp and --agent-command are exclusive");
	if (conf.child_argv == NULL)
		return;
	if (conf.child_path != NULL)
		usage_conflict("--child and --child-command are exclusive");
	if (conf.agent_command != NULL || conf.agent_acp != NULL)
		usage_conflict("--agent-command and --agent-acp are options of "
		    "qwen-acp-child; they do not apply to --child-command");
}

char *
child_cmd_describe(void)
{
	char *out = NULL;

	if (conf.child_argv != NULL)
		return argv_join(conf.child_argv);
	if (asprintf(&out, "%s --workspace %s%s%s", conf.child_path,
	    conf.workspace, conf.data_dir != NULL ? " --data-dir " : "",
	    conf.data_dir != NULL ? conf.data_dir : "") == -1)
		return NULL;
	return out;
}

/* "FLAG VALUE" on cmd, when the setting has a value. */
static void
child_cmd_opt(struct spawn_cmd *cmd, const char *flag, const char *value)
{
	if (value != NULL) {
		spawn_cmd_arg(cmd, flag);
		spawn_cmd_arg(cmd, value);
	}
}

/*
 * The child's own session cap: --child-max-sessions, else never below
 * what the daemon may hold in one workspace (nor below the child's 4096).
 */
static int
child_cmd_max_sessions(void)
{
	int n = CHILD_CMD_MAX_SESSIONS;

	if (conf.child_max_sessions >= 0)
		return conf.child_max_sessions;
	if (conf.max_sessions > n)
		n = conf.max_sessions;
	if (conf.max_total_sessions > n)
		n = conf.max_total_sessions;
	return n;
}

/* Our own child's argument vector. */
static struct spawn_cmd *
acp_child_command(const char *workspace)
{
	struct spawn_cmd *cmd = spawn_cmd_new(conf.child_path);
	char max[16];

	child_cmd_opt(cmd, "--workspace", workspace);
	child_cmd_opt(cmd, "--data-dir", conf.data_dir);
	child_cmd_opt(cmd, "--cache-dir", conf.cache_dir);
	child_cmd_opt(cmd, "--agent-command", conf.agent_command);
	child_cmd_opt(cmd, "--agent-acp", conf.agent_acp);
	if (conf.agent_acp != NULL && !conf.agent_prestart)
		child_cmd_opt(cmd, "--agent-prestart", "no");
	if (conf.agent_acp != NULL && !conf.agent_compact)
		child_cmd_opt(cmd, "--agent-compact", "no");
	child_cmd_opt(cmd, "--otlp-endpoint", conf.otlp_endpoint);
	child_cmd_opt(cmd, "--trace-file", conf.trace_file);
	snprintf(max, sizeof(max), "%d", child_cmd_max_sessions());
	child_cmd_opt(cmd, "--max-sessions", max);
	return cmd;
}

/* Take our secrets and the loader variables out of the child's env. */
static void
scrub_env(struct spawn_cmd *cmd)
{
	char name[256];
	size_t n;

	for (size_t i = 0; i < sizeof(scrubbed) / sizeof(scrubbed[0]); i++)
		spawn_cmd_unsetenv(cmd, scrubbed[i]);
	for (char **e = environ; *e != NULL; e++) {
		if (!is_loader_var(*e) || (n = strcspn(*e, "=")) >= sizeof(name))
			continue;
		memcpy(name, *e, n);
		name[n] = '\0';
		spawn_cmd_unsetenv(cmd, name);
	}
}

struct spawn_cmd *
child_cmd_new(const char *workspace, const char *secret)
{
	struct spawn_cmd *cmd;

	if (conf.child_argv != NULL) {
		cmd = spawn_cmd_new(conf.child_argv[0]);
		for (char **a = conf.child_argv + 1; *a != NULL; a++)
			spawn_cmd_arg(cmd, *a);
	} else
		cmd = acp_child_command(workspace);
	spawn_cmd_chdir(cmd, workspace);
	scrub_env(cmd);		/* first: the operations run in order */
	spawn_cmd_setenv(cmd, "QWEN_CODE_PRIVATE_ACP_CAPABILITY", secret);
	spawn_cmd_setenv(cmd, "QWEN_CODE_NO_RELAUNCH", "true");
	spawn_cmd_setenv(cmd, "QWEN_CODE_SERVE", "1");
	if (conf.child_argv == NULL)	/* the name older qwen-acp-child builds read */
		spawn_cmd_setenv(cmd, "QWEN_ACP_PARENT_CAPABILITY", secret);
	return cmd;
}
