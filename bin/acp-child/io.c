/* SPDX-License-Identifier: ISC */
/*
 * io.c: stdin and stdout of qwen-acp-child.
 *
 * stdin is read into the NDJSON reader and each message dispatched;
 * answers and notifications queue in one output buffer written as stdout
 * accepts them.  Past CHILD_OUT_HIGH queued bytes stdin and agent output
 * are no longer read until the buffer drains below CHILD_OUT_LOW.  A
 * regular file or /dev/null (which epoll refuses) is read or written
 * directly.
 */
#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "child.h"
#include "log.h"
#include "utf8.h"
#include "xmalloc.h"

#define IN_READ_SIZE	65536
#define IN_READS_PER_CB	16

static void	child_in_resume(struct child *);

/* Write what the output buffer holds; -1 when stdout is gone. */
int
child_flush(struct child *c)
{
	while (evbuffer_get_length(c->out) > 0) {
		int n = evbuffer_write(c->out, STDOUT_FILENO);
		if (n > 0)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EINTR) && !c->out_direct)
			return 0;
		if (n == -1 && errno == EINTR)
			continue;
		log_warnx("stdout closed (%s): dropping output", strerror(errno));
		c->out_dead = 1;
		evbuffer_drain(c->out, evbuffer_get_length(c->out));
		return -1;
	}
	return 0;
}

/* After output drained: read input again, wake paused agents. */
static void
child_after_write(struct child *c)
{
	if (evbuffer_get_length(c->out) <= CHILD_OUT_LOW) {
		if (c->in_paused)
			child_in_resume(c);
		child_pause_producers(c, 0);
	}
	if (c->out_dead && !c->closing)
		child_begin_shutdown(c);
	else
		child_check_done(c);
}

static void
child_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;

	(void)fd;
	(void)what;
	child_flush(c);
	if (evbuffer_get_length(c->out) == 0)
		event_del(c->ev_out);
	child_after_write(c);
}

static void
child_free_ref(const void *data, size_t len, void *extra)
{
	(void)data;
	(void)len;
	free(extra);
}

void
child_send_raw(struct child *c, char *buf, size_t len)
{
	child_send_ref(c, buf, 0, len);
}

void
child_send_ref(struct child *c, char *base, size_t off, size_t len)
{
	if (c->out_dead || evbuffer_add_reference(c->out, base + off, len,
	    child_free_ref, base) == -1) {
		free(base);
		return;
	}
	if (c->out_direct) {
		child_flush(c);
		return;
	}
	event_add(c->ev_out, NULL);
}

/*
 * json-c copies string bytes as they are: a message that carries invalid
 * UTF-8 (read from a transcript) gets U+FFFD for each bad byte, or the
 * daemon's framer would reject the line.  Takes line; NULL on OOM.
 */
static char *
child_clean_line(char *line, size_t *len)
{
	struct utf8_carry carry = { { 0 }, 0 };
	char *clean;

	clean = utf8_clean(&carry, line, *len, 1, len);
	free(line);
	return clean;
}

void
child_send(struct child *c, json_object *msg)
{
	char *line;
	size_t len;

	line = msg != NULL ? rpc_encode(msg, &len) : NULL;
	json_object_put(msg);
	if (line != NULL && !utf8_valid(line, len))
		line = child_clean_line(line, &len);
	if (line == NULL) {
		log_warnx("cannot encode an outgoing message");
		return;
	}
	child_send_raw(c, line, len);
}

void
child_send_error(struct child *c, json_object *id, int code, const char *message,
    json_object *data)
{
	child_send(c, rpc_new_error(json_object_get(id), code, message, data));
}

void
child_send_result(struct child *c, json_object *id, json_object *result)
{
	child_send(c, rpc_new_result(json_object_get(id), result));
}

/* {errorKind: kind}; caller owns. */
json_object *
child_error_data(const char *kind)
{
	json_object *o = xjson_object_new_object();

	json_object_object_add(o, "errorKind", xjson_object_new_string(kind));
	return o;
}

/* The ACP "Resource not found" error for a session id. */
void
child_send_not_found(struct child *c, json_object *id, const char *sid)
{
	char msg[96], uri[64];
	json_object *data;

	snprintf(uri, sizeof(uri), "session:%s", sid);
	snprintf(msg, sizeof(msg), "Resource not found: %s", uri);
	data = xjson_object_new_object();
	json_object_object_add(data, "uri", xjson_object_new_string(uri));
	child_send_error(c, id, RPC_RESOURCE_NOT_FOUND, msg, data);
}

int
child_out_full(const struct child *c)
{
	return evbuffer_get_length(c->out) > CHILD_OUT_HIGH;
}

/* Hand every complete message (or bad frame) to the dispatcher. */
static void
child_drain_reader(struct child *c, int at_eof)
{
	struct rpc_msg msg;
	struct rpc_bad bad;
	enum rpc_read_status st;

	memset(&msg, 0, sizeof(msg));
	memset(&bad, 0, sizeof(bad));
	for (;;) {
		st = at_eof ? rpc_reader_finish(c->reader, &msg, &bad) :
		    rpc_reader_next(c->reader, &msg, &bad);
		if (st == RPC_READ_MORE)
			break;
		if (st == RPC_READ_MSG)
			c->ops->dispatch(c, &msg);
		else {
			log_info("bad input line %zu: %s", bad.line_no, bad.message);
			child_send(c, rpc_new_bad_error(&bad));
			rpc_bad_clear(&bad);
		}
		at_eof = 0;	/* finish yields at most the unterminated tail */
	}
}

static void
child_in_pause(struct child *c)
{
	if (c->in_paused)
		return;
	c->in_paused = 1;
	event_del(c->ev_in);
}

static void
child_in_resume(struct child *c)
{
	struct timeval zero = { 0, 0 };

	if (!c->in_paused || c->in_eof || c->closing)
		return;
	c->in_paused = 0;
	if (c->in_direct)
		event_add(c->ev_in, &zero);
	else
		event_add(c->ev_in, NULL);
}

static void
child_in_cb(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	char buf[IN_READ_SIZE];
	struct timeval zero = { 0, 0 };
	ssize_t n;
	int i;

	(void)fd;
	(void)what;
	for (i = 0; i < IN_READS_PER_CB && !c->in_eof && !c->in_paused; i++) {
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			if (n == -1)
				log_warn("stdin");
			c->in_eof = 1;
			event_del(c->ev_in);
			child_drain_reader(c, 1);
			log_debug("stdin closed: shutting down");
			child_begin_shutdown(c);
			return;
		}
		if (rpc_reader_feed(c->reader, buf, (size_t)n) == -1) {
			log_warnx("out of memory reading stdin");
			c->exit_code = 1;
			child_begin_shutdown(c);
			return;
		}
		child_drain_reader(c, 0);
		if (child_out_full(c))
			child_in_pause(c);
	}
	if (c->in_direct && !c->in_eof && !c->in_paused && !c->closing)
		event_add(c->ev_in, &zero);
}

/* A pollable fd gets a normal event; a regular file or /dev/null is read
   or written directly (epoll refuses them). */
static int
child_pollable(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == -1)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode) ?
	    !(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1) : 0;
}

int
child_setup_io(struct child *c)
{
	struct timeval zero = { 0, 0 };

	c->in_direct = !child_pollable(STDIN_FILENO);
	c->out_direct = !child_pollable(STDOUT_FILENO);
	if (!c->in_direct)
		fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
	if (!c->out_direct) {
		fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) | O_NONBLOCK);
		/* A bulk answer is megabytes: move it in fewer, larger pieces. */
		fcntl(STDOUT_FILENO, F_SETPIPE_SZ, 1 << 20);
	}
	c->ev_in = c->in_direct ? evtimer_new(c->base, child_in_cb, c) :
	    event_new(c->base, STDIN_FILENO, EV_READ | EV_PERSIST, child_in_cb, c);
	c->ev_out = event_new(c->base, STDOUT_FILENO, EV_WRITE | EV_PERSIST,
	    child_out_cb, c);
	if (c->ev_in == NULL || c->ev_out == NULL)
		return -1;
	return event_add(c->ev_in, c->in_direct ? &zero : NULL);
}

