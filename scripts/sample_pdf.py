#!/usr/bin/env python3
# Renders scripts/sample-pdf/oncall-guide.md into examples/kb/handbook/oncall-guide.pdf,
# the sample PDF of the Sextant example knowledge base.
#
# Requires fpdf2==2.8.9 (import name `fpdf`); see scripts/sample-pdf/requirements.txt:
#   python3 -m venv /tmp/pdfvenv && /tmp/pdfvenv/bin/pip install -r scripts/sample-pdf/requirements.txt
#   /tmp/pdfvenv/bin/python scripts/sample_pdf.py
#
# Source format (a small subset of Markdown):
#   optional front matter between `---` lines with `title:` and `subtitle:`;
#   `# Chapter`     -> new page, outline entry at level 0;
#   `## Section`    -> outline entry at level 1;
#   `- item`        -> bullet (continuation lines are indented);
#   other lines     -> paragraphs, separated by blank lines.
# Only the built-in Helvetica core font is used, so the text must be latin-1.
# The output is deterministic (fixed creation date), so regenerating it gives the same bytes.

import sys
from datetime import datetime, timezone
from pathlib import Path

from fpdf import FPDF

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "scripts" / "sample-pdf" / "oncall-guide.md"
OUT = REPO / "examples" / "kb" / "handbook" / "oncall-guide.pdf"

FONT = "Helvetica"
BODY_SIZE = 11
LINE_H = 5.6


def parse(text):
    """Returns (meta, blocks); blocks are (kind, text) with kind in h1, h2, p, li."""
    meta = {}
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = lines.index("---", 1)
        for line in lines[1:end]:
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
        lines = lines[end + 1:]

    blocks = []
    current = None  # (kind, [lines]) of an open paragraph or bullet

    def close():
        nonlocal current
        if current:
            blocks.append((current[0], " ".join(current[1])))
        current = None

    for raw in lines:
        line = raw.rstrip()
        if not line.strip():
            close()
        elif line.startswith("# "):
            close()
            blocks.append(("h1", line[2:].strip()))
        elif line.startswith("## "):
            close()
            blocks.append(("h2", line[3:].strip()))
        elif line.startswith("- "):
            close()
            current = ("li", [line[2:].strip()])
        elif current and current[0] == "li" and raw.startswith("  "):
            current[1].append(line.strip())
        elif current and current[0] == "p":
            current[1].append(line.strip())
        else:
            close()
            current = ("p", [line.strip()])
    close()
    return meta, blocks


class Guide(FPDF):
    doc_title = ""

    def footer(self):
        self.set_y(-15)
        self.set_font(FONT, "", 8)
        self.set_text_color(110)
        self.cell(0, 10, f"{self.doc_title} - page {self.page_no()}", align="C")
        self.set_text_color(0)


def render(meta, blocks):
    pdf = Guide(format="A4", unit="mm")
    pdf.doc_title = meta.get("title", "Guide")
    pdf.set_margins(22, 20, 22)
    pdf.set_auto_page_break(True, margin=20)
    pdf.set_title(pdf.doc_title)
    pdf.set_author("Lighthouse team")
    pdf.set_creation_date(datetime(2024, 5, 1, tzinfo=timezone.utc))
    pdf.page_mode = "USE_OUTLINES"

    # Title block on the first page, above the first chapter.
    pdf.add_page()
    pdf.set_font(FONT, "B", 22)
    pdf.multi_cell(0, 10, pdf.doc_title, new_x="LMARGIN", new_y="NEXT")
    if meta.get("subtitle"):
        pdf.set_font(FONT, "I", 11)
        pdf.multi_cell(0, 6, meta["subtitle"], new_x="LMARGIN", new_y="NEXT")
    pdf.ln(6)
    first_chapter = True

    for kind, text in blocks:
        if kind == "h1":
            if not first_chapter:
                pdf.add_page()
            first_chapter = False
            pdf.start_section(text, level=0)
            pdf.set_font(FONT, "B", 17)
            pdf.multi_cell(0, 9, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "h2":
            # keep a section heading together with the start of its body
            if pdf.get_y() > pdf.h - pdf.b_margin - 25:
                pdf.add_page()
            pdf.ln(2)
            pdf.start_section(text, level=1)
            pdf.set_font(FONT, "B", 13)
            pdf.multi_cell(0, 7, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
        elif kind == "p":
            pdf.set_font(FONT, "", BODY_SIZE)
            pdf.multi_cell(0, LINE_H, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
        elif kind == "li":
            pdf.set_font(FONT, "", BODY_SIZE)
            indent = 6
            pdf.set_x(pdf.l_margin + 1)
            pdf.cell(indent - 1, LINE_H, "-")
            pdf.multi_cell(pdf.epw - indent, LINE_H, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(1)
    return pdf


def main():
    text = SRC.read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        try:
            line.encode("latin-1")
        except UnicodeEncodeError as e:
            sys.exit(f"{SRC}:{n}: character {line[e.start]!r} is not latin-1 "
                     f"(the core Helvetica font cannot show it)")
    meta, blocks = parse(text)
    pdf = render(meta, blocks)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(OUT))
    print(f"wrote {OUT.relative_to(REPO)}: {pdf.pages_count} pages, "
          f"{OUT.stat().st_size} bytes")


if __name__ == "__main__":
    main()
