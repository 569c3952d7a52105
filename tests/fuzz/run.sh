#!/usr/bin/env bash
# A short fuzz pass with the cuscope of BUILD_DIR, meant for the sanitizer build (docs/building.md):
# tests/fuzz/fuzz.py's mutated files through the binary, then the coverage-guided fuzzers (libFuzzer,
# fuzz_*.c here) for CUSCOPE_FUZZ_SECONDS (30) each on their seeds, tests/fuzz/corpus/NAME. Any
# sanitizer report fails the run that made it. The last line is "N passed, N failed": one check
# per command family of fuzz.py, one per coverage-guided fuzzer.
#
#   tests/fuzz/run.sh [BUILD_DIR] [fuzz.py options]
#
# The coverage-guided fuzzers are those of BUILD_DIR when it was set up with -Dfuzzers, else those of
# CUSCOPE_FUZZ_BUILD (build-fuzz), set up there with clang, AddressSanitizer and UndefinedBehaviorSanitizer
# when it is not; without clang and libFuzzer they are skipped, and said so.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-asan}
shift || true
if [ ! -x "$build/cuscope" ]; then
	echo "fuzz: no $build/cuscope" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}
gen=()
[ -x "$build/tests/gen_trace" ] && gen=(--gen-trace "$build/tests/gen_trace")
log=$(mktemp)
python3 tests/fuzz/fuzz.py "$build/cuscope" "$build/fuzz" "${gen[@]}" "$@" | tee "$log"
last=$(tail -n 1 "$log")
rm -f "$log"
mkdir -p "$build/fuzz"
pass=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p' <<<"$last")
fail=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p' <<<"$last")
pass=${pass:-0}
fail=${fail:-1}

# ---- the coverage-guided fuzzers ----
targets=(spool trace)
seconds=${CUSCOPE_FUZZ_SECONDS:-30}
fbuild=$build
if [ ! -x "$fbuild/tests/fuzz/fuzz_spool" ]; then
	fbuild=${CUSCOPE_FUZZ_BUILD:-build-fuzz}
	if [ ! -f "$fbuild/build.ninja" ]; then
		cc=${CUSCOPE_FUZZ_CC:-clang}
		if ! printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
			'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return d && n; }' |
			"$cc" -fsanitize=fuzzer -x c - -o "$build/fuzz/libfuzzer-check" >/dev/null 2>&1; then
			echo "fuzz: skipped the coverage-guided fuzzers: no $cc that links -fsanitize=fuzzer (libFuzzer)"
			echo "$pass passed, $fail failed"
			exit $((fail > 0))
		fi
		rm -rf "$fbuild" "$build/fuzz/libfuzzer-check"
		if ! CC=$cc meson setup "$fbuild" -Dfuzzers=enabled -Dcupti=disabled -Dview=disabled \
			-Db_sanitize=address,undefined -Db_lundef=false >"$build/fuzz/setup.log" 2>&1; then
			echo "fuzz: FAIL setting up $fbuild for the coverage-guided fuzzers ($build/fuzz/setup.log)"
			rm -rf "$fbuild"
			echo "$pass passed, $((fail + 1)) failed"
			exit 1
		fi
	fi
	if ! ninja -C "$fbuild" "${targets[@]/#/tests/fuzz/fuzz_}" >"$build/fuzz/build.log" 2>&1; then
		echo "fuzz: FAIL building the coverage-guided fuzzers in $fbuild ($build/fuzz/build.log)"
		echo "$pass passed, $((fail + 1)) failed"
		exit 1
	fi
fi
for t in "${targets[@]}"; do
	work=$build/fuzz/libfuzzer/$t
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/failures"
	# New inputs go to $work/corpus; the committed seeds are only read.
	"$fbuild/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/failures/" "$work/corpus" "tests/fuzz/corpus/$t" \
		>"$work/log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
	cov=$(grep -o 'cov: [0-9]*' "$work/log" | tail -n 1)
	if [ "$rc" -eq 0 ]; then
		echo "fuzz: ok   fuzz_$t: ${runs:-?} runs in ${seconds} s, ${cov:-cov: ?}, $(ls "$work/corpus" | wc -l) new inputs"
		pass=$((pass + 1))
	else
		repro=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$work/log" | tail -n 1)
		echo "fuzz: FAIL fuzz_$t (exit $rc): reproducer ${repro:-none}, log $work/log;" \
			"rerun: $fbuild/tests/fuzz/fuzz_$t ${repro:-FILE}"
		grep -m 3 -E 'ERROR: |runtime error:|SUMMARY: ' "$work/log" | sed 's/^/fuzz:   /'
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
