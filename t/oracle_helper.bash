# SPDX-License-Identifier: ISC
# oracle_helper.bash: comparing the loader with the independent reference
# loader of ../shared/tools/gen-transcript.

# agree INSPECT_JSON MANIFEST_JSON: the loader and the oracle agree.
agree() {
	python3 - "$1" "$2" <<'PY'
import json, sys
o, m = json.loads(sys.argv[1]), json.loads(sys.argv[2])
torn = 1 if o["tornTailBytes"] > 0 else 0
checks = [("leafUuid", o["leafUuid"], m["leafUuid"]),
          ("activeChainLength", o["activeChainLength"], m["activeChainLength"]),
          ("activeChainSha256", o["activeChainSha256"], m["activeChainSha256"]),
          ("lastActiveCompressionUuid", o["lastActiveCompressionUuid"],
           m["lastActiveCompressionUuid"]),
          ("modelHistoryEntries", o["modelHistoryEntries"], m["modelHistoryEntries"]),
          ("turnStarts", o["turnStarts"], m["turnStarts"]),
          ("deadRecords", o["deadRecords"], m["deadRecords"]),
          ("records", o["records"], m["physicalRecords"]),
          ("gaps", o["gaps"], m["historyGaps"]),
          # the oracle parses the torn last line (and counts it malformed);
          # the loader leaves it for later as not yet written
          ("malformedLines", o["malformedLines"] + torn, m["malformedLines"])]
bad = [c for c in checks if c[1] != c[2]]
for name, got, want in bad:
    print("mismatch %s: loader %r, oracle %r" % (name, got, want))
last = m["lastActiveCompressionUuid"]
if (last is None) != (not o["compressions"]) or (last and o["compressions"][-1] != last):
    bad.append(1)
    print("compressions %r do not end with %r" % (o["compressions"], last))
sys.exit(1 if bad else 0)
PY
}
