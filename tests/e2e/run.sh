#!/usr/bin/env bash
# run.sh - the meson tests 'e2e' and 'e2e-report': `cuscope view` (view.test.mjs, the default) or the
# HTML report (report.test.mjs, named as the first argument) in headless Chromium. Needs node,
# Debian's /usr/bin/chromium and tests/e2e/node_modules (scripts/setup installs all three: apt-get and
# `npm ci`). Without one of them the test fails and says which is missing: a skipped browser test must
# not pass. Prints a Check-style "N%: Checks: N, Failures: F, Errors: E" line, which scripts/test sums.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
command -v node >/dev/null 2>&1 || missing+=("node (apt-get install nodejs)")
[ -x /usr/bin/chromium ] || missing+=("/usr/bin/chromium (apt-get install chromium)")
[ -d "$here/node_modules/playwright-core" ] || missing+=("tests/e2e/node_modules (npm ci in tests/e2e)")
if [ ${#missing[@]} -gt 0 ]; then
	echo "e2e: cannot run, missing: ${missing[*]}; run scripts/setup" >&2
	echo "0%: Checks: 1, Failures: 1, Errors: 0"
	exit 1
fi
exec node "$here/${1:-view.test.mjs}"
