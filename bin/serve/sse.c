/* SPDX-License-Identifier: ISC */
/*
 * sse.c: a bus's SSE subscribers.  They are chunked evhttp replies with a
 * queue cap (warning at 75%, eviction on overflow), a writer idle timeout
 * and a heartbeat comment; a new one is replayed the ring from its
 * Last-Event-ID first.
 */
#include "config.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "bus-int.h"
#include "clock.h"
#include "errors.h"
#include "log.h"
#include "serve.h"
#include "xmalloc.h"

struct sse_sub {
	TAILQ_ENTRY(sse_sub)	 entry;
	struct bus		*bus;
	struct evhttp_request	*req;
	struct tick		 hb;
	int			 direct;	/* frames may go straight to the socket */
	int			 chunked;	/* ... framed as chunks */
	/*
	 * --writer-idle-timeout-ms: the output buffer's length when last
	 * seen, and when the socket last took bytes (or had none to take).
	 */
	struct tick		 idle;
	size_t			 idle_out;
	uint64_t		 idle_since_ms;
	size_t			 max_queued;
	int			 warned;
	/* Sizes of the live frames still in the output buffer, oldest first. */
	size_t			*fifo;
	size_t			 fcap, fmax, fhead, fcount, fbytes;	/* grown to fmax */
};

/* Every stream's heartbeat, and its idle look: one timer each for all. */
static struct tick_queue hb_queue = { TAILQ_HEAD_INITIALIZER(hb_queue.q), NULL, 0 };
static struct tick_queue idle_queue = { TAILQ_HEAD_INITIALIZER(idle_queue.q), NULL, 0 };

static void	sub_end(struct sse_sub *);

static size_t
sub_out_bytes(struct sse_sub *s)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);

	if (evcon == NULL)
		return 0;
	return evbuffer_get_length(bufferevent_get_output(
	    evhttp_connection_get_bufferevent(evcon)));
}

/*
 * Forget the frames the kernel has taken: the output buffer holds the
 * newest out bytes, so a front frame is gone when the rest still cover
 * them.  What remains is the subscriber's queue.
 */
static void
sub_account(struct sse_sub *s)
{
	size_t out = sub_out_bytes(s);

	while (s->fcount > 0 && s->fbytes - s->fifo[s->fhead] >= out) {
		s->fbytes -= s->fifo[s->fhead];
		s->fhead = (s->fhead + 1) % s->fcap;
		s->fcount--;
	}
}

/*
 * Only we add to a stream's output buffer, so between two looks it can
 * only shrink: a smaller (or empty) buffer means the socket took bytes.
 */
static void
sub_idle_look(struct sse_sub *s)
{
	size_t out = sub_out_bytes(s);

	if (out == 0 || out < s->idle_out)
		s->idle_since_ms = clock_mono_ms();
	s->idle_out = out;
}

/*
 * Write a frame straight to the socket when nothing waits in the output
 * buffer (a stream's usual state): through evhttp it would be queued, the
 * write event armed (an epoll_ctl), written a loop turn later and the
 * event disarmed (another).  What the socket does not take goes to the
 * output buffer, which the bufferevent writes as before (and where an
 * error on the socket is seen).  -1: not possible, use evhttp.
 */
static int
sub_write_direct(struct sse_sub *s, const char *frame, size_t len)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);
	struct bufferevent *bev;
	struct evbuffer *out;
	struct iovec iov[3];
	struct msghdr mh;
	char head[24];
	evutil_socket_t fd;
	ssize_t n;

	if (!s->direct || evcon == NULL)
		return -1;
	bev = evhttp_connection_get_bufferevent(evcon);
	out = bufferevent_get_output(bev);
	if (evbuffer_get_length(out) != 0 || (fd = bufferevent_getfd(bev)) < 0)
		return -1;
	iov[0].iov_base = head;
	iov[0].iov_len = s->chunked ? (size_t)snprintf(head, sizeof(head),
	    "%zx\r\n", len) : 0;
	iov[1].iov_base = (void *)(uintptr_t)frame;
	iov[1].iov_len = len;
	iov[2].iov_base = (void *)(uintptr_t)"\r\n";
	iov[2].iov_len = s->chunked ? 2 : 0;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 3;
	if ((n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0)
		n = 0;
	for (int i = 0; i < 3; i++) {
		size_t skip = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

		n -= (ssize_t)skip;
		if (iov[i].iov_len > skip)
			evbuffer_add(out, (char *)iov[i].iov_base + skip,
			    iov[i].iov_len - skip);
	}
	if (evbuffer_get_length(out) != 0)
		bufferevent_enable(bev, EV_WRITE);
	return 0;
}

static void
sub_write(struct sse_sub *s, const char *frame, size_t len, int live)
{
	struct evbuffer *buf;
	size_t sz = len + 12;	/* chunk size line and CRLF */

	sub_idle_look(s);
	if (sub_write_direct(s, frame, len) == -1) {
		if ((buf = evbuffer_new()) == NULL)
			return;
		evbuffer_add(buf, frame, len);
		evhttp_send_reply_chunk(s->req, buf);
		evbuffer_free(buf);
	}
	s->idle_out = sub_out_bytes(s);
	if (!live)
		return;
	sub_account(s);
	if (s->fcount == s->fcap)
		(void)bus_grow((void **)&s->fifo, sizeof(*s->fifo), &s->fcap,
		    &s->fhead, s->fcount, s->fmax);
	if (s->fcount < s->fcap) {
		s->fifo[(s->fhead + s->fcount) % s->fcap] = sz;
		s->fcount++;
		s->fbytes += sz;
	} else
		s->fcount = s->fcap + 1;	/* overflow: evicted by the check */
}

/* A synthetic (id-less) event to one subscriber. */
static void
sub_synthetic(struct sse_sub *s, const char *type, json_object *data)
{
	json_object *env;
	size_t len;
	char *f;

	if (s->bus->raw) {	/* a message stream carries messages only */
		json_object_put(data);
		return;
	}
	env = bus_envelope(0, type, data, NULL, NULL);
	f = bus_frame(env, 0, type, &len);

	if (f != NULL)
		sub_write(s, f, len, 0);
	free(f);
	json_object_put(env);
}

/*
 * The byte cap of a subscriber's queue.  An ACP stream (a raw bus) gets a
 * load's whole bounded snapshot in one burst, the replay before the
 * answer, when it was opened while the load ran: its queue holds that
 * burst on top of the ordinary cap, or the answer would be evicted with it.
 */
static size_t
sub_max_bytes(const struct sse_sub *s)
{
	return s->bus->raw ? SERVE_SSE_QUEUE_BYTES + conf.compacted_replay_max_bytes :
	    SERVE_SSE_QUEUE_BYTES;
}

/* Queue caps: warn at 75%, evict on overflow.  Returns -1 when evicted. */
static int
sub_check_queue(struct sse_sub *s)
{
	size_t queued, bytes, out, max_bytes = sub_max_bytes(s);
	json_object *d;

	sub_account(s);
	queued = s->fcount;
	out = sub_out_bytes(s);
	bytes = out < s->fbytes ? out : s->fbytes;
	if (queued > s->max_queued || bytes > max_bytes) {
		d = xjson_object_new_object();
		json_object_object_add(d, "reason", xjson_object_new_string(
		    queued > s->max_queued ? "queue_overflow" : "queue_bytes_overflow"));
		json_object_object_add(d, "droppedAfter",
		    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
		json_object_object_add(d, "queueSize", xjson_object_new_int64((int64_t)queued));
		json_object_object_add(d, "maxQueued", xjson_object_new_int64((int64_t)s->max_queued));
		json_object_object_add(d, "queuedBytes", xjson_object_new_int64((int64_t)bytes));
		json_object_object_add(d, "maxQueuedBytes", xjson_object_new_int64((int64_t)max_bytes));
		log_info("session %s: evicting a slow SSE client (%zu frames, %zu bytes)",
		    s->bus->session_id, queued, bytes);
		sub_synthetic(s, "client_evicted", d);
		metrics_sse_evicted(queued);
		sub_end(s);
		return -1;
	}
	if (s->warned && queued * 8 < s->max_queued * 3 && bytes * 8 < max_bytes * 3)
		s->warned = 0;
	if (!s->warned && (queued * 4 >= s->max_queued * 3 ||
	    bytes * 4 >= max_bytes * 3)) {
		s->warned = 1;
		d = xjson_object_new_object();
		json_object_object_add(d, "queueSize", xjson_object_new_int64((int64_t)queued));
		json_object_object_add(d, "maxQueued", xjson_object_new_int64((int64_t)s->max_queued));
		json_object_object_add(d, "queuedBytes", xjson_object_new_int64((int64_t)bytes));
		json_object_object_add(d, "lastEventId",
		    xjson_object_new_int64((int64_t)bus_last_id(s->bus)));
		sub_synthetic(s, "slow_client_warning", d);
	}
	return 0;
}

/* End the stream and forget the subscriber (the connection may live on). */
static void
sub_end(struct sse_sub *s)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);

	TAILQ_REMOVE(&s->bus->subs, s, entry);
	s->bus->nsubs--;
	tick_disarm(&hb_queue, &s->hb);
	tick_disarm(&idle_queue, &s->idle);
	free(s->fifo);
	conn_set_sub(s->req, NULL);
	if (evcon != NULL)
		evhttp_connection_set_timeout(evcon, 30);
	evhttp_send_reply_end(s->req);
	free(s);
}

void
sse_sub_closed(struct sse_sub *s)
{
	log_debug("session %s: SSE client went away", s->bus->session_id);
	sub_end(s);
}

/* The heartbeat comment, every --sse-heartbeat-ms. */
static void
sub_heartbeat(void *arg)
{
	struct sse_sub *s = arg;
	static const char hb[] = ": heartbeat\n\n";

	sub_write(s, hb, sizeof(hb) - 1, 1);
	(void)sub_check_queue(s);
}

/*
 * A stream whose socket took nothing for --writer-idle-timeout-ms while
 * bytes waited (a peer gone without a FIN, a client that stopped reading)
 * is evicted: client_evicted writer_idle_timeout, then the end.
 */
static void
sub_idle_check(void *arg)
{
	struct sse_sub *s = arg;
	uint64_t idle;
	json_object *d;

	sub_idle_look(s);
	idle = clock_mono_ms() - s->idle_since_ms;
	if (s->idle_out == 0 || idle < (uint64_t)conf.writer_idle_timeout_ms)
		return;
	d = xjson_object_new_object();
	json_object_object_add(d, "reason", xjson_object_new_string("writer_idle_timeout"));
	json_object_object_add(d, "errorKind", xjson_object_new_string("writer_idle_timeout"));
	json_object_object_add(d, "idleForMs", xjson_object_new_int64((int64_t)idle));
	json_object_object_add(d, "timeoutMs", xjson_object_new_int64(conf.writer_idle_timeout_ms));
	log_info("session %s: evicting an SSE client whose socket took nothing "
	    "for %llu ms", s->bus->session_id, (unsigned long long)idle);
	sub_synthetic(s, "client_evicted", d);
	sub_end(s);
}

/* Look at the stream four times per timeout (at most once a second). */
static void
sub_idle_start(struct sse_sub *s)
{
	int64_t every = conf.writer_idle_timeout_ms / 4;

	if (conf.writer_idle_timeout_ms <= 0)
		return;
	if (every < 10)
		every = 10;
	if (every > 1000)
		every = 1000;
	s->idle_since_ms = clock_mono_ms();
	idle_queue.every_ms = every;
	tick_arm(&idle_queue, &s->idle, sub_idle_check, s);
}

/* state_resync_required {reason, detail?, lastDeliveredId, earliestAvailableId}. */
static void
sub_resync(struct sse_sub *s, const char *reason, const char *detail,
    int64_t last, uint64_t earliest)
{
	json_object *d = xjson_object_new_object();

	json_object_object_add(d, "reason", xjson_object_new_string(reason));
	if (detail != NULL)
		json_object_object_add(d, "detail", xjson_object_new_string(detail));
	json_object_object_add(d, "lastDeliveredId", xjson_object_new_int64(last));
	json_object_object_add(d, "earliestAvailableId",
	    xjson_object_new_int64((int64_t)earliest));
	sub_synthetic(s, "state_resync_required", d);
}

/* Replay ring events after last, then replay_complete. */
static void
sub_replay(struct sse_sub *s, int64_t last, const char *epoch)
{
	struct bus *b = s->bus;
	uint64_t earliest = b->count > 0 ? b->ring[b->head].id : b->next_id;
	uint64_t last_replayed = 0;
	size_t n = 0, bytes = 0;
	json_object *d;

	if (b->raw && (uint64_t)last + 1 < earliest)
		last = (int64_t)earliest - 1;	/* a message stream: what is left */
	if (epoch != NULL && strcmp(epoch, b->epoch) != 0) {
		sub_resync(s, "epoch_reset", "epoch_mismatch", last, earliest);
		return;
	}
	if ((uint64_t)last > bus_last_id(b)) {
		sub_resync(s, "epoch_reset", NULL, last, earliest);
		return;
	}
	if ((uint64_t)last + 1 < earliest) {
		sub_resync(s, b->count == 0 && b->seeded_hi > (uint64_t)last ?
		    "seeded_replay_not_in_ring" : "ring_evicted", NULL, last, earliest);
		return;
	}
	for (size_t i = 0; i < b->count; i++) {
		struct ring_ev *e = &b->ring[(b->head + i) % b->cap];

		if (e->id <= (uint64_t)last)
			continue;
		if (bytes + e->len > SERVE_SSE_REPLAY_BYTES) {
			sub_resync(s, "replay_budget_exceeded", NULL, last, earliest);
			return;
		}
		bytes += e->len;
		sub_write(s, e->frame, e->len, 0);
		last_replayed = e->id;
		n++;
	}
	if (last_replayed > b->delivered)
		b->delivered = last_replayed;
	d = xjson_object_new_object();
	if (n > 0)
		json_object_object_add(d, "lastReplayedEventId",
		    xjson_object_new_int64((int64_t)last_replayed));
	json_object_object_add(d, "lastEventId",
	    xjson_object_new_int64((int64_t)bus_last_id(b)));
	json_object_object_add(d, "replayedCount", xjson_object_new_int64((int64_t)n));
	sub_synthetic(s, "replay_complete", d);
}

static void
sse_headers(struct evhttp_request *req, const char *epoch)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	char stream_id[UUID_LEN + 1];

	uuid_new(stream_id);
	gate_cors_headers(req);
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-cache, no-transform");
	evhttp_add_header(h, "Connection", "keep-alive");
	evhttp_add_header(h, "X-Accel-Buffering", "no");
	evhttp_add_header(h, "X-Qwen-Event-Epoch", epoch);
	evhttp_add_header(h, "X-Qwen-SSE-Stream-Id", stream_id);
}

void
sse_subscribe(struct bus *b, struct evhttp_request *req, int64_t last_event_id,
    const char *epoch, int max_queued, json_object *snapshot)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct sse_sub *s = NULL;
	const char *te;
	char retry[32];
	struct qerr *e;

	if (b->nsubs >= SERVE_MAX_SUBSCRIBERS) {
		if ((e = qerr_new("subscriber_limit_exceeded", NULL)) != NULL) {
			qerr_set_str(e, "sessionId", b->session_id);
			qerr_set_int(e, "limit", SERVE_MAX_SUBSCRIBERS);
		}
		http_send_qerr(req, e);
		json_object_put(snapshot);
		return;
	}
	if (evcon == NULL || (s = calloc(1, sizeof(*s))) == NULL ||
	    (s->fifo = calloc(BUS_FIRST_ROOM, sizeof(*s->fifo))) == NULL) {
		free(s);
		json_object_put(snapshot);
		http_error(req, "internal", NULL);
		return;
	}
	s->fcap = BUS_FIRST_ROOM;
	s->fmax = (size_t)max_queued + 8;
	s->bus = b;
	s->req = req;
	s->max_queued = (size_t)max_queued;
	TAILQ_INSERT_TAIL(&b->subs, s, entry);
	b->nsubs++;
	/* The server-wide timeout would kill a quiet stream. */
	evhttp_connection_set_timeout(evcon, 24 * 3600);
	sse_headers(req, b->epoch);
	evhttp_send_reply_start(req, 200, "OK");
	te = evhttp_find_header(evhttp_request_get_output_headers(req),
	    "Transfer-Encoding");
	s->chunked = te != NULL && strcasecmp(te, "chunked") == 0;
	s->direct = evhttp_request_get_command(req) == EVHTTP_REQ_GET;
	conn_set_sub(req, s);
	snprintf(retry, sizeof(retry), "retry: %d\n\n", SERVE_SSE_RETRY_MS);
	sub_write(s, retry, strlen(retry), 0);
	if (b->raw && last_event_id < 0)
		last_event_id = (int64_t)b->delivered;	/* what nobody got yet */
	if (last_event_id >= 0)
		sub_replay(s, last_event_id, epoch);
	if (snapshot != NULL)
		sub_synthetic(s, "session_snapshot", snapshot);
	sub_idle_start(s);
	hb_queue.every_ms = conf.sse_heartbeat_ms;
	tick_arm(&hb_queue, &s->hb, sub_heartbeat, s);
}

/* Write a live frame to every subscriber of b (the ring has kept it). */
static void
sse_fan_out(struct bus *b, const char *f, size_t len, int terminal)
{
	struct sse_sub *s, *next;

	TAILQ_FOREACH_SAFE(s, &b->subs, entry, next) {
		sub_write(s, f, len, 1);
		if (terminal)
			sub_end(s);
		else
			(void)sub_check_queue(s);
	}
}

static void
sse_end_all(struct bus *b)
{
	struct sse_sub *s;

	while ((s = TAILQ_FIRST(&b->subs)) != NULL)
		sub_end(s);
}

const struct bus_subscribers sse_subscribers = {
	.fan_out = sse_fan_out,
	.end_all = sse_end_all,
};
