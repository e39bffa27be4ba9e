/* SPDX-License-Identifier: ISC */
/*
 * trace-dump.h: shared types of qwen-trace-dump.
 *
 * The reader turns each OTLP/JSON line into struct tspan values (owned
 * copies; the JSON document is freed at once), join pairs the daemon's
 * bridge span with the child's session_restore span into a struct restore,
 * and the output modules (render, summary, export) consume restores and
 * generic spans one at a time.
 */
#ifndef QWEN_TRACE_DUMP_H
#define QWEN_TRACE_DUMP_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Telemetry names (upstream-daemon-protocol.md section 4.4). */
#define TD_DAEMON_SPAN		"qwen-code.daemon.bridge"
#define TD_CHILD_SPAN		"qwen-code.daemon.session_restore"
#define TD_RESTORE_PREFIX	"qwen-code.daemon.session_restore."
#define TD_LAG_PREFIX		"qwen-code.daemon.event_loop_lag."

enum tattr_type { TATTR_STR, TATTR_INT, TATTR_BOOL, TATTR_DOUBLE, TATTR_OTHER };

struct tattr {
	char		*key;
	enum tattr_type	 type;
	char		*s;		/* TATTR_STR */
	int64_t		 i;		/* TATTR_INT, TATTR_BOOL */
	double		 d;		/* TATTR_DOUBLE */
};

struct tevent {
	char		*name;
	uint64_t	 time_ns;
	struct tattr	*attrs;
	size_t		 nattrs;
};

struct tspan {
	char		 trace_id[33];
	char		 span_id[17];
	char		 parent_id[17];	/* "" for a root span */
	char		*name;
	char		*service;	/* resource service.name, or NULL */
	uint64_t	 start_ns;
	uint64_t	 end_ns;
	int		 status_code;
	char		*status_msg;
	struct tattr	*attrs;
	size_t		 nattrs;
	struct tevent	*events;
	size_t		 nevents;
	unsigned long	 line;		/* input line number */
	const char	*source;	/* input name, borrowed */
};

/* Free a span's contents and the span itself.  NULL-safe. */
void		 tspan_free(struct tspan *);
const struct tattr *tspan_attr(const struct tspan *, const char *key);
/* String attribute value or NULL (borrowed). */
const char	*tspan_str(const struct tspan *, const char *key);
/* Numeric attribute (int, double or numeric string) into *out: 0 or -1. */
int		 tspan_num(const struct tspan *, const char *key, double *out);
const struct tevent *tspan_event(const struct tspan *, const char *name);
const char	*tevent_str(const struct tevent *, const char *key);

struct json_object;
/* One OTLP span object into a tspan (span.c); NULL with a reason in why. */
struct tspan	*span_parse(struct json_object *, const char *service,
		    char *why, size_t whysize);

/* --- reader.c ------------------------------------------------------------ */

struct reader;
/* Called for each span; takes ownership of span. */
typedef void	 reader_span_fn(struct tspan *span, void *arg);

/* A reader over path ("-" = stdin); NULL with errno set. Caller frees. */
struct reader	*reader_open(const char *path);
void		 reader_free(struct reader *);
const char	*reader_name(const struct reader *);
/*
 * Read what is available.  With follow, a last line without its newline is
 * kept for later (not yet written); otherwise it is parsed at EOF.
 * Returns 1 at EOF, 0 when stopped (reader_set_stop), -1 on a read error.
 */
int		 reader_run(struct reader *, int follow, reader_span_fn *, void *);
/* Return from reader_run early once *flag is set (signal, closed pager). */
void		 reader_set_stop(struct reader *, volatile sig_atomic_t *flag);
/* Can the input grow (a regular file), so --follow waits on it? */
int		 reader_growable(const struct reader *);
unsigned long	 reader_malformed(const struct reader *);
/*
 * Parse one line with tok (reused per stream); spans go to fn.  Returns 0,
 * or -1 with a reason in why (the line is malformed; spans already parsed
 * from it were still passed on).
 */
struct json_tokener;
int		 reader_parse_line(struct json_tokener *tok, const char *line,
		    size_t len, const char *source, unsigned long lineno,
		    reader_span_fn *fn, void *arg, char *why, size_t whysize);

/* --- join.c -------------------------------------------------------------- */

#define TD_MAX_STAGES	32

struct stage {
	char		 name[48];
	double		 ms;
};

struct restore {
	struct tspan	*daemon;	/* owned; NULL when the child ran alone */
	struct tspan	*child;		/* owned; NULL when the child never ended */
	const char	*trace_id;
	const char	*session_id;
	const char	*channel_id;	/* borrowed, or channel_buf */
	char		 channel_buf[24];	/* a numeric channel id */
	const char	*action;	/* "load", "resume" or "?" */
	double		 budget_ms;	/* < 0 when unknown */
	uint64_t	 start_ns;
	double		 elapsed_ms;	/* until the public result */
	const char	*public_result;	/* success|failure|timeout or NULL */
	const char	*late_result;
	const char	*cleanup_result;
	const char	*settled_by;	/* a later, different cleanup result */
	int		 overdue;
	int		 partial_replay;	/* -1: not reported */
	const char	*failed_stage;
	const char	*result;	/* classification for --result */
	struct stage	 stages[TD_MAX_STAGES];
	size_t		 nstages;
	double		 transcript_bytes, chain_records, replay_records,
			 replay_bytes, malformed_lines;	/* < 0: absent */
	double		 lag_mean, lag_p50, lag_p99, lag_max;	/* < 0: absent */
};

/* Called for each complete restore (takes ownership) or generic span. */
struct join_out {
	void	(*restore)(struct restore *, void *arg);
	void	(*span)(struct tspan *, void *arg);
	void	*arg;
};

struct join;
struct join	*join_new(size_t cap, const struct join_out *);
void		 join_free(struct join *);		/* NULL-safe */
/* Feed a span (takes ownership). */
void		 join_add(struct join *, struct tspan *);
/* Emit incomplete groups that arrived before cutoff_ns (mono); all if 0. */
void		 join_flush(struct join *, uint64_t cutoff_mono_ns);
unsigned long	 join_evicted(const struct join *);
size_t		 join_pending(const struct join *);
void		 record_free(struct restore *);	/* NULL-safe */
/* Build a restore from its spans (either may be NULL; takes ownership). */
struct restore	*record_build(struct tspan *daemon, struct tspan *child);

/* --- render.c ------------------------------------------------------------ */

struct render_opts {
	int	color;
	int	width;		/* bar width in columns */
};
void	render_restore(FILE *, const struct restore *, const struct render_opts *);
void	render_span(FILE *, const struct tspan *, const struct render_opts *);
/* Format an epoch-ns time as ISO 8601 UTC with microseconds. */
void	render_time(uint64_t ns, char *buf, size_t size);

/* --- summary.c ----------------------------------------------------------- */

struct summary;
struct summary	*summary_new(void);
void		 summary_free(struct summary *);	/* NULL-safe */
void		 summary_add(struct summary *, const struct restore *);
void		 summary_add_span(struct summary *, const struct tspan *);
void		 summary_print(FILE *, struct summary *, unsigned long malformed,
		    unsigned long evicted);
/* Nearest-rank percentile of a sorted array (p in 0..100). */
double		 summary_percentile(const double *sorted, size_t n, double p);

/* --- export.c ------------------------------------------------------------ */

/* One JSON object per line.  Caller frees the json text. */
void	export_json_restore(FILE *, const struct restore *);
void	export_json_span(FILE *, const struct tspan *);

struct chrome;
struct chrome	*export_chrome_new(FILE *);
void		 export_chrome_restore(struct chrome *, const struct restore *);
void		 export_chrome_span(struct chrome *, const struct tspan *);
/* Close the document and free.  NULL-safe. */
void		 export_chrome_finish(struct chrome *);

/* --- svg.c: --format svg, the restore timeline as one SVG picture ------- */
struct svg;
struct svg	*svg_new(FILE *);	/* NULL without a memory stream */
void		 svg_restore(struct svg *, const struct restore *);
/* Write the document (the rows are held until now) and free.  NULL-safe. */
void		 svg_finish(struct svg *);

/* --- output.c ----------------------------------------------------------- */

enum td_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_CHROME, FORMAT_SVG };

struct td_opts {
	const char	*session;
	const char	*trace;		/* lowercase prefix */
	uint64_t	 since_ns;	/* 0: none */
	const char	*result;
	size_t		 slowest;	/* 0: all */
	enum td_format	 format;
	int		 summary;
	int		 follow;
	uint64_t	 linger_ms;	/* --follow: wait for a missing half */
	int		 pager;		/* allowed (no --no-pager) */
};

struct output;
/* Start the output on stdout, through $PAGER when on a terminal. */
struct output	*output_new(const struct td_opts *);
/* Sink a restore / generic span (takes ownership). */
void		 output_restore(struct restore *, void *output);
void		 output_span(struct tspan *, void *output);
/* Has the reader of our output gone (pager quit)? */
int		 output_closed(const struct output *);
void		 output_flush(struct output *);
#define TD_EXIT_NOMATCH	3	/* a filter was given and no restore matched */
/*
 * Emit what is held (--slowest, --summary, chrome trailer), the text
 * view's other spans, wait for the pager and free.  Returns 0, 1 (a write
 * or pager failure, reported) or TD_EXIT_NOMATCH.
 */
int		 output_finish(struct output *, unsigned long malformed,
		    unsigned long evicted);

/* --- since.c ------------------------------------------------------------ */

/* Parse ISO 8601 or a relative "10m" (before now_ns) into epoch ns. */
int	since_parse(const char *s, uint64_t now_ns, uint64_t *out);

#endif
