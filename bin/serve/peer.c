/* SPDX-License-Identifier: ISC */
/*
 * peer.c: who is on the other end of a connection.  On the Unix socket
 * the kernel says so (SO_PEERCRED); on loopback TCP the peer's socket is
 * in our network namespace too, so the kernel's socket table (sock_diag,
 * the interface ss(8) uses) tells us the uid that owns it: the connection's
 * 4-tuple, seen from the peer's side, is looked up exactly.  And the
 * client's address, forwarded by a --trusted-proxy.
 */
#include "config.h"

#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/inet_diag.h>
#include <arpa/inet.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "log.h"
#include "serve.h"

/* A uid the daemon trusts as itself: its own, and root (as SO_PEERCRED). */
static int
uid_trusted(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* SO_PEERCRED: the Unix socket peer must be our uid or root. */
int
peer_unix_trusted(int fd)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1)
		return 0;
	return uid_trusted(uc.uid);
}

/* Copy an address and port into one end of a sock_diag socket id. */
static void
diag_end(const struct sockaddr_storage *ss, __be32 addr[4], __be16 *port)
{
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET) {
		memcpy(addr, &s4->sin_addr, sizeof(s4->sin_addr));
		*port = s4->sin_port;
	} else {
		memcpy(addr, &s6->sin6_addr, sizeof(s6->sin6_addr));
		*port = s6->sin6_port;
	}
}

/* Send the exact lookup of the peer's socket; -1 on error. */
static int
diag_ask(int nl, const struct sockaddr_storage *self,
    const struct sockaddr_storage *peer)
{
	struct {
		struct nlmsghdr		nlh;
		struct inet_diag_req_v2	req;
	} msg;
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = (__u8)self->ss_family;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0u;
	/* The peer's socket: its source is the peer, its destination us. */
	diag_end(peer, msg.req.id.idiag_src, &msg.req.id.idiag_sport);
	diag_end(self, msg.req.id.idiag_dst, &msg.req.id.idiag_dport);
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	return sendto(nl, &msg, sizeof(msg), 0, (struct sockaddr *)&kernel,
	    sizeof(kernel)) == (ssize_t)sizeof(msg) ? 0 : -1;
}

/*
 * Whether the answer is a live socket of the peer.  A TIME_WAIT or
 * request socket reports uid 0 and no inode, and a listener on the peer's
 * port answers once the peer's socket is gone: none of them is the peer
 * (a client that closed after writing its request must not pass as root).
 */
static int
diag_live_peer(const struct inet_diag_msg *m, __be16 sport, __be16 dport)
{
	if (m->idiag_inode == 0)
		return 0;
	switch (m->idiag_state) {
	case TCP_ESTABLISHED:
	case TCP_FIN_WAIT1:
	case TCP_FIN_WAIT2:
	case TCP_CLOSE_WAIT:
		break;
	default:
		return 0;
	}
	return m->id.idiag_sport == sport && m->id.idiag_dport == dport;
}

/* The uid in the kernel's answer; -1 when it has none. */
static long
diag_answer_uid(int nl, __be16 sport, __be16 dport)
{
	union {
		struct nlmsghdr	nlh;
		char		buf[8192];
	} u;
	struct inet_diag_msg *m;
	ssize_t n;

	if ((n = recv(nl, u.buf, sizeof(u.buf), 0)) < (ssize_t)sizeof(u.nlh))
		return -1;
	if (!NLMSG_OK(&u.nlh, (size_t)n) ||
	    u.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    u.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
		return -1;
	m = NLMSG_DATA(&u.nlh);
	if (!diag_live_peer(m, sport, dport))
		return -1;
	return (long)m->idiag_uid;
}

/*
 * The uid owning the local peer socket of TCP connection fd, or -1 (not
 * found: the peer is on another host or namespace, or sock_diag is not
 * available).
 */
long
peer_tcp_uid(int fd)
{
	struct sockaddr_storage self, peer;
	socklen_t slen = sizeof(self), plen = sizeof(peer);
	struct timeval tv = { 1, 0 };
	static int warned;
	__be32 addr[4];
	__be16 sport, dport;
	long uid;
	int nl;

	if (getsockname(fd, (struct sockaddr *)&self, &slen) == -1 ||
	    getpeername(fd, (struct sockaddr *)&peer, &plen) == -1 ||
	    (self.ss_family != AF_INET && self.ss_family != AF_INET6) ||
	    peer.ss_family != self.ss_family)
		return -1;
	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl == -1) {
		/* Closed, not open: every TCP peer then needs the bearer. */
		if (!warned)
			log_warn("sock_diag (RestrictAddressFamilies= needs "
			    "AF_NETLINK): loopback TCP peers need the token");
		warned = 1;
		return -1;
	}
	/* The kernel answers at once; never let the loop wait on it. */
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	diag_end(&peer, addr, &sport);
	diag_end(&self, addr, &dport);
	uid = diag_ask(nl, &self, &peer) == -1 ? -1 :
	    diag_answer_uid(nl, sport, dport);
	close(nl);
	return uid;
}

/*
 * Whether the loopback TCP peer on fd runs as us.  Only our own uid: root
 * is trusted on the Unix socket, where SO_PEERCRED is the kernel's word,
 * but on TCP a uid of 0 is what stale sockets report.
 */
int
peer_tcp_trusted(int fd)
{
	long uid = peer_tcp_uid(fd);

	return uid >= 0 && (uid_t)uid == geteuid();
}

/* The connection's socket, or -1. */
static int
req_fd(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);

	if (evcon == NULL)
		return -1;
	return bufferevent_getfd(evhttp_connection_get_bufferevent(evcon));
}

long
peer_unix_uid(struct evhttp_request *req)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss), cl;
	struct ucred uc;
	int fd;

	if ((fd = req_fd(req)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    ss.ss_family != AF_UNIX)
		return -1;
	cl = sizeof(uc);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &cl) == -1)
		return -1;
	return (long)uc.uid;
}

/* Whether addr (numeric) is one of the --trusted-proxy addresses. */
static int
proxy_trusted(const char *addr)
{
	for (size_t i = 0; i < conf.n_trusted_proxy; i++)
		if (strcmp(addr, conf.trusted_proxy[i]) == 0)
			return 1;
	return 0;
}

/*
 * The last (rightmost) address of X-Forwarded-For, the one our proxy
 * added, if it is a numeric address; 0 when there is none.
 */
static int
forwarded_for(struct evhttp_request *req, char *buf, size_t len)
{
	const char *xff = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "X-Forwarded-For"), *last;
	unsigned char bin[sizeof(struct in6_addr)];
	char cand[PEER_ADDR_MAX];
	size_t n;

	if (xff == NULL)
		return 0;
	last = strrchr(xff, ',');
	last = last != NULL ? last + 1 : xff;
	last += strspn(last, " \t");
	n = strcspn(last, " \t");
	if (n == 0 || n >= sizeof(cand))
		return 0;
	memcpy(cand, last, n);
	cand[n] = '\0';
	if (inet_pton(AF_INET, cand, bin) != 1 && inet_pton(AF_INET6, cand, bin) != 1)
		return 0;
	strlcpy(buf, cand, len);
	return 1;
}

/*
 * The client's address: the TCP peer's, or, when the peer is a
 * --trusted-proxy, the one it forwarded; "unix" on the Unix socket,
 * "unknown" when the kernel does not say.
 */
void
peer_client_addr(struct evhttp_request *req, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	const void *a;
	int fd;

	strlcpy(buf, "unknown", len);
	if ((fd = req_fd(req)) == -1 ||
	    getpeername(fd, (struct sockaddr *)&ss, &sl) == -1)
		return;
	if (ss.ss_family == AF_UNIX) {
		strlcpy(buf, "unix", len);
		return;
	}
	a = ss.ss_family == AF_INET ?
	    (const void *)&((struct sockaddr_in *)&ss)->sin_addr :
	    (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (inet_ntop(ss.ss_family, a, buf, (socklen_t)len) == NULL) {
		strlcpy(buf, "unknown", len);
		return;
	}
	if (proxy_trusted(buf))
		forwarded_for(req, buf, len);
}
