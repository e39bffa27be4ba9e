/* SPDX-License-Identifier: ISC */
/*
 * trace-int.h: the span recorder's data, shared by trace-span.c (building
 * spans) and trace.c (encoding and writing them).  Not for other modules.
 */
#ifndef QWEN_TRACE_INT_H
#define QWEN_TRACE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

enum attr_type {
	ATTR_STR,
	ATTR_INT,
	ATTR_BOOL,
	ATTR_DOUBLE,
};

struct span_attr {
	char		*key;
	enum attr_type	 type;
	union {
		char	*s;
		int64_t	 i;
		int	 b;
		double	 d;
	} v;
};

struct attr_list {
	struct span_attr *v;
	size_t		 n;
	size_t		 cap;
	size_t		 max;
	uint32_t	 dropped;
};

struct span_event {
	char		*name;
	uint64_t	 time_ns;
	struct attr_list attrs;
};

struct span {
	struct trace_ctx ctx;
	uint8_t		 parent_id[8];
	int		 has_parent;
	char		*name;
	enum span_kind	 kind;
	uint64_t	 start_ns;	/* wall clock */
	uint64_t	 start_mono_ns;
	uint64_t	 end_ns;	/* wall clock; 0 while open */
	struct attr_list attrs;
	struct span_event *events;
	size_t		 nevents;
	size_t		 evcap;
	int		 cur_event;	/* last event accepts attributes */
	uint32_t	 dropped_events;
	enum span_status status;
	char		*status_msg;
	size_t		 bytes;		/* string bytes held */
};

/* Wall time now, measured as the span's start plus elapsed monotonic time. */
uint64_t	span_now_ns(const struct span *);

#endif
