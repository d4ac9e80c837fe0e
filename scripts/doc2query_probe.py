#!/usr/bin/env python3
"""Measure doc2query for a KB: questions written by an LLM for every chunk, searched
beside the chunks themselves (issue 33, "the answer's passage first").

    sextant serve --kb KB --port 7979 --threads 2 [--llm NAME] &
    scripts/doc2query_probe.py generate KB OUT.jsonl [--model NAME]   # resumable
    scripts/doc2query_probe.py score KB OUT.jsonl eval/SET.jsonl

`generate` asks the served LLM (`/v1/chat/completions`, greedy) for three questions a
user would ask that each chunk answers, one JSON line per chunk; run again, it skips the
chunks already written. `score` embeds the questions (`/v1/embeddings`), then for every
answerable question of the set takes `/api/search`'s 40 hybrid hits (Sextant's own
ranking, unchanged) and fuses, by reciprocal rank (constant 60), a second list: the
chunks ranked by their best generated question's cosine (dense, weight w) and by BM25
over their generated questions (weight wb). It prints, per split, hit@8 and mrr of the
expected file and the share of keywords in the first three chunks (what the reader
reads) and in the eight, for several weights; w = wb = 0 reproduces `sextant eval`'s
hit@8 and mrr. Needs numpy (dev time only). Results: docs/CHANGELOG.md, seventeenth
sitting.
"""
import argparse
import collections
import json
import math
import os
import re
import sqlite3
import urllib.request

API = "http://localhost:7979"
PROMPT = (
    "Passage:\n{text}\n\nWrite three short questions a user would ask that this passage "
    "answers, one per line."
)
SYSTEM = "You write the questions a user of this documentation would ask that the passage answers."


def post(path, body):
    req = urllib.request.Request(
        API + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def chunks(kb):
    db = sqlite3.connect(f"file:{kb}/kb.sqlite?mode=ro", uri=True)
    return db.execute(
        "SELECT c.id, d.path, c.chunk_id, c.text FROM chunks c JOIN documents d ON d.id = c.doc_id ORDER BY c.id"
    ).fetchall()


def generate(args):
    done = set()
    if os.path.exists(args.out):
        with open(args.out) as f:
            for line in f:
                try:
                    done.add(json.loads(line)["key"])
                except (ValueError, KeyError):
                    pass  # a torn last line: that chunk is asked again
    with open(args.out, "a") as out:
        for key, path, chunk_id, text in chunks(args.kb):
            if key in done:
                continue
            body = {
                "model": args.model,
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": PROMPT.format(text=text[:600])},
                ],
                "max_tokens": 60,
                "temperature": 0,
            }
            answer = post("/v1/chat/completions", body)["choices"][0]["message"]["content"]
            row = {"key": key, "file": path, "chunk_id": chunk_id, "out": answer}
            out.write(json.dumps(row) + "\n")
            out.flush()


def questions_of(out_file):
    """(question, chunk key) for every usable line the model wrote."""
    pairs = []
    with open(out_file) as f:
        for line in f:
            row = json.loads(line)
            for q in row["out"].split("\n"):
                q = re.sub(r"^\s*(\d+[.)]|[-*])\s*", "", q).strip()
                if len(q) >= 12 and not q.lower().startswith(("here are", "question:")):
                    pairs.append((q, row["key"]))
    return pairs


def embed(texts):
    vectors = []
    for i in range(0, len(texts), 64):
        data = post("/v1/embeddings", {"model": "all-minilm-l6-v2", "input": texts[i : i + 64]})
        vectors += [d["embedding"] for d in data["data"]]
    return vectors


def words(s):
    return [w for w in re.findall(r"[a-z0-9]+", s.lower()) if len(w) > 1]


def score(args):
    import numpy as np

    rows = chunks(args.kb)
    key_of = {(path, cid): key for key, path, cid, _ in rows}
    text = {key: t for key, _, _, t in rows}
    file_of = {key: path for key, path, _, _ in rows}
    pairs = questions_of(args.out)
    vectors = np.array(embed([q for q, _ in pairs]), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-9
    owners = [k for _, k in pairs]

    # BM25 over each chunk's generated questions.
    terms = collections.defaultdict(list)
    for q, k in pairs:
        terms[k] += words(q)
    n_docs = len(terms)
    df = collections.Counter(w for ts in terms.values() for w in set(ts))
    avg_len = sum(len(ts) for ts in terms.values()) / n_docs
    tf = {k: collections.Counter(ts) for k, ts in terms.items()}

    def bm25(query):
        scores = {}
        for k, counts in tf.items():
            length = sum(counts.values())
            s = 0.0
            for w in words(query):
                if w in counts:
                    idf = math.log(1 + (n_docs - df[w] + 0.5) / (df[w] + 0.5))
                    f = counts[w]
                    s += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / avg_len))
            if s > 0:
                scores[k] = s
        return sorted(scores, key=lambda k: -scores[k])[:40]

    asked = []
    with open(args.set) as f:
        for line in f:
            q = json.loads(line)
            if q.get("kind") != "answerable":
                continue
            hits = post("/api/search", {"query": q["question"], "k": 40, "mode": "hybrid"})["hits"]
            base = [key_of.get((h["file"], h["id"])) for h in hits]
            qv = np.array(embed([q["question"]])[0], dtype=np.float32)
            sims = vectors @ (qv / np.linalg.norm(qv))
            best = {}
            for s, k in zip(sims.tolist(), owners):
                best[k] = max(best.get(k, -1.0), s)
            dense = sorted(best, key=lambda k: -best[k])[:40]
            asked.append((q, base, dense, bm25(q["question"])))

    def figures(order, q):
        files = [file_of[k] for k in order[:8]]
        rr = next((1 / (i + 1) for i, f in enumerate(files) if f == q["file"]), 0)
        kws = q.get("keywords") or []

        def share(keys):
            t = " ".join(text[k] for k in keys).lower()
            return sum(k.lower() in t for k in kws) / len(kws) if kws else 0

        return [q["file"] in files, rr, share(order[:3]), share(order[:8])]

    for split in ("tune", "report"):
        for w, wb in [(0, 0), (0.1, 0), (0.25, 0), (0.5, 0), (1, 0), (0, 0.25), (0, 0.5), (0.15, 0.15), (0.5, 0.5)]:
            total, n = [0.0] * 4, 0
            for q, base, dense, b25 in asked:
                if q["split"] != split:
                    continue
                fused = collections.defaultdict(float)
                for lst, weight in ((base, 1.0), (dense, w), (b25, wb)):
                    for i, k in enumerate(lst):
                        if k is not None:
                            fused[k] += weight / (60 + i + 1)
                order = sorted(fused, key=lambda k: -fused[k])
                total = [a + b for a, b in zip(total, figures(order, q))]
                n += 1
            f = [t / n for t in total]
            print(
                f"{split} ({n}) dense {w:.2f} bm25 {wb:.2f}: hit@8 {f[0]:.3f} mrr {f[1]:.3f} "
                f"keywords in the first three {f[2]:.3f}, in the eight {f[3]:.3f}"
            )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("kb")
    g.add_argument("out")
    g.add_argument("--model", default="smollm2-135m-instruct")
    s = sub.add_parser("score")
    s.add_argument("kb")
    s.add_argument("out")
    s.add_argument("set")
    args = p.parse_args()
    generate(args) if args.cmd == "generate" else score(args)


if __name__ == "__main__":
    main()
