#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Two hosts behind HAProxy: routing by workspace, SSE through the proxy,
# WebSocket /acp through the proxy (kept open, a round trip), a drain
# during a running turn that loses nothing, ACP refusing new sessions on
# the open WebSocket during the drain.  The whole deployment
# runs inside `unshare -n -m` (t/helper/haproxy-hosts.sh): only loopback
# and the namespaces it makes, so nothing leaves the machine.

load serve_helper

@test "haproxy: two hosts, routing by workspace, SSE, a drain that loses the running turn's nothing" {
	[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
	command -v haproxy >/dev/null || skip "haproxy not installed"
	command -v ip >/dev/null || skip "iproute2 not installed"
	unshare -n -m true 2>/dev/null || skip "cannot make network namespaces here"
	run unshare -n -m --propagation private \
	    "$BATS_TEST_DIRNAME/helper/haproxy-hosts.sh" "$BATS_TEST_TMPDIR" \
	    "$BATS_TEST_DIRNAME/../contrib/haproxy/qwen-serve.cfg"
	printf '%s\n' "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"step: routing by workspace: path prefix and header"* ]]
	[[ "$output" == *"step: WebSocket /acp through the proxy: upgraded, session/new answered"* ]]
	[[ "$output" == *"step: drain: ACP over the open WebSocket refuses new sessions (workspace_draining)"* ]]
	[[ "$output" == *"step: drained: the running turn finished through the proxy, a exited 0"* ]]
}
