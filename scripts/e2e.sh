#!/usr/bin/env bash
# End-to-end tests over loopback: `sextant serve` on a fresh KB with a token, then the
# official openai Python client (tests/openai/); the UI in Debian's Chromium driven by
# Playwright (tests/ui/) on a second server whose KB starts empty, as a new user's does
# (the first-run panel); then `sextant mcp` on its own copy of the sample KB, driven by
# the official MCP Python SDK (tests/mcp/). Needs `make e2e-deps` (what `make test` runs
# first).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/sextant
VENV=target/e2e-venv
OUT=${OUT_DIR:-test-output}
TMP=$(mktemp -d)
TOKEN="e2e-$RANDOM$RANDOM"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null || true; wait $p 2>/dev/null || true; done; rm -rf "$TMP"' EXIT
# `serve NAME [ARG…]`: `sextant serve` on the fresh KB $TMP/NAME; sets URL. Knowledge bases
# made through the API go to $TMP/kb-home, not the user's.
serve() {
  local name=$1
  shift
  SEXTANT_KB_HOME="$TMP/kb-home" "$BIN" serve --kb "$TMP/$name" --port 0 --token "$TOKEN" \
    --run-base "$TMP/runs" "$@" 2>"$TMP/$name.log" &
  local pid=$!
  PIDS+=($pid)
  for _ in $(seq 1 240); do
    grep -q "listening on" "$TMP/$name.log" && break
    if ! kill -0 $pid 2>/dev/null; then cat "$TMP/$name.log"; echo "sextant serve did not start"; exit 1; fi
    sleep 0.5
  done
  URL=$(grep -o 'http://[0-9.:]*' "$TMP/$name.log" | head -1)
  [ -n "$URL" ] || { cat "$TMP/$name.log"; echo "sextant serve did not start in time"; exit 1; }
}
serve kb
echo "== sextant serve at $URL"
echo "== openai Python client (tests/openai)"
SEXTANT_URL=$URL SEXTANT_TOKEN=$TOKEN "$VENV/bin/python" tests/openai/test_openai_client.py
echo "== what a web page could send (tests/openai/test_security.py)"
SEXTANT_URL=$URL SEXTANT_TOKEN=$TOKEN "$VENV/bin/python" tests/openai/test_security.py
echo "== reads during an ingest and a generation (tests/openai/test_load.py)"
SEXTANT_URL=$URL SEXTANT_TOKEN=$TOKEN SEXTANT_SAMPLE_KB="$PWD/examples/kb" \
  "$VENV/bin/python" tests/openai/test_load.py
echo "== grounded answers as OpenAI models (tests/openai/test_grounded.py)"
SEXTANT_URL=$URL SEXTANT_TOKEN=$TOKEN "$VENV/bin/python" tests/openai/test_grounded.py
echo "== UI in Chromium (tests/ui), screenshots in $OUT/ui, on a server of its own with an empty KB"
# Its models through links in a store of its own, so the models the UI imports land
# there; a copy of a real GGUF to import, and one whose weights use a GGML type the
# engine cannot run (IQ2_XXS) to be refused.
MODELS=${SEXTANT_MODELS:-$HOME/.local/share/sextant/models}
mkdir -p "$TMP/ui-models"
for m in "$MODELS"/*/; do ln -s "${m%/}" "$TMP/ui-models/"; done
cp "$(ls "$MODELS"/smollm2-135m-instruct/*.gguf)" "$TMP/ui-import.gguf"
"$VENV/bin/python" - "$TMP/ui-iq2.gguf" <<'PY'
import struct, sys
s = lambda x: struct.pack("<Q", len(x)) + x.encode()
head = (b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + s("general.architecture") + struct.pack("<I", 8)
        + s("llama") + s("blk.0.attn_q.weight") + struct.pack("<IQIQ", 1, 256, 16, 0))
open(sys.argv[1], "wb").write(head + bytes(-len(head) % 32 + 66))
PY
SEXTANT_MODELS="$TMP/ui-models" serve ui-kb --watch
SEXTANT_URL=$URL SEXTANT_TOKEN=$TOKEN SEXTANT_SAMPLE_KB="$PWD/examples/kb" OUT_DIR="$OUT/ui" \
  SEXTANT_UI_GGUF="$TMP/ui-import.gguf" SEXTANT_UI_BAD_GGUF="$TMP/ui-iq2.gguf" \
  node tests/ui/ui.spec.mjs || { echo "== the UI server's log (last 80 lines)"; tail -n 80 "$TMP/ui-kb.log"; exit 1; }
echo "== sextant mcp over stdio, the MCP Python SDK (tests/mcp)"
"$BIN" ingest --kb "$TMP/mcp-kb" examples/kb >"$TMP/mcp-ingest.log" 2>&1 || { cat "$TMP/mcp-ingest.log"; exit 1; }
SEXTANT_BIN="$PWD/$BIN" SEXTANT_MCP_KB="$TMP/mcp-kb" "$VENV/bin/python" tests/mcp/test_mcp.py
