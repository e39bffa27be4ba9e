/* SPDX-License-Identifier: ISC */
/*
 * otlp-int.h: the OTLP exporter's state, shared by otlp.c (the queue and
 * the worker) and otlp-conf.c (the settings from the environment).
 */
#ifndef QWEN_OTLP_INT_H
#define QWEN_OTLP_INT_H

#include <sys/queue.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "otlp.h"

#define OTLP_LOG_EVERY_MS	10000
#define OTLP_STOP_GRACE_MS	1000
#define OTLP_LINE_MAX		(1024 * 1024)

struct oline {
	TAILQ_ENTRY(oline)	 entry;
	char			*text;
	size_t			 len;
};

struct otlp {
	char			*url;
	char			*service;	/* OTEL_SERVICE_NAME, else the program */
	json_object		*attrs;		/* OTEL_RESOURCE_ATTRIBUTES */
	struct curl_slist	*headers;
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	TAILQ_HEAD(, oline)	 q;
	size_t			 nq;
	int			 stop;
	uint64_t		 stop_ms;	/* when stop was asked */
	size_t			 qmax;		/* OTEL_BSP_MAX_QUEUE_SIZE */
	size_t			 batch_max;	/* ..._MAX_EXPORT_BATCH_SIZE */
	long			 delay_ms;	/* OTEL_BSP_SCHEDULE_DELAY */
	long			 timeout_ms;	/* OTEL_EXPORTER_OTLP_TIMEOUT */
	struct otlp_stats	 st;
	uint64_t		 logged_ms;
	uint64_t		 logged_lost;	/* dropped + failed when logged */
	char			 last_err[CURL_ERROR_SIZE];
};

/*
 * libcurl's functions the exporter calls, filled by otlp_curl_load()
 * (otlp-curl.c) when the first export starts: no process maps libcurl
 * unless it exports.
 */
struct otlp_curl {
	CURLcode	 (*global_init)(long);
	CURL		*(*easy_init)(void);
	CURLcode	 (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode	 (*easy_perform)(CURL *);
	CURLcode	 (*easy_getinfo)(CURL *, CURLINFO, ...);
	void		 (*easy_cleanup)(CURL *);
	const char	*(*easy_strerror)(CURLcode);
	char		*(*easy_unescape)(CURL *, const char *, int, int *);
	void		 (*free)(void *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void		 (*slist_free_all)(struct curl_slist *);
};

/* ---- otlp-curl.c ---- */
extern struct otlp_curl otlp_curl;
int	otlp_curl_load(char **cause);

/* ---- otlp-conf.c ---- */
/* The settings of o from the environment (see otlp.h).  0, or -1 + *cause. */
int	otlp_conf_load(struct otlp *o, const char *service, char **cause);

#endif
