#!/usr/bin/env bash
# hack/fuzz.sh: run every Go fuzz target of the main module (func FuzzXxx(f
# *testing.F) in a package's _test.go files), one at a time, each for
# FUZZTIME, and report per target the executions and whether it found
# anything. `make fuzz` (FUZZTIME=60s) and `make fuzz-short` (5s) run it.
#
#   FUZZTIME      how long each target runs (go test -fuzztime: 60s, 5m, or
#                 1000x executions); default 60s
#   FUZZ_PARALLEL fuzzing workers per target (go test -parallel); default 2
#   FUZZ_TARGETS  an extended regexp: only the targets whose
#                 "package.FuzzXxx" matches it run (e.g. 'server\.FuzzRun$')
#   FUZZ_REPORT   also write the summary as a markdown table to this path
#   FUZZ_LOGDIR   where each target's go test output goes (default: a
#                 fresh directory under /tmp)
#
# Exits 1 when a target failed: a crash or broken property that go test
# saved as testdata/fuzz/FuzzXxx/<hash> in the target's package (rerun it
# with go test -run 'FuzzXxx/<hash>'), or a failing seed; 2 when no target
# was found. Every target runs even after a failure. A target whose go test
# fails with no failing input (the coordinator lost a worker process) has
# the end of its log printed and runs once more; its row says so.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-60s}
FUZZ_PARALLEL=${FUZZ_PARALLEL:-2}
FUZZ_TARGETS=${FUZZ_TARGETS:-}
FUZZ_REPORT=${FUZZ_REPORT:-}
FUZZ_LOGDIR=${FUZZ_LOGDIR:-$(mktemp -d /tmp/skiff-fuzz.XXXXXX)}
mkdir -p "$FUZZ_LOGDIR"

module=$($GO list -m)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)

# targets: "<import path> <FuzzName>" lines, found by grepping the test
# files of the module's packages (no build needed).
targets=()
while read -r dir pkg; do
	for name in $(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' | sort -u); do
		short=${pkg#"$module"/}
		[[ $pkg == "$module" ]] && short=.
		if [[ -n $FUZZ_TARGETS ]] && ! [[ "$short.$name" =~ $FUZZ_TARGETS ]]; then
			continue
		fi
		targets+=("$pkg $name")
	done
done < <($GO list -f '{{.Dir}} {{.ImportPath}}' ./...)

if [[ ${#targets[@]} -eq 0 ]]; then
	echo "fuzz: no fuzz targets found${FUZZ_TARGETS:+ matching $FUZZ_TARGETS}" >&2
	exit 2
fi

echo "fuzz: ${#targets[@]} targets, FUZZTIME=$FUZZTIME, -parallel $FUZZ_PARALLEL, logs in $FUZZ_LOGDIR"
rows=()
failed=0
start_all=$SECONDS
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	short=${pkg#"$module"/}
	log="$FUZZ_LOGDIR/${short//\//_}.$name.log"
	start=$SECONDS
	rc=0
	retried=""
	$GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" "$pkg" >"$log" 2>&1 || rc=$?
	if [[ $rc -ne 0 ]] && ! grep -qE 'Failing input written to|--- FAIL: .*seed#|failure while testing seed corpus|panic: test timed out|\[build failed\]' "$log"; then
		# go test failed with no input to blame: its coordinator lost a
		# worker process (one that took over a second to stop under load
		# ends "hung or terminated unexpectedly"). Show why, then run the
		# target once more; a crash is never retried.
		echo "fuzz: $short.$name failed with no failing input; the end of its log:"
		tail -n 15 "$log" | sed 's/^/fuzz:   | /'
		mv "$log" "$log.first"
		retried=" (retried after: $(grep -m1 -oE 'fuzzing process [a-z ]+|panic: .*' "$log.first" || echo "exit $rc"))"
		rc=0
		$GO test -run '^$' -fuzz "^$name\$" -fuzztime "$FUZZTIME" -parallel "$FUZZ_PARALLEL" "$pkg" >"$log" 2>&1 || rc=$?
	fi
	secs=$((SECONDS - start))
	# The coordinator's last progress line carries the total:
	# "fuzz: elapsed: 60s, execs: 123456 (2057/sec), new interesting: 3 (total: 40)".
	last=$(grep -E '^fuzz: elapsed: .*execs: [0-9]+' "$log" | tail -n 1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	interesting=$(sed -nE 's/.*new interesting: ([0-9]+) \(total: ([0-9]+)\).*/\1 (corpus \2)/p' <<<"$last")
	if [[ -z $last ]]; then
		# FUZZTIME ran out while go test was still running the cached
		# corpus for its baseline coverage: no new inputs were tried.
		baseline=$(grep -oE 'gathering baseline coverage: [0-9]+/[0-9]+' "$log" | tail -n 1 | sed -E 's/.*: //')
		execs=0
		interesting="0 (baseline ${baseline:-?})"
	fi
	if [[ $rc -eq 0 ]]; then
		result="none$retried"
	else
		failed=1
		crasher=$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$log" | head -n 1)
		if [[ -n $crasher ]]; then
			result="FOUND: $short/$crasher"
		elif grep -q -- '--- FAIL: .*seed#' "$log"; then
			result="FAILED: a seed input (see $log)"
		else
			result="FAILED: exit $rc (see $log)"
			tail -n 15 "$log" | sed 's/^/fuzz:   | /'
		fi
	fi
	printf 'fuzz: %-26s %-24s execs %-10s new %-16s %4ss  %s\n' "$short" "$name" "${execs:--}" "${interesting:--}" "$secs" "$result"
	rows+=("| \`$short\` | \`$name\` | $FUZZTIME | ${execs:--} | ${interesting:--} | ${secs}s | $result |")
done
total=$((SECONDS - start_all))
echo "fuzz: ${#targets[@]} targets in ${total}s; $([[ $failed -eq 0 ]] && echo "no findings" || echo "FINDINGS above")"

if [[ -n $FUZZ_REPORT ]]; then
	mkdir -p "$(dirname "$FUZZ_REPORT")"
	{
		echo "| package | target | fuzztime | executions | new interesting (corpus) | wall | findings |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
		echo
		echo "$($GO version), -parallel $FUZZ_PARALLEL, commit $commit (HEAD at the start; uncommitted changes not shown), $(nproc) CPUs, ${total}s in all."
	} >"$FUZZ_REPORT"
	echo "fuzz: summary written to $FUZZ_REPORT"
fi
exit $failed
