#!/usr/bin/env python3
"""Builds tests/fixtures/schema_corpus/ from public schema collections (dev-time).

    python3 scripts/schema_corpus.py PATH/TO/JSON-Schema-Test-Suite COMMIT

Takes the schemas of the JSON-Schema-Test-Suite's draft-07 keyword files (up to three test
groups per keyword file, in file order) and of its optional format files (the first group
of each), skipping schemas that need the network
(`$ref` to an http(s) URL). Each entry keeps its file and description, so a failure in
the corpus test names the keyword it exercises. The suite is MIT-licensed; its licence
is copied beside the fixture.
"""

import json
import pathlib
import sys

PER_FILE = 3


def remote(schema):
    text = json.dumps(schema)
    return '"$ref": "http' in text or "refRemote" in text


def main():
    suite, commit = pathlib.Path(sys.argv[1]), sys.argv[2]
    out_dir = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/schema_corpus"
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    files = [(f, PER_FILE) for f in sorted((suite / "tests/draft7").glob("*.json"))]
    files += [(f, 1) for f in sorted((suite / "tests/draft7/optional/format").glob("*.json"))]
    for f, per_file in files:
        if f.stem == "refRemote":
            continue
        taken = 0
        for group in json.loads(f.read_text()):
            if taken == per_file or remote(group["schema"]):
                continue
            entries.append({"file": str(f.relative_to(suite)), "description": group["description"],
                            "schema": group["schema"]})
            taken += 1
    doc = {
        "source": "https://github.com/json-schema-org/JSON-Schema-Test-Suite",
        "commit": commit,
        "license": "MIT, Copyright (c) 2012 Julian Berman (LICENSE-json-schema-test-suite)",
        "schemas": entries,
    }
    (out_dir / "json-schema-test-suite-draft7.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out_dir / "LICENSE-json-schema-test-suite").write_text((suite / "LICENSE").read_text())
    print(f"{len(entries)} schemas")


if __name__ == "__main__":
    main()
