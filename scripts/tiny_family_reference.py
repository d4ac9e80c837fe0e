#!/usr/bin/env python3
"""Writes tiny GGUF files of each model family the engine runs, with weights from a
formula (not random: src/llm/reference_tests.rs computes the same numbers), runs llama.cpp
on them and records its logits into tests/fixtures/reference/tiny-<arch>.json. For
families without a real file in the package registries this is the reference; for the
others it pins the parts a real file may not exercise (a head width other than
width / heads, Q/K norms, biases). Dev-time only; see scripts/llama_reference.py for how
llama.cpp is built here. Needs the `gguf` package next to llama_cpp.
"""
import json
import os
import sys
import tempfile

import gguf
import numpy as np
from llama_cpp import Llama

N_LAYER, N_EMBD, N_HEAD, N_KV, HEAD_DIM, N_FF, N_CTX = 2, 64, 4, 2, 32, 128, 256
ROPE_BASE, EPS = 10000.0, 1e-6

# What each tiny file exercises beyond the plain llama block:
#   bias      Q/K/V biases (qwen2)
#   qk_norm   per-head Q/K RMS norms (qwen3, gemma3)
#   head_dim  a head width other than width / heads, written as key_length
#   rope_freqs  Llama 3.1+ per-frequency RoPE divisors (`rope_freqs.weight`)
#   phi3      fused attn_qkv and gate/up (`ffn_up` of 2 n_ff rows), partial rotary
#             (rope.dimension_count), LongRoPE short/long factors and attention factor
#   gemma3    embedding scale, post-attention and post-FFN norms, GELU gate, six layers
#             of which every sixth is global and the others see a sliding window
FAMILIES = [
    {"arch": "llama"},
    {"arch": "qwen2", "bias": True},
    {"arch": "qwen3", "qk_norm": True, "head_dim": HEAD_DIM},
    {"arch": "llama", "name": "llama3", "rope_freqs": True},
    {"arch": "phi3", "phi3": True},
    {"arch": "gemma3", "gemma3": True, "qk_norm": True, "head_dim": HEAD_DIM, "n_layer": 6},
]
ROPE_FACTORS = {
    "rope_freqs.weight": [1.0, 1.0, 1.5, 2.0, 4.0, 8.0, 8.0, 8.0],
    "rope_factors_short.weight": [1.0, 1.2, 1.7, 2.5],
    "rope_factors_long.weight": [3.0, 5.0, 9.0, 20.0],
}
PHI3_ROT, PHI3_ATTN_FACTOR = 8, 1.19
GEMMA3_WINDOW, GEMMA3_ROPE_BASE = 5, 1_000_000.0

TOKENS = [5, 17, 99, 42, 200, 7, 150, 33, 64, 128, 250, 3, 77, 180, 21, 90]


def vocab():
    """The tiny byte-level vocabulary of src/llm/tiny.rs (3 specials, 256 bytes)."""
    def byte_char(b):
        printable = 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE
        if printable:
            return chr(b)
        rank = sum(
            1 for x in range(b) if not (0x21 <= x <= 0x7E or 0xA1 <= x <= 0xAC or x >= 0xAE)
        )
        return chr(256 + rank)
    toks = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [byte_char(b) for b in range(256)]
    types = [3, 3, 3] + [1] * 256
    merges = [("\"", ":"), ("\"", ","), ("\u0120", "t"), ("e", "r"), ("{", "\""), ("\u0120t", "er")]
    for a, b in merges:
        toks.append(a + b)
        types.append(1)
    return toks, types, [f"{a} {b}" for a, b in merges]


def formula(name, shape):
    """value[i] = 0.5 sin(0.1 i + s) (norms: 1 + 0.1 sin), s from the tensor's name."""
    s = sum(name.encode()) % 97 / 7.0
    n = int(np.prod(shape))
    x = np.sin(np.arange(n, dtype=np.float64) * 0.1 + s)
    x = 1.0 + 0.1 * x if "norm" in name else 0.5 * x
    return x.astype(np.float32).reshape(shape)


def factor_names(fam):
    if fam.get("rope_freqs"):
        return ["rope_freqs.weight"]
    if fam.get("phi3"):
        return ["rope_factors_long.weight", "rope_factors_short.weight"]
    return []


def write(path, fam):
    arch = fam["arch"]
    n_layer = fam.get("n_layer", N_LAYER)
    hd = fam.get("head_dim", N_EMBD // N_HEAD)
    toks, types, merges = vocab()
    w = gguf.GGUFWriter(path, arch)
    w.add_block_count(n_layer)
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_KV)
    if "head_dim" in fam:
        w.add_key_length(hd)
        w.add_value_length(hd)
    w.add_rope_freq_base(GEMMA3_ROPE_BASE if fam.get("gemma3") else ROPE_BASE)
    w.add_layer_norm_rms_eps(EPS)
    if fam.get("phi3"):
        w.add_rope_dimension_count(PHI3_ROT)
        w.add_rope_scaling_attn_factors(PHI3_ATTN_FACTOR)
        w.add_rope_scaling_orig_ctx_len(N_CTX)
    if fam.get("gemma3"):
        w.add_sliding_window(GEMMA3_WINDOW)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(2)
    w.add_bos_token_id(0)
    tensors = {"token_embd.weight": (len(toks), N_EMBD), "output_norm.weight": (N_EMBD,)}
    for i in range(n_layer):
        p = f"blk.{i}."
        tensors.update({
            p + "attn_norm.weight": (N_EMBD,),
            p + "attn_output.weight": (N_EMBD, N_HEAD * hd),
            p + "ffn_norm.weight": (N_EMBD,),
            p + "ffn_down.weight": (N_EMBD, N_FF),
        })
        if fam.get("phi3"):
            tensors[p + "attn_qkv.weight"] = ((N_HEAD + 2 * N_KV) * hd, N_EMBD)
            tensors[p + "ffn_up.weight"] = (2 * N_FF, N_EMBD)
        else:
            tensors.update({
                p + "attn_q.weight": (N_HEAD * hd, N_EMBD),
                p + "attn_k.weight": (N_KV * hd, N_EMBD),
                p + "attn_v.weight": (N_KV * hd, N_EMBD),
                p + "ffn_gate.weight": (N_FF, N_EMBD),
                p + "ffn_up.weight": (N_FF, N_EMBD),
            })
        if fam.get("bias"):
            tensors.update({
                p + "attn_q.bias": (N_HEAD * hd,),
                p + "attn_k.bias": (N_KV * hd,),
                p + "attn_v.bias": (N_KV * hd,),
            })
        if fam.get("qk_norm"):
            tensors.update({p + "attn_q_norm.weight": (hd,), p + "attn_k_norm.weight": (hd,)})
        if fam.get("gemma3"):
            tensors.update({
                p + "post_attention_norm.weight": (N_EMBD,),
                p + "post_ffw_norm.weight": (N_EMBD,),
            })
    for name, shape in tensors.items():
        w.add_tensor(name, formula(name, shape))
    for name in factor_names(fam):
        w.add_tensor(name, np.array(ROPE_FACTORS[name], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return len(toks), hd, n_layer


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = os.path.join(here, "..", "tests", "fixtures", "reference")
    only = set(sys.argv[1:])
    for fam in FAMILIES:
        arch = fam["arch"]
        name = fam.get("name", arch)
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"tiny-{name}.gguf")
            n_vocab, hd, n_layer = write(path, fam)
            # f32 KV cache (type 0): the default f16 cache alone moves these logits by ~1e-3.
            llm = Llama(model_path=path, n_ctx=N_CTX, n_threads=2, logits_all=True,
                        type_k=0, type_v=0, verbose=False)
            llm.eval(TOKENS)
            logits = [
                [round(float(v), 5) for v in llm.scores[i]] for i in range(len(TOKENS))
            ]
        data = {
            "architecture": arch,
            "config": {"n_layer": n_layer, "n_embd": N_EMBD, "n_head": N_HEAD,
                       "n_kv_head": N_KV, "head_dim": hd, "n_ff": N_FF, "n_vocab": n_vocab,
                       "n_ctx": N_CTX, "rms_eps": EPS,
                       "rope_base": GEMMA3_ROPE_BASE if fam.get("gemma3") else ROPE_BASE,
                       "n_rot": PHI3_ROT if fam.get("phi3") else hd,
                       "rope_attn_factor": PHI3_ATTN_FACTOR if fam.get("phi3") else 1.0,
                       "sliding_window": GEMMA3_WINDOW if fam.get("gemma3") else 0},
            # The RoPE factors the file holds (the Rust side computes the other weights
            # from the formula; these are data).
            "rope_factors": {k: ROPE_FACTORS[k] for k in factor_names(fam)},
            "tokens": TOKENS,
            "logits": logits,
        }
        with open(os.path.join(out_dir, f"tiny-{name}.json"), "w") as f:
            json.dump(data, f)
            f.write("\n")
        print(name, "recorded", n_vocab, "tokens")


if __name__ == "__main__":
    main()
