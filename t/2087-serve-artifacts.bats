#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-serve: a live session's artifacts (routes-artifacts.c,
# artifacts.c, artifacts-check.c): added, updated, listed and removed as
# upstream's store takes a client's; stable ids; upstream's checks; a
# client may not change another's; artifact_changed events; kept in a
# private file across a restart (ephemeral ones not), gone with the
# session.

load serve_helper
bats_require_minimum_version 1.5.0

teardown() {
	serve_teardown
}

# A loaded session, its client id in $CID.
loaded() {
	serve_loaded
	CID=$(jq -r .clientId <<<"$body")
	[ -n "$CID" ]
}

# art BODY [CLIENT]: POST it as the client ($CID by default).
art() {
	req POST /session/$SID/artifacts "$1" -H "X-Qwen-Client-Id: ${2:-$CID}"
}

# The artifacts file of the session.
afile() {
	printf '%s/tmp/%s/artifacts/session-%s.json' "$DATA" \
	    "$(printf '%s' "$WS" | sha256sum | cut -d' ' -f1)" "$SID"
}

@test "artifacts: add, update, list, remove, with events" {
	loaded
	sse_open ev "/session/$SID/events"
	mkdir -p "$WS/out"
	printf 'hello' >"$WS/out/report.html"
	art '{"title":" Report ","workspacePath":"out/./report.html"}'
	expect 200 '.v == 1 and (.changes | length) == 1 and .changes[0].action == "created"'
	local id want
	id=$(jq -r '.changes[0].artifactId' <<<"$body")
	want=$(printf '%s' "$SID:workspace:out/report.html" | sha256sum | cut -c1-16)
	[ "$id" = "$want" ]
	jq -e '.changes[0].artifact | .kind == "html" and .storage == "workspace" and
	    .source == "client" and .status == "available" and .title == "Report" and
	    .sizeBytes == 5 and .retention == "restorable" and .clientRetained == true' <<<"$body"
	sse_wait ev ".type == \"artifact_changed\" and .data.change.action == \"created\" and .originatorClientId == \"$CID\""
	# The same locator again is the same artifact, updated.
	art '{"title":"Report v2","workspacePath":"out/report.html","description":"d"}'
	expect 200 ".changes[0].action == \"updated\" and .changes[0].artifactId == \"$id\""
	art '{"title":"Report v2","workspacePath":"out/report.html","description":"d"}'
	expect 200 '.changes == []'
	art '{"title":"Site","url":"https://example.com/x"}'
	expect 200 '.changes[0].artifact | .kind == "link" and .storage == "external_url" and .url == "https://example.com/x"'
	req GET /session/$SID/artifacts
	expect 200 '.v == 1 and (.artifacts | length) == 2 and .limits.maxArtifacts == 200 and (.generatedAt | type) == "string"'
	jq -e '.artifacts[0].title == "Report v2" and .artifacts[0].description == "d"' <<<"$body"
	rm "$WS/out/report.html"
	req GET /session/$SID/artifacts
	expect 200 '.artifacts[0].status == "missing"'
	req DELETE /session/$SID/artifacts/$id '' -H "X-Qwen-Client-Id: $CID"
	expect 200 ".changes[0].action == \"removed\" and .changes[0].reason == \"explicit\""
	sse_wait ev '.type == "artifact_changed" and .data.change.action == "removed"'
	req DELETE /session/$SID/artifacts/$id '' -H "X-Qwen-Client-Id: $CID"
	expect 200 '.changes == []'
	req GET "/workspaces/primary/session/$SID/artifacts"
	expect 200 '.artifacts | length == 1'
	[ "$(stat -c %a "$(dirname "$(afile)")")" = 700 ]
}

@test "artifacts: upstream's checks" {
	loaded
	local b
	while IFS='|' read -r b field msg; do
		art "$b"
		expect 400 ".v == 1 and .error.code == \"VALIDATION_FAILED\" and .error.message == \"$msg\""
		[ "$(jq -r '.error.field // ""' <<<"$body")" = "$field" ]
	done <<'BAD'
{"url":"https://a/"}|title|title is required
{"title":"   ","url":"https://a/"}|title|title is required
{"title":"<b>x</b>","url":"https://a/"}|title|title contains unsafe markup
{"title":"a\u0007b","url":"https://a/"}|title|title contains control characters
{"title":"t"}||provide exactly one of workspacePath, managedId, or url
{"title":"t","url":"https://a/","managedId":"m"}||provide exactly one of workspacePath, managedId, or url
{"title":"t","workspacePath":"/etc/passwd"}|workspacePath|workspacePath must be relative to the workspace
{"title":"t","workspacePath":"a/../../x"}|workspacePath|workspacePath must stay inside the workspace
{"title":"t","managedId":"../x"}|managedId|managedId must be an opaque managed resource id
{"title":"t","url":"ftp://a/"}|url|url must use http or https
{"title":"t","url":"https://u:p@a/"}|url|url must not include credentials
{"title":"t","url":"https://a/","storage":"published"}|storage|published artifacts are reserved for trusted publishers
{"title":"t","url":"https://a/","storage":"disk"}|storage|storage must be workspace, external_url, managed, or published
{"title":"t","url":"https://a/","kind":"movie"}|kind|kind must be a supported artifact kind
{"title":"t","url":"https://a/","retention":"pinned"}|retention|pinned retention is not supported by session_artifacts_persistence
{"title":"t","url":"https://a/","sizeBytes":-1}|sizeBytes|sizeBytes must be a non-negative safe integer
{"title":"t","url":"https://a/","metadata":[1]}|metadata|metadata must be an object
BAD
	# A link out of the workspace is refused as a path out of it.
	ln -s /etc "$WS/etc"
	art '{"title":"t","workspacePath":"etc/passwd"}'
	expect 400 '.error.message == "workspacePath must stay inside the workspace"'
	run ! test -e "$(afile)"
}

@test "artifacts: a change needs a client id, and only its owner may make it" {
	loaded
	art '{"title":"t","url":"https://a/"}' ""
	req POST /session/$SID/artifacts '{"title":"t","url":"https://a/"}'
	expect 403 '.code == "client_id_required"'
	req DELETE /session/$SID/artifacts/x
	expect 403 '.code == "client_id_required"'
	art '{"title":"mine","url":"https://a/"}'
	expect 200
	local id other
	id=$(jq -r '.changes[0].artifactId' <<<"$body")
	req POST /session/$SID/resume '{}'
	expect 200
	other=$(jq -r .clientId <<<"$body")
	[ "$other" != "$CID" ]
	art '{"title":"theirs","url":"https://a/"}' "$other"
	expect 403 ".code == \"session_artifact_forbidden\" and .artifactId == null and .sessionId == \"$SID\""
	req DELETE /session/$SID/artifacts/$id '' -H "X-Qwen-Client-Id: $other"
	expect 403 ".code == \"session_artifact_forbidden\" and .artifactId == \"$id\""
	req GET /session/$SID/artifacts '' -H "X-Qwen-Client-Id: $other"
	expect 200 '.artifacts[0].title == "mine"'
	req GET /session/33333333-3333-4333-8333-333333333333/artifacts
	expect 404 '.code == "session_not_found"'
}

@test "artifacts: at most 200 a session" {
	loaded
	local i
	for i in $(seq 1 200); do
		art "{\"title\":\"t$i\",\"url\":\"https://a/$i\"}"
		[ "$code" = 200 ]
	done
	art '{"title":"one more","url":"https://a/201"}'
	expect 200 '.changes == [] and .warnings == ["dropped 1 newly created artifacts because the store is full"]'
	req GET /session/$SID/artifacts
	expect 200 '.artifacts | length == 200'
	# An update of one of them still goes.
	art '{"title":"t1 again","url":"https://a/1"}'
	expect 200 '.changes[0].action == "updated"'
}

@test "artifacts: restorable ones kept across a restart, ephemeral not, all gone with the session" {
	loaded
	art '{"title":"kept","url":"https://a/kept"}'
	expect 200
	art '{"title":"brief","url":"https://a/brief","retention":"ephemeral"}'
	expect 200
	[ "$(stat -c %a "$(afile)")" = 600 ]
	serve_stop
	serve_start
	req POST /session/$SID/load '{}'
	expect 200
	req GET /session/$SID/artifacts
	expect 200 '[.artifacts[].title] == ["kept"]'
	req DELETE /session/$SID
	expect 204
	wait_for 10 cond '[ "$(curl -s -o /dev/null -w "%{http_code}" --unix-socket "$SOCK" http://localhost/session/$SID/status)" = 404 ]'
	req POST /sessions/archive "{\"sessionIds\":[\"$SID\"]}"
	expect 200
	[ -f "$(afile)" ]
	req POST /sessions/delete "{\"sessionIds\":[\"$SID\"]}"
	expect 200
	[ ! -e "$(afile)" ]
}

@test "artifacts: content is upstream's 404 artifact_snapshot_unavailable, no client's artifact a saved webpage" {
	loaded
	mkdir -p "$WS/out"
	printf '<p>hi</p>' >"$WS/out/page.html"
	art '{"title":"Page","workspacePath":"out/page.html"}'
	expect 200
	local id
	id=$(jq -r '.changes[0].artifactId' <<<"$body")
	req GET "/session/$SID/artifacts/$id/content" "" -H "X-Qwen-Client-Id: $CID"
	expect 404 '. == {"error": "artifact_snapshot_unavailable", "message": "Saved webpage version is missing or has changed."}'
	req GET "/session/$SID/artifacts/nosuch/content"
	expect 404 '.error == "artifact_snapshot_unavailable"'
	req GET "/workspaces/$(jq -rn --arg w "$WS" '$w|@uri')/session/$SID/artifacts/$id/content"
	expect 404 '.error == "artifact_snapshot_unavailable"'
	# Not for a session not live here.
	req GET /session/33333333-3333-4333-8333-333333333333/artifacts/$id/content
	expect 404 '.code == "session_not_found"'
}
