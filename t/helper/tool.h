/* SPDX-License-Identifier: ISC */
/* tool.h: the subcommands of qwen-test-tool. */
#ifndef QWEN_TOOL_H
#define QWEN_TOOL_H

int	tool_frame(int argc, char **argv);
int	tool_errors(int argc, char **argv);
int	tool_budget(int argc, char **argv);
int	tool_trace(int argc, char **argv);

#endif
