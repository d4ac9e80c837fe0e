"""`sextant mcp` driven by the official MCP Python SDK over stdio, against the sample
knowledge base: the handshake, the tools (schemas valid, each called and its result
checked), the resources, and the errors a client can cause.

Run by scripts/e2e.sh (SEXTANT_BIN, SEXTANT_MCP_KB: an ingested copy of examples/kb).
"""

import asyncio
import json
import os
import pathlib
import unittest

import jsonschema
from mcp import Client, MCPError, StdioServerParameters

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = os.environ["SEXTANT_BIN"]
KB = os.environ["SEXTANT_MCP_KB"]
SCHEMAS = {f: json.loads((ROOT / "schemas" / f"{f}-response.schema.json").read_text()) for f in ("rag", "navigator")}


def server(*extra):
    return StdioServerParameters(command=BIN, args=["mcp", "--kb", KB, *extra])


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=300))


async def headings_of_every_document(client):
    """Every heading of the KB, read through read_section (whole documents)."""
    docs = (await client.list_resources()).resources
    headings = set()
    for d in docs:
        r = await client.call_tool("read_section", {"file": d.name})
        assert not r.is_error, r.content
        headings |= {o["heading"] for o in r.structured_content["outline"]}
    return headings


class Mcp(unittest.TestCase):
    def test_tools_are_listed_with_valid_schemas_and_navigation_names_only_real_headings(self):
        async def go():
            async with Client(server()) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                self.assertEqual(set(tools), {"search", "ask", "read_section", "navigate_to_section"})
                for t in tools.values():
                    jsonschema.Draft7Validator.check_schema(t.input_schema)
                    self.assertEqual(t.input_schema["type"], "object", t.name)
                    if t.output_schema is not None:
                        jsonschema.Draft7Validator.check_schema(t.output_schema)
                nav = tools["navigate_to_section"].input_schema
                sections = nav["properties"]["section"]["enum"]
                subsections = nav["properties"]["subsection"]["enum"]
                self.assertGreater(len(sections), 3)
                real = await headings_of_every_document(c)
                self.assertFalse(set(sections) - real, "sections that are not headings")
                self.assertFalse(set(subsections) - real, "subsections that are not headings")

        run(go())

    def test_search_returns_passages_with_their_place(self):
        async def go():
            async with Client(server()) as c:
                r = await c.call_tool("search", {"query": "how do I roll back a deployment", "k": 3})
                self.assertFalse(r.is_error, r.content)
                hits = r.structured_content["hits"]
                self.assertEqual(len(hits), 3)
                files = {d.name for d in (await c.list_resources()).resources}
                for h in hits:
                    self.assertIn(h["file"], files)
                    for key in ("id", "section", "anchor", "text", "score"):
                        self.assertIn(key, h)
                self.assertTrue(any("roll" in h["text"].lower() for h in hits), hits)
                # The passage is in the section its anchor names.
                top = hits[0]
                s = await c.call_tool("read_section", {"file": top["file"], "anchor": top["anchor"]})
                self.assertFalse(s.is_error, s.content)
                self.assertEqual(s.structured_content["heading"], top["section"])
                # Keyword search finds an exact term; an unknown mode is refused by name.
                r = await c.call_tool("search", {"query": "rollback", "k": 2, "mode": "bm25"})
                self.assertFalse(r.is_error, r.content)
                self.assertIn("rollback", r.structured_content["hits"][0]["text"].lower())
                r = await c.call_tool("search", {"query": "rollback", "mode": "fuzzy"})
                self.assertTrue(r.is_error)
                self.assertIn("mode", r.content[0].text)
                words = top["text"].split()[-6:]
                self.assertIn(" ".join(words), " ".join(s.structured_content["text"].split()))

        run(go())

    def test_ask_answers_in_the_seed_formats(self):
        async def go():
            async with Client(server()) as c:
                files = {d.name for d in (await c.list_resources()).resources}
                for fmt in ("rag", "navigator"):
                    r = await c.call_tool("ask", {"question": "How do I roll back a deployment?", "format": fmt})
                    self.assertFalse(r.is_error, r.content)
                    answer = r.structured_content
                    jsonschema.validate(answer, SCHEMAS[fmt])
                    self.assertEqual(json.loads(r.content[0].text), answer)
                    if fmt == "rag":
                        self.assertTrue(answer["retrieved_chunks"], answer)
                    else:
                        cited = {s["file"] for s in answer["sources"]}
                        self.assertTrue(cited, answer)
                        self.assertFalse(cited - files, answer)
                        self.assertFalse(answer["outOfDomain"])
                # Out of the documents' domain: an honest refusal, still a valid object.
                r = await c.call_tool("ask", {"question": "What is a good sourdough hydration?", "format": "navigator"})
                jsonschema.validate(r.structured_content, SCHEMAS["navigator"])
                self.assertTrue(r.structured_content["outOfDomain"], r.structured_content)

        run(go())

    def test_navigate_to_section_lands_on_the_heading_it_names(self):
        async def go():
            async with Client(server()) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                section = tools["navigate_to_section"].input_schema["properties"]["section"]["enum"][1]
                r = await c.call_tool("navigate_to_section", {"section": section})
                self.assertFalse(r.is_error, r.content)
                self.assertEqual(r.structured_content["heading"], section)
                self.assertTrue(r.structured_content["text"].startswith("#"))
                bad = await c.call_tool("navigate_to_section", {"section": "Kubernetes Federation"})
                self.assertTrue(bad.is_error)
                self.assertIn("navigate_to_section arguments", bad.content[0].text)

        run(go())

    def test_unknown_files_and_anchors_are_tool_errors_not_crashes(self):
        async def go():
            async with Client(server()) as c:
                r = await c.call_tool("read_section", {"file": "no/such/file.md"})
                self.assertTrue(r.is_error)
                self.assertIn("no/such/file.md", r.content[0].text)
                doc = (await c.list_resources()).resources[0].name
                r = await c.call_tool("read_section", {"file": doc, "anchor": "no-such-anchor"})
                self.assertTrue(r.is_error)
                self.assertIn("anchor", r.content[0].text)
                r = await c.call_tool("search", {"query": ""})
                self.assertTrue(r.is_error)
                self.assertIn("search arguments", r.content[0].text)
                r = await c.call_tool("ask", {"question": "x", "format": "xml"})
                self.assertTrue(r.is_error)
                self.assertIn("format", r.content[0].text)
                # The server is still there.
                r = await c.call_tool("search", {"query": "TLS certificates"})
                self.assertFalse(r.is_error, r.content)

        run(go())

    def test_documents_are_resources(self):
        async def go():
            async with Client(server()) as c:
                docs = (await c.list_resources()).resources
                self.assertGreaterEqual(len(docs), 5)
                for d in docs:
                    self.assertTrue(str(d.uri).startswith("sextant://kb/"), d.uri)
                whole = await c.read_resource(str(docs[0].uri))
                self.assertEqual(whole.contents[0].mime_type, "text/markdown")
                self.assertGreater(len(whole.contents[0].text), 100)
                hit = (await c.call_tool("search", {"query": "TLS certificates", "k": 1})).structured_content["hits"][0]
                doc = next(d for d in docs if d.name == hit["file"])
                part = await c.read_resource(f"{doc.uri}#{hit['anchor']}")
                self.assertIn(hit["section"], part.contents[0].text.splitlines()[0])
                with self.assertRaises(MCPError):
                    await c.read_resource("sextant://kb/no-such-document.md")

        run(go())

    def test_an_empty_knowledge_base_says_how_to_fill_it(self):
        async def go():
            empty = pathlib.Path(KB).parent / "empty-kb"
            async with Client(StdioServerParameters(command=BIN, args=["mcp", "--kb", str(empty)])) as c:
                names = {t.name for t in (await c.list_tools()).tools}
                self.assertNotIn("navigate_to_section", names, "no headings to navigate to")
                r = await c.call_tool("search", {"query": "anything"})
                self.assertTrue(r.is_error)
                self.assertIn("sextant ingest", r.content[0].text)

        run(go())

    def test_without_the_llm_search_and_extractive_answers_still_work(self):
        async def go():
            # A model name the store does not have: the server starts anyway (the LLM is
            # needed only by answers that generate), and says what is missing when asked.
            async with Client(server("--llm", "no-such-model")) as c:
                r = await c.call_tool("search", {"query": "roll back a deployment"})
                self.assertFalse(r.is_error, r.content)
                r = await c.call_tool("ask", {"question": "How do I roll back a deployment?"})
                self.assertFalse(r.is_error, r.content)
                jsonschema.validate(r.structured_content, SCHEMAS["rag"])
                r = await c.call_tool("ask", {"question": "How do I roll back a deployment?", "mode": "reader"})
                self.assertTrue(r.is_error)
                self.assertIn("no-such-model", r.content[0].text)

        run(go())


if __name__ == "__main__":
    unittest.main(verbosity=2)
