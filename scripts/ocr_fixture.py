#!/usr/bin/env python3
"""Writes tests/fixtures/ocr/scanned-page.pdf and scanned-note.png (dev-time): a page as a
scanner makes it, an image of text with no text layer, so the OCR path is tested on what
users have. Needs Pillow (scripts/ocr/requirements.txt).

    python3 -m venv target/ocr-venv
    target/ocr-venv/bin/pip install -r scripts/ocr/requirements.txt
    target/ocr-venv/bin/python scripts/ocr_fixture.py
"""

import pathlib

from PIL import Image, ImageDraw, ImageFont

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/ocr"

PAGE = [
    "Cooling loop B: emergency shutdown",
    "",
    "Close valve V12 before you stop pump P3.",
    "Wait ninety seconds until the pressure drops",
    "below two bar, then open the drain valve.",
]
NOTE = ["Spare filters are kept in cabinet 7,", "second shelf, labelled COOLANT."]


def page(lines, size):
    font = ImageFont.load_default(size=34)
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((60, 60 + i * 56), line, fill=0, font=font)
    return image


OUT.mkdir(parents=True, exist_ok=True)
# A gray page stored as JPEG (DCTDecode), as scanners write them, at 150 dpi.
page(PAGE, (1240, 420)).save(OUT / "scanned-page.pdf", "PDF", resolution=150.0, quality=80)
page(NOTE, (1000, 200)).save(OUT / "scanned-note.png", optimize=True)
for f in sorted(OUT.iterdir()):
    print(f, f.stat().st_size, "bytes")
