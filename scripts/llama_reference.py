#!/usr/bin/env python3
"""Records llama.cpp's tokens, greedy continuations and top-5 logits for the default GGUF
models into tests/fixtures/reference/<model>.json (dev-time only; tests/reference.rs checks
Sextant against them).

llama.cpp comes from the llama-cpp-python source package, built here (about 12 minutes on
2 cores):

    python3 -m venv /tmp/lcpp && /tmp/lcpp/bin/pip install cmake ninja
    PATH=/tmp/lcpp/bin:$PATH CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_EXAMPLES=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
      /tmp/lcpp/bin/pip install --no-binary llama-cpp-python llama-cpp-python==0.3.36
    /tmp/lcpp/bin/python scripts/llama_reference.py [MODELS_DIR [MODEL ...]]

With --speed it records nothing and prints llama.cpp's prompt (512 tokens) and generation
(128 tokens) speed on 2 threads, the peer figures for `sextant bench generate`.
"""
import hashlib
import json
import os
import sys
import time

import numpy as np
from llama_cpp import Llama, __version__

MODELS = {
    "smollm2-135m-instruct": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2.5-coder-0.5b-instruct": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    # Optional in the manifest (`sextant models pull gemma-3-270m`): the SentencePiece
    # vocabulary and the gemma3 block on a real file.
    "gemma-3-270m": "gemma-3-270m-q4_k_m.gguf",
}

# Texts whose token ids are pinned (special tokens included, no BOS added).
TOKENIZE = [
    "Hello world",
    "  leading spaces and trailing  ",
    "kubectl rollout undo deployment/<name> --to-revision=2",
    "Prices: 1234567 and 3.14159, ratio 22/7.",
    "naïve café — 東京 😀 ünïcödé",
    "def f(x):\n\treturn {'a': [1, 2]}\n\n\n# done",
    "<|im_start|>user\nHi<|im_end|>\n",
    "don't I'LL we've",
]

# Prompts whose greedy continuation and top-5 logits are recorded.
PROMPTS = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    "How do I roll back a Kubernetes deployment?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWrite a JSON object with keys name and port for a web server."
    "<|im_end|>\n<|im_start|>assistant\n",
    "The three primary colours are",
]
STEPS = 40

# Gemma's own turn markers instead of ChatML, and its BOS; plus texts that exercise the
# SentencePiece vocabulary's user-defined pieces (newline runs, tabs, HTML tags).
GEMMA_TOKENIZE = [t.replace("<|im_start|>", "<start_of_turn>").replace("<|im_end|>", "<end_of_turn>")
                  for t in TOKENIZE] + [
    "<bos>a\n\n\nb\t\tc </footer> <start_of_turn>model\n",
    "   three leading spaces, x\u00a0y, 1e-5",
]
GEMMA_PROMPTS = [
    "<bos><start_of_turn>user\nHow do I roll back a Kubernetes deployment?<end_of_turn>\n"
    "<start_of_turn>model\n",
    "<bos>The three primary colours are",
    "<bos>def fibonacci(n):\n",
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record(name, path):
    gemma = name.startswith("gemma")
    texts, prompts = (GEMMA_TOKENIZE, GEMMA_PROMPTS) if gemma else (TOKENIZE, PROMPTS)
    # Gemma's activations are large (embeddings × √640): llama.cpp's default f16 KV cache
    # alone moves its logits by up to ~1.5, so the gemma fixture keeps the cache in f32.
    cache = {"type_k": 0, "type_v": 0} if name.startswith("gemma") else {}
    llm = Llama(
        model_path=path, n_ctx=1024, n_threads=2, n_batch=512, logits_all=True, verbose=False,
        **cache,
    )
    out = {
        "model": name,
        "file": os.path.basename(path),
        "sha256": sha256(path),
        "llama_cpp_python": __version__,
        "tokenize": [
            {"text": t, "ids": llm.tokenize(t.encode(), add_bos=False, special=True)}
            for t in texts
        ],
        "greedy": [],
    }
    for prompt in prompts:
        ids = llm.tokenize(prompt.encode(), add_bos=False, special=True)
        llm.reset()
        llm.eval(ids)
        steps = []
        for _ in range(STEPS):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            top = np.argsort(-logits)[:5]
            steps.append(
                {
                    "token": int(top[0]),
                    "top5": [[int(i), round(float(logits[i]), 4)] for i in top],
                }
            )
            llm.eval([int(top[0])])
        out["greedy"].append({"prompt": prompt, "prompt_ids": ids, "steps": steps})
    return out


def speed(name, path, runs=3):
    llm = Llama(model_path=path, n_ctx=1024, n_threads=2, n_batch=512, verbose=False)
    prompt = list(range(1000, 1512))
    prompt_rates, gen_rates = [], []
    for _ in range(runs):
        llm.reset()
        t = time.perf_counter()
        llm.eval(prompt)
        prompt_rates.append(len(prompt) / (time.perf_counter() - t))
        t = time.perf_counter()
        # One token per step as generation does (which token does not change the cost).
        for i in range(128):
            llm.eval([2000 + i])
        gen_rates.append(128 / (time.perf_counter() - t))
    med = lambda xs: sorted(xs)[len(xs) // 2]
    print(f"{name}: llama.cpp prompt {med(prompt_rates):.1f} tok/s, generation {med(gen_rates):.1f} tok/s (2 threads)")


def main():
    args = [a for a in sys.argv[1:] if a != "--speed"]
    models_dir = args[0] if args else os.path.expanduser("~/.local/share/sextant/models")
    if "--speed" in sys.argv:
        for name, file in MODELS.items():
            speed(name, os.path.join(models_dir, name, file))
        return
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "tests", "fixtures", "reference")
    os.makedirs(fixtures, exist_ok=True)
    only = set(args[1:])
    for name, file in MODELS.items():
        if only and name not in only:
            continue
        path = os.path.join(models_dir, name, file)
        data = record(name, path)
        with open(os.path.join(fixtures, name + ".json"), "w") as f:
            json.dump(data, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(name, "recorded")


if __name__ == "__main__":
    main()
