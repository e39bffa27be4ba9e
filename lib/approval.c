/* SPDX-License-Identifier: ISC */
/*
 * approval.c: qwen-code's approval modes (approval.h).
 */
#include "config.h"

#include <string.h>

#include "approval.h"

const char *const approval_modes[] = { "plan", "default", "auto-edit", "auto", "yolo",
    NULL };

int
approval_mode_known(const char *mode)
{
	size_t	i;

	for (i = 0; mode != NULL && approval_modes[i] != NULL; i++)
		if (strcmp(mode, approval_modes[i]) == 0)
			return 1;
	return 0;
}
