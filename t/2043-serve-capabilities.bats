#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: GET /capabilities is truthful.  Every feature tag it
# advertises names something this daemon serves (each tag's route is
# asked and must answer as a route, not as the route table's 404), and
# every upstream tag whose route we do not serve is absent; when a route
# of that list starts answering, its tag must be advertised.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# Each advertised tag and the request that shows it is served.  $SID is
# a live session, $WSID the primary workspace's id.  A tag for a
# behaviour rather than a route names the route that carries it.  The
# agent's own calls (context, stats, rewind, ...) are served by passing
# them to the session's agent: the route answers whatever the agent says.
SERVED='
health                        GET /health
capabilities                  GET /capabilities
daemon_status                 GET /daemon/status
session_create                POST /session
session_id_override           POST /session
session_scope_override        POST /session
session_load                  POST /session/$SID/load
session_resume                POST /session/$SID/resume
unstable_session_resume       POST /session/$SID/resume
session_transcript            GET /session/$SID/transcript
session_prompt                POST /session/$SID/prompt
non_blocking_prompt           POST /session/$SID/prompt
session_cancel                POST /session/$SID/cancel
session_events                GET /session/$SID/events
slow_client_warning           GET /session/$SID/events
typed_event_schema            GET /session/$SID/events
client_identity               POST /session/$SID/heartbeat
client_heartbeat              POST /session/$SID/heartbeat
session_close                 DELETE /session/$SID2
session_status                GET /session/$SID/status
session_detach                POST /session/$SID/detach
workspace_session_list        GET /workspace/sessions
session_list                  GET /workspace/$WSID/sessions
session_set_model             POST /session/$SID/model
session_approval_mode_control POST /session/$SID/approval-mode
session_branch                POST /session/$SID/branch
session_side_task             POST /session/$SID/side-task
session_permission_vote       POST /session/$SID/permission/none
permission_vote               POST /permission/none
permission_mediation          POST /session/$SID/permission/none
prompt_absolute_deadline      POST /session/$SID/prompt
writer_idle_timeout           GET /session/$SID/events
multi_workspace_sessions      POST /session
workspace_qualified_acp       POST /workspaces/$WSID/acp
session_info                  GET /workspace/$WSID/session-info
workspace_session_live_state  GET /workspaces/$WSID/sessions/live-state
session_archive               POST /sessions/archive
session_metadata              PATCH /session/$SID/metadata
session_organization          PATCH /session/$SID/organization
session_export                GET /session/$SID/export?format=jsonl
session_turn_navigation       GET /session/$SID/turn-index
session_turn_status           GET /session/$SID/turns/current
workspace_persisted_transcript    GET /workspaces/$WSID/session/$SID/transcript
workspace_session_export          GET /workspaces/$WSID/session/$SID/export?format=jsonl
workspace_archived_session_export GET /workspaces/$WSID/session/$SID/archive/export
workspace_session_metadata        PATCH /workspaces/$WSID/session/$SID/metadata
session_context               GET /session/$SID/context
session_context_usage         GET /session/$SID/context-usage
session_stats                 GET /session/$SID/stats
session_supported_commands    GET /session/$SID/supported-commands
session_tasks                 GET /session/$SID/tasks
session_agents                GET /session/$SID/agents
session_lsp                   GET /session/$SID/lsp
session_resources             GET /session/$SID/resources
session_hooks                 GET /session/$SID/hooks
session_rewind                POST /session/$SID/rewind
session_recap                 POST /session/$SID/recap
session_btw                   POST /session/$SID/btw
session_language              POST /session/$SID/language
session_agent_trace           GET /session/$SID/agent-trace
session_catalog_batch         POST /sessions/catalog
session_attachments           POST /session/$SID/attachments
session_attachment_list       GET /session/$SID/attachments
session_sources               GET /session/$SID/sources
session_artifacts             GET /session/$SID/artifacts
session_artifacts_persistence GET /session/$SID/artifacts
session_shell_command         POST /session/$SID/shell
session_generation            POST /session/$SID/generate
session_mid_turn_message_mutation POST /session/$SID/mid-turn-message
session_mid_turn_message_query    GET /session/$SID/mid-turn-messages
standalone_sessions_v1        GET /standalone/sessions
'

# Upstream's tags whose routes this daemon does not serve (yet): absent
# while the route is not there, required once it is.
UNSERVED='
standalone_session_options_v1 GET /standalone/session-options
'

# served METHOD PATH: the route answers as a route (its own JSON answer,
# whatever the status), not the table's not_found / method_not_allowed.
served() {
	local m=$1 p=$2
	if [ "$m" = GET ] && [[ "$p" == */events ]]; then
		NSSE=$((${NSSE:-0} + 1))
		sse_open "probe$NSSE" "$p"	# waits for the stream's retry: line
		return
	fi
	if [ "$m" = GET ]; then req GET "$p"; else req "$m" "$p" '{}'; fi
	[ "$code" != 204 ] || return 0
	[ "$code" != 501 ] || return 1
	jq -e 'type == "object"' >/dev/null <<<"${body:-null}" || return 1
	jq -e '.code != "not_found" and .code != "method_not_allowed"' >/dev/null <<<"$body"
}

# The probe of tag $1 in table $2, with $SID, $SID2 and $WSID filled in.
probe_of() {
	awk -v t="$1" '$1 == t { print $2, $3 }' <<<"$2" |
	    sed -e "s|\$SID2|$SID2|g" -e "s|\$SID|$SID|g" -e "s|\$WSID|$WSID|g"
}

caps_serve() {
	mkdir -p "$BATS_TEST_TMPDIR/wsb"
	serve_start --workspace "$BATS_TEST_TMPDIR/ws" --workspace "$BATS_TEST_TMPDIR/wsb" \
	    --prompt-deadline-ms 600000 --writer-idle-timeout-ms 600000 \
	    --enable-session-shell
	make_transcript
	make_transcript "$SID2"
	req POST /session/$SID/load '{}'
	expect 200
	req POST /session/$SID2/load '{}'
	expect 200
	req GET /capabilities
	expect 200
	CAPS=$body
	WSID=$(jq -r '.workspaces[0].id' <<<"$CAPS")
}

@test "every advertised feature tag names a route that answers" {
	caps_serve
	local tag probe n=0
	for tag in $(jq -r '.features[]' <<<"$CAPS"); do
		probe=$(probe_of "$tag" "$SERVED")
		if [ -z "$probe" ]; then
			echo "advertised tag $tag is not in the test's table" >&2
			return 1
		fi
		# shellcheck disable=SC2086
		served $probe || { echo "tag $tag: $probe answered $code $body" >&2; return 1; }
		n=$((n + 1))
	done
	# And nothing of the table is left out (this daemon has every
	# condition but auth and origins on).
	for tag in $(awk 'NF { print $1 }' <<<"$SERVED"); do
		jq -e --arg t "$tag" '.features | index($t) != null' >/dev/null <<<"$CAPS" ||
		    { echo "served tag $tag is not advertised" >&2; return 1; }
	done
	[ "$n" -ge 30 ]
	jq -e '.policy.permission == "first-responder"' >/dev/null <<<"$CAPS"
}

@test "an upstream tag is advertised exactly when its route is served" {
	caps_serve
	local tag probe has
	for tag in $(awk 'NF { print $1 }' <<<"$UNSERVED"); do
		probe=$(probe_of "$tag" "$UNSERVED")
		has=$(jq -r --arg t "$tag" '.features | index($t) != null' <<<"$CAPS")
		# shellcheck disable=SC2086
		if served $probe; then
			[ "$has" = true ] || { echo "$probe is served but $tag is absent" >&2; return 1; }
		else
			[ "$has" = false ] || { echo "$tag advertised but $probe is not served" >&2; return 1; }
		fi
	done
}

@test "conditional tags follow their flags; a bare daemon advertises none of them" {
	serve_start
	req GET /capabilities
	expect 200
	local t
	for t in require_auth allow_origin prompt_absolute_deadline writer_idle_timeout \
	    multi_workspace_sessions workspace_qualified_acp session_shell_command; do
		run ! jq -e --arg t "$t" '.features | index($t) != null' <<<"$body"
	done
}
