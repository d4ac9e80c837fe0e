"""Grounded answers through the OpenAI API: the official `openai` client asks
`sextant-rag` and `sextant-navigator`, and the message content is the seed format's JSON
object, cited from the knowledge base (validated against schemas/*.schema.json).

Run by scripts/e2e.sh after the sample KB is ingested (SEXTANT_URL, SEXTANT_TOKEN).
"""

import json
import os
import pathlib
import unittest

import httpx
import jsonschema
import openai
from openai import OpenAI

ROOT = pathlib.Path(__file__).resolve().parents[2]
URL = os.environ["SEXTANT_URL"].rstrip("/")
TOKEN = os.environ["SEXTANT_TOKEN"]
client = OpenAI(base_url=URL + "/v1", api_key=TOKEN, max_retries=0, timeout=300)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SCHEMAS = {m: json.loads((ROOT / "schemas" / f"{f}-response.schema.json").read_text())
           for m, f in (("sextant-rag", "rag"), ("sextant-navigator", "navigator"))}
QUESTION = "How do I roll back a deployment?"


def kb_files():
    r = httpx.get(URL + "/api/kb", headers=AUTH, timeout=60)
    return {d["path"] for d in r.json()["documents"]}


class Grounded(unittest.TestCase):
    def test_each_grounded_model_answers_in_its_format_citing_real_files(self):
        files = kb_files()
        self.assertTrue(files, "the sample KB is ingested before this test")
        for model, schema in SCHEMAS.items():
            r = client.chat.completions.create(
                model=model,
                messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}],
            )
            self.assertEqual(r.model, model)
            self.assertEqual(r.choices[0].finish_reason, "stop")
            answer = json.loads(r.choices[0].message.content)
            jsonschema.validate(answer, schema)
            if model == "sextant-rag":
                self.assertTrue(answer["retrieved_chunks"], answer)
                self.assertTrue(answer["final_answer"].strip(), answer)
            else:
                cited = {s["file"] for s in answer["sources"]}
                self.assertTrue(cited, answer)
                self.assertFalse(cited - files, answer)

    def test_streaming_delivers_the_same_object(self):
        stream = client.chat.completions.create(
            model="sextant-rag", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        pieces, finish = [], None
        for chunk in stream:
            delta = chunk.choices[0].delta
            if delta.content:
                pieces.append(delta.content)
            finish = chunk.choices[0].finish_reason or finish
        self.assertEqual(finish, "stop")
        jsonschema.validate(json.loads("".join(pieces)), SCHEMAS["sextant-rag"])

    def test_a_question_the_documents_do_not_cover_is_answered_honestly(self):
        r = client.chat.completions.create(
            model="sextant-navigator", messages=[{"role": "user", "content": "What is a good sourdough hydration?"}]
        )
        answer = json.loads(r.choices[0].message.content)
        jsonschema.validate(answer, SCHEMAS["sextant-navigator"])
        self.assertTrue(answer["outOfDomain"], answer)
        self.assertEqual(answer["sources"], [])

    def test_a_follow_up_is_read_with_the_messages_before_it(self):
        r = client.chat.completions.create(
            model="sextant-navigator",
            messages=[
                {"role": "user", "content": "How do I rotate a secret?"},
                {"role": "assistant", "content": "See security/secrets.md."},
                {"role": "user", "content": "how often should that be done?"},
            ],
        )
        answer = json.loads(r.choices[0].message.content)
        jsonschema.validate(answer, SCHEMAS["sextant-navigator"])
        self.assertIn("security/secrets.md", {s["file"] for s in answer["sources"]}, answer)

    def test_errors_name_the_fix(self):
        with self.assertRaises(openai.BadRequestError) as e:
            client.chat.completions.create(model="sextant-rag", messages=[{"role": "assistant", "content": "hi"}])
        self.assertIn("user message", str(e.exception))
        with self.assertRaises(openai.BadRequestError) as e:
            client.chat.completions.create(
                model="sextant-navigator",
                messages=[{"role": "user", "content": QUESTION}],
                response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}},
            )
        self.assertIn("own format", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
