/* SPDX-License-Identifier: ISC */
/*
 * approval.h: qwen-code's approval modes, the ones upstream's daemon and
 * agent accept (plan, default, auto-edit, auto, yolo), in their order.
 */
#ifndef QWEN_APPROVAL_H
#define QWEN_APPROVAL_H

/* The modes, NULL-ended. */
extern const char *const approval_modes[];

/* 1 when mode (may be NULL) is one of them. */
int	approval_mode_known(const char *mode);

#endif
