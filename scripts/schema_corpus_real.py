#!/usr/bin/env python3
"""Builds the real-world part of tests/fixtures/schema_corpus/ (dev-time).

    python3 scripts/schema_corpus_real.py MIRROR_DIR

MIRROR_DIR holds git repositories named `owner+name` (a bare one in `owner+name/repo`, as the
session's mirror tool lays them out, or a plain clone in `owner+name`); each file is read with
`git show COMMIT:PATH` at the commit pinned in SOURCES below, so a rerun gives the same
fixtures. Needs git and PyYAML (for the OpenAPI Initiative's YAML examples), and checks
with jsonschema where installed (pip install jsonschema==4.26.0): a schema that is not a
valid draft-07 schema, or whose `$ref` points outside the document or at nothing, is
dropped. Pass -v to list what was not taken and why.

Writes two fixtures in the format of scripts/schema_corpus.py's, `{"source", "commit",
"license", "schemas": [{"file", "description", "schema", ...}]}`, and each source's licence
beside them as LICENSE-<name>. As a fixture holds several sources, its "source", "commit"
and "license" strings list them in the same order, separated by "; ", and each entry's "file" is
"owner/name:path". Each entry also has "split": "tune" and "report" alternate in file
order (a held-out split: tune on one half, report on the other), and, where the schema was
changed on the way in, "conversions": what was changed.

openapi-components.json: component schemas of public API descriptions: Kubernetes (the
swagger.json that kubernetes-client/python generates from, Apache-2.0), OpenAI's API
(openai/openai-openapi, MIT) and the OpenAPI Initiative's v3.0 examples (Apache-2.0). Each
schema is made self-contained: the components it references, transitively, are copied into
a local "definitions" object and `$ref`s rewritten to "#/definitions/Name"; a schema whose
closure needs more than MAX_DEFS definitions, or that refers into a part of a component,
outside the document, or uses a keyword of a later draft ($recursiveRef, prefixItems, ...)
or `type: file`, is not taken. OpenAPI-only keywords are translated to draft-07:
`nullable: true` adds "null" to "type" (and null to an "enum"), or, where there is no
"type", wraps the schema as anyOf [schema, {"type": "null"}]; a `$ref` with constraining
siblings becomes allOf [{"$ref"}, siblings]; OpenAPI 3.0's boolean exclusiveMinimum /
exclusiveMaximum become draft-07's numeric ones; `x-*` extensions, readOnly, writeOnly,
example(s), xml, discriminator, externalDocs, deprecated and any other keyword draft-07 does
not know are dropped. "format" values stay as they are (int32, int64, byte, double,
unixtime, int-or-string: unknown formats are part of what the corpus tests). Descriptions
are kept only when short (the first sentence, up to DESC_MAX characters). The sample is
chosen for variety among the object (or untyped) components of at most MAX_BYTES (see
pick_openapi): spread evenly over each description's sorted component names, then swapped
in, components with a feature that fewer than three picks have (enums, oneOf, allOf,
nullable, formats, nested arrays, additionalProperties, bounds, ...). The OpenAPI
Initiative's examples are named one by one.

tool-definitions.json: the JSON Schema parameters of real tools: MCP servers' tool
definitions written as JSON Schema literals (modelcontextprotocol/servers at the commit
before its reference servers were archived, MIT; executeautomation/mcp-playwright, MIT),
read from the TypeScript / Python source by a small literal parser (a tool whose schema is
built by code, e.g. zodToJsonSchema, or whose name is not a literal is skipped; from each
reference server its first tool and its largest other one; from mcp-playwright every fourth
tool and those with five or more parameters), and the function documents of the Berkeley
Function-Calling Leaderboard (ShishirPatil/gorilla, Apache-2.0): every seventh distinct
function of its live (user-contributed) set, those of its live sets that use "tuple" or
"any", and from each multi-turn API document the function with the most parameters. A
schema identical to one already taken is skipped. BFCL's own type names are
translated: "dict" -> "object", "float" -> "number", "tuple" -> "array", "any" -> no type
({}), and its non-standard "optional" keyword is dropped; each entry lists the
translations it needed. Each entry's description names the tool.
"""

import json
import pathlib
import re
import subprocess
import sys

import yaml

try:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import SchemaError
except ImportError:  # the check is then skipped, with a warning
    Draft7Validator = None

DESC_MAX = 120  # characters of a kept description
MAX_DEFS = 15  # definitions a self-contained schema may carry
MAX_BYTES = 6000  # compact JSON size of one OpenAPI schema

SOURCES = {
    "kubernetes-client/python": ("02465849", "024658493d124f046fc0a9827a2a3165cf2aee28",
                                 "Apache-2.0", "LICENSE-kubernetes-client-python"),
    "openai/openai-openapi": ("f85dbe22", "f85dbe223d40e1a31cba812ab2d755c7e98a92a3",
                              "MIT, Copyright (c) OpenAI", "LICENSE-openai-openapi"),
    "OAI/OpenAPI-Specification": ("46c1076b", "46c1076ba6f9a7a09ecaa6b740ab603cf6cc9886",
                                  "Apache-2.0", "LICENSE-openapi-specification"),
    "modelcontextprotocol/servers": ("1f705677", "1f705677a930ec618b7a16d87d00cee7db747ff2",
                                     "MIT, Copyright (c) 2024 Anthropic, PBC",
                                     "LICENSE-mcp-servers"),
    "executeautomation/mcp-playwright": ("2349c289", "2349c2891e7c499c8c07b7d78c7f3fb4c797a1da",
                                         "MIT, Copyright (c) 2025 ExecuteAutomation",
                                         "LICENSE-mcp-playwright"),
    "ShishirPatil/gorilla": ("6ea57973", "6ea57973c7a6097fd7c5915698c54c17c5b1b6c8",
                             "Apache-2.0", "LICENSE-gorilla"),
}

MIRROR = None


def git_show(repo, path):
    base = MIRROR / repo.replace("/", "+")
    git_dir = base / "repo" if (base / "repo").is_dir() else base
    commit = SOURCES[repo][1]
    if git_dir.name == "repo":
        args = ["git", f"--git-dir={git_dir}"]
    else:
        args = ["git", "-C", str(git_dir)]
    return subprocess.run(args + ["show", f"{commit}:{path}"], check=True,
                          capture_output=True).stdout.decode()


class Skip(Exception):
    pass


# --- descriptions -----------------------------------------------------------------------

def short(text, limit=DESC_MAX):
    """The description if short, else its first sentence if that is, else None."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    first = re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(])", text, maxsplit=1)[0]
    return first if len(first) <= limit else None


def label(name, text, limit=200):
    """An entry's description: the name, then the start of the text."""
    text = " ".join(str(text or "").split())
    if not text:
        return name
    if len(text) > limit:
        first = re.split(r"(?<=[.!?])\s+(?=[A-Z`\"(])", text, maxsplit=1)[0]
        text = first if len(first) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"
    return f"{name}: {text}"


# --- OpenAPI ------------------------------------------------------------------------------

DRAFT7 = {
    "$ref", "title", "description", "default", "type", "enum", "const", "multipleOf", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "items", "additionalItems", "maxItems", "minItems", "uniqueItems", "contains",
    "maxProperties", "minProperties", "required", "properties", "patternProperties",
    "additionalProperties", "dependencies", "propertyNames", "if", "then", "else", "allOf",
    "anyOf", "oneOf", "not", "format", "contentMediaType", "contentEncoding",
}
OPENAPI_ONLY = {"readOnly", "writeOnly", "example", "examples", "xml", "discriminator",
                "externalDocs", "deprecated"}
LATER_DRAFTS = {"$recursiveRef", "$recursiveAnchor", "$dynamicRef", "$dynamicAnchor",
                "prefixItems", "$defs", "unevaluatedProperties", "unevaluatedItems",
                "dependentRequired", "dependentSchemas", "$anchor"}
ANNOTATIONS = ("title", "description", "default")


def subschemas(node):
    """The schemas directly inside a schema (not its enum, default or example values)."""
    if not isinstance(node, dict):
        return
    for k, v in node.items():
        if k in ("properties", "patternProperties", "definitions") and isinstance(v, dict):
            yield from v.values()
        elif k in ("allOf", "anyOf", "oneOf") and isinstance(v, list):
            yield from v
        elif k in ("items", "additionalItems", "additionalProperties", "not", "contains",
                   "propertyNames", "if", "then", "else"):
            yield from (v if isinstance(v, list) else [v])


def refs(node):
    """Every $ref in a schema and the schemas inside it."""
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for sub in subschemas(node):
            yield from refs(sub)


class OpenApiConverter:
    """Converts one document's component schemas; `prefix` is where its components live."""

    def __init__(self, components, prefix):
        self.components, self.prefix = components, prefix

    def ref_name(self, ref):
        if not ref.startswith(self.prefix):
            raise Skip(f"$ref outside the components: {ref}")
        name = ref[len(self.prefix):]
        if "/" in name or name not in self.components:
            raise Skip(f"$ref into part of a component or to nothing: {ref}")
        return name

    def refs(self, node, out):
        for ref in refs(node):
            out.add(self.ref_name(ref))
        return out

    def closure(self, name):
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            for r in sorted(self.refs(self.components[n], set())):
                if r not in seen:
                    seen.add(r)
                    todo.append(r)
            if len(seen) > MAX_DEFS:
                raise Skip(f"closure over {MAX_DEFS} definitions")
        return seen

    def convert(self, name):
        notes = set()
        deps = self.closure(name)
        schema = self.node(self.components[name], notes)
        if deps:
            schema["definitions"] = {d: self.node(self.components[d], notes) for d in sorted(deps)}
        return schema, sorted(notes)

    def node(self, s, notes):
        if isinstance(s, bool):
            return s
        if not isinstance(s, dict):
            raise Skip(f"not a schema: {s!r}")
        s = dict(s)
        nullable = s.pop("nullable", False) is True
        if nullable:
            notes.add("nullable -> null type")
        if "$ref" in s:
            base = {"$ref": "#/definitions/" + self.ref_name(s.pop("$ref"))}
            rest = self.keywords(s, notes)
            ann = {k: rest.pop(k) for k in ANNOTATIONS if k in rest}
            if rest:
                notes.add("$ref with siblings -> allOf")
                base = {"allOf": [base], **rest}
            if nullable:
                base = {"anyOf": [base, {"type": "null"}]}
            if ann.get("description") is not None:
                base["description"] = ann["description"]
            return base
        out = self.keywords(s, notes)
        if nullable:
            if "type" in out:
                t = out["type"] if isinstance(out["type"], list) else [out["type"]]
                out["type"] = t + ["null"] if "null" not in t else t
                if "enum" in out and None not in out["enum"]:
                    out["enum"] = out["enum"] + [None]
            elif any(k in out for k in ("allOf", "anyOf", "oneOf", "enum", "const")):
                ann = {k: out.pop(k) for k in ANNOTATIONS if k in out}
                out = {"anyOf": [out, {"type": "null"}], **ann}
        return out

    def keywords(self, s, notes):
        out = {}
        for k, v in s.items():
            if k in LATER_DRAFTS:
                raise Skip(f"keyword of a later draft: {k}")
            if k.startswith("x-"):
                notes.add("dropped x-* extensions")
                continue
            if k in OPENAPI_ONLY:
                notes.add(f"dropped {k}")
                continue
            if k not in DRAFT7:
                notes.add(f"dropped non-standard keyword {k}")
                continue
            if k in ("properties", "patternProperties"):
                out[k] = {p: self.node(sub, notes) for p, sub in v.items()}
            elif k == "items":
                out[k] = ([self.node(x, notes) for x in v] if isinstance(v, list)
                          else self.node(v, notes))
            elif k in ("additionalProperties", "additionalItems", "not", "contains",
                       "propertyNames", "if", "then", "else"):
                out[k] = self.node(v, notes)
            elif k in ("allOf", "anyOf", "oneOf"):
                out[k] = [self.node(x, notes) for x in v]
            elif k == "description":
                d = short(v)
                if d:
                    out[k] = d
            elif k == "title":
                out[k] = " ".join(str(v).split())
            elif k == "type" and v == "file":
                raise Skip("type: file")
            elif k in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(v, bool):
                bound = "minimum" if k == "exclusiveMinimum" else "maximum"
                if v and bound in s:
                    out[k] = s[bound]
                    notes.add(f"boolean {k} -> numeric")
                elif not v:
                    notes.add(f"dropped {k}: false")
            else:
                out[k] = v
        for k in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = "minimum" if k == "exclusiveMinimum" else "maximum"
            if s.get(k) is True and bound in s:
                out.pop(bound, None)
        return out


def features(schema, notes=()):
    """Features of a converted schema (and the conversions it needed), for a varied pick."""
    text = json.dumps(schema)
    found = {"conversion:" + n for n in notes if not n.startswith("dropped")}
    for key in ("enum", "oneOf", "anyOf", "allOf", "additionalProperties", "$ref", "pattern",
                "minimum", "maximum", "maxLength", "default"):
        if f'"{key}":' in text:
            found.add(key)
    found |= {"format:" + f for f in re.findall(r'"format": "([^"]+)"', text)}
    if '"null"' in text:
        found.add("null")
    if re.search(r'"type": "array", "items": \{"type": "array"', text) or \
            text.count('"type": "array"') >= 3:
        found.add("nested arrays")
    return found


def pick_openapi(candidates, count, least=3):
    """`count` of the (name, schema, notes) candidates: spread evenly over the sorted names;
    then, rarest feature first, for each feature that fewer than `least` picks have,
    candidates that have it, in place of the spread picks with the fewest features (at most
    a third of the picks are replaced)."""
    candidates = sorted(candidates, key=lambda c: c[0].lower())
    if len(candidates) <= count:
        return candidates
    feats = {c[0]: features(c[1], c[2]) for c in candidates}
    step = len(candidates) / count
    picked = [candidates[int(i * step)] for i in range(count)]
    spread = [candidates[int(i * step + step / 2)] for i in range(count)]  # other picks first
    rest = spread + [c for c in candidates if c not in spread]
    have, among = {}, {}
    for c in candidates:
        for f in feats[c[0]]:
            among[f] = among.get(f, 0) + 1
            have[f] = have.get(f, 0) + (c in picked)
    extra = []
    for f in sorted(among, key=lambda f: (among[f], f)):
        for c in rest:
            if have[f] >= least or len(extra) == count // 3:
                break
            if f in feats[c[0]] and c not in picked and c not in extra:
                extra.append(c)
                for g in feats[c[0]]:
                    have[g] += 1
    keep = sorted(picked, key=lambda c: len(feats[c[0]]))[len(extra):]
    return sorted(keep + extra, key=lambda c: c[0].lower())


def openapi_entries(repo, path, components, prefix, count, names=None, describe=""):
    conv = OpenApiConverter(components, prefix)
    candidates, skipped = [], {}
    for name in (names or sorted(components)):
        try:
            schema, notes = conv.convert(name)
        except Skip as e:
            skipped[name] = str(e)
            continue
        if len(json.dumps(schema, separators=(",", ":"))) > MAX_BYTES:
            skipped[name] = f"over {MAX_BYTES} bytes"
            continue
        if schema.get("type") not in ("object", None) and not names:
            skipped[name] = "not an object"  # scalars are covered by the test suite
            continue
        candidates.append((name, schema, notes))
    picked = candidates if names else pick_openapi(candidates, count)
    entries = []
    for name, schema, notes in picked:
        entry = {"file": f"{repo}:{path}",
                 "description": label(f"{describe}{name}", components[name].get("description")),
                 "schema": schema}
        if notes:
            entry["conversions"] = notes
        entries.append(entry)
    return entries, skipped


def openapi_corpus():
    entries, skipped = [], {}
    k8s_path = "kubernetes/swagger.json.unprocessed"
    k8s = json.loads(git_show("kubernetes-client/python", k8s_path))
    e, s = openapi_entries("kubernetes-client/python", k8s_path, k8s["definitions"],
                           "#/definitions/", 42, describe="Kubernetes ")
    entries += e
    skipped.update({f"kubernetes {k}": v for k, v in s.items()})
    oai_path = "openapi.json"
    oai = json.loads(git_show("openai/openai-openapi", oai_path))
    e, s = openapi_entries("openai/openai-openapi", oai_path, oai["components"]["schemas"],
                           "#/components/schemas/", 36, describe="OpenAI API ")
    entries += e
    skipped.update({f"openai {k}": v for k, v in s.items()})
    examples = [("petstore.yaml", ["Pets", "Error"]),
                ("petstore-expanded.yaml", ["Pet", "NewPet"]),
                ("uspto.yaml", ["dataSetList"]),
                ("link-example.yaml", ["pullrequest", "user"])]
    for f, names in examples:
        path = f"_archive_/schemas/v3.0/pass/{f}"
        doc = yaml.safe_load(git_show("OAI/OpenAPI-Specification", path))
        e, s = openapi_entries("OAI/OpenAPI-Specification", path, doc["components"]["schemas"],
                               "#/components/schemas/", 0, names=names,
                               describe=f"{f.removesuffix('.yaml')} example API ")
        entries += e
        skipped.update({f"{f} {k}": v for k, v in s.items()})
    return ["kubernetes-client/python", "openai/openai-openapi", "OAI/OpenAPI-Specification"], \
        entries, skipped


# --- tool literals in source code -------------------------------------------------------------

TOKEN = re.compile(r"""
    (?P<ws>\s+|//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<str>\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
           |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)
  | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>\.\.\.|[{}\[\]():,+=])
""", re.X | re.S)


def tokens(text, pos):
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:  # not part of a literal: a token that no rule accepts
            yield "err", text[pos], pos, pos + 1
            pos += 1
            continue
        pos = m.end()
        if m.lastgroup != "ws":
            yield m.lastgroup, m.group(), m.start(), pos


ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "\n": ""}


def string_value(tok):
    """The value of a JS/TS or Python string literal."""
    q = 3 if tok.startswith(("\"\"\"", "'''")) else 1
    body = tok[q:-q]
    if tok.startswith("`") and "${" in body:
        raise Skip("template literal with substitutions")
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "u":
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class Literal:
    """Reads a JS/TS or Python object literal (JSON-like) at a position of source text."""

    CONST = {"true": True, "false": False, "null": None, "True": True, "False": False,
             "None": None}

    def __init__(self, text, pos):
        self.toks = tokens(text, pos)
        self.peeked = None

    def next(self):
        if self.peeked is not None:
            t, self.peeked = self.peeked, None
            return t
        return next(self.toks)

    def peek(self):
        if self.peeked is None:
            self.peeked = next(self.toks)
        return self.peeked

    def value(self):
        kind, tok, _, end = self.next()
        if tok == "{":
            out = {}
            while True:
                kind, tok, _, end = self.next()
                if tok == "}":
                    return out
                if kind == "str":
                    key = string_value(tok)
                elif kind in ("ident", "num"):
                    key = tok
                else:
                    raise Skip(f"unexpected {tok!r} as a key")
                if self.next()[1] != ":":
                    raise Skip(f"no ':' after key {key}")
                out[key] = self.value()
                if self.peek()[1] == ",":
                    self.next()
        if tok == "[":
            out = []
            while True:
                if self.peek()[1] == "]":
                    self.next()
                    return out
                out.append(self.value())
                if self.peek()[1] == ",":
                    self.next()
        if tok == "(":
            v = self.value()
            if self.next()[1] != ")":
                raise Skip("unbalanced parenthesis")
            return v
        if kind == "str":
            s = string_value(tok)
            while True:
                kind, tok, _, _ = self.peek()
                if kind == "str":  # Python's adjacent strings
                    self.next()
                    s += string_value(tok)
                elif tok == "+":
                    self.next()
                    kind, tok, _, _ = self.next()
                    if kind != "str":
                        raise Skip("string joined with a non-literal")
                    s += string_value(tok)
                else:
                    return s
        if kind == "num":
            return json.loads(tok)
        if kind == "ident" and tok in self.CONST:
            return self.CONST[tok]
        raise Skip(f"not a literal: {tok!r}")

    def end(self):
        try:
            return self.peek()[2]
        except StopIteration:
            return None


def string_after(text, key):
    """The literal string of the last `key: "..."` / `key="..."` in text, or None."""
    found = None
    for m in re.finditer(rf"\b{key}\s*[:=]\s*", text):
        try:
            v = Literal(text, m.end()).value()
        except (Skip, StopIteration):
            continue
        if isinstance(v, str):
            found = v
    return found


def source_tools(repo, path):
    """(name, description, inputSchema) of each tool defined as a literal in a source file."""
    text = git_show(repo, path)
    out, skipped, last = [], {}, 0
    for m in re.finditer(r"\binputSchema\s*[:=]\s*", text):
        head = text[last:m.start()]
        name = string_after(head, "name")
        desc = string_after(head, "description")
        lit = Literal(text, m.end())
        try:
            if lit.peek()[1] != "{":
                raise Skip("schema built by code")
            schema = lit.value()
            last = lit.end() or m.end()
        except (Skip, StopIteration) as e:
            skipped[f"{path} {name}"] = str(e) or "unreadable"
            last = m.end()
            continue
        if not name:
            skipped[f"{path} @{m.start()}"] = "no literal tool name"
            continue
        out.append((name, desc, schema))
    return out, skipped


# --- BFCL ---------------------------------------------------------------------------------------

BFCL_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def bfcl_schema(s, notes):
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if k == "type":
            if v == "any" or v == "":
                notes.add(f'type "{v}" -> no type')
                continue
            if v in BFCL_TYPES:
                notes.add(f"{v} -> {BFCL_TYPES[v]}")
                v = BFCL_TYPES[v]
            out[k] = v
        elif k == "optional":
            notes.add("dropped non-standard keyword optional")
        elif k == "properties":
            out[k] = {p: bfcl_schema(sub, notes) for p, sub in v.items()}
        elif k in ("items", "additionalProperties"):
            out[k] = bfcl_schema(v, notes)
        elif k in ("anyOf", "oneOf", "allOf"):
            out[k] = [bfcl_schema(x, notes) for x in v]
        else:
            out[k] = v
    return out


def bfcl_functions(path):
    text = git_show("ShishirPatil/gorilla", path)
    funcs = []
    for line in text.splitlines():
        if line.strip():
            o = json.loads(line)
            fs = o.get("function", o)
            funcs += fs if isinstance(fs, list) else [fs]
    return funcs


def first_and_largest(tools):
    if len(tools) <= 2:
        return tools
    size = lambda t: len(json.dumps(t[2]))  # noqa: E731
    return [tools[0], max(tools[1:], key=size)]


def tool_corpus():
    entries, skipped = [], {}
    seen = set()

    def add(repo, path, name, desc, schema, notes=()):
        key = json.dumps(schema, sort_keys=True)
        if key in seen:
            skipped[f"{path} {name}"] = "same schema as an earlier tool"
            return
        seen.add(key)
        entry = {"file": f"{repo}:{path}", "description": label(name, desc), "schema": schema}
        if notes:
            entry["conversions"] = sorted(notes)
        entries.append(entry)

    # MCP servers: from each server, its first tool and its largest other one.
    mcp = "modelcontextprotocol/servers"
    for path in ["src/brave-search/index.ts", "src/google-maps/index.ts", "src/slack/index.ts",
                 "src/puppeteer/index.ts", "src/memory/index.ts", "src/redis/src/index.ts",
                 "src/aws-kb-retrieval-server/index.ts", "src/everart/index.ts",
                 "src/postgres/index.ts", "src/gdrive/index.ts",
                 "src/sequentialthinking/index.ts", "src/sqlite/src/mcp_server_sqlite/server.py",
                 "src/time/src/mcp_server_time/server.py"]:
        tools, s = source_tools(mcp, path)
        skipped.update(s)
        for name, desc, schema in first_and_largest(tools):
            add(mcp, path, name, desc, schema)
    # mcp-playwright: every fourth tool, and those with five or more parameters.
    pw = "executeautomation/mcp-playwright"
    tools, s = source_tools(pw, "src/tools.ts")
    skipped.update(s)
    for i, (name, desc, schema) in enumerate(tools):
        if i % 4 == 0 or len(schema.get("properties", {})) >= 5:
            add(pw, "src/tools.ts", name, desc, schema)
    # BFCL: the live (user-contributed) functions, every seventh distinct one, then those
    # of its live files with a "tuple" or "any" type; for each multi-turn API document, the
    # function with the most parameters.
    gorilla = "ShishirPatil/gorilla"
    data = "berkeley-function-call-leaderboard/bfcl_eval/data"

    def add_bfcl(path, f):
        notes = set()
        schema = bfcl_schema(f["parameters"], notes)
        desc = (f.get("description") or "").split("Tool description: ", 1)[-1]
        add(gorilla, path, f["name"], desc, schema, notes)

    path = f"{data}/BFCL_v4_live_simple.json"
    unique = {}
    for f in bfcl_functions(path):
        unique.setdefault(f["name"], f)
    for f in list(unique.values())[::7]:
        add_bfcl(path, f)
    for path in [f"{data}/BFCL_v4_live_simple.json", f"{data}/BFCL_v4_live_multiple.json"]:
        unique = {}
        for f in bfcl_functions(path):
            unique.setdefault(f["name"], f)
        for f in unique.values():
            text = json.dumps(f["parameters"])
            if '"type": "tuple"' in text or '"type": "any"' in text:
                add_bfcl(path, f)
    for api in ["gorilla_file_system", "math_api", "memory_kv", "message_api", "posting_api",
                "ticket_api", "trading_bot", "travel_booking", "vehicle_control", "web_search"]:
        path = f"{data}/multi_turn_func_doc/{api}.json"
        fs = bfcl_functions(path)
        add_bfcl(path, max(fs, key=lambda f: len(f["parameters"].get("properties", {}))))
    return [mcp, pw, gorilla], entries, skipped


# --- checks -----------------------------------------------------------------------------------

def local_refs_resolve(schema):
    """Every $ref is "#/..." and points at something in the document."""
    for ref in refs(schema):
        if not ref.startswith("#/"):
            return f"$ref outside the document: {ref}"
        node = schema
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return f"$ref to nothing: {ref}"
            node = node[part]
    return None


def check(entries, skipped):
    """Keeps the entries whose schema is a valid draft-07 schema with local refs only."""
    kept = []
    for e in entries:
        why = local_refs_resolve(e["schema"])
        if why is None and Draft7Validator is not None:
            try:
                Draft7Validator.check_schema(e["schema"])
            except SchemaError as err:
                why = f"not a valid draft-07 schema: {err.message}"
        if why:
            skipped[f"{e['file']} {e['description'][:40]}"] = why
        else:
            kept.append(e)
    return kept


# --- output -------------------------------------------------------------------------------

def write(out_dir, name, repos, entries):
    for i, e in enumerate(entries):
        e["split"] = "tune" if i % 2 == 0 else "report"
    doc = {
        "source": "; ".join(f"https://github.com/{r}" for r in repos),
        "commit": "; ".join(SOURCES[r][0] for r in repos),
        "license": "; ".join(f"{SOURCES[r][2]} ({SOURCES[r][3]})" for r in repos),
        "schemas": entries,
    }
    (out_dir / name).write_text(json.dumps(doc, indent=1) + "\n")
    for r in repos:
        (out_dir / SOURCES[r][3]).write_text(git_show(r, "LICENSE"))
    by_file = {}
    for e in entries:
        by_file[e["file"]] = by_file.get(e["file"], 0) + 1
    print(f"{name}: {len(entries)} schemas, {(out_dir / name).stat().st_size} bytes")
    for f, n in by_file.items():
        print(f"  {n:3} {f}")


def main():
    global MIRROR
    MIRROR = pathlib.Path(sys.argv[1])
    out_dir = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/schema_corpus"
    out_dir.mkdir(parents=True, exist_ok=True)
    if Draft7Validator is None:
        print("warning: jsonschema is not installed, so the schemas are not checked")
    for name, build in [("openapi-components.json", openapi_corpus),
                        ("tool-definitions.json", tool_corpus)]:
        repos, entries, skipped = build()
        entries = check(entries, skipped)
        write(out_dir, name, repos, entries)
        reasons = {}
        for why in skipped.values():
            why = re.sub(r": .*", "", why)
            reasons[why] = reasons.get(why, 0) + 1
        print(f"  not taken: {reasons}")
        if "-v" in sys.argv:
            for k, why in skipped.items():
                print(f"    {k}: {why}")


if __name__ == "__main__":
    main()
