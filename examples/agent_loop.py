#!/usr/bin/env python3
"""An agent's loop against a running IRIX 7 machine, with the official MCP Python SDK.

It boots nothing: start a machine first (`cargo iris` boots the rig and forwards port 7801),
then run, from the repository's root,

    target/venv/bin/python examples/agent_loop.py [--url URL] [--token TOKEN] [--mode MODE]

(`cargo xtask clients` installs that venv; any Python with `pip install mcp==2.3.0` will do).

- URL: `--url`, else `$IRIX7_URL`, else http://127.0.0.1:7801/mcp.
- Token: `--token`, else `$IRIX7_TOKEN`, else the file the rig writes for the URL's port
  (`target/iris/token-<port>`, read again after the reset: a generated token changes when
  the machine resets), else none (a machine booted with `mcp.token=none`).
- MODE: `auto` (2026-07-28 when the machine speaks it, which it does), `legacy` (a 2025-11-25
  session) or `2026-07-28`.

The loop is what an agent does between builds:
1. wait for the module's banner on the serial console (`serial.read` with `until`, which
   returns as soon as the text is there: no polling);
2. write a file (`fs.write`);
3. run a command that reads it and watch its output as it is printed (`shell.exec`: each
   piece of output arrives as a progress notification's message);
4. capture the screen (`screen.capture`, a PNG);
5. reset the machine (`system.reset`) and wait until it is back: it answers with a fresh
   uptime, and its console shows the banner again.

Each step prints one line; the exit status is non-zero when a step fails.
"""

import argparse
import asyncio
import base64
import logging
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

# The line the module prints on the console once its tools are registered.
BANNER = "tools offered"
REPO = Path(__file__).resolve().parent.parent


class StepFailed(Exception):
    pass


def token_source(url, given):
    """A function giving the token to use now: `given`, else `$IRIX7_TOKEN`, else the token
    the rig wrote for this URL's port, read again on each call (a machine that generated its
    token generates a new one when it resets), else None."""
    fixed = given or os.environ.get("IRIX7_TOKEN")
    if fixed:
        return lambda: fixed
    path = REPO / "target" / "iris" / f"token-{urlparse(url).port or 80}"
    return lambda: path.read_text().strip() if path.exists() else None


def connect(url, token, mode):
    """An SDK client for the machine, with the bearer token (from `token()`) on every request."""
    token = token()
    if token:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return Client(streamable_http_client(url, http_client=http), mode=mode)
    return Client(url, mode=mode)


async def tool(c, name, args=None, **kw):
    """Calls a tool; its structured result, or StepFailed with the tool's error text."""
    r = await c.call_tool(name, args or {}, **kw)
    if r.is_error:
        raise StepFailed(f"{name}: {r.content[0].text if r.content else r}")
    return r


async def console_head(c):
    """Bytes ever written to the console."""
    return (await tool(c, "serial.read", {"max_bytes": 1})).structured_content["head"]


async def wait_for_banner(c, offset=0, timeout_s=60):
    """Waits on the console for the banner past `offset` (0: the oldest byte the ring holds);
    the offset just after it, or None when the ring no longer holds it (a machine up for
    long)."""
    args = {"offset": offset, "until": BANNER, "wait_ms": timeout_s * 1000}
    r = await tool(c, "serial.read", args)
    s = r.structured_content
    if s.get("matched"):
        return s["match_offset"] + len(BANNER)
    if s["lost"] > 0:
        return None
    raise StepFailed(f"no {BANNER!r} on the console within {timeout_s} s")


async def run_command(c, command):
    """Runs a shell command, printing its output as it streams; the final result."""
    pieces = []

    async def on_progress(progress, total, message):
        if message:
            pieces.append(message)
            for line in message.splitlines():
                print(f"    | {line}")

    r = await tool(c, "shell.exec", {"command": command}, progress_callback=on_progress)
    return r, "".join(pieces)


async def wait_until_back(url, token, mode, uptime_before, timeout_s=120):
    """After a reset: the machine's status once a new boot answers: an uptime below the old
    boot's, or any answer after the machine was seen gone (a boot that took longer than the old
    one had been up would otherwise never look new)."""
    deadline = time.monotonic() + timeout_s
    seen_gone = False
    while time.monotonic() < deadline:
        try:
            async with connect(url, token, mode) as c:
                st = (await tool(c, "status")).structured_content
                if st["uptime_ms"] < uptime_before or seen_gone:
                    return st
        except Exception:  # the machine is rebooting: connection refused, reset, timeout
            seen_gone = True
        await asyncio.sleep(0.5)
    raise StepFailed(f"the machine did not come back within {timeout_s} s")


async def agent_loop(url, token, mode, out_dir):
    async with connect(url, token, mode) as c:
        print(f"connected: {url} speaking {c.protocol_version}")
        st = (await tool(c, "status")).structured_content
        print(f"machine: {st['module']} build {st['build_id']}, up {st['uptime_ms']} ms")

        # 1. The banner (the first look waits briefly: on a machine up for long it has
        # scrolled out of the ring, and the machine answering says enough).
        after = await wait_for_banner(c, 0, timeout_s=3)
        if after is None:
            print("1 banner: no longer in the console's ring; the machine is up")
        else:
            print(f"1 banner: {BANNER!r} on the console, ends at offset {after}")

        # 2. A file.
        path = "/agent-loop.txt"
        text = "".join(f"line {i} written by the agent loop\n" for i in range(1, 6))
        w = (await tool(c, "fs.write", {"path": path, "content": text})).structured_content
        print(f"2 wrote {path}: {w}")

        # 3. A command reading it, its output watched as it streams.
        r, streamed = await run_command(c, f"cat {path}")
        out = r.structured_content
        if out["exit_status"] != 0 or out.get("output") != text:
            raise StepFailed(f"cat {path}: {out}")
        print(f"3 ran `cat {path}`: exit 0, {len(streamed)} bytes streamed as it ran")

        # 4. The screen.
        shot = await tool(c, "screen.capture", {"scale": 4})
        image = next((b for b in shot.content if b.type == "image"), None)
        if image is None:
            raise StepFailed(f"screen.capture returned no image: {shot.content}")
        png = base64.b64decode(image.data)
        if not png.startswith(b"\x89PNG"):
            raise StepFailed("screen.capture: not a PNG")
        shot_path = Path(out_dir) / "agent-loop-screen.png"
        shot_path.write_bytes(png)
        print(f"4 screen: {len(png)} bytes of PNG in {shot_path}")

        # 5. Reset. The console keeps counting across it (or starts again from 0 on a
        # machine whose ring does not survive a reset): the new boot's banner is past `head`.
        uptime = (await tool(c, "status")).structured_content["uptime_ms"]
        head = await console_head(c)
        await tool(c, "system.reset", {"delay_ms": 200})
        # The session dies with the machine: the SDK's teardown (its event stream, the
        # legacy session's DELETE) fails, which it logs; that is expected here.
        logging.getLogger("mcp").setLevel(logging.CRITICAL)
    print("5 reset requested; waiting for the machine")
    st = await wait_until_back(url, token, mode, uptime)
    async with connect(url, token, mode) as c:
        start = head if await console_head(c) >= head else 0
        after = await wait_for_banner(c, start)
        if after is None:
            raise StepFailed("the new boot's banner is not in the console's ring")
    print(f"5 back: build {st['build_id']}, up {st['uptime_ms']} ms, banner at {after}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default=os.environ.get("IRIX7_URL", "http://127.0.0.1:7801/mcp"))
    ap.add_argument("--token", default=None)
    ap.add_argument("--mode", default="auto", choices=["auto", "legacy", "2026-07-28"])
    ap.add_argument("--out-dir", default=".", help="where the screenshot goes")
    opts = ap.parse_args()
    token = token_source(opts.url, opts.token)
    try:
        asyncio.run(agent_loop(opts.url, token, opts.mode, opts.out_dir))
    except StepFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    print("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
