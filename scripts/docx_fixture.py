#!/usr/bin/env python3
"""Writes tests/fixtures/docx/gateway-runbook.docx (dev-time): a runbook as Word writes it,
with python-docx's default template (Word's built-in styles: Title, Heading 1-2, List
Bullet, a table style), so the DOCX parser is tested on real OOXML styles, not ours.

    python3 -m venv target/docx-venv
    target/docx-venv/bin/pip install -r scripts/docx/requirements.txt
    target/docx-venv/bin/python scripts/docx_fixture.py
"""

import pathlib

import docx
from docx.enum.style import WD_STYLE_TYPE

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests/fixtures/docx/gateway-runbook.docx"

d = docx.Document()
d.core_properties.title = "Restarting the payment gateway"
d.add_paragraph("Restarting the payment gateway", style="Title")
d.add_paragraph("Owner: the payments on-call. Read the whole page before you start.")
d.add_heading("Before you start", level=1)
d.add_paragraph("Check the queue depth & the gateway error rate on the Payments dashboard.")
d.add_paragraph("Announce the restart in #payments-ops.", style="List Bullet")
d.add_paragraph("Drain traffic from the node you restart.", style="List Bullet")
# A code style of the team's own, as runbooks have: named "Code", a monospace font.
code = d.styles.add_style("Code", WD_STYLE_TYPE.PARAGRAPH)
code.font.name = "Consolas"
d.add_paragraph("To drain a node:")
d.add_paragraph("gatewayctl drain --node NODE", style="Code")
d.add_paragraph("gatewayctl status --node NODE", style="Code")
d.add_heading("Restart commands", level=2)
p = d.add_paragraph("Run ")
p.add_run("gatewayctl restart --grace 45s --node NODE").bold = True
d.add_paragraph("then wait until gatewayctl status reports READY for that node.")
d.add_heading("Timeouts", level=2)
t = d.add_table(rows=3, cols=2)
for row, (k, v) in zip(t.rows, [("Setting", "Value"), ("grace", "45s"), ("ready timeout", "120s")]):
    row.cells[0].text, row.cells[1].text = k, v
d.add_heading("After the restart", level=1)
d.add_paragraph("Close the change ticket and note the restart time.")
OUT.parent.mkdir(parents=True, exist_ok=True)
d.save(OUT)
print(OUT, OUT.stat().st_size, "bytes")
