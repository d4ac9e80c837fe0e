#!/usr/bin/env bash
# The desktop app as a new user meets it, under Xvfb: start sextant-desktop on an empty
# KB (first without its models: the first-run panel, then the engine starting once they
# are there), wait for its window titled "Sextant" and for the UI's first call through Tauri's
# invoke; then, with real clicks and typing (xdotool), add the sample folder through the
# system's folder chooser (ingest runs through the `ingest` command and its events), ask
# a question (the answer streams over a channel) and a follow-up in the same conversation,
# and click the first
# citation through to the Reader; then create and open a second knowledge base from the
# Library and drop a folder on the window; import a model file through the file chooser.
# Each step waits for the engine call it must cause (the
# app traces its commands with SEXTANT_DESKTOP_TRACE) and leaves a screenshot. Needs
# `make desktop-deps` and a built sextant-desktop. Click positions are those of ui/ in
# the 1280x860 window.
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
fail() {
  echo "desktop smoke test FAILED: $*"
  [ -n "${DISPLAY:-}" ] && scrot -o "$OUT/FAILED.png" 2>/dev/null && echo "  screenshot $OUT/FAILED.png"
  [ -f "$TMP/app.log" ] && tail -20 "$TMP/app.log"
  exit 1
}

# A free display number, chosen by Xvfb itself.
exec 3<> "$TMP/displayfd"
Xvfb -displayfd 3 -screen 0 1280x900x24 -nolisten tcp >"$TMP/xvfb.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [ -s "$TMP/displayfd" ] && break; sleep 0.1; done
export DISPLAY=":$(head -1 "$TMP/displayfd" | tr -d '[:space:]')"
[ "$DISPLAY" != ":" ] || fail "Xvfb did not start"

until_logged() { # LOG PATTERN PID WHAT: wait until PATTERN is in LOG while PID lives
  for _ in $(seq 1 240); do
    grep -q -- "$2" "$1" && return 0
    kill -0 "$3" 2>/dev/null || { tail -20 "$1"; fail "sextant-desktop exited before $4"; }
    sleep 0.5
  done
  fail "timed out waiting for $4"
}

# Software rendering: no GPU under Xvfb.
export WEBKIT_DISABLE_COMPOSITING_MODE=1 LIBGL_ALWAYS_SOFTWARE=1 SEXTANT_DESKTOP_TRACE=1
# Knowledge bases made in the app go here, not into the user's.
export SEXTANT_KB_HOME="$TMP/kb-home"

# First run without the models: the engine cannot start, the first-run panel says why (the
# error names `sextant models pull`), and the UI keeps checking; once the models are there
# (linked in here, as a pull would put them), the engine starts without a restart.
MODELS=${SEXTANT_MODELS:-$HOME/.local/share/sextant/models}
NOMODELS="$TMP/no-models"
mkdir -p "$NOMODELS"
SEXTANT_MODELS="$NOMODELS" target/release/sextant-desktop --kb "$TMP/kb0" --run-base "$TMP/runs" \
  >"$TMP/app0.log" 2>&1 &
APP0=$!
PIDS+=($APP0)
until_logged "$TMP/app0.log" 'api health -> not_ready' $APP0 "the UI asked the engine without models"
grep -q 'sextant models pull' "$TMP/app0.log" || fail "the missing-model error does not name sextant models pull"
sleep 1.5; scrot -o "$OUT/00-no-models.png"; echo "  screenshot $OUT/00-no-models.png"
for m in "$MODELS"/*/; do ln -s "${m%/}" "$NOMODELS/"; done
until_logged "$TMP/app0.log" 'api health -> ok' $APP0 "the engine started once the models were there"
echo "without models: the first-run panel, then the engine started once they were there"
kill $APP0; wait $APP0 2>/dev/null || true

# The models through links in a store of its own: a model imported in the app lands there.
SEXTANT_MODELS="$NOMODELS" target/release/sextant-desktop --kb "$TMP/kb" --run-base "$TMP/runs" \
  >"$TMP/app.log" 2>&1 &
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

until_logged "$TMP/app.log" 'api health -> ok' $APP "the UI reached the engine through invoke"
wait_for() { # COUNT PATTERN WHAT: wait until PATTERN occurs COUNT times in the app's trace
  for _ in $(seq 1 360); do
    [ "$(grep -c -- "$2" "$TMP/app.log" || true)" -ge "$1" ] && return 0
    kill -0 $APP 2>/dev/null || fail "sextant-desktop exited while waiting for $3"
    sleep 0.5
  done
  fail "timed out waiting for $3"
}
find_window() { # TITLE_REGEX: the id of a window so titled, waiting up to 20 s ("" if none)
  local id=""
  for _ in $(seq 1 40); do
    id=$(xdotool search --name "$1" 2>/dev/null | head -1 || true)
    [ -n "$id" ] && break
    sleep 0.5
  done
  echo "$id"
}
shot() { sleep 1.5; scrot -o "$OUT/$1.png"; echo "  screenshot $OUT/$1.png"; }
click() { xdotool mousemove --window "$WID" "$1" "$2" click 1; sleep 0.3; }

wait_for 1 'api kb -> ok' "the Library screen to load"
shot 01-start

# Library: "Choose folder…" opens the system's folder chooser (GTK); type the folder's
# path into it (Ctrl+L) and press Enter; the list reloads when ingest is done.
click 285 86
DIALOG=$(find_window '^Add a folder to the knowledge base$')
[ -n "$DIALOG" ] || fail "the folder chooser did not open"
shot 02-chooser
# No window manager: keyboard focus follows the pointer, so keys go where it rests.
xdotool mousemove --window "$DIALOG" 400 300
sleep 0.3
xdotool key ctrl+l
sleep 0.5
# Pasted, not typed: the location bar completes folder names as they are typed, and a
# completion landing between two keystrokes can double a letter ("/tmp/ciiclone").
printf %s "$PWD/examples/kb/" | xclip -selection clipboard
xdotool key ctrl+v
sleep 0.5
# Enter opens the typed folder; with nothing selected in it, Enter again chooses it.
xdotool key Return
sleep 1
shot 02-chooser-folder
grep -q 'pick_folder -> ok' "$TMP/app.log" || xdotool key Return
wait_for 1 'pick_folder -> ok' "the chooser to return the folder"
wait_for 1 'ingest -> ok' "the sample folder to be ingested"
wait_for 2 'api kb -> ok' "the document list to reload"
shot 02-library

# Ask: the nav button, the question box, the Ask button.
click 60 128
click 700 100
xdotool key ctrl+a
xdotool type --delay 25 "How do I renew a TLS certificate manually?"
click 1223 183
wait_for 1 'ask_stream -> ok' "the answer (streamed over a channel)"
shot 03-ask

# A follow-up in the same conversation: read with the question before it, kept as the
# conversation's second turn (in the KB's conversations.sqlite).
click 700 100
xdotool key ctrl+a
xdotool type --delay 25 "and what if the renewal fails?"
xdotool key Return
wait_for 2 'ask_stream -> ok' "the follow-up's answer"
TURNS=$(/usr/bin/python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('SELECT max(n) FROM turns GROUP BY conversation ORDER BY max(n) DESC LIMIT 1').fetchone()[0])" "$TMP/kb/conversations.sqlite")
[ "$TURNS" -ge 2 ] 2>/dev/null || fail "the conversation holds $TURNS turns after a follow-up, expected 2"
FOLLOW=$(/usr/bin/python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute(\"SELECT standalone FROM turns WHERE question LIKE 'and what if%'\").fetchone()[0])" "$TMP/kb/conversations.sqlite")
case "$FOLLOW" in *"(about:"*) ;; *) fail "the follow-up was not read with its conversation: $FOLLOW" ;; esac
shot 03-ask-follow-up

# The first citation (focused once the answer shows) opens the Reader at its section.
xdotool key Return
wait_for 1 'api document -> ok' "the cited document to open"
shot 04-reader

# Library: a second knowledge base, created and opened from its panel (the list and the
# live status are the browser UI's, tested in tests/ui).
click 60 84
shot 05-library
click 600 379
xdotool type --delay 25 "Field notes"
xdotool key Return
wait_for 1 'api create_kb -> ok' "the new knowledge base to be created"
wait_for 1 'api switch_kb -> ok' "the new knowledge base to open"
[ -f "$SEXTANT_KB_HOME/Field notes/kb.sqlite" ] || fail "no knowledge base in $SEXTANT_KB_HOME/Field notes"
shot 06-new-kb

# A folder dropped on the window is ingested into the open knowledge base. xdotool cannot
# drag files itself: a small GTK drag source (scripts/drag_source.py) offers the folder as
# a file manager would, and the pointer carries it from there onto the window.
mkdir -p "$TMP/dropped"
printf '# Gaskets\n\nThe P3 pump gasket is replaced at every seal change.\n' >"$TMP/dropped/gaskets.md"
/usr/bin/python3 scripts/drag_source.py "$TMP/dropped" >"$TMP/drag.log" 2>&1 &
PIDS+=($!)
SRC=$(find_window '^sextant-drag-source$')
[ -n "$SRC" ] || { cat "$TMP/drag.log"; fail "the drag source window did not open"; }
sleep 0.5
xdotool mousemove --window "$SRC" 40 40 mousedown 1
for x in 60 90 130 200 300 400 500 600 700; do xdotool mousemove "$x" 400; sleep 0.1; done
sleep 0.5
xdotool mouseup 1
wait_for 2 'ingest -> ok' "the dropped folder to be ingested"
DOCS=$(target/release/sextant kb stats --json --kb "$SEXTANT_KB_HOME/Field notes" | grep -o '"documents": *[0-9]*' | grep -o '[0-9]*$')
[ "$DOCS" = 1 ] || fail "the new knowledge base holds $DOCS documents after the drop, expected 1"
shot 07-dropped
# Models: "Import a GGUF model…" opens the system's file chooser; the chosen file is
# checked and copied into the store, and listed.
cp "$(ls "$MODELS"/smollm2-135m-instruct/*.gguf)" "$TMP/my-model.gguf"
click 60 306
wait_for 1 'api models -> ok' "the model list"
shot 08-models
click 512 124
DIALOG=$(find_window '^Import a model \(GGUF file\)$')
[ -n "$DIALOG" ] || fail "the file chooser did not open"
xdotool mousemove --window "$DIALOG" 400 300
sleep 0.3
xdotool key ctrl+l
sleep 0.5
printf %s "$TMP/my-model.gguf" | xclip -selection clipboard
xdotool key ctrl+v
sleep 0.5
xdotool key Return
wait_for 1 'pick_model_file -> ok' "the chooser to return the file"
wait_for 1 'api import_model -> ok' "the model to be imported"
[ -f "$NOMODELS/my-model/model.toml" ] || fail "no imported model in $NOMODELS/my-model"
shot 09-model-imported
SIZE=$(stat -c %s "$OUT/04-reader.png")
[ "$SIZE" -gt 20000 ] || fail "the screenshot is nearly empty ($SIZE bytes)"
echo "desktop test passed: window, add folder, ask, a follow-up kept in the conversation, citation to the Reader, a new knowledge base, a dropped folder, a model imported; screenshots in $OUT"
