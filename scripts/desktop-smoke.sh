#!/usr/bin/env bash
# Smoke test of the desktop app: start sextant-desktop under Xvfb on a KB holding the
# sample documents, wait for its window titled "Sextant", wait until the UI inside it has
# called the engine through Tauri's invoke (the health call it makes on load), and take a
# screenshot. Needs `make desktop-deps` and a built sextant-desktop.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT_DIR:-test-output}/desktop
mkdir -p "$OUT"
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "desktop smoke test FAILED: $*"; [ -f "$TMP/app.log" ] && tail -20 "$TMP/app.log"; exit 1; }

# A free display number, chosen by Xvfb itself.
exec 3<> "$TMP/displayfd"
Xvfb -displayfd 3 -screen 0 1280x900x24 -nolisten tcp >"$TMP/xvfb.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [ -s "$TMP/displayfd" ] && break; sleep 0.1; done
export DISPLAY=":$(head -1 "$TMP/displayfd" | tr -d '[:space:]')"
[ "$DISPLAY" != ":" ] || fail "Xvfb did not start"

target/release/sextant ingest --kb "$TMP/kb" examples/kb >/dev/null
# Software rendering: no GPU under Xvfb.
WEBKIT_DISABLE_COMPOSITING_MODE=1 LIBGL_ALWAYS_SOFTWARE=1 SEXTANT_DESKTOP_TRACE=1 \
  target/release/sextant-desktop --kb "$TMP/kb" --run-base "$TMP/runs" >"$TMP/app.log" 2>&1 &
APP=$!
PIDS+=($APP)

WID=""
for _ in $(seq 1 240); do
  WID=$(xdotool search --name '^Sextant$' 2>/dev/null | head -1 || true)
  [ -n "$WID" ] && break
  kill -0 $APP 2>/dev/null || fail "sextant-desktop exited"
  sleep 0.5
done
[ -n "$WID" ] || fail "no window titled Sextant within 120 s"
echo "window $WID: $(xdotool getwindowname "$WID"), $(xdotool getwindowgeometry "$WID" | tail -1 | xargs)"

for _ in $(seq 1 120); do
  grep -q 'api GET /api/health -> ok' "$TMP/app.log" && break
  kill -0 $APP 2>/dev/null || fail "sextant-desktop exited"
  sleep 0.5
done
grep -q 'api GET /api/health -> ok' "$TMP/app.log" || fail "the UI never reached the engine through invoke"
grep -q 'api GET /api/kb -> ok' "$TMP/app.log" || sleep 2
sleep 2 # let the first screen paint
scrot -o "$OUT/window.png"
SIZE=$(stat -c %s "$OUT/window.png")
[ "$SIZE" -gt 20000 ] || fail "the screenshot is nearly empty ($SIZE bytes)"
echo "desktop smoke test passed: window shown, UI called the engine, screenshot $OUT/window.png ($SIZE bytes)"
