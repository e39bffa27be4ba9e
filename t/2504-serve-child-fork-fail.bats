#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-acp-child: the agent's fork fails (RLIMIT_NPROC, memory): that
# prompt fails retryably, and the child and its session live on (t/2503
# has the daemon's half).  t/helper/failfork.so makes fork() fail while
# $FAILFORK_FILE exists.
load acp_helper

SHIM=$QWEN_TOP_BUILDDIR/t/helper/failfork.so

setup() {
	acp_setup
	FAIL=$BATS_TEST_TMPDIR/fail
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
}

@test "the child: the agent fails to fork, that prompt fails retryably, the child and its session live" {
	run acp-drive -t 10 -e "$ERR" -- env LD_PRELOAD="$SHIM" FAILFORK_FILE="$FAIL" \
	    qwen-acp-child --data-dir "$DATA" --workspace "$WS" --agent-command 'echo agent-ran' <<EOF
$INIT
$(req '"new"' session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
shell touch $FAIL
$(prompt_req 1 "$SID1" "first")
shell rm $FAIL
$(prompt_req 2 "$SID1" "second")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .error.data.code)" = agent_spawn_failed ]
	[ "$(resp 1 | jq -r .error.data.retryable)" = true ]
	[[ "$(resp 1 | jq -r .error.message)" == "cannot start agent: fork: "* ]]
	[ "$(resp 2 | jq -r .result.stopReason)" = end_turn ]
}

# Only the second fork fails: in a placeholder-then-libpipeline design that
# is libpipeline's own, which would end the child at the first prompt.
@test "the child: only the second fork fails: that prompt fails retryably, the ones before and after run" {
	run acp-drive -t 10 -e "$ERR" -- env LD_PRELOAD="$SHIM" FAILFORK_FILE="$FAIL" \
	    qwen-acp-child --data-dir "$DATA" --workspace "$WS" --agent-command 'echo agent-ran' <<EOF
$INIT
$(req '"new"' session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
shell echo 2 >$FAIL
$(prompt_req 1 "$SID1" "first")
$(prompt_req 2 "$SID1" "second")
$(prompt_req 3 "$SID1" "third")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .result.stopReason)" = end_turn ]
	[ "$(resp 2 | jq -r .error.data.code)" = agent_spawn_failed ]
	[ "$(resp 2 | jq -r .error.data.retryable)" = true ]
	[ "$(resp 3 | jq -r .result.stopReason)" = end_turn ]
}

@test "the delegating child: the --agent-acp agent fails to fork: the prompt fails retryably, the child lives" {
	run acp-drive -t 10 -e "$ERR" -- env LD_PRELOAD="$SHIM" FAILFORK_FILE="$FAIL" \
	    qwen-acp-child --data-dir "$DATA" --workspace "$WS" --agent-acp cat --agent-prestart no <<EOF
$INIT
$(req '"new"' session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID1\"}}")
shell touch $FAIL
$(prompt_req 1 "$SID1" "first")
shell rm $FAIL
$(req '"new2"' session/new "{\"_meta\":{\"qwen-code/sessionId\":\"$SID2\"}}")
EOF
	[ "$status" -eq 0 ]
	[ "$(resp 1 | jq -r .error.data.code)" = agent_spawn_failed ]
	[ "$(resp 1 | jq -r .error.data.retryable)" = true ]
	[[ "$(resp 1 | jq -r .error.message)" == "cannot start agent: fork: "* ]]
	[ "$(resp '"new2"' | jq -r .result.sessionId)" = "$SID2" ]
}
