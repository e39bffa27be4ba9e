#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-trace-dump --format svg (issue 17): the restore timeline as a
# standalone SVG, checked as XML with python3's xml.etree: one group per
# restore, daemon and child tracks, a shape per stage, the deadline and
# the result marked, input text escaped.  The picture of the test data is
# left in the build tree's t/artifacts/.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
	command -v python3 >/dev/null || skip "python3 not installed"
	ALL=$TESTDATA/trace-dump/all.jsonl
}

# svg_facts FILE: "restores stages deadlines results" counted in the XML.
svg_facts() {
	python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {'s': 'http://www.w3.org/2000/svg'}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == '{http://www.w3.org/2000/svg}svg', root.tag
assert int(root.get('height')) > 0 and root.get('viewBox')
groups = [g for g in root.findall('s:g', ns) if g.get('class') == 'restore']
titles = [t.text for g in groups for t in g.iter('{http://www.w3.org/2000/svg}title')]
texts = [''.join(t.itertext()) for g in groups for t in g.findall('s:text', ns)]
print(len(groups),
      sum(1 for t in titles if t.split(':')[0] in ('transcript_read', 'chain_reconstruct')),
      sum(1 for t in texts if t.startswith('deadline')),
      sum(1 for t in texts if t in ('success', 'timeout', 'failure', 'result')))
for t in texts:
    if t.startswith(('load ', 'resume ')):
        print('ROW', t)
PY
}

@test "--format svg: valid XML, one row per restore, stages, deadline and result marks" {
	run --separate-stderr qwen-trace-dump --format svg "$ALL"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/all.svg"
	n=$(qwen-trace-dump --format json "$ALL" 2>/dev/null | jq -s '[.[] | select(.action != null)] | length')
	run svg_facts "$BATS_TEST_TMPDIR/all.svg"
	[ "$status" -eq 0 ]
	read -r rows stages deadlines results <<<"${lines[0]}"
	[ "$rows" -eq "$n" ]
	[ "$rows" -ge 3 ]
	[ "$stages" -ge 4 ]
	[ "$deadlines" -ge 3 ]
	[ "$results" -eq "$rows" ]
	[[ "$output" == *"ROW resume 5e7d0f2a-0002-4000-8000-000000000002: timeout after 1000.0 ms of a 1000 ms budget"* ]]
	mkdir -p "$QWEN_TOP_BUILDDIR/t/artifacts"
	cp "$BATS_TEST_TMPDIR/all.svg" "$QWEN_TOP_BUILDDIR/t/artifacts/trace-dump-restores.svg"
}

@test "--format svg: text from the trace is escaped; an empty input is a valid empty picture" {
	sed 's/5e7d0f2a-0001-4000-8000-000000000001/x<y\&z/g' "$ALL" >"$BATS_TEST_TMPDIR/odd.jsonl"
	qwen-trace-dump --format svg "$BATS_TEST_TMPDIR/odd.jsonl" >"$BATS_TEST_TMPDIR/odd.svg" 2>/dev/null
	run svg_facts "$BATS_TEST_TMPDIR/odd.svg"
	[ "$status" -eq 0 ]
	[[ "$output" == *"ROW load x<y&z: success"* ]]
	: >"$BATS_TEST_TMPDIR/empty.jsonl"
	qwen-trace-dump --format svg "$BATS_TEST_TMPDIR/empty.jsonl" >"$BATS_TEST_TMPDIR/empty.svg"
	run svg_facts "$BATS_TEST_TMPDIR/empty.svg"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "0 0 0 0" ]
}

@test "--format svg with --follow is a usage error" {
	run qwen-trace-dump --format svg --follow "$ALL"
	[ "$status" -eq 2 ]
	run qwen-trace-dump --format png "$ALL"
	[ "$status" -eq 2 ]
	[[ "$output" == *"must be text, json, chrome or svg"* ]]
}
