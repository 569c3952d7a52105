#!/usr/bin/env bash
# A short fuzz pass (tests/fuzz/fuzz.py) with the cuscope of BUILD_DIR, meant for the sanitizer build
# (docs/building.md): any sanitizer report fails the run that made it. The last line is
# "N passed, N failed", one check per command family.
#
#   tests/fuzz/run.sh [BUILD_DIR] [fuzz.py options]
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
exec python3 tests/fuzz/fuzz.py "$build/cuscope" "$build/fuzz" "${gen[@]}" "$@"
