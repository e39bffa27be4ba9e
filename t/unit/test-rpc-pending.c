/* SPDX-License-Identifier: ISC */
/*
 * test-rpc-pending.c: the pending-request table: ids, take, take by json
 * id, deadlines and expiry order, drain, and a model check against a plain
 * array under many random operations.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-pending.h"
#include "tap.h"

/* Records the callbacks of expire and drain. */
struct calls {
	int64_t			 ids[64];
	void			*args[64];
	size_t			 n;
	struct rpc_pending	*t;	/* for callbacks that touch the table */
	int64_t			 added;
};

/* Note one callback. */
static void
record(int64_t id, void *arg, void *ctx)
{
	struct calls *c = ctx;

	if (c->n < 64) {
		c->ids[c->n] = id;
		c->args[c->n] = arg;
	}
	c->n++;
}

/* Ids are positive, increasing, and never reused. */
static void
test_ids(void)
{
	struct rpc_pending *t = rpc_pending_new();
	int64_t a, b, c;
	void *arg = NULL;
	int x, y;

	a = rpc_pending_add(t, 0, &x);
	b = rpc_pending_add(t, 0, &y);
	ok(a > 0 && b > a, "ids: positive and increasing (%lld, %lld)",
	    (long long)a, (long long)b);
	is_int(rpc_pending_count(t), 2, "ids: two pending");
	ok(rpc_pending_has(t, a) && rpc_pending_has(t, b), "ids: has both");
	ok(!rpc_pending_has(t, b + 1) && !rpc_pending_has(t, 0) &&
	    !rpc_pending_has(t, -1), "ids: has nothing else");
	is_int(rpc_pending_take(t, a, &arg), 0, "take: found");
	ok(arg == &x, "take: gives the pointer back");
	is_int(rpc_pending_take(t, a, &arg), -1, "take: twice is -1");
	ok(!rpc_pending_has(t, a), "take: no longer pending");
	c = rpc_pending_add(t, 0, NULL);
	ok(c > b, "ids: not reused after a take (%lld)", (long long)c);
	is_int(rpc_pending_take(t, 0, NULL), -1, "take 0: -1");
	is_int(rpc_pending_take(t, -5, NULL), -1, "take negative: -1");
	is_int(rpc_pending_take(t, b, NULL), 0, "take with a NULL argp");
	is_int(rpc_pending_count(t), 1, "count after takes");
	rpc_pending_free(t);
	rpc_pending_free(NULL);
}

/* take_json accepts integers and decimal strings only. */
static void
test_take_json(void)
{
	struct rpc_pending *t = rpc_pending_new();
	json_object *j;
	int64_t id[3];
	void *arg;
	char s[32];
	int x;
	size_t i;

	for (i = 0; i < 3; i++)
		id[i] = rpc_pending_add(t, 0, &x);
	j = json_object_new_int64(id[0]);
	is_int(rpc_pending_take_json(t, j, &arg), 0, "take_json: integer");
	ok(arg == &x, "take_json: pointer");
	json_object_put(j);
	snprintf(s, sizeof(s), "%lld", (long long)id[1]);
	j = json_object_new_string(s);
	is_int(rpc_pending_take_json(t, j, &arg), 0, "take_json: decimal string");
	json_object_put(j);

	snprintf(s, sizeof(s), "0%lld", (long long)id[2]);
	j = json_object_new_string(s);
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: leading zero");
	json_object_put(j);
	snprintf(s, sizeof(s), "+%lld", (long long)id[2]);
	j = json_object_new_string(s);
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: sign");
	json_object_put(j);
	snprintf(s, sizeof(s), "%lld ", (long long)id[2]);
	j = json_object_new_string(s);
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: trailing space");
	json_object_put(j);
	j = json_object_new_string("99999999999999999999");
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: too long");
	json_object_put(j);
	j = json_object_new_string("");
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: empty string");
	json_object_put(j);
	j = json_object_new_double((double)id[2]);
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: a double");
	json_object_put(j);
	is_int(rpc_pending_take_json(t, NULL, NULL), -1, "take_json: null");
	j = json_object_new_boolean(1);
	is_int(rpc_pending_take_json(t, j, NULL), -1, "take_json: boolean");
	json_object_put(j);
	ok(rpc_pending_has(t, id[2]), "take_json: the rejects took nothing");
	rpc_pending_free(t);
}

/* Expire takes what is due, earliest deadline first, ties by id. */
static void
test_expire(void)
{
	struct rpc_pending *t = rpc_pending_new();
	struct calls c;
	int64_t a, b, d, e, none;
	int xa, xb, xd, xe;

	memset(&c, 0, sizeof(c));
	is_int(rpc_pending_next_deadline(t), 0, "next_deadline: empty table");
	none = rpc_pending_add(t, 0, NULL);
	is_int(rpc_pending_next_deadline(t), 0, "next_deadline: no deadlines");
	a = rpc_pending_add(t, 300, &xa);
	b = rpc_pending_add(t, 100, &xb);
	d = rpc_pending_add(t, 200, &xd);
	e = rpc_pending_add(t, 100, &xe);
	is_int(rpc_pending_next_deadline(t), 100, "next_deadline: earliest");
	is_int(rpc_pending_expire(t, 99, record, &c), 0, "expire before: none");
	is_int(rpc_pending_expire(t, 200, record, &c), 3, "expire at 200: three");
	ok(c.ids[0] == b && c.ids[1] == e && c.ids[2] == d,
	    "expire: by deadline, ties by id");
	ok(c.args[0] == &xb && c.args[1] == &xe && c.args[2] == &xd,
	    "expire: pointers passed");
	ok(!rpc_pending_has(t, b) && !rpc_pending_has(t, d) &&
	    rpc_pending_has(t, a) && rpc_pending_has(t, none),
	    "expire: removed the due ones only");
	is_int(rpc_pending_next_deadline(t), 300, "next_deadline: after expire");
	is_int(rpc_pending_take(t, a, NULL), 0, "take an entry with a deadline");
	is_int(rpc_pending_next_deadline(t), 0, "next_deadline: after take");
	is_int(rpc_pending_expire(t, UINT64_MAX, record, &c), 0,
	    "expire: entries without a deadline never expire");
	rpc_pending_free(t);
}

/* Re-add from the callback: a due re-add waits for the next expire. */
static void
readd(int64_t id, void *arg, void *ctx)
{
	struct calls *c = ctx;

	record(id, arg, ctx);
	c->added = rpc_pending_add(c->t, 1, NULL);
}

/* A callback that takes another due entry removes it. */
static void
take_other(int64_t id, void *arg, void *ctx)
{
	struct calls *c = ctx;

	record(id, arg, ctx);
	if (c->n == 1)
		rpc_pending_take(c->t, c->added, NULL);
}

/* Callbacks that add or take entries during expire. */
static void
test_expire_reentry(void)
{
	struct rpc_pending *t = rpc_pending_new();
	struct calls c;
	int64_t a, b;

	memset(&c, 0, sizeof(c));
	c.t = t;
	a = rpc_pending_add(t, 5, NULL);
	is_int(rpc_pending_expire(t, 10, readd, &c), 1,
	    "re-add in expire: only the first expires");
	ok(c.ids[0] == a && rpc_pending_has(t, c.added),
	    "re-add in expire: the new entry is pending");
	is_int(rpc_pending_next_deadline(t), 1, "re-add: its deadline counts after");
	is_int(rpc_pending_expire(t, 10, record, &c), 1,
	    "re-add: the next expire takes it");
	memset(&c, 0, sizeof(c));
	c.t = t;
	a = rpc_pending_add(t, 5, NULL);
	b = rpc_pending_add(t, 6, NULL);
	c.added = b;
	is_int(rpc_pending_expire(t, 10, take_other, &c), 1,
	    "take in expire: the taken entry does not expire");
	ok(c.ids[0] == a && rpc_pending_count(t) == 0, "take in expire: empty");
	rpc_pending_free(t);
}

/* Drain removes everything and reports each entry once. */
static void
test_drain(void)
{
	struct rpc_pending *t = rpc_pending_new();
	struct calls c;
	int64_t ids[10];
	size_t i, j, seen = 0;

	memset(&c, 0, sizeof(c));
	for (i = 0; i < 10; i++)
		ids[i] = rpc_pending_add(t, i % 2 ? 50 + i : 0, &ids[i]);
	rpc_pending_take(t, ids[3], NULL);
	is_int(rpc_pending_drain(t, record, &c), 9, "drain: nine");
	for (i = 0; i < 10; i++)
		for (j = 0; j < c.n; j++)
			if (c.ids[j] == ids[i] && c.args[j] == &ids[i])
				seen++;
	is_int(seen, 9, "drain: each entry once, with its pointer");
	is_int(rpc_pending_count(t), 0, "drain: empty after");
	is_int(rpc_pending_next_deadline(t), 0, "drain: no deadline after");
	ok(rpc_pending_add(t, 0, NULL) > ids[9], "drain: ids go on increasing");
	is_int(rpc_pending_drain(t, NULL, NULL), 1, "drain with no callback");
	rpc_pending_free(t);
}

enum { MODEL_N = 20000 };

struct model {
	int64_t		 ids[MODEL_N];
	uint64_t	 dl[MODEL_N];
	char		 live[MODEL_N];
	size_t		 n, nlive, mismatches, order_bad;
	uint64_t	 now, last_dl;
};

/* Expire callback: the entry must be live and due, in deadline order. */
static void
model_expired(int64_t id, void *arg, void *ctx)
{
	struct model *m = ctx;
	size_t idx = (size_t)(id - m->ids[0]);

	if (idx >= m->n || arg != &m->ids[idx] || !m->live[idx] ||
	    m->dl[idx] == 0 || m->dl[idx] > m->now) {
		m->mismatches++;
		return;
	}
	if (m->dl[idx] < m->last_dl)
		m->order_bad++;
	m->last_dl = m->dl[idx];
	m->live[idx] = 0;
	m->nlive--;
}

/* Many entries against a model: random add, take, expire. */
static void
test_model(void)
{
	static struct model m;
	struct rpc_pending *t = rpc_pending_new();
	size_t i, k, most = 0;
	uint64_t want;

	srandom(42);
	m.now = 1000;
	for (i = 0; i < 3 * MODEL_N; i++) {
		k = (size_t)random() % 10;
		if (k < 6 && m.n < MODEL_N) {
			m.dl[m.n] = random() % 4 ?
			    m.now + 1 + (uint64_t)(random() % 5000) : 0;
			m.ids[m.n] = rpc_pending_add(t, m.dl[m.n], &m.ids[m.n]);
			if (m.n > 0 && m.ids[m.n] != m.ids[m.n - 1] + 1)
				m.mismatches++;
			m.live[m.n++] = 1;
			m.nlive++;
		} else if (k < 9 && m.n > 0) {
			k = (size_t)random() % m.n;
			if ((rpc_pending_take(t, m.ids[k], NULL) == 0) !=
			    m.live[k])
				m.mismatches++;
			if (m.live[k])
				m.nlive--;
			m.live[k] = 0;
		} else {
			m.now += 50;
			m.last_dl = 0;
			rpc_pending_expire(t, m.now, model_expired, &m);
			for (k = 0; k < m.n; k++)
				if (m.live[k] && m.dl[k] != 0 && m.dl[k] <= m.now)
					m.mismatches++;
		}
		if (rpc_pending_count(t) != m.nlive)
			m.mismatches++;
		if (m.nlive > most)
			most = m.nlive;
	}
	want = 0;
	for (k = 0; k < m.n; k++)
		if (m.live[k] && m.dl[k] != 0 && (want == 0 || m.dl[k] < want))
			want = m.dl[k];
	is_int(m.mismatches, 0, "model: %zu adds, takes, expiries agree (%zu at most)",
	    m.n, most);
	is_int(m.order_bad, 0, "model: expiry in deadline order");
	is_int(rpc_pending_next_deadline(t), want, "model: next deadline");
	for (k = 0; k < m.n; k++)
		if (m.live[k] != rpc_pending_has(t, m.ids[k]))
			m.mismatches++;
	is_int(m.mismatches, 0, "model: has() agrees for every id ever issued");
	is_int(rpc_pending_drain(t, NULL, NULL), m.nlive, "model: the rest drains");
	rpc_pending_free(t);
}

int
main(void)
{
	test_ids();
	test_take_json();
	test_expire();
	test_expire_reentry();
	test_drain();
	test_model();
	return done_testing();
}
