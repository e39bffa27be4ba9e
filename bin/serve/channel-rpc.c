/* SPDX-License-Identifier: ISC */
/*
 * channel-rpc.c: the JSON-RPC traffic with a qwen-acp-child: requests
 * multiplexed with lib/rpc-pending (ids, deadlines), answers matched to
 * their callers, session/update notifications routed to sessions, the
 * child's own requests answered, its stderr copied into the log.  The
 * child's output is taken in batches so that a flood never starves the
 * event streams.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "channel-int.h"
#include "clock.h"
#include "log.h"
#include "rpc-frame.h"
#include "rpc-pending.h"
#include "xmalloc.h"

/* ---- requests ----------------------------------------------------------- */

void
channel_arm_deadline(struct channel *ch)
{
	uint64_t next = rpc_pending_next_deadline(ch->pending), now = clock_mono_ms();
	struct timeval tv;

	if (next == 0) {
		event_del(ch->deadline_ev);
		return;
	}
	next = next > now ? next - now : 0;
	tv.tv_sec = (time_t)(next / 1000);
	tv.tv_usec = (suseconds_t)(next % 1000) * 1000;
	event_add(ch->deadline_ev, &tv);
}

void
channel_req_finish(struct channel_req *r, enum channel_outcome o, json_object *payload)
{
	if (!r->forgotten && r->cb != NULL)
		r->cb(r->arg, o, payload);
	json_object_put(r->msg);
	free(r);
}

/* Put the request on the wire with an id from the pending table. */
void
channel_req_send(struct channel *ch, struct channel_req *r)
{
	uint64_t deadline = r->timeout_ms ? clock_mono_ms() + r->timeout_ms : 0;
	int64_t id = rpc_pending_add(ch->pending, deadline, r);
	size_t len;
	char *line;

	if (id < 0 || ch->in == NULL) {
		if (id >= 0)
			(void)rpc_pending_take(ch->pending, id, NULL);
		channel_req_finish(r, CHANNEL_CLOSED, NULL);
		return;
	}
	json_object_object_add(r->msg, "id", xjson_object_new_int64(id));
	if ((line = rpc_encode(r->msg, &len)) != NULL) {
		bufferevent_write(ch->in, line, len);
		free(line);
	}
	json_object_put(r->msg);
	r->msg = NULL;
	channel_arm_deadline(ch);
	if (r->sent != NULL && !r->forgotten)
		r->sent(r->arg);
}

struct channel_req *
channel_request(struct channel *ch, const char *method, json_object *params,
    uint64_t timeout_ms, channel_cb cb, void *arg)
{
	return channel_request_sent(ch, method, params, timeout_ms, cb, NULL,
	    arg);
}

struct channel_req *
channel_request_sent(struct channel *ch, const char *method, json_object *params,
    uint64_t timeout_ms, channel_cb cb, void (*sent)(void *), void *arg)
{
	struct channel_req *r;

	channel_restart_ended(ch);
	if (ch->state == CH_IDLE)
		channel_start(ch);
	if ((ch->state == CH_DYING && !(ch->killed && !serve_shutting_down())) ||
	    ch->state == CH_IDLE || (r = calloc(1, sizeof(*r))) == NULL) {
		json_object_put(params);
		return NULL;
	}
	r->ch = ch;
	r->cb = cb;
	r->sent = sent;
	r->arg = arg;
	r->timeout_ms = timeout_ms;
	r->msg = rpc_new_request(NULL, method, params);
	if (ch->idle_ev != NULL)
		event_del(ch->idle_ev);
	if (channel_close_hold(ch, r))
		;	/* sent once the close of its id is answered */
	else if (ch->state == CH_STARTING)
		TAILQ_INSERT_TAIL(&ch->waiting, r, entry);
	else if (ch->state == CH_DYING)
		TAILQ_INSERT_TAIL(&ch->respawn, r, entry);
	else
		channel_req_send(ch, r);
	return r;
}

void
channel_forget(struct channel_req *r)
{
	if (r != NULL)
		r->forgotten = 1;
}

void
channel_notify(struct channel *ch, const char *method, json_object *params)
{
	json_object *msg = rpc_new_notification(method, params);
	size_t len;
	char *line;

	if (ch->state == CH_READY && (line = rpc_encode(msg, &len)) != NULL) {
		bufferevent_write(ch->in, line, len);
		free(line);
	}
	json_object_put(msg);
}

static void
expire_one(int64_t id, void *arg, void *ctx)
{
	(void)id; (void)ctx;
	channel_req_finish(arg, CHANNEL_TIMEOUT, NULL);
}

void
channel_on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;

	(void)fd; (void)what;
	rpc_pending_expire(ch->pending, clock_mono_ms(), expire_one, NULL);
	channel_arm_deadline(ch);
	channel_check_idle(ch);
}

/* ---- messages from the child -------------------------------------------- */

static void
write_msg(struct channel *ch, json_object *msg)
{
	size_t len;
	char *line;

	if (ch->in != NULL && ch->state != CH_IDLE &&
	    (line = rpc_encode(msg, &len)) != NULL) {
		bufferevent_write(ch->in, line, len);
		free(line);
	}
	json_object_put(msg);
}

void
channel_reply(struct channel *ch, unsigned serial, json_object *id, json_object *result)
{
	if (ch->serial != serial || ch->pid <= 0) {
		json_object_put(result);
		return;
	}
	write_msg(ch, rpc_new_result(json_object_get(id), result));
}

/*
 * A request from the child: permissions go to the clients (permission.c);
 * files we do not mediate (initialize told it so).
 */
static void
answer_child_request(struct channel *ch, struct rpc_msg *m)
{
	json_object *r;

	if (strcmp(m->method, "session/request_permission") == 0)
		channel_hooks->permission(ch, m->id, m->params);
	else if (channel_hooks->request != NULL &&
	    (r = channel_hooks->request(ch, m->method, m->params)) != NULL)
		write_msg(ch, rpc_new_result(json_object_get(m->id), r));
	else
		write_msg(ch, rpc_new_error(json_object_get(m->id), RPC_METHOD_NOT_FOUND,
		    "Method not found", NULL));
}

static void
handle_msg(struct channel *ch, struct rpc_msg *m)
{
	void *arg;

	switch (m->kind) {
	case RPC_NOTIFICATION:
		if (strcmp(m->method, "session/update") == 0 && m->params != NULL)
			channel_hooks->update(ch, m->params);
		else if ((strncmp(m->method, "qwen/notify/", 12) == 0 ||
		    strncmp(m->method, "_qwencode/", 10) == 0) &&
		    m->params != NULL && channel_hooks->notify != NULL)
			channel_hooks->notify(ch, m->method, m->params);
		else
			log_debug("child %ld: notification %s ignored", (long)ch->pid, m->method);
		break;
	case RPC_REQUEST:
		answer_child_request(ch, m);
		break;
	case RPC_RESULT:
	case RPC_ERROR:
		if (m->id == NULL || rpc_pending_take_json(ch->pending, m->id, &arg) == -1) {
			log_debug("child %ld: answer to an unknown or expired request",
			    (long)ch->pid);
			break;
		}
		channel_arm_deadline(ch);
		channel_req_finish(arg, m->kind == RPC_RESULT ? CHANNEL_RESULT : CHANNEL_ERROR,
		    m->kind == RPC_RESULT ? m->result : m->error);
		channel_check_idle(ch);
		break;
	}
}

/*
 * A line of the child's we cannot read.  When its bytes name one of our
 * requests, that request fails now (a restore must not wait for a budget
 * for an answer it already got); a line naming none may have been any
 * answer, so the channel is as good as broken: end it, failing all it
 * carries.  -1 when the channel was ended.
 */
static int
handle_bad(struct channel *ch, struct rpc_bad *bad)
{
	json_object *id = bad->id != NULL ? bad->id : bad->frame_id, *err, *data;
	void *arg;

	if (id != NULL && rpc_pending_take_json(ch->pending, id, &arg) == 0) {
		data = xjson_object_new_object();
		json_object_object_add(data, "errorKind",
		    xjson_object_new_string("acp_child_protocol_error"));
		json_object_object_add(data, "detail",
		    xjson_object_new_string(bad->message));
		err = xjson_object_new_object();
		json_object_object_add(err, "code",
		    xjson_object_new_int(RPC_INTERNAL_ERROR));
		json_object_object_add(err, "message", xjson_object_new_string(
		    "The ACP child's answer could not be read"));
		json_object_object_add(err, "data", data);
		channel_arm_deadline(ch);
		channel_req_finish(arg, CHANNEL_ERROR, err);
		json_object_put(err);
		channel_check_idle(ch);
		return 0;
	}
	if (id != NULL)
		return 0;	/* an answer to a request already settled */
	log_warnx("child %ld: an unreadable line names no request: ending the "
	    "channel", (long)ch->pid);
	channel_end(ch, 1);
	return -1;
}

/* Read up to cap bytes of the child's output into the reader (straight
   into its buffer: a load's few MiB answer is not copied on the way).
   While a long line is coming (a load's answer), the pipe's whole
   megabyte is asked for in one read, not in 64 KiB pieces. */
static void
out_read(struct channel *ch, size_t cap)
{
	size_t total = 0, chunk;
	ssize_t n;
	void *buf;

	while (!ch->out_eof && total < cap) {
		chunk = rpc_reader_pending(ch->rd) >= CHANNEL_READ_LONG ?
		    CHANNEL_READ_SLICE : 65536;
		if (cap - total < chunk)
			chunk = cap - total;
		if ((buf = rpc_reader_space(ch->rd, chunk)) == NULL) {
			log_warnx("child %ld: out of memory reading its output", (long)ch->pid);
			ch->out_eof = 1;
			break;
		}
		n = read(ch->out_fd, buf, chunk);
		if (n > 0) {
			if (rpc_reader_feed(ch->rd, buf, (size_t)n) == -1) {
				log_warnx("child %ld: out of memory reading its output", (long)ch->pid);
				ch->out_eof = 1;
			}
			total += (size_t)n;
		} else if (n == -1 && errno == EINTR)
			continue;
		else {
			if (n == 0 || errno != EAGAIN)
				ch->out_eof = 1;
			break;
		}
	}
}

/* Handle up to batch messages (0: all).  Returns 1 when more are waiting. */
static int
out_process(struct channel *ch, size_t batch)
{
	struct rpc_msg m;
	struct rpc_bad bad;
	size_t done = 0;

	for (;;) {
		enum rpc_read_status st = rpc_reader_next(ch->rd, &m, &bad);

		if (st == RPC_READ_MORE && ch->out_eof)
			st = rpc_reader_finish(ch->rd, &m, &bad);
		if (st == RPC_READ_MORE)
			return 0;
		if (st == RPC_READ_BAD) {
			log_warnx("child %ld: bad frame on line %zu: %s",
			    (long)ch->pid, bad.line_no, bad.message);
			if (handle_bad(ch, &bad) == -1) {
				rpc_bad_clear(&bad);
				return 0;
			}
			rpc_bad_clear(&bad);
			continue;
		}
		handle_msg(ch, &m);
		rpc_msg_clear(&m);
		if (++done == batch)
			return 1;
	}
}

/*
 * Take at most CHANNEL_BATCH messages, then let the loop run (and the SSE
 * streams drain) before the next batch; reading stops while messages wait,
 * so a child that floods us is held back by its pipe.
 */
static void
out_pump(struct channel *ch)
{
	struct timeval zero = { 0, 0 };

	if (ch->rd == NULL)
		return;
	if (out_process(ch, CHANNEL_BATCH)) {
		event_add(ch->more_ev, &zero);
		return;
	}
	if (ch->out_eof) {
		if (ch->state == CH_DYING)
			log_debug("child %ld closed its stdout", (long)ch->pid);
		else
			log_warnx("child %ld closed its stdout", (long)ch->pid);
		channel_end(ch, 1);
		return;
	}
	event_add(ch->out_ev, NULL);
}

void
channel_on_out_ready(evutil_socket_t fd, short what, void *arg)
{
	struct channel *ch = arg;

	(void)fd; (void)what;
	if (ch->rd == NULL)
		return;
	out_read(ch, CHANNEL_READ_SLICE);
	out_pump(ch);
}

void
channel_on_more(evutil_socket_t fd, short what, void *arg)
{
	(void)fd; (void)what;
	out_pump(arg);
}

void
channel_out_drain(struct channel *ch)
{
	if (ch->rd == NULL)
		return;
	event_del(ch->more_ev);
	event_del(ch->out_ev);
	ch->out_eof = 0;
	out_read(ch, SIZE_MAX);
	ch->out_eof = 1;
	(void)out_process(ch, 0);
}

void
channel_on_in_event(struct bufferevent *bev, short what, void *arg)
{
	struct channel *ch = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		log_warnx("child %ld: its stdin is gone", (long)ch->pid);
		channel_end(ch, 1);
	}
}

/* Copy the child's stderr lines into our log. */
void
channel_err_lines(struct evbuffer *in, pid_t pid)
{
	size_t n;
	char *line;

	while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) != NULL) {
		log_info("child %ld: %.*s", (long)pid, (int)n, line);
		free(line);
	}
	if (evbuffer_get_length(in) > CHANNEL_STDERR_LINE)
		evbuffer_drain(in, evbuffer_get_length(in));
}

void
channel_on_err_read(struct bufferevent *bev, void *arg)
{
	struct channel *ch = arg;

	channel_err_lines(bufferevent_get_input(bev), ch->pid);
}

void
channel_on_err_event(struct bufferevent *bev, short what, void *arg)
{
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		bufferevent_disable(bev, EV_READ);
}
