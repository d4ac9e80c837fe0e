"""The official `openai` Python client against a running `sextant serve` (loopback).

Run by scripts/e2e.sh with SEXTANT_URL and SEXTANT_TOKEN set; plain unittest, no pytest.
"""

import json
import math
import os
import threading
import time
import unittest

import httpx
import openai
from openai import OpenAI

URL = os.environ["SEXTANT_URL"].rstrip("/")
TOKEN = os.environ["SEXTANT_TOKEN"]
client = OpenAI(base_url=URL + "/v1", api_key=TOKEN, max_retries=0, timeout=120)
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def model_ids():
    return [m.id for m in client.models.list().data]


LLM, EMBEDDER = model_ids()[:2]


class OpenAIClient(unittest.TestCase):
    def test_models_lists_the_llm_the_embedder_then_the_grounded_answers(self):
        ids = model_ids()
        self.assertEqual(len(ids), 4)
        self.assertIn("qwen2.5-coder", ids[0])  # the default LLM
        self.assertIn("minilm", ids[1])
        self.assertEqual(ids[2:], ["sextant-rag", "sextant-navigator"])

    def test_chat_completion(self):
        r = client.chat.completions.create(
            model=LLM,
            messages=[
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Name one colour."},
            ],
            max_tokens=24,
            temperature=0,
        )
        choice = r.choices[0]
        self.assertEqual(choice.message.role, "assistant")
        self.assertTrue(choice.message.content.strip(), r)
        self.assertIn(choice.finish_reason, ("stop", "length"))
        self.assertGreater(r.usage.prompt_tokens, 5)
        self.assertLessEqual(r.usage.completion_tokens, 24)
        self.assertEqual(r.model, LLM)

    def test_streaming_yields_deltas_then_a_finish_reason(self):
        stream = client.chat.completions.create(
            model=LLM,
            messages=[{"role": "user", "content": "Say hello in three words."}],
            max_tokens=16,
            stream=True,
        )
        pieces, finish = [], None
        for chunk in stream:
            delta = chunk.choices[0].delta
            if delta.content:
                pieces.append(delta.content)
            if chunk.choices[0].finish_reason:
                finish = chunk.choices[0].finish_reason
        self.assertGreater(len(pieces), 1, "more than one delta")
        self.assertTrue("".join(pieces).strip())
        self.assertIn(finish, ("stop", "length"))

    def test_json_schema_output_is_valid(self):
        schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["city", "population", "size"],
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "population": {"type": "integer", "minimum": 0},
                "size": {"type": "string", "enum": ["small", "medium", "large"]},
            },
        }
        for seed in (1, 2, 3):
            r = client.chat.completions.create(
                model=LLM,
                messages=[{"role": "user", "content": "Describe Paris as JSON."}],
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "city", "schema": schema, "strict": True},
                },
                temperature=1.0,
                seed=seed,
                max_tokens=200,
            )
            v = json.loads(r.choices[0].message.content)
            self.assertEqual(set(v), {"city", "population", "size"})
            self.assertIsInstance(v["city"], str)
            self.assertLessEqual(len(v["city"]), 40)
            self.assertIsInstance(v["population"], int)
            self.assertGreaterEqual(v["population"], 0)
            self.assertIn(v["size"], ("small", "medium", "large"))

    def test_json_object_output_parses_as_an_object(self):
        r = client.chat.completions.create(
            model=LLM,
            messages=[{"role": "user", "content": "Give me a JSON object about a cat."}],
            response_format={"type": "json_object"},
            max_tokens=200,
        )
        self.assertIsInstance(json.loads(r.choices[0].message.content), dict)

    def test_embeddings_shape_and_norm(self):
        r = client.embeddings.create(model=EMBEDDER, input=["restart the api", "rotate the TLS certificate"])
        self.assertEqual([d.index for d in r.data], [0, 1])
        for d in r.data:
            self.assertEqual(len(d.embedding), 384)
            self.assertAlmostEqual(math.sqrt(sum(x * x for x in d.embedding)), 1.0, places=3)
        self.assertNotEqual(r.data[0].embedding, r.data[1].embedding)
        one = client.embeddings.create(model=EMBEDDER, input="restart the api", encoding_format="float")
        self.assertEqual(len(one.data), 1)
        # The same vector whether it travels as base64 (the client's default) or floats.
        for a, b in zip(one.data[0].embedding, r.data[0].embedding):
            self.assertAlmostEqual(a, b, places=5)

    def test_errors_are_openai_shaped_4xx(self):
        with self.assertRaises(openai.AuthenticationError):
            OpenAI(base_url=URL + "/v1", api_key="wrong", max_retries=0).models.list()
        with self.assertRaises(openai.BadRequestError) as e:
            client.chat.completions.create(model=LLM, messages=[])
        self.assertIn("messages", str(e.exception))
        with self.assertRaises(openai.NotFoundError):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
        # A keyword the grammar cannot enforce (uniqueItems) is checked by validation: the
        # answer is still a valid value.
        r = client.chat.completions.create(
            model=LLM,
            messages=[{"role": "user", "content": "List three port numbers."}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}},
            },
        )
        items = json.loads(r.choices[0].message.content)
        self.assertIsInstance(items, list)
        self.assertEqual(len(items), len(set(items)), items)
        # A schema nothing can satisfy is the caller's error, named.
        with self.assertRaises(openai.BadRequestError) as e:
            client.chat.completions.create(
                model=LLM,
                messages=[{"role": "user", "content": "x"}],
                response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {}}}},
                max_tokens=32,
            )
        self.assertIn("schema", str(e.exception).lower())
        with self.assertRaises(openai.BadRequestError):
            client.embeddings.create(model=EMBEDDER, input=[1, 2, 3])
        # Malformed JSON and an oversized body, sent raw.
        JSON = {**AUTH, "Content-Type": "application/json"}
        r = httpx.post(URL + "/v1/chat/completions", content=b'{"messages": [', headers=JSON)
        self.assertEqual(r.status_code, 400)
        self.assertIn("not valid JSON", r.json()["error"]["message"])
        r = httpx.post(URL + "/v1/chat/completions", content=b" " * (5 * 1024 * 1024), headers=JSON)
        self.assertEqual(r.status_code, 413)
        self.assertEqual(r.json()["error"]["code"], "request_too_large")
        r = httpx.get(URL + "/v1/nothing", headers=AUTH)
        self.assertEqual(r.status_code, 404)
        self.assertIn("error", r.json())

    def test_a_full_queue_answers_503_with_retry_after(self):
        statuses, lock = [], threading.Lock()

        def one():
            r = httpx.post(
                URL + "/v1/chat/completions",
                json={"model": LLM, "messages": [{"role": "user", "content": "Count to fifty."}], "max_tokens": 48},
                headers=AUTH,
                timeout=300,
            )
            with lock:
                statuses.append((r.status_code, r.headers.get("retry-after")))

        threads = [threading.Thread(target=one) for _ in range(9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(s for s, _ in statuses)
        self.assertIn(200, codes)
        self.assertIn(503, codes, statuses)
        self.assertTrue(all(ra for s, ra in statuses if s == 503), statuses)

    def test_a_client_that_disconnects_stops_its_generation(self):
        before = httpx.get(URL + "/api/health", headers=AUTH).json()["cancelled_generations"]
        with httpx.stream(
            "POST",
            URL + "/v1/chat/completions",
            json={"model": LLM, "messages": [{"role": "user", "content": "Write a long story."}],
                  "max_tokens": 1500, "stream": True},
            headers=AUTH,
            timeout=120,
        ) as r:
            lines = 0
            for line in r.iter_lines():
                lines += bool(line.startswith("data:"))
                if lines >= 3:
                    break
        deadline = time.time() + 60
        while time.time() < deadline:
            now = httpx.get(URL + "/api/health", headers=AUTH).json()["cancelled_generations"]
            if now > before:
                return
            time.sleep(0.2)
        self.fail("the generation went on after its client disconnected")


if __name__ == "__main__":
    unittest.main(verbosity=2)
