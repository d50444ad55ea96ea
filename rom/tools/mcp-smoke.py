#!/usr/bin/env python3
"""mcp-smoke: exercises the irix7-mcp surface against a live guest (the iris rig or an Indy).

Standard library only, so it runs anywhere Python 3 does. One line per check; the exit status is
non-zero when any check fails.

    mcp-smoke.py --url http://127.0.0.1:7801/mcp [--token T] [--skip-block] [--skip-fs]
                 [--skip-screen] [--save-screen DIR] [--reset]

--skip-block --skip-fs run the same harness against a diskless guest (`cargo iris -- --no-disk`);
--skip-screen against an Indy without a graphics board.
"""

import argparse
import base64
import json
import struct
import sys
import time
import urllib.error
import urllib.request

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
# The server allows 20 requests per rolling second per client; stay under it.
MIN_GAP_S = 1 / 15


def modern_request(method, params=None, rid=1, meta=None, client="mcp-smoke"):
    """(body, headers) of a 2026-07-28 request: the `_meta` envelope (with `meta` merged in,
    e.g. a progressToken) and the MCP-Protocol-Version / Mcp-Method / Mcp-Name headers.
    tests/python imports this, so the envelope is written once."""
    p = dict(params or {})
    p["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        **(meta or {}),
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method in ("tools/call", "prompts/get"):
        headers["Mcp-Name"] = p["name"]
    elif method == "resources/read":
        headers["Mcp-Name"] = p["uri"]
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}, headers


class Failure(Exception):
    pass


class Client:
    """A minimal MCP client over HTTP: stateless 2026-07-28 requests, and a legacy session."""

    def __init__(self, url, token):
        self.url = url
        self.token = token
        self.next_id = 1
        self.last_request = 0.0

    def _pace(self):
        wait = self.last_request + MIN_GAP_S - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.last_request = time.monotonic()

    def _post(self, body, headers):
        data = json.dumps(body).encode()
        h = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers)
        req = urllib.request.Request(self.url, data=data, headers=h, method="POST")
        self._pace()
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    @staticmethod
    def _message(raw):
        """The JSON-RPC response in a JSON or SSE body (the last `data:` line of a stream)."""
        text = raw.decode("utf-8", "replace")
        data = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        return json.loads(data[-1] if data else text)

    def modern(self, method, params=None):
        self.next_id += 1
        body, headers = modern_request(method, params, self.next_id)
        status, _, raw = self._post(body, headers)
        msg = self._message(raw)
        if status != 200 or "error" in msg:
            raise Failure(f"{method}: HTTP {status} {msg.get('error')}")
        return msg["result"]

    def tool(self, name, args):
        """Calls a tool; returns (structured or None, text, is_error)."""
        r = self.modern("tools/call", {"name": name, "arguments": args})
        texts = [c.get("text", "") for c in r.get("content", []) if c.get("type") == "text"]
        return r.get("structuredContent"), "".join(texts[:1]), bool(r.get("isError"))

    def ok(self, name, args):
        structured, text, is_error = self.tool(name, args)
        if is_error:
            raise Failure(f"{name}: {text}")
        return structured, text

    def legacy_session(self):
        """initialize → notifications/initialized → tools/list → ping → DELETE."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "mcp-smoke", "version": "1"},
            },
        }
        status, headers, raw = self._post(body, {})
        result = self._message(raw).get("result", {})
        sid = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
        if status != 200 or not sid:
            raise Failure(f"initialize: HTTP {status}, session id {sid!r}")
        if result.get("protocolVersion") != LEGACY:
            raise Failure(f"initialize negotiated {result.get('protocolVersion')!r}")
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
        status, _, _ = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}, h)
        if status != 202:
            raise Failure(f"notifications/initialized: HTTP {status}")
        status, _, raw = self._post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, h)
        tools = self._message(raw).get("result", {}).get("tools", [])
        status, _, raw = self._post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, h)
        if self._message(raw).get("result") != {}:
            raise Failure("ping did not answer {}")
        req = urllib.request.Request(self.url, headers=dict(h, **self._auth()), method="DELETE")
        self._pace()
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                deleted = resp.status
        except urllib.error.HTTPError as e:
            deleted = e.code
        if deleted not in (200, 204):
            raise Failure(f"DELETE /mcp: HTTP {deleted}")
        return result, len(tools)

    def _auth(self):
        return {"Authorization": "Bearer " + self.token} if self.token else {}

    def get(self, url, timeout=120):
        """GET `url` (absolute, or a path on the MCP URL's server) with the bearer token:
        (status, body)."""
        if url.startswith("/"):
            url = "/".join(self.url.split("/", 3)[:3]) + url
        req = urllib.request.Request(url, headers=self._auth())
        self._pace()
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:7801/mcp")
    ap.add_argument("--token", default=None)
    ap.add_argument("--sha256", default=None,
                    help="the image digest the machine must say it runs (boot/config.conf's)")
    ap.add_argument("--skip-block", action="store_true", help="no block.read checks")
    ap.add_argument("--skip-fs", action="store_true", help="no fs.* checks")
    ap.add_argument("--skip-screen", action="store_true", help="no screen.capture check")
    ap.add_argument("--save-screen", metavar="DIR", default=None,
                    help="also write the full-size screen.capture PNG (DIR/capture.png) and "
                         "GET /screen.bmp (DIR/screen.bmp), for comparing with another view")
    ap.add_argument("--clock-within", type=int, metavar="SECONDS", default=None,
                    help="the machine's date (status.unix_time, from its RTC) must be within "
                         "SECONDS of this host's clock, in UTC or in the host's local time "
                         "(an emulator may set the RTC to either)")
    ap.add_argument("--reset", action="store_true",
                    help="last, system.reset and wait until the same build answers again")
    opts = ap.parse_args()
    c = Client(opts.url, opts.token)
    results = []

    def check(name, fn):
        try:
            detail = fn()
            results.append(True)
            print(f"ok    {name}" + (f"  ({detail})" if detail else ""))
        except Exception as e:  # every failure is reported, then the next check runs
            results.append(False)
            print(f"FAIL  {name}: {e}")

    server_version = []

    def discover():
        r = c.modern("server/discover")
        if MODERN not in r.get("supportedVersions", []):
            raise Failure(f"supportedVersions {r.get('supportedVersions')}")
        info = r["_meta"]["io.modelcontextprotocol/serverInfo"]
        server_version.append(info["version"])
        return f"{info['name']} {info['version']}"

    def legacy():
        result, n = c.legacy_session()
        return f"{result['serverInfo']['name']} {result['serverInfo']['version']}, {n} tools"

    names = []

    def tools_list():
        r = c.modern("tools/list")
        names.extend(t["name"] for t in r["tools"])
        required = ["status", "echo", "serial.read", "serial.write", "console.write",
                    "input.keys", "shell.exec", "proc.list", "system.reset", "system.poweroff",
                    "screen.capture", "mem.read", "mem.write", "mmio.read", "mmio.write",
                    "dev.list", "irq.list", "dma.list"]
        if not opts.skip_block:
            required.append("block.read")
        if not opts.skip_fs:
            required += ["fs.read", "fs.write", "fs.list", "fs.stat", "fs.readlink", "fs.remove"]
        for required in required:
            if required not in names:
                raise Failure(f"{required} missing")
        return f"{len(names)} tools"

    def status():
        s, _ = c.ok("status", {})
        detail = f"uptime {s['uptime_ms']} ms, ip {s['ip']}"
        if opts.clock_within is not None:
            now = time.time()
            off = min(abs(s["unix_time"] - now),
                      abs(s["unix_time"] - (now + time.localtime().tm_gmtoff)))
            if off > opts.clock_within:
                raise Failure(f"the machine's date {s['date']} is {off:.0f} s from this host's "
                              f"clock (at most {opts.clock_within})")
            detail += f", date {s['date']} ({off:.0f} s from the host's)"
        return detail

    def build_identity():
        # Which build answers: the id in status and serverInfo, the digest the kernel verified.
        s, _ = c.ok("status", {})
        build, sha = s.get("build_id"), s.get("image", {}).get("sha256")
        if not build:
            raise Failure("status has no build_id")
        if server_version and f"+{build}" not in server_version[0]:
            raise Failure(f"serverInfo.version {server_version[0]} does not name build {build}")
        if opts.sha256 and sha != opts.sha256.lower():
            raise Failure(f"the machine runs image {sha}, not {opts.sha256}")
        if s.get("image", {}).get("deploy", "ok") != "ok":
            raise Failure(f"the last deploy was refused: {s['image']}")
        return f"build {build}, image sha256 {sha}"

    marker = f"mcp-smoke {int(time.time() * 1000) % 1000000}"

    def console_write_then_serial_read():
        c.ok("console.write", {"text": marker})
        for _ in range(20):
            s, _ = c.ok("serial.read", {})
            if marker in s["data"]:
                return f"found at or before offset {s['next_offset']}"
            time.sleep(0.1)
        raise Failure("the written line never reached the serial ring")

    def serial_write():
        s, _ = c.ok("serial.write", {"text": marker + " (serial)"})
        return f"{s['bytes']} bytes"

    def input_keys():
        s, _ = c.ok("input.keys", {"keys": "ls\n"})
        return f"{s['taken']} of {s['requested']} taken"

    def block_read():
        # The blocks are the first content block (base64); structuredContent is the metadata.
        s, text = c.ok("block.read", {"target": 2, "lba": 2, "count": 1})
        if s.get("bytes") != 512 or s.get("encoding") != "base64":
            raise Failure(f"metadata {s}")
        data = base64.b64decode(text)
        if len(data) != 512:
            raise Failure(f"{len(data)} bytes decoded, expected 512")
        # The EROFS superblock sits at byte 1024 = block 2; its magic is 0xE0F5E1E2 (LE).
        if data[:4] != bytes.fromhex("e2e1f5e0"):
            raise Failure(f"no EROFS magic at LBA 2: {data[:4].hex()}")
        return f"EROFS superblock, {s['device_blocks']} blocks on the target"

    def fs_stat(path, want):
        def run():
            s, _ = c.ok("fs.stat", {"path": path})
            for k, v in want.items():
                if s.get(k) != v:
                    raise Failure(f"{k} = {s.get(k)!r}, expected {v!r}")
            return f"{s['type']} {s['mode']} {s['size']} bytes {s['origin']}"

        return run

    def fs_read_motd():
        s, text = c.ok("fs.read", {"path": "/etc/motd"})
        body = s.get("content", text) if s else text
        if "IRIX" not in body:
            raise Failure(f"unexpected /etc/motd: {body[:60]!r}")
        return f"{s['size'] if s else len(body)} bytes"

    def fs_list_root():
        s, _ = c.ok("fs.list", {"path": "/"})
        entries = [e["name"] for e in s["entries"]]
        for n in ["etc", "link"]:
            if n not in entries:
                raise Failure(f"/ lacks {n}: {entries}")
        return f"{s['total']} entries"

    def fs_readlink_link():
        s, _ = c.ok("fs.readlink", {"path": "/link"})
        return f"/link -> {s['target']}"

    def fs_readlink_not_symlink():
        _, text, is_error = c.tool("fs.readlink", {"path": "/etc/motd"})
        if not is_error or not text.startswith("E_INVAL: not a symlink"):
            raise Failure(f"expected E_INVAL: not a symlink, got {text!r}")
        return text

    def fs_write_read_remove():
        path = "/tmp/mcp-smoke.txt"
        c.ok("fs.write", {"path": path, "content": marker})
        s, text = c.ok("fs.read", {"path": path})
        got = s.get("content", text) if s else text
        if got != marker:
            raise Failure(f"read back {got!r}")
        c.ok("fs.remove", {"path": path})
        _, text, is_error = c.tool("fs.stat", {"path": path})
        if not is_error:
            raise Failure("still there after fs.remove")
        return "write, read back, remove"

    def screen_capture():
        r = c.modern("tools/call", {"name": "screen.capture", "arguments": {"scale": 4}})
        if r.get("isError"):
            raise Failure(str(r.get("content")))
        s = r["structuredContent"]
        images = [b for b in r["content"] if b.get("type") == "image"]
        links = [b for b in r["content"] if b.get("type") == "resource_link"]
        if not images or images[0].get("mimeType") != "image/png" or not links:
            raise Failure(f"content blocks {[b.get('type') for b in r['content']]}")
        png = base64.b64decode(images[0]["data"])
        # The signature, then IHDR: length, type, width, height (big-endian).
        if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
            raise Failure(f"not a PNG: {png[:16].hex()}")
        w, h = struct.unpack(">II", png[16:24])
        if (w, h) != (s["width"], s["height"]):
            raise Failure(f"PNG {w}x{h}, result says {s['width']}x{s['height']}")
        m = s["mode"]
        return f"{m['width']}x{m['height']} {m['pixels']} -> {w}x{h} PNG, {len(png)} bytes"

    def save_screen():
        t0 = time.monotonic()
        r = c.modern("tools/call", {"name": "screen.capture", "arguments": {"scale": 1}})
        if r.get("isError"):
            raise Failure(str(r.get("content")))
        images = [b for b in r["content"] if b.get("type") == "image"]
        if not images:
            raise Failure("no image block")
        png = base64.b64decode(images[0]["data"])
        with open(f"{opts.save_screen}/capture.png", "wb") as f:
            f.write(png)
        t1 = time.monotonic()
        status, bmp = c.get(r["structuredContent"]["bmp"])
        if status != 200 or bmp[:2] != b"BM":
            raise Failure(f"GET /screen.bmp: HTTP {status}, {bmp[:2]!r}")
        with open(f"{opts.save_screen}/screen.bmp", "wb") as f:
            f.write(bmp)
        return (f"capture.png {len(png)} bytes in {t1 - t0:.1f} s, "
                f"screen.bmp {len(bmp)} bytes in {time.monotonic() - t1:.1f} s")

    def dev_list():
        s, _ = c.ok("dev.list", {})
        seeq = [d for d in s["devices"] if d["name"] == "seeq"]
        if not seeq or seeq[0]["state"] != "present":
            raise Failure(f"seeq {seeq}")
        return f"{len(s['devices'])} devices"

    def proc_list():
        s, _ = c.ok("proc.list", {})
        if s["count"] < 1:
            raise Failure("no processes")
        return f"{s['count']} processes"

    def debug_attach():
        # A kernel without contexts (before ABI 15: the MAME stand-in) answers E_NOSYS, one
        # that runs no cell E_INVAL; with a cell the debugger attaches, and detaches again.
        _, text, is_error = c.tool("debug.attach", {})
        if not is_error:
            c.ok("debug.detach", {})
            return "attached and detached"
        if not (text.startswith("E_NOSYS") or text.startswith("E_INVAL")):
            raise Failure(f"expected E_NOSYS or E_INVAL, got {text!r}")
        return text[:40]

    check("server/discover (2026-07-28)", discover)
    check("initialize session (2025-11-25)", legacy)
    check("tools/list", tools_list)
    check("status", status)
    check("build identity", build_identity)
    check("console.write + serial.read", console_write_then_serial_read)
    check("serial.write", serial_write)
    check("input.keys", input_keys)
    if not opts.skip_block:
        check("block.read target 2 LBA 2", block_read)
    if not opts.skip_fs:
        # `mode` is the full st_mode in octal: file type bits and permissions.
        check("fs.stat /", fs_stat("/", {"type": "dir", "mode": "040755", "origin": "erofs"}))
        check("fs.stat /link", fs_stat("/link", {"type": "symlink", "target": "etc/motd"}))
        check("fs.stat /etc/motd", fs_stat("/etc/motd", {"type": "file", "mode": "100644"}))
        check("fs.read /etc/motd", fs_read_motd)
        check("fs.list /", fs_list_root)
        check("fs.readlink /link", fs_readlink_link)
        check("fs.readlink /etc/motd fails (not a symlink)", fs_readlink_not_symlink)
        check("fs.write + fs.read + fs.remove", fs_write_read_remove)
    check("dev.list", dev_list)
    check("proc.list", proc_list)
    check("debug.attach (E_NOSYS without contexts, E_INVAL without cells)", debug_attach)
    if not opts.skip_screen:
        check("screen.capture scale 4", screen_capture)
        if opts.save_screen:
            check("screen.capture scale 1 and /screen.bmp saved", save_screen)
    def reset_comes_back():
        before, _ = c.ok("status", {})
        r = c.modern("tools/call", {"name": "system.reset", "arguments": {}})
        if r.get("isError"):
            raise Failure(str(r.get("content")))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                after, _ = c.ok("status", {})
            except (Failure, OSError, ValueError):
                continue  # the machine is still on its way back
            if after["uptime_ms"] >= before["uptime_ms"]:
                continue  # answered before the reset took effect
            if after.get("build_id") != before.get("build_id"):
                raise Failure(f"came back as build {after.get('build_id')}, "
                              f"not {before.get('build_id')}")
            # The reset cause (ABI 13): the kernel keeps the previous boot across the reset it
            # was asked for and says so, with who asked and the previous console and record.
            boot = after.get("boot")
            cause = boot["cause"] if boot else "not reported (kernel ABI < 13)"
            if boot:
                if cause != "requested":
                    raise Failure(f"reset cause {cause!r}, not 'requested'")
                if boot.get("requested_by") != "system.reset":
                    raise Failure(f"requested by {boot.get('requested_by')!r}")
                if boot.get("console") != "ok" or boot["flight"]["state"] != "ok":
                    raise Failure(f"previous boot not kept: {boot}")
            return (f"back after reset, uptime {after['uptime_ms']} ms, "
                    f"build {after['build_id']}, cause {cause}")
        raise Failure("no answer within 120 s of system.reset")

    if opts.reset:
        check("system.reset comes back", reset_comes_back)
    passed = sum(results)
    print(f"mcp-smoke: {passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
