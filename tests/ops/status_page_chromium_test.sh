#!/usr/bin/env bash
# Renders the sample status page in headless Chromium (Debian's chromium, installed by
# scripts/setup.sh): the screenshot must be a real, non-blank PNG of the window size, and the DOM
# Chromium builds must hold the pool table with one row per pool and no script element.
# Usage: status_page_chromium_test.sh PATH/TO/ops_status_page_sample
# Set TIDEPOOL_SCREENSHOT_DIR to keep status.html and status.png for looking at them.
set -euo pipefail

sample=${1:?usage: $0 ops_status_page_sample}
chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $chromium ]]; then
  echo "FAIL: chromium not found; scripts/setup.sh installs it (apt-get install chromium)" >&2
  exit 1
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$sample" "$dir/status.html"

# A private profile and HOME so that parallel runs and read-only homes do not matter.
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
       --disable-extensions --user-data-dir="$dir/profile")
width=1400 height=1000
if ! HOME=$dir timeout 120 "$chromium" "${flags[@]}" --screenshot="$dir/status.png" \
    --window-size=$width,$height "file://$dir/status.html" >"$dir/shot.log" 2>&1; then
  echo "FAIL: chromium --screenshot failed:" >&2
  tail -20 "$dir/shot.log" >&2
  exit 1
fi
if [[ -n ${TIDEPOOL_SCREENSHOT_DIR:-} ]]; then
  mkdir -p "$TIDEPOOL_SCREENSHOT_DIR"
  cp "$dir/status.html" "$dir/status.png" "$TIDEPOOL_SCREENSHOT_DIR/"
fi

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

png=$dir/status.png
[[ -s $png ]] || { echo "FAIL: no screenshot written" >&2; exit 1; }
# PNG signature, then the IHDR chunk with the width and height as big-endian 32-bit integers.
signature=$(od -An -tx1 -N8 "$png" | tr -d ' \n')
[[ $signature == 89504e470d0a1a0a ]] || fail "not a PNG (signature $signature)"
ihdr=$(od -An -tx1 -j12 -N4 "$png" | tr -d ' \n')
[[ $ihdr == 49484452 ]] || fail "PNG without IHDR first"
w=$((16#$(od -An -tx1 -j16 -N4 "$png" | tr -d ' \n')))
h=$((16#$(od -An -tx1 -j20 -N4 "$png" | tr -d ' \n')))
[[ $w == "$width" && $h == "$height" ]] || fail "screenshot is ${w}x${h}, expected ${width}x${height}"
# A blank or near-blank 1400x1000 page compresses to a few kilobytes; the rendered page, with
# text, tables and colours, is well over 50 kB.
size=$(stat -c %s "$png")
((size > 50000)) || fail "screenshot is only $size bytes: the page looks empty"

if ! HOME=$dir timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$dir/status.html" \
    >"$dir/dom.html" 2>"$dir/dom.log"; then
  echo "FAIL: chromium --dump-dom failed:" >&2
  tail -20 "$dir/dom.log" >&2
  exit 1
fi
dom=$dir/dom.html
grep -q '<table id="pool-table">' "$dom" || fail "the pool table is not in the DOM"
for pool in cpu gpu-light-spot gpu-heavy-spot gpu-heavy; do
  grep -q "<td class=\"name\">$pool</td>" "$dom" || fail "pool $pool has no row in the DOM"
done
rows=$(sed -n '/<table id="pool-table">/,/<\/table>/p' "$dom" | grep -o '<tr>' | wc -l)
((rows == 5)) || fail "pool table has $rows rows, expected 5 (header + 4 pools)"
grep -q 'id="pending-table"' "$dom" || fail "the pending pods table is not in the DOM"
if grep -q '<script' "$dom"; then fail "a <script> element made it into the DOM (escaping)"; fi
grep -q 'research/&lt;script&gt;' "$dom" || fail "the escaped pod name is missing"

if ((failures)); then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "ok: screenshot ${w}x${h}, $size bytes; pool table with 4 pools in the DOM"
