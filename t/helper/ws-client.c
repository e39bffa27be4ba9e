/* SPDX-License-Identifier: ISC */
/*
 * ws-client: a scriptable WebSocket client for the tests (wslay, client
 * mode), over a Unix socket or loopback TCP.
 *
 * usage: ws-client [-t SECONDS] [-H 'Name: value']... [-P PROTOCOLS]
 *            [-p PATH] (-u SOCKET | -c PORT)
 *
 * It sends the opening handshake (Host: localhost[:PORT]) and reports
 * {"ws":"open","protocol":P} on 101, or {"ws":"http","status":N,"body":B}
 * and exit 2 on anything else.  Every text message received is written to
 * stdout as it came, one per line (the server sends JSON without raw
 * newlines); the client's own reports are JSON lines with a "ws" key:
 * {"ws":"close","code":N,"reason":R}, {"ws":"pong","data":D},
 * {"ws":"binary","len":N}, {"ws":"eof"}, {"ws":"flood","pings":N}.
 * Script commands, one per line on stdin:
 *   text JSON          send JSON as one text frame
 *   frag N JSON        send JSON as one text message in N fragments
 *   binary DATA        send DATA as a binary message
 *   ping [DATA]        send a ping
 *   raw HEX            write the bytes HEX as they are (a hand-made frame)
 *   badutf8            send a text message with an invalid UTF-8 byte
 *   big N              send a valid JSON-RPC text message of N bytes
 *   values N           send a valid JSON-RPC text message whose params
 *                      hold N empty objects (id "values")
 *   flood N [SIZE]     send N pings of SIZE bytes (0-125, default 125)
 *                      without reading (pongs are counted, not printed,
 *                      from then on)
 *   wait ID            wait for the reply with id ID (JSON text: 5, "a")
 *   waitfor TEXT       wait for a message containing TEXT (each matches once)
 *   count N TEXT       wait until N messages containing TEXT have arrived
 *   waitpong N         wait until N pongs have arrived in all
 *   waitclose          wait for the server's close frame or EOF
 *   close [CODE]       send a close frame and wait for the reply and EOF
 *   drop               close the socket at once (an abrupt disconnect)
 * A wait that times out (default 10 s) reports {"ws":"timeout","what":..}
 * and exits 3.  At the end of the script the socket is closed (a clean
 * close first unless one happened).  Exit 0 otherwise.
 */
#include "config.h"

#include <sys/param.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sha1.h>
#include <wslay/wslay.h>

#include "base64.h"

#define MAX_HEADERS	16
#define SEEN_MAX	4096

static int fd = -1;
static wslay_event_context_ptr ctx;
static int got_close, got_eof, write_dead, quiet_pongs;
static unsigned long pongs;
static double timeout_s = 10;
/* Received text messages, for waitfor/count/wait. */
static char *seen[SEEN_MAX];
static int seen_used[SEEN_MAX];
static size_t nseen;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
report_str(const char *kind, const char *key, const char *val, size_t len)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "ws", json_object_new_string(kind));
	if (key != NULL)
		json_object_object_add(o, key, json_object_new_string_len(val, (int)len));
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

static ssize_t
recv_cb(wslay_event_context_ptr c, uint8_t *buf, size_t len, int flags, void *arg)
{
	ssize_t n;

	(void)flags; (void)arg;
	n = read(fd, buf, len);
	if (n > 0)
		return n;
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		wslay_event_set_error(c, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	got_eof = 1;
	wslay_event_set_error(c, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static ssize_t
send_cb(wslay_event_context_ptr c, const uint8_t *data, size_t len, int flags,
    void *arg)
{
	ssize_t n;

	(void)flags; (void)arg;
	n = write(fd, data, len);
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EINTR) {
		wslay_event_set_error(c, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	write_dead = 1;
	wslay_event_set_error(c, WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

static int
genmask_cb(wslay_event_context_ptr c, uint8_t *buf, size_t len, void *arg)
{
	(void)c; (void)arg;
	arc4random_buf(buf, len);
	return 0;
}

static void
msg_cb(wslay_event_context_ptr c, const struct wslay_event_on_msg_recv_arg *m,
    void *arg)
{
	char num[32];

	(void)c; (void)arg;
	switch (m->opcode) {
	case WSLAY_TEXT_FRAME:
		fwrite(m->msg, 1, m->msg_length, stdout);
		putchar('\n');
		if (nseen < SEEN_MAX &&
		    (seen[nseen] = strndup((const char *)m->msg, m->msg_length)) != NULL)
			nseen++;
		break;
	case WSLAY_BINARY_FRAME:
		snprintf(num, sizeof(num), "%zu", m->msg_length);
		report_str("binary", "len", num, strlen(num));
		break;
	case WSLAY_PONG:
		pongs++;
		if (!quiet_pongs)
			report_str("pong", "data", (const char *)m->msg, m->msg_length);
		break;
	case WSLAY_CONNECTION_CLOSE:
		got_close = 1;
		printf("{\"ws\":\"close\",\"code\":%u,", m->status_code);
		{
			json_object *r = json_object_new_string_len(
			    m->msg_length > 2 ? (const char *)m->msg + 2 : "",
			    m->msg_length > 2 ? (int)m->msg_length - 2 : 0);
			printf("\"reason\":%s}\n", json_object_to_json_string(r));
			json_object_put(r);
		}
		break;
	}
	fflush(stdout);
}

/* One round of I/O: write what can be written, read when asked. */
static void
pump(int do_read, int ms)
{
	struct pollfd p = { .fd = fd };

	if (got_eof)
		return;
	if (!write_dead && wslay_event_want_write(ctx))
		p.events |= POLLOUT;
	if (do_read)
		p.events |= POLLIN;
	if (p.events == 0 || poll(&p, 1, ms) <= 0)
		return;
	if ((p.revents & POLLOUT) && wslay_event_send(ctx) != 0)
		write_dead = 1;
	if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && do_read) {
		if (!wslay_event_want_read(ctx) || wslay_event_get_close_received(ctx)) {
			/* After the close wslay reads no more: look for EOF. */
			char scratch[4096];
			ssize_t n = read(fd, scratch, sizeof(scratch));

			if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
				got_eof = 1;
		} else if (wslay_event_recv(ctx) != 0)
			got_eof = 1;
		if (got_eof)
			report_str("eof", NULL, NULL, 0);
	}
}

/* Send everything queued, reading meanwhile (pongs, replies). */
static void
drain(int do_read)
{
	double end = now() + timeout_s;

	while (!got_eof && !write_dead && wslay_event_want_write(ctx) && now() < end)
		pump(do_read, 100);
}

static void
fail_timeout(const char *what)
{
	report_str("timeout", "what", what, strlen(what));
	exit(3);
}

/* Whether message s has "id" equal to the JSON text id. */
static int
has_id(const char *s, const char *id)
{
	json_object *o = json_tokener_parse(s), *v, *want = json_tokener_parse(id);
	int r = 0;

	if (o != NULL && want != NULL && json_object_object_get_ex(o, "id", &v) &&
	    v != NULL)
		r = json_object_equal(v, want);
	json_object_put(o);
	json_object_put(want);
	return r;
}

/* Wait until n unused messages match (by id when id, else by substring). */
static void
wait_msgs(const char *text, int by_id, size_t n)
{
	double end = now() + timeout_s;

	for (;;) {
		size_t found = 0;

		for (size_t i = 0; i < nseen; i++)
			if (!seen_used[i] && (by_id ? has_id(seen[i], text) :
			    strstr(seen[i], text) != NULL))
				found++;
		if (found >= n) {
			for (size_t i = 0, k = 0; i < nseen && k < n; i++)
				if (!seen_used[i] && (by_id ? has_id(seen[i], text) :
				    strstr(seen[i], text) != NULL)) {
					seen_used[i] = 1;
					k++;
				}
			return;
		}
		if (got_eof || now() >= end)
			fail_timeout(text);
		pump(1, 100);
	}
}

static void
wait_close(void)
{
	double end = now() + timeout_s;

	while (!got_close && !got_eof) {
		if (now() >= end)
			fail_timeout("close");
		pump(1, 100);
	}
	/* wslay answers the close itself; wait for the server to hang up. */
	while (!got_eof && now() < end)
		pump(1, 100);
}

static void
queue(uint8_t opcode, const char *data, size_t len)
{
	struct wslay_event_msg m = { opcode, (const uint8_t *)data, len };

	if (wslay_event_queue_msg(ctx, &m) != 0)
		report_str("queue-failed", NULL, NULL, 0);
	drain(1);
}

struct frag {
	const char	*p;
	size_t		 left, piece;
};

static ssize_t
frag_source(wslay_event_context_ptr c, uint8_t *buf, size_t len, const union
    wslay_event_msg_source *src, int *eof, void *arg)
{
	struct frag *f = src->data;
	size_t n = f->piece < f->left ? f->piece : f->left;

	(void)c; (void)arg;
	if (n > len)
		n = len;
	memcpy(buf, f->p, n);
	f->p += n;
	f->left -= n;
	*eof = f->left == 0;
	return (ssize_t)n;
}

/* JSON as one text message in n fragments (wslay makes one frame per read). */
static void
send_frag(int n, const char *json)
{
	struct frag f = { json, strlen(json), 0 };
	struct wslay_event_fragmented_msg m = { .opcode = WSLAY_TEXT_FRAME,
	    .read_callback = frag_source };

	f.piece = n > 0 ? (f.left + (size_t)n - 1) / (size_t)n : f.left;
	if (f.piece == 0)
		f.piece = 1;
	m.source.data = &f;
	if (wslay_event_queue_fragmented_msg(ctx, &m) != 0)
		report_str("queue-failed", NULL, NULL, 0);
	drain(1);
}

/* A valid request of exactly n bytes: {"jsonrpc":"2.0","id":"big","method":"x","params":{"pad":"aaa"}}. */
static void
send_big(size_t n)
{
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"x\",\"params\":{\"pad\":\"";
	const char *tail = "\"}}";
	size_t hl = strlen(head), tl = strlen(tail);
	char *buf;

	if (n < hl + tl || (buf = malloc(n)) == NULL)
		return;
	memcpy(buf, head, hl);
	memset(buf + hl, 'a', n - hl - tl);
	memcpy(buf + n - tl, tail, tl);
	queue(WSLAY_TEXT_FRAME, buf, n);
	free(buf);
}

/* A valid request whose params.v is n empty objects. */
static void
send_values(size_t n)
{
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":\"values\","
	    "\"method\":\"x\",\"params\":{\"v\":[";
	size_t hl = strlen(head), len = hl + 3 * n + 3, i;
	char *buf, *p;

	if ((buf = malloc(len)) == NULL)
		return;
	memcpy(buf, head, hl);
	p = buf + hl;
	for (i = 0; i < n; i++) {
		memcpy(p, i + 1 < n ? "{}," : "{}", i + 1 < n ? 3 : 2);
		p += i + 1 < n ? 3 : 2;
	}
	memcpy(p, "]}}", 3);
	p += 3;
	queue(WSLAY_TEXT_FRAME, buf, (size_t)(p - buf));
	free(buf);
}

/*
 * n masked 125-byte pings, built by hand and written in big pieces without
 * reading anything (a peer that does not read); stops early when the
 * server stops taking them.
 */
static void
flood(unsigned long n, size_t size)
{
	size_t frame = 2 + 4 + size, len = n * frame, off = 0;
	uint8_t *buf = malloc(len ? len : 1), *f;
	double end = now() + timeout_s;
	char num[32];

	if (buf == NULL)
		exit(1);
	for (unsigned long i = 0; i < n; i++) {
		f = buf + i * frame;
		f[0] = 0x89;			/* FIN + ping */
		f[1] = 0x80 | (uint8_t)size;	/* masked */
		arc4random_buf(f + 2, 4);
		for (size_t k = 0; k < size; k++)
			f[6 + k] = (uint8_t)('p' ^ f[2 + k % 4]);
	}
	quiet_pongs = 1;
	while (off < len && now() < end) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		ssize_t w;

		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((w = write(fd, buf + off, len - off)) > 0)
			off += (size_t)w;
		else if (w == -1 && errno != EAGAIN && errno != EINTR)
			break;
	}
	free(buf);
	snprintf(num, sizeof(num), "%lu", (unsigned long)(off / frame));
	report_str("flood", "pings", num, strlen(num));
}

static void
run(char *line)
{
	char *arg = strchr(line, ' ');

	if (arg != NULL)
		*arg++ = '\0';
	else
		arg = line + strlen(line);
	if (strcmp(line, "text") == 0)
		queue(WSLAY_TEXT_FRAME, arg, strlen(arg));
	else if (strcmp(line, "binary") == 0)
		queue(WSLAY_BINARY_FRAME, arg, strlen(arg));
	else if (strcmp(line, "raw") == 0) {
		unsigned char b[512];
		size_t n = 0;
		unsigned v;

		while (n < sizeof(b) && sscanf(arg + 2 * n, "%2x", &v) == 1)
			b[n++] = (unsigned char)v;
		if (write(fd, b, n) != (ssize_t)n)
			write_dead = 1;
	} else if (strcmp(line, "ping") == 0)
		queue(WSLAY_PING, arg, strlen(arg));
	else if (strcmp(line, "badutf8") == 0) {
		static const char bad[] = "{\"jsonrpc\":\"2.0\",\"method\":\"\xc3\x28\"}";

		queue(WSLAY_TEXT_FRAME, bad, sizeof(bad) - 1);
	} else if (strcmp(line, "big") == 0)
		send_big(strtoul(arg, NULL, 10));
	else if (strcmp(line, "values") == 0)
		send_values(strtoul(arg, NULL, 10));
	else if (strcmp(line, "frag") == 0) {
		char *json = strchr(arg, ' ');

		send_frag(atoi(arg), json != NULL ? json + 1 : "");
	} else if (strcmp(line, "flood") == 0) {
		char *end;
		unsigned long n = strtoul(arg, &end, 10), size = 125;

		if (*end == ' ')
			size = strtoul(end + 1, NULL, 10);
		flood(n, size > 125 ? 125 : (size_t)size);
	}
	else if (strcmp(line, "wait") == 0)
		wait_msgs(arg, 1, 1);
	else if (strcmp(line, "waitfor") == 0)
		wait_msgs(arg, 0, 1);
	else if (strcmp(line, "count") == 0) {
		char *text = strchr(arg, ' ');

		wait_msgs(text != NULL ? text + 1 : "", 0, strtoul(arg, NULL, 10));
	} else if (strcmp(line, "waitpong") == 0) {
		unsigned long want = strtoul(arg, NULL, 10);
		double end = now() + timeout_s;

		while (pongs < want) {
			if (got_eof || now() >= end)
				fail_timeout("pong");
			pump(1, 100);
		}
	} else if (strcmp(line, "waitclose") == 0)
		wait_close();
	else if (strcmp(line, "close") == 0) {
		wslay_event_queue_close(ctx, arg[0] ? (uint16_t)atoi(arg) : 1000, NULL, 0);
		drain(1);
		wait_close();
	} else if (strcmp(line, "drop") == 0) {
		close(fd);
		fd = -1;
		fflush(stdout);
		_exit(0);
	} else {
		fprintf(stderr, "ws-client: unknown command %s\n", line);
		exit(4);
	}
}

static int
connect_to(const char *sock, int port)
{
	int s;

	if (sock != NULL) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		strlcpy(sun.sun_path, sock, sizeof(sun.sun_path));
		if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
		    connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1)
			return -1;
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET,
		    .sin_port = htons((uint16_t)port),
		    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
		    connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1)
			return -1;
	}
	return s;
}

/* The response's Sec-WebSocket-Accept is base64(SHA-1(key GUID)). */
static int
accept_ok(const char *resp, const char *key)
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	uint8_t digest[SHA1_DIGEST_LENGTH];
	char want[64], line[128];
	const char *p = strcasestr(resp, "\r\nSec-WebSocket-Accept: ");
	SHA1_CTX sha;

	if (p == NULL)
		return 0;
	SHA1Init(&sha);
	SHA1Update(&sha, (const uint8_t *)key, strlen(key));
	SHA1Update(&sha, (const uint8_t *)guid, strlen(guid));
	SHA1Final(digest, &sha);
	base64_encode(BASE64_STD, digest, sizeof(digest), want, sizeof(want));
	snprintf(line, sizeof(line), "\r\nSec-WebSocket-Accept: %s\r\n", want);
	return strncasecmp(p, line, strlen(line)) == 0;
}

/* Write the upgrade request; read the response head (and body on errors). */
static int
handshake(const char *path, int port, char **hdrs, int nh, const char *protos)
{
	char req[8192], resp[65536], key[25], raw[16], *end, *p;
	size_t len = 0;
	ssize_t n;
	int status;

	arc4random_buf(raw, sizeof(raw));
	base64_encode(BASE64_STD, raw, sizeof(raw), key, sizeof(key));
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost%s%.0d\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
	    "Sec-WebSocket-Version: 13\r\n", path, port ? ":" : "", port, key);
	if (protos != NULL)
		n += snprintf(req + n, sizeof(req) - (size_t)n,
		    "Sec-WebSocket-Protocol: %s\r\n", protos);
	for (int i = 0; i < nh; i++)
		n += snprintf(req + n, sizeof(req) - (size_t)n, "%s\r\n", hdrs[i]);
	n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\n");
	if (write(fd, req, (size_t)n) != n)
		return -1;
	/* Read byte by byte up to the blank line: frames may follow it. */
	while (len < sizeof(resp) - 1 && (n = read(fd, resp + len, 1)) == 1) {
		len++;
		resp[len] = '\0';
		if (len >= 4 && memcmp(resp + len - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	resp[len] = '\0';
	if (sscanf(resp, "HTTP/1.1 %d", &status) != 1)
		return -1;
	if (status != 101) {
		/* The body: Content-Length bytes (the connection stays open). */
		size_t head = len, clen = 0;

		if ((p = strcasestr(resp, "\r\nContent-Length: ")) != NULL)
			clen = strtoul(p + 18, NULL, 10);
		while (len < sizeof(resp) - 1 && len < head + clen &&
		    (n = read(fd, resp + len, MIN(head + clen, sizeof(resp) - 1) - len)) > 0)
			len += (size_t)n;
		resp[len] = '\0';
		end = strstr(resp, "\r\n\r\n");
		{
			json_object *o = json_object_new_object();

			json_object_object_add(o, "ws", json_object_new_string("http"));
			json_object_object_add(o, "status", json_object_new_int(status));
			json_object_object_add(o, "head", json_object_new_string_len(resp,
			    end != NULL ? (int)(end - resp) : (int)len));
			json_object_object_add(o, "body", json_object_new_string(
			    end != NULL ? end + 4 : ""));
			puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
			    JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(o);
		}
		return status;
	}
	if (!accept_ok(resp, key)) {
		report_str("bad-accept", NULL, NULL, 0);
		return -1;
	}
	if ((p = strcasestr(resp, "\r\nSec-WebSocket-Protocol: ")) != NULL) {
		p += 26;
		end = strstr(p, "\r\n");
		report_str("open", "protocol", p, (size_t)(end - p));
	} else
		report_str("open", NULL, NULL, 0);
	return 101;
}

int
main(int argc, char **argv)
{
	struct wslay_event_callbacks cbs = { recv_cb, send_cb, genmask_cb, NULL,
	    NULL, NULL, msg_cb };
	const char *sock = NULL, *path = "/acp", *protos = NULL;
	char *hdrs[MAX_HEADERS], *line = NULL;
	int nh = 0, port = 0, ch, st;
	size_t cap = 0;
	ssize_t n;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((ch = getopt(argc, argv, "c:H:p:P:t:u:")) != -1) {
		switch (ch) {
		case 'c': port = atoi(optarg); break;
		case 'H': if (nh < MAX_HEADERS) hdrs[nh++] = optarg; break;
		case 'p': path = optarg; break;
		case 'P': protos = optarg; break;
		case 't': timeout_s = atof(optarg); break;
		case 'u': sock = optarg; break;
		default:
			fprintf(stderr, "usage: ws-client [-t S] [-H HDR] [-P PROTOS] "
			    "[-p PATH] (-u SOCKET | -c PORT)\n");
			return 4;
		}
	}
	if ((fd = connect_to(sock, port)) == -1) {
		perror("ws-client: connect");
		return 1;
	}
	if ((st = handshake(path, sock != NULL ? 0 : port, hdrs, nh, protos)) != 101)
		return st == -1 ? 1 : 2;
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (wslay_event_context_client_init(&ctx, &cbs, NULL) != 0)
		return 1;
	/* Frames must never be larger than what the tests send. */
	wslay_event_config_set_max_recv_msg_length(ctx, 64u * 1024 * 1024);
	while ((n = getline(&line, &cap, stdin)) != -1) {
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (line[0] != '\0' && line[0] != '#')
			run(line);
	}
	free(line);
	if (!got_close && !got_eof) {
		wslay_event_queue_close(ctx, 1000, NULL, 0);
		drain(1);
		wait_close();
	}
	wslay_event_context_free(ctx);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	close(fd);
	return 0;
}
