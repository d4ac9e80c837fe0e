#!/usr/bin/env python3
"""Check eval/postgresql.jsonl against the PostgreSQL 15 HTML it was written from.

    scripts/check_postgres_eval.py [QUESTIONS] [HTML_DIR]
    scripts/check_postgres_eval.py --show FILE "SECTION" [HTML_DIR]

Checks that every line parses as JSON with the required fields, ids are unique, the
splits are balanced within each kind, and every keyword of an answerable question
occurs (case-insensitively) in its section's text. A section's text is taken from the
HTML between its heading and the next heading (any level: a subsection, or a
Note/Tip/Warning title, which the ingester also treats as a heading), so a keyword
that only occurs in a subsection is reported. `--show` prints one section's text.

QUESTIONS defaults to eval/postgresql.jsonl, HTML_DIR to
/usr/share/doc/postgresql-doc-15/html (or a folder made by scripts/postgres_kb.sh).
"""
import collections
import html.parser
import json
import os
import re
import sys

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
SKIP = {"script", "style"}


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


class Sections(html.parser.HTMLParser):
    """Splits a page into (level, heading, own text) in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections = [[0, "", []]]
        self.heading = None  # [level, parts] while inside a heading
        self.skip = 0
        self.nav = 0  # depth inside navheader/navfooter divs
        self.div_depth = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self.skip += 1
        if tag == "div":
            cls = dict(attrs).get("class") or ""
            is_nav = cls in ("navheader", "navfooter")
            self.div_depth.append(is_nav)
            if is_nav:
                self.nav += 1
        if tag in HEADINGS and self.nav == 0:
            self.heading = [HEADINGS[tag], []]

    def handle_endtag(self, tag):
        if tag in SKIP and self.skip:
            self.skip -= 1
        if tag == "div" and self.div_depth:
            if self.div_depth.pop():
                self.nav -= 1
        if tag in HEADINGS and self.heading is not None:
            level, parts = self.heading
            self.sections.append([level, norm("".join(parts)), []])
            self.heading = None

    def handle_data(self, data):
        if self.skip or self.nav:
            return
        if self.heading is not None:
            self.heading[1].append(data)
        else:
            self.sections[-1][2].append(data)


def page_sections(path):
    p = Sections()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return [(lvl, head, norm(" ".join(parts))) for lvl, head, parts in p.sections]


def section_text(html_dir, file, section):
    """Own text of every heading named `section` in `file` (a list: headings repeat)."""
    return [t for _, h, t in page_sections(os.path.join(html_dir, file)) if h == section]


def main(argv):
    if argv and argv[0] == "--show":
        html_dir = argv[3] if len(argv) > 3 else "/usr/share/doc/postgresql-doc-15/html"
        texts = section_text(html_dir, argv[1], argv[2])
        if not texts:
            print("no such section; headings:", file=sys.stderr)
            for lvl, h, _ in page_sections(os.path.join(html_dir, argv[1])):
                print(f"  {'  ' * lvl}{h}", file=sys.stderr)
            return 1
        for t in texts:
            print(t)
            print("-----")
        return 0

    path = argv[0] if argv else "eval/postgresql.jsonl"
    html_dir = argv[1] if len(argv) > 1 else "/usr/share/doc/postgresql-doc-15/html"
    problems = []
    ids = set()
    splits = collections.Counter()
    files = set()
    with open(path, encoding="utf-8") as f:
        lines = [l for l in f if l.strip()]
    for n, line in enumerate(lines, 1):
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"line {n}: not JSON ({e})")
            continue
        for field in ("id", "split", "kind", "question"):
            if not isinstance(q.get(field), str) or not q[field].strip():
                problems.append(f"line {n}: missing {field}")
        qid = q.get("id")
        if qid in ids:
            problems.append(f"line {n}: duplicate id {qid}")
        ids.add(qid)
        if q.get("split") not in ("tune", "report"):
            problems.append(f"{qid}: bad split {q.get('split')!r}")
        kind = q.get("kind")
        if kind not in ("answerable", "not_documented", "out_of_domain"):
            problems.append(f"{qid}: bad kind {kind!r}")
        splits[(kind, q.get("split"))] += 1
        if kind != "answerable":
            for field in ("file", "section", "keywords"):
                if q.get(field):
                    problems.append(f"{qid}: {kind} question has a {field}")
            continue
        kws = q.get("keywords")
        if not q.get("file") or not q.get("section"):
            problems.append(f"{qid}: answerable without file/section")
            continue
        if not isinstance(kws, list) or not 1 <= len(kws) <= 3:
            problems.append(f"{qid}: needs 1-3 keywords")
            continue
        files.add(q["file"])
        fpath = os.path.join(html_dir, q["file"])
        if not os.path.exists(fpath):
            problems.append(f"{qid}: no file {q['file']}")
            continue
        texts = section_text(html_dir, q["file"], q["section"])
        if not texts:
            problems.append(f"{qid}: no heading {q['section']!r} in {q['file']}")
            continue
        if len(texts) > 1:
            problems.append(f"{qid}: heading {q['section']!r} occurs {len(texts)} times in {q['file']}")
        for kw in kws:
            if not any(kw.lower() in t.lower() for t in texts):
                problems.append(f"{qid}: keyword {kw!r} not in {q['file']} § {q['section']}")
            if kw.lower() in q["question"].lower():
                print(f"note: {qid}: keyword {kw!r} appears in the question")

    kinds = sorted({k for k, _ in splits})
    print(f"{len(lines)} questions, {len(ids)} ids, {len(files)} answerable pages")
    for k in kinds:
        t, r = splits[(k, "tune")], splits[(k, "report")]
        print(f"  {k:15} tune {t:3}  report {r:3}")
        if abs(t - r) > 1:
            problems.append(f"{k}: splits unbalanced ({t} tune, {r} report)")
    for p in problems:
        print("PROBLEM:", p)
    print("ok" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
