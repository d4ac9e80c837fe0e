#!/usr/bin/env python3
"""How long `sextant mcp` takes to answer, as an MCP client sees it (dev-time figure, not a
test): spawn + initialize, the first search (no LLM needed), the first ask (loads the LLM),
a second ask. Needs the MCP Python SDK (the e2e venv has it: `make e2e-deps`).

    target/e2e-venv/bin/python scripts/mcp_latency.py KB_DIR [SEXTANT_BIN]
"""

import asyncio
import sys
import time

from mcp import Client, StdioServerParameters


async def main(kb, binary):
    t0 = time.monotonic()
    async with Client(StdioServerParameters(command=binary, args=["mcp", "--kb", kb])) as c:
        t1 = time.monotonic()
        await c.call_tool("search", {"query": "roll back a deployment"})
        t2 = time.monotonic()
        await c.call_tool("ask", {"question": "How do I roll back a deployment?"})
        t3 = time.monotonic()
        await c.call_tool("ask", {"question": "How do I renew the TLS certificates?"})
        t4 = time.monotonic()
    print(f"start + initialize {t1 - t0:.2f} s, first search {t2 - t1:.2f} s, "
          f"first ask (loads the LLM) {t3 - t2:.2f} s, second ask {t4 - t3:.2f} s")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "target/release/sextant"))
