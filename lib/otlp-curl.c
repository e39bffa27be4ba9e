/* SPDX-License-Identifier: ISC */
/*
 * otlp-curl.c: libcurl, loaded when an OTLP export starts.
 *
 * Linking libcurl costs every process that links libqwen's exporter its
 * thirty-odd shared libraries at each start (TLS, IDN, LDAP, HTTP/2, ...)
 * even when nothing is exported, and qwen-acp-child starts for every
 * request on a session that is not live.  So the exporter reaches libcurl
 * through this table, filled by dlopen() the first time an export is
 * configured; a process without OTLP never maps it.
 */
#include "config.h"

#include <dlfcn.h>
#include <stddef.h>

#include "cause.h"
#include "otlp-int.h"

#define OTLP_CURL_SONAME	"libcurl.so.4"

struct otlp_curl	otlp_curl;

/* One symbol of libcurl into *slot; -1 when it is missing. */
static int
otlp_curl_sym(void *h, const char *name, void *slot)
{
	void	*p;

	if ((p = dlsym(h, name)) == NULL)
		return -1;
	*(void **)slot = p;
	return 0;
}

/*
 * Load libcurl and fill otlp_curl, once (the first export to start does
 * it, on the main thread, before any worker).  0, or -1 with *cause.
 */
int
otlp_curl_load(char **cause)
{
	static int	 loaded;
	void		*h;
	const char	*e;

	if (loaded)
		return 0;
	if ((h = dlopen(OTLP_CURL_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		e = dlerror();
		return cause_set(cause, "OTLP export: cannot load %s: %s",
		    OTLP_CURL_SONAME, e != NULL ? e : "unknown error");
	}
	if (otlp_curl_sym(h, "curl_global_init", &otlp_curl.global_init) ||
	    otlp_curl_sym(h, "curl_easy_init", &otlp_curl.easy_init) ||
	    otlp_curl_sym(h, "curl_easy_setopt", &otlp_curl.easy_setopt) ||
	    otlp_curl_sym(h, "curl_easy_perform", &otlp_curl.easy_perform) ||
	    otlp_curl_sym(h, "curl_easy_getinfo", &otlp_curl.easy_getinfo) ||
	    otlp_curl_sym(h, "curl_easy_cleanup", &otlp_curl.easy_cleanup) ||
	    otlp_curl_sym(h, "curl_easy_strerror", &otlp_curl.easy_strerror) ||
	    otlp_curl_sym(h, "curl_easy_unescape", &otlp_curl.easy_unescape) ||
	    otlp_curl_sym(h, "curl_free", &otlp_curl.free) ||
	    otlp_curl_sym(h, "curl_slist_append", &otlp_curl.slist_append) ||
	    otlp_curl_sym(h, "curl_slist_free_all",
	    &otlp_curl.slist_free_all)) {
		dlclose(h);
		return cause_set(cause, "OTLP export: %s lacks a function",
		    OTLP_CURL_SONAME);
	}
	loaded = 1;	/* never closed: the worker threads use it to the end */
	return 0;
}
