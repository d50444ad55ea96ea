"""The lab: three rigs behind irix7-gateway, driven by the Python MCP SDK through the
gateway's one URL and token (`cargo xtask lab 3 --test` boots them and sets the variables
below; docs/gateway.md).

IRIX7_LAB_URL          the gateway's MCP endpoint
IRIX7_LAB_TOKEN        the gateway's token (the only one the agent holds)
IRIX7_LAB_MACHINES     the machines' names, comma-separated (rig1,rig2,rig3)
IRIX7_LAB_TOKEN_FILES  the files where the rigs write their machines' tokens, same order
IRIX7_LAB_PIDS         name=pid of each rig process
IRIX7_LAB_AUDIT        the gateway's audit log
IRIX7_LAB_FILE         the gateway's lab file
IRIX7_LAB_GATEWAY      the irix7-gateway binary (a test starts a second one, of another role)

The tests run in file order and share the lab: the reset and the kill come last.
"""

import asyncio
import base64
import json
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
import tomllib
import zlib

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MARK = "[machine token redacted]"
# A killed rig must show as unreachable within this many seconds (the gateway's probe
# timeout is 3 s; a dead rig's port refuses at once).
UNREACHABLE_WITHIN_S = 5.0


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: run these tests through `cargo xtask lab 3 --test`")
    return value


class Lab:
    def __init__(self):
        self.url = _env("IRIX7_LAB_URL")
        self.token = _env("IRIX7_LAB_TOKEN")
        self.names = _env("IRIX7_LAB_MACHINES").split(",")
        self.token_files = _env("IRIX7_LAB_TOKEN_FILES").split(",")
        self.pids = dict(kv.split("=") for kv in _env("IRIX7_LAB_PIDS").split(","))
        self.audit = _env("IRIX7_LAB_AUDIT")
        # Every token any machine has had; a reset machine generates a new one.
        self.machine_tokens = set()
        # Everything the agent received, as text, checked for tokens at the end.
        self.received = []
        self.note_tokens()

    def note_tokens(self):
        for path in self.token_files:
            try:
                with open(path) as f:
                    t = f.read().strip()
            except OSError:
                continue
            if t:
                self.machine_tokens.add(t)

    def keep(self, obj):
        """Records what the agent received (a result, a listing, a progress message)."""
        if hasattr(obj, "model_dump"):
            text = json.dumps(obj.model_dump(mode="json", by_alias=True))
        else:
            text = obj if isinstance(obj, str) else json.dumps(obj)
        self.received.append(text)
        return obj

    def client(self, mode="auto", **kw):
        hc = create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"})
        return Client(streamable_http_client(self.url, http_client=hc), mode=mode, **kw)

    def assert_no_token(self):
        self.note_tokens()
        assert self.machine_tokens, "no machine token was read"
        assert self.token not in self.machine_tokens
        for text in self.received:
            for t in self.machine_tokens:
                assert t not in text, f"a machine token reached the agent: {text[:200]}"


@pytest.fixture(scope="module")
def lab():
    lab = Lab()
    yield lab
    lab.assert_no_token()


def run(coro):
    return asyncio.run(coro)


async def _lab_list(c, lab):
    r = await c.call_tool("lab.list", {})
    lab.keep(r)
    assert not r.is_error, r
    return {m["name"]: m for m in r.structured_content["machines"]}


async def _call(c, lab, tool, machine, args=None, **kw):
    a = dict(args or {})
    a["machine"] = machine
    r = await c.call_tool(tool, a, **kw)
    lab.keep(r)
    return r


def _text(r):
    return "".join(getattr(b, "text", "") for b in r.content)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_lists_machines_with_build_ids_and_their_tools(lab, mode):
    async def go():
        async with lab.client(mode) as c:
            rows = await _lab_list(c, lab)
            tools = lab.keep(await c.list_tools()).model_dump(mode="json", by_alias=True)
            return c.protocol_version, rows, tools

    version, rows, tools = run(go())
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert sorted(rows) == sorted(lab.names)
    builds = {m["build_id"] for m in rows.values()}
    for m in rows.values():
        assert m["reachable"] is True, m
        assert m["build_id"], m
        assert len(m["sha256"]) == 64, m
        assert m["uptime_ms"] > 0, m
        assert m["last_error"] is None, m
    assert len(builds) == 1, builds
    by_name = {t["name"]: t for t in tools["tools"]}
    assert "lab.list" in by_name
    for name in ["status", "echo", "serial.read", "shell.exec", "system.reset"]:
        schema = by_name[name]["inputSchema"]
        assert "machine" in schema["required"], name
        assert sorted(schema["properties"]["machine"]["enum"]) == sorted(lab.names), name
    # The lab's policy denies system.poweroff on every rig: it is not offered at all.
    assert "system.poweroff" not in by_name
    assert len(tools["tools"]) == len(set(by_name)), "a tool is listed twice"


def test_status_on_each_machine(lab):
    async def go():
        async with lab.client() as c:
            rows = await _lab_list(c, lab)
            out = {}
            for n in lab.names:
                out[n] = await _call(c, lab, "status", n)
            return rows, out

    rows, out = run(go())
    ports = set()
    for n, r in out.items():
        assert not r.is_error, r
        s = r.structured_content
        assert s["module"] == "irix7-mcp"
        assert s["build_id"] == rows[n]["build_id"]
        ports.add(rows[n]["url"])
    assert len(ports) == 3, "three distinct machines answered"


def test_reads_one_machines_serial_without_its_token(lab):
    async def go():
        async with lab.client() as c:
            return await _call(c, lab, "serial.read", lab.names[0], {"offset": 0})

    r = run(go())
    assert not r.is_error, r
    text = _text(r)
    assert "irix7-mcp" in text, text[:500]
    # The module printed its generated token on the console. The gateway narrows every
    # request (Irix7-Policy), so the machine itself masks it: only the unnarrowed
    # administrator sees it. The gateway's redaction stays behind that, for a machine that
    # does not mask.
    assert ("token generated: " + "*" * 32) in text or ("token generated: " + MARK) in text, \
        text[:2000]
    lab.assert_no_token()


def test_policy_denies_and_unknown_machines_are_errors(lab):
    async def go():
        async with lab.client() as c:
            denied = await _call(c, lab, "system.poweroff", lab.names[0])
            unknown = await _call(c, lab, "status", "no-such-machine")
            missing = lab.keep(await c.call_tool("status", {}))
            return denied, unknown, missing

    denied, unknown, missing = run(go())
    assert denied.is_error and _text(denied).startswith("E_DENIED:"), denied
    assert unknown.is_error and _text(unknown).startswith("E_NOT_FOUND:"), unknown
    assert missing.is_error and _text(missing).startswith("E_INVAL:"), missing


def test_a_denied_capability_is_refused_through_the_shell_too(lab):
    """The lab denies `system.poweroff` on every rig. The gateway sends that deny (with the
    agent's role) to the machine on every request, in the `Irix7-Policy` header, so the
    machine refuses the capability through every door: `shell.exec poweroff` is refused and
    the rig stays up (a powered-off rig ends its process).

    The machines publish each tool's privilege in `tools/list` (`_meta` `irix7/privilege`):
    without it the call would power the rig off and take the rest of the lab down, so the
    test stops before calling when it is missing."""
    machine = lab.names[0]

    async def go():
        async with lab.client() as c:
            tools = lab.keep(await c.list_tools()).model_dump(mode="json", by_alias=True)
            if not any((t.get("_meta") or {}).get("irix7/privilege") for t in tools["tools"]):
                return None
            before = await _call(c, lab, "status", machine)
            off = await _call(c, lab, "shell.exec", machine, {"command": "poweroff"})
            await asyncio.sleep(1.0)
            after = await _call(c, lab, "status", machine)
            echo = await _call(c, lab, "shell.exec", machine, {"command": "echo still here"})
            return before, off, after, echo

    got = run(go())
    assert got is not None, "the machines publish no tool privileges (_meta irix7/privilege)"
    before, off, after, echo = got
    assert not before.is_error, before
    refused = off.is_error or (off.structured_content or {}).get("exit_status") not in (0, None)
    assert refused, off
    assert "poweroff" in _text(off) or "poweroff" in json.dumps(off.structured_content), off
    assert not after.is_error, after
    assert after.structured_content["uptime_ms"] > before.structured_content["uptime_ms"], \
        "the rig did not reboot or power off"
    assert not echo.is_error and "still here" in _text(echo), echo


def test_every_tool_through_the_gateway_follows_the_capability_table(lab):
    """The privilege matrix through the gateway: every tool it lists carries the machine's
    capability and privilege, none of them the lab's denied one; a call with arguments no
    schema takes reaches the machine's schema check for every listed tool (nothing runs), and
    the denied one is refused by the gateway (`E_DENIED`). The next test shows the machine
    refusing the same capability through the shell, from the narrowing the gateway sent."""
    machine = lab.names[0]
    denied = {"system.poweroff"}

    async def go():
        async with lab.client() as c:
            listed = lab.keep(await c.list_tools()).model_dump(mode="json", by_alias=True)
            seen = []
            for t in listed["tools"]:
                meta = t.get("_meta") or {}
                # A tool's capability is its own name unless the listing says another.
                cap = meta.get("irix7/capability", t["name"])
                if t["name"].startswith("lab."):
                    continue
                assert meta.get("irix7/privilege") in ("observe", "operate", "administer"), t
                try:
                    r = await _call(c, lab, t["name"], machine, {"matrix-probe": 1})
                    seen.append((t["name"], cap, _text(r)))
                except Exception as e:  # a JSON-RPC error: the schema refused the arguments
                    seen.append((t["name"], cap, f"rpc error: {e}"))
            off = await _call(c, lab, "system.poweroff", machine, {"matrix-probe": 1})
            return seen, _text(off)

    seen, refused = run(go())
    assert len(seen) >= 20, seen
    for name, cap, text in seen:
        assert cap not in denied, f"{name} ({cap}) is listed though the lab denies it"
        assert not text.startswith("E_DENIED") and not text.startswith("E_PERM"), (name, text)
    assert refused.startswith("E_DENIED"), refused


def test_gateway_refuses_without_its_token_a_machine_token_or_an_origin(lab):
    import urllib.error
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()

    def post(headers):
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"}
        h.update(headers)
        req = urllib.request.Request(lab.url, data=body, headers=h, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    lab.note_tokens()
    machine_token = sorted(lab.machine_tokens)[0]
    assert post({}) == 401
    assert post({"Authorization": f"Bearer {machine_token}"}) == 401
    assert post({"Authorization": f"Bearer {lab.token}x"}) == 401
    assert post({"Authorization": f"Bearer {lab.token}", "Origin": "http://evil.example"}) == 403
    assert post({"Authorization": f"Bearer {lab.token}"}) == 200


def test_readme_lab_commands(lab):
    """The README's lab block as written, after its first line (`cargo xtask lab 3`, which this
    run stands in for): only the gateway's port and token file differ."""
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    start = readme.index("## A lab of machines: three commands")
    block = re.search(r"```sh\n(.*?)```", readme[start:], re.S).group(1)
    first, script = block.split("\n", 1)
    assert first.startswith("cargo xtask lab 3")
    port = lab.url.split(":")[2].split("/")[0]
    script = script.replace("127.0.0.1:7800", f"127.0.0.1:{port}")
    script = script.replace("target/gateway/token",
                            os.path.join(os.path.dirname(lab.audit), "token"))
    time.sleep(1.2)  # a fresh rate window on the machines for this client address
    p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (p.stdout, p.stderr)
    lab.keep(p.stdout)
    data = [line[len("data: "):] for line in p.stdout.splitlines() if line.startswith("data: ")]
    body = json.loads(data[-1] if data else p.stdout)
    rows = body["result"]["structuredContent"]["machines"]
    assert sorted(m["name"] for m in rows) == sorted(lab.names)
    assert all(m["reachable"] for m in rows), rows


def test_cancellation_reaches_the_machine(lab):
    """The module runs at most 4 tool calls at once (docs/bounds.md). Four long calls that the
    client cancels through the gateway must stop on the machine: a fifth call then runs. The
    control: four that are not cancelled make the fifth E_BUSY."""
    machine = lab.names[2]
    sleep = {"command": "sleep 30"}

    async def go(mode):
        async with lab.client(mode) as c:
            for _ in range(4):
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(_call(c, lab, "shell.exec", machine, sleep), 0.5)
            await asyncio.sleep(0.5)
            after_cancel = await _call(c, lab, "shell.exec", machine, {"command": "echo free"})
            live = [asyncio.create_task(
                _call(c, lab, "shell.exec", machine, {"command": "sleep 1.5"})) for _ in range(4)]
            await asyncio.sleep(0.5)
            busy = await _call(c, lab, "shell.exec", machine, {"command": "echo busy"})
            for t in live:
                await t
            return after_cancel, busy

    for mode in ("auto", "legacy"):
        after_cancel, busy = run(go(mode))
        assert not after_cancel.is_error, (mode, after_cancel)
        assert busy.is_error and _text(busy).startswith("E_BUSY"), (mode, busy)


def test_lab_list_says_when_and_why_each_machine_last_booted(lab):
    async def go():
        async with lab.client() as c:
            r = await c.call_tool("lab.list", {})
            lab.keep(r)
            return r

    r = run(go())
    text = _text(r)
    for m in r.structured_content["machines"]:
        boot = m["last_boot"]
        assert boot["age_ms"] > 0, m
        # The module's `status` says the cause from kernel ABI 13; before, "unknown".
        cause = boot["cause"] or "unknown"
        assert f"{m['name']}: up " in text, text
        line = next(x for x in text.splitlines() if x.startswith(m["name"] + ":"))
        assert f", last boot: {cause}, " in line and line.endswith(" ago"), line


EVENTS = "lab://events"


async def _events(c):
    r = await c.read_resource(EVENTS)
    return json.loads(r.contents[0].text)


def _find(v, machine, kind, after_seq=0):
    return next((e for e in v["events"]
                 if e["machine"] == machine and e["kind"] == kind and e["seq"] > after_seq), None)


async def _until(c, wake, found):
    """Reads lab://events at each `wake()` until `found(events)` holds; that event."""
    while True:
        await wake()
        hit = found(await _events(c))
        if hit:
            return hit


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_machine_events_reach_subscribers_of_both_eras_through_the_gateway(lab):
    """The gateway relays each machine's irix7://events into lab://events: a legacy session
    subscribed to it and a 2026-07-28 listener both hear rig2's requested reset while rig2 is
    still up, then rig2's next boot (its events start again after the reset)."""
    rig1, rig2, rig3 = lab.names

    async def legacy(ready, base, out):
        woke = asyncio.Event()

        async def handler(message):
            if isinstance(message, types.ResourceUpdatedNotification) and message.params.uri == EVENTS:
                woke.set()

        async def wake():
            await woke.wait()
            woke.clear()

        async with lab.client("legacy", message_handler=handler) as c:
            await c.subscribe_resource(EVENTS)
            ready.set()
            asked = await _until(c, wake, lambda v: _find(v, rig2, "reset-requested", base))
            booted = await _until(c, wake, lambda v: _find(v, rig2, "boot", asked["seq"]))
            out["legacy"] = (asked, booted)

    async def modern(ready, base, out):
        async with lab.client("2026-07-28") as c:
            async with c.listen(resource_subscriptions=[EVENTS]) as sub:
                ready.set()
                updates = sub.__aiter__()

                async def wake():
                    while True:
                        e = await updates.__anext__()
                        if isinstance(e, ResourceUpdated) and e.uri == EVENTS:
                            return

                asked = await _until(c, wake, lambda v: _find(v, rig2, "reset-requested", base))
                booted = await _until(c, wake, lambda v: _find(v, rig2, "boot", asked["seq"]))
                out["modern"] = (asked, booted)

    async def go():
        async with lab.client() as c:
            before = await _events(c)
            base = before["total"]
            ready = [asyncio.Event(), asyncio.Event()]
            out = {}
            listeners = asyncio.ensure_future(asyncio.gather(
                legacy(ready[0], base, out), modern(ready[1], base, out)))
            await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 20)
            reset = await _call(c, lab, "system.reset", rig2, {"delay_ms": 6000})
            await asyncio.wait_for(listeners, 90)
            # rig2 serves again before the next test needs it.
            deadline = time.monotonic() + 60
            while (await _call(c, lab, "status", rig2)).is_error:
                assert time.monotonic() < deadline, "rig2 did not serve again"
                await asyncio.sleep(0.5)
            return before, reset, out, lab.keep(await _events(c))

    before, reset, out, after = run(go())
    assert not reset.is_error, reset
    # Every machine's boot was relayed.
    for m in lab.names:
        assert _find(before, m, "boot"), before
    for era, (asked, booted) in out.items():
        assert asked["detail"] == "system.reset, in 6000 ms", (era, asked)
        assert booted["machine_seq"] == 1, (era, booted)
        assert booted["detail"].startswith("cause "), (era, booted)
    assert [e["seq"] for e in after["events"]] == sorted(e["seq"] for e in after["events"])


def _png_rgb(data):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    at, idat, head = 8, b"", None
    while at < len(data):
        n = int.from_bytes(data[at:at + 4], "big")
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            head = body
        elif kind == b"IDAT":
            idat += body
        at += 12 + n
    w, h = int.from_bytes(head[:4], "big"), int.from_bytes(head[4:8], "big")
    assert head[8:13] == bytes([8, 2, 0, 0, 0]), head
    raw, stride, rows, prev = zlib.decompress(idat), w * 3, [], bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * 3:x * 3 + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def _screen_lines(w, h, rows, sample):
    """The screen's text: 8x16 cells, glyphs learned from the row that shows `sample` from its
    first column (the row whose cells repeat exactly where the sample's characters do)."""
    bg = max(set(rows[0]), key=rows[0].count)
    cells = [[tuple(tuple(rows[r * 16 + y][c * 8 + x] != bg for x in range(8)) for y in range(16))
              for c in range(w // 8)] for r in range(h // 16)]
    glyphs = None
    for row in cells:
        known, seen = {}, {}
        if all(known.setdefault(ink, ch) == ch and seen.setdefault(ch, ink) == ink
               for ch, ink in zip(sample, row)):
            glyphs = known
            break
    assert glyphs, "the sample line is not on the screen"
    blank = tuple(tuple(False for _ in range(8)) for _ in range(16))
    return ["".join(glyphs.get(ink, " " if ink == blank else "?") for ink in row).rstrip()
            for row in cells]


def test_reset_affects_only_the_reset_machine(lab):
    """A long call runs on rig3 and another on rig2; rig2 is reset mid-call. rig2's call
    fails with a clear error, rig3's finishes with its progress, rig1 answers throughout, and
    rig2 answers again (with the new token it generated) once it has rebooted."""
    rig1, rig2, rig3 = lab.names
    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total))
        lab.keep(message or "")

    async def go():
        async with lab.client() as c:
            long3 = asyncio.create_task(
                _call(c, lab, "shell.exec", rig3, {"command": "sleep 4"},
                      progress_callback=on_progress))
            long2 = asyncio.create_task(
                _call(c, lab, "shell.exec", rig2, {"command": "sleep 30"}))
            await asyncio.sleep(0.5)
            reset = await _call(c, lab, "system.reset", rig2, {"delay_ms": 100})
            t = time.monotonic()
            lost = await asyncio.wait_for(long2, 25)
            lost_after = time.monotonic() - t
            during = await _call(c, lab, "status", rig1)
            done3 = await long3
            # rig2 comes back: the gateway reconnects with the token rig2 generated anew.
            back = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                back = await _call(c, lab, "status", rig2)
                if not back.is_error:
                    break
                await asyncio.sleep(0.5)
            return reset, lost, lost_after, during, done3, back

    reset, lost, lost_after, during, done3, back = run(go())
    assert not reset.is_error, reset
    assert lost.is_error, lost
    assert _text(lost).startswith("E_MACHINE_LOST:"), _text(lost)
    assert rig2 in _text(lost)
    assert lost_after < 20, lost_after
    assert not during.is_error, during
    assert not done3.is_error, done3
    assert done3.structured_content["exit_status"] == 0, done3
    assert len(progress) >= 2, progress
    assert back is not None and not back.is_error, back
    assert back.structured_content["uptime_ms"] < 60_000, back.structured_content
    lab.assert_no_token()


def test_an_observe_agent_reads_no_machine_token_off_the_screen(lab, tmp_path):
    """A second gateway over the same machines gives its agent the observe role: a full-size
    screen.capture of the machine just reset (whose screen holds its whole boot, the line about
    its new token included), read as text with glyphs learned from the screen itself, shows a
    token-shaped line a client wrote, and nothing of the machine's own token."""
    with open(_env("IRIX7_LAB_FILE"), "rb") as f:
        machines = tomllib.load(f)["machines"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token_file = tmp_path / "token"
    text = (f'listen = "127.0.0.1:{port}"\ntoken_file = "{token_file}"\n'
            f'audit_log = "{tmp_path / "audit.log"}"\nagent_role = "observe"\n')
    for name, m in machines.items():
        text += f'\n[machines.{name}]\nurl = "{m["url"]}"\ntoken_file = "{m["token_file"]}"\n'
    (tmp_path / "lab.toml").write_text(text)
    gateway = subprocess.Popen([_env("IRIX7_LAB_GATEWAY"), "serve", str(tmp_path / "lab.toml")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (token_file.exists() and token_file.read_text().strip()):
            assert gateway.poll() is None and time.monotonic() < deadline, "no observe gateway"
            time.sleep(0.1)
        observe_token = token_file.read_text().strip()
        sample = "[mcp] glyphs 0123456789 abcdefghijklmnopqrstuvwxyz ,;:()=<>-./_"
        decoy = "5ee0dec0a11ce0b0d1ce0fa11e0ba5e7"
        machine = lab.names[1]

        async def go():
            async with lab.client() as c:
                for line in (sample[len("[mcp] "):], decoy):
                    r = await _call(c, lab, "console.write", machine, {"text": line})
                    assert not r.is_error, r
            hc = create_mcp_http_client(headers={"Authorization": f"Bearer {observe_token}"})
            url = f"http://127.0.0.1:{port}/mcp"
            async with Client(streamable_http_client(url, http_client=hc)) as c:
                deadline = time.monotonic() + 30
                while True:
                    r = await c.call_tool("screen.capture", {"machine": machine, "scale": 1})
                    if not r.is_error or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)  # the machine not probed yet
                assert not r.is_error, r
                return r

        r = run(go())
        png = base64.b64decode(r.content[0].data)
        screen = "\n".join(_screen_lines(*_png_rgb(png), sample))
        assert "[mcp] " + decoy in screen, screen
        assert "token generated, on the serial line only" in screen, screen
        lab.note_tokens()
        with open(lab.token_files[1]) as f:
            token = f.read().strip()
        assert len(token) == 32, token
        for i in range(len(token) - 7):
            assert token[i:i + 8] not in screen, f"{token[i:i + 8]} of the token on the screen"
    finally:
        gateway.terminate()
        gateway.wait(timeout=10)


def test_hung_machine_blocks_nobody_and_a_killed_one_is_unreachable(lab):
    """rig1 is stopped (SIGSTOP: its port still accepts, nothing answers) while a call runs on
    it: rig2 and rig3 answer at once and lab.list is back within the probe timeout with rig1
    down. Then rig1 is killed: it stays unreachable, its hung call ends with an error, and the
    others keep answering."""
    rig1, rig2, rig3 = lab.names
    pid = int(lab.pids[rig1])

    async def go():
        async with lab.client() as c:
            hung = asyncio.create_task(_call(c, lab, "shell.exec", rig1, {"command": "sleep 20"}))
            await asyncio.sleep(0.3)
            os.kill(pid, signal.SIGSTOP)
            t = time.monotonic()
            quick = [await _call(c, lab, "status", n) for n in (rig2, rig3)]
            quick_s = time.monotonic() - t
            t = time.monotonic()
            stopped_rows = await _lab_list(c, lab)
            stopped_list_s = time.monotonic() - t
            os.kill(pid, signal.SIGKILL)
            t0 = time.monotonic()
            rows = await _lab_list(c, lab)
            seen_down = time.monotonic() - t0
            t = time.monotonic()
            dead = await _call(c, lab, "status", rig1)
            dead_after = time.monotonic() - t
            others = [await _call(c, lab, "status", n) for n in (rig2, rig3)]
            hung_result = await asyncio.wait_for(hung, 20)
            return (quick, quick_s, stopped_rows, stopped_list_s, rows, seen_down, dead,
                    dead_after, others, hung_result)

    (quick, quick_s, stopped_rows, stopped_list_s, rows, seen_down, dead, dead_after, others,
     hung_result) = run(go())
    assert all(not r.is_error for r in quick), quick
    assert quick_s < 2.0, quick_s
    assert stopped_rows[rig1]["reachable"] is False, stopped_rows[rig1]
    assert stopped_rows[rig2]["reachable"] and stopped_rows[rig3]["reachable"], stopped_rows
    assert stopped_list_s < UNREACHABLE_WITHIN_S, stopped_list_s
    assert rows[rig1]["reachable"] is False, rows[rig1]
    assert rows[rig1]["last_error"], rows[rig1]
    assert seen_down < UNREACHABLE_WITHIN_S, seen_down
    assert rows[rig2]["reachable"] and rows[rig3]["reachable"], rows
    assert dead.is_error and _text(dead).split(":")[0] in ("E_UNREACHABLE", "E_MACHINE_LOST"), dead
    assert dead_after < UNREACHABLE_WITHIN_S, dead_after
    for r in others:
        assert not r.is_error, r
    assert hung_result.is_error, hung_result
    assert _text(hung_result).split(":")[0] in ("E_MACHINE_LOST", "E_UNREACHABLE"), hung_result


def test_audit_has_one_line_per_forwarded_call(lab):
    with open(lab.audit) as f:
        lines = [json.loads(x) for x in f]
    tools = [(x["machine"], x["tool"], x["outcome"]) for x in lines]
    assert ("rig1", "serial.read", "ok") in tools
    assert ("rig1", "system.poweroff", "denied") in tools
    assert ("rig2", "system.reset", "ok") in tools
    assert any(m == "rig2" and t == "shell.exec" and o.startswith("lost") for m, t, o in tools)
    assert ("rig3", "shell.exec", "cancelled") in tools
    assert sum(1 for m, t, _ in tools if t == "status") >= 3
    text = open(lab.audit).read()
    for t in lab.machine_tokens | {lab.token}:
        assert t not in text
