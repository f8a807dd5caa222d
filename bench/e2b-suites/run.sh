#!/bin/bash
# Runs every E2B suite file one at a time against `analyst serve` and tallies pass/fail per file.
# The harness folder (outside the repository: E2B's tests are not vendored) is set up as README.md says.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "${HARNESS:-/work/notes/e2b-harness}" || exit 1
PORT=${PORT:-18787}; TOKEN=harness-token
ANALYST_TOKEN=$TOKEN node "$REPO/dist/cli/bin.js" serve --port $PORT >serve.log 2>&1 &
SERVE=$!; trap "kill $SERVE 2>/dev/null" EXIT
up=
for i in $(seq 120); do curl -sf http://127.0.0.1:$PORT/healthz >/dev/null && up=1 && break; sleep 0.5; done
# Without a server every file would fail and the tally would say nothing: stop here instead.
[ -n "$up" ] || { echo "analyst serve did not start (is $REPO/dist built? npm run build):" >&2; tail -5 serve.log >&2; exit 1; }
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT E2B_API_KEY=$TOKEN E2B_DOMAIN=127.0.0.1:$PORT
mkdir -p out
FILES=${FILES:-$( (ls ci/js/tests/*.test.ts ci/js/tests/*/*.test.ts; find e2b/packages/js-sdk/tests/sandbox -name '*.test.ts'; ls e2b/packages/js-sdk/tests/api/{info,kill,list}.test.ts) | grep -v runtimes | sort)}
for f in $FILES; do n=$(echo $f | tr / _); timeout 600 npx vitest run --config vitest.config.mjs --reporter=json --outputFile=out/$n.json $f >out/$n.log 2>&1; done
node "$REPO/bench/e2b-suites/tally.mjs"
