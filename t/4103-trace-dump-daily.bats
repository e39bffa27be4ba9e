#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# qwen-trace-dump in daily use: restores before the other spans, stage
# bars that tell a 0 ms stage from a 20 ms one under a 60 s budget, an
# SVG legend, --follow waiting for a file not there yet (as tail -F), and
# filters that match nothing saying so with exit 3.

load test_helper
bats_require_minimum_version 1.5.0

setup() {
	ALL=$TESTDATA/trace-dump/all.jsonl
}

@test "text view: every restore comes before the other spans, which follow under a heading" {
	run -0 qwen-trace-dump --no-pager "$ALL"
	last_restore=$(grep -n '^restore ' <<<"$output" | tail -1 | cut -d: -f1)
	first_span=$(grep -n '^span ' <<<"$output" | head -1 | cut -d: -f1)
	[ "$last_restore" -lt "$first_span" ]
	grep -q '^1 other span (after the restores):$' <<<"$output"
}

@test "stage bars: against a 60 s budget, scaled to the slowest stage so 0.2, 20 and 40 ms differ" {
	run -0 qwen-trace-dump --no-pager --session 5e7d0f2a-0001-4000-8000-000000000001 "$ALL"
	grep -q 'budget     60000 ms' <<<"$output"
	grep -q 'bar: 40 columns = slowest stage 40.0 ms' <<<"$output"
	bar() { sed -n "s/^    $1 .*|\(#*\) *[|>].*/\1/p" <<<"$output" | tr -d '\n' | wc -c; }
	[ "$(bar existence_check)" -eq 1 ]
	[ "$(bar history_replay)" -eq 20 ]
	[ "$(bar transcript_read)" -eq 40 ]
	# A budget the stages used a real share of still scales the bars.
	run -0 qwen-trace-dump --no-pager --session 5e7d0f2a-0005-4000-8000-000000000005 "$ALL"
	grep -q 'bar: 40 columns = child span' <<<"$output"
}

@test "svg: a legend names the tracks, the lines and each stage in the colour it is drawn in" {
	command -v python3 >/dev/null || skip "python3 not installed"
	qwen-trace-dump --format svg "$ALL" >"$BATS_TEST_TMPDIR/all.svg"
	python3 - "$BATS_TEST_TMPDIR/all.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
S = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
legend = [g for g in root.findall(S + 'g') if g.get('class') == 'legend']
assert len(legend) == 1, 'one legend'
texts = [t.text for t in legend[0].iter(S + 'text')]
for want in ('daemon bridge span', 'child restore span', 'deadline (budget)',
             'public result', 'transcript_read', 'history_replay'):
    assert want in texts, want
# The swatch before each stage name has the fill of that stage's bars.
kids = list(legend[0])
swatch = {}
for i, k in enumerate(kids):
    if k.tag == S + 'text' and i > 0 and kids[i - 1].tag == S + 'rect':
        swatch[k.text] = kids[i - 1].get('fill')
for g in root.findall(S + 'g'):
    if g.get('class') != 'restore':
        continue
    for r in g.iter(S + 'rect'):
        name = r.find(S + 'title').text.split(':')[0]
        if name in swatch:
            assert r.get('fill') == swatch[name], (name, r.get('fill'))
# The legend is inside the picture.
assert float(root.get('height')) > max(float(t.get('y')) for t in legend[0].iter(S + 'text'))
PY
}

@test "--follow on a file not there yet waits for it, then shows its restores" {
	f=$BATS_TEST_TMPDIR/later.jsonl
	qwen-trace-dump --follow --linger 0 "$f" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	wait_for 10 grep -q "later.jsonl: not there yet; waiting for it" "$BATS_TEST_TMPDIR/err"
	cp "$ALL" "$f.tmp"
	mv "$f.tmp" "$f"
	wait_for 10 grep -q '^restore load session 5e7d0f2a-0001' "$BATS_TEST_TMPDIR/out"
	grep -q "later.jsonl: has appeared; following it" "$BATS_TEST_TMPDIR/err"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	# Without --follow a missing file is an error, as before.
	run -1 qwen-trace-dump --no-pager "$BATS_TEST_TMPDIR/none.jsonl"
}

@test "filters that match nothing say so and exit 3, in every format; an empty input without filters exits 0" {
	for fmt in text json chrome svg; do
		run -3 --separate-stderr qwen-trace-dump --no-pager --format "$fmt" --result success --session nope "$ALL"
		[ "$stderr" = "qwen-trace-dump: no restores match --session nope --result success" ]
	done
	run -3 --separate-stderr qwen-trace-dump --summary --trace ffff "$ALL"
	[ "$stderr" = "qwen-trace-dump: no restores match --trace ffff" ]
	: >"$BATS_TEST_TMPDIR/empty.jsonl"
	run -0 --separate-stderr qwen-trace-dump --no-pager "$BATS_TEST_TMPDIR/empty.jsonl"
}
