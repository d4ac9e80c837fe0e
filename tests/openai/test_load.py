"""Readers during writers: 50 concurrent searches and knowledge-base reads while an answer
generates and a folder is ingested. All must succeed, and reads must not wait for the
ingest to end (the service holds the knowledge base only to check and commit each file).

Run by scripts/e2e.sh (SEXTANT_URL, SEXTANT_TOKEN, SEXTANT_SAMPLE_KB); prints latencies.
"""

import json
import os
import threading
import time
import unittest

import httpx

URL = os.environ["SEXTANT_URL"].rstrip("/")
AUTH = {"Authorization": f"Bearer {os.environ['SEXTANT_TOKEN']}"}
SAMPLE_KB = os.environ["SEXTANT_SAMPLE_KB"]


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(int(len(xs) * p), len(xs) - 1)] if xs else float("nan")


class Load(unittest.TestCase):
    def test_reads_go_on_while_an_answer_generates_and_an_ingest_runs(self):
        events = {}

        def ingest():
            with httpx.stream("POST", URL + "/api/ingest", json={"path": SAMPLE_KB}, headers=AUTH, timeout=600) as r:
                events["ingest_status"] = r.status_code
                for line in r.iter_lines():
                    if line.startswith("event: done"):
                        events["ingest_done"] = time.monotonic()
                    if line.startswith("event: error"):
                        events["ingest_error"] = line

        def generate():
            r = httpx.post(
                URL + "/v1/chat/completions",
                json={"messages": [{"role": "user", "content": "Write about valves."}], "max_tokens": 200},
                headers=AUTH,
                timeout=600,
            )
            events["chat_status"] = r.status_code
            events["chat_done"] = time.monotonic()

        writers = [threading.Thread(target=ingest), threading.Thread(target=generate)]
        for t in writers:
            t.start()
        time.sleep(1.0)  # the ingest has started and holds the writer lock
        results, lock = [], threading.Lock()

        def read(i):
            t0 = time.monotonic()
            if i % 2:
                r = httpx.post(URL + "/api/search", json={"query": "roll back a deployment", "k": 5}, headers=AUTH, timeout=600)
            else:
                r = httpx.get(URL + "/api/kb", headers=AUTH, timeout=600)
            t1 = time.monotonic()
            with lock:
                results.append((i % 2, r.status_code, (t1 - t0) * 1000, t1))

        readers = [threading.Thread(target=read, args=(i,)) for i in range(50)]
        for t in readers:
            t.start()
        for t in readers + writers:
            t.join()
        self.assertEqual(events.get("ingest_status"), 200, events)
        self.assertNotIn("ingest_error", events)
        self.assertIn("ingest_done", events)
        self.assertEqual(events.get("chat_status"), 200, events)
        statuses = [s for _, s, _, _ in results]
        self.assertEqual(statuses, [200] * 50, statuses)
        searches = [ms for kind, _, ms, _ in results if kind == 1]
        reads = [ms for kind, _, ms, _ in results if kind == 0]
        before_ingest_end = sum(1 for *_, end in results if end < events["ingest_done"])
        print(
            f"\n50 reads during an ingest and a generation: search p50 {pct(searches, 0.5):.0f} ms, "
            f"p99 {pct(searches, 0.99):.0f} ms; /api/kb p50 {pct(reads, 0.5):.0f} ms, "
            f"p99 {pct(reads, 0.99):.0f} ms; {before_ingest_end}/50 finished before the ingest did"
        )
        # Reads are not queued behind the ingest: most finish while it still runs.
        self.assertGreater(before_ingest_end, 25, results)


if __name__ == "__main__":
    unittest.main(verbosity=2)
