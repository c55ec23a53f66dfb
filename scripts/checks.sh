#!/usr/bin/env bash
# The static checks of `npm test` (lint, import rules, types), run side by side on the machine's
# cores rather than one after another; each one's output is printed whole, and any failure fails.
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
npm run -s lint > "$out/lint" 2>&1 & lint=$!
npm run -s lint:deps > "$out/deps" 2>&1 & deps=$!
npm run -s typecheck > "$out/types" 2>&1 & types=$!
status=0
for check in lint:$lint deps:$deps types:$types; do
  name=${check%%:*}; pid=${check##*:}
  if ! wait "$pid"; then status=1; echo "--- $name failed:"; fi
  cat "$out/$name"
done
rm -rf "$out"
exit $status
