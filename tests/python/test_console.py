"""The browser console (`GET /` on the MCP port, src/net/web_console/), driven in a real headless
Chromium through WebDriver: the live console with an administrator token, a reset followed
to the next boot, the same page with a read-only token, and the hostile checks (framing, the
token in no URL, body, console line or audit line, a foreign Origin).

`cargo xtask console` boots the rig this needs and sets:

IRIX7_CONSOLE_URL      the rig's base URL (http://127.0.0.1:PORT), booted with
IRIX7_CONSOLE_TOKEN    its administrator token (mcp.token) and
IRIX7_CONSOLE_WATCHER  a token of role observe (mcp.tokens=watcher:observe:…)
IRIX7_CONSOLE_SHOTS    where the screenshots go (target/console)
"""

import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

VERSION = "2026-07-28"


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: run this test through `cargo xtask console`")
    return value


@pytest.fixture(scope="module")
def rig():
    return {
        "url": _env("IRIX7_CONSOLE_URL").rstrip("/"),
        "admin": _env("IRIX7_CONSOLE_TOKEN"),
        "watcher": _env("IRIX7_CONSOLE_WATCHER"),
        "shots": os.environ.get("IRIX7_CONSOLE_SHOTS", "target/console"),
    }


def mcp(rig, token, method, params, name=None, origin=None):
    """One 2026-07-28 request from outside the browser: (HTTP status, JSON-RPC message)."""
    params = dict(params)
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
        "Authorization": f"Bearer {token}",
    }
    if name:
        headers["Mcp-Name"] = name
    if origin:
        headers["Origin"] = origin
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    req = urllib.request.Request(rig["url"] + "/mcp", body.encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        status = e.code
    if text.startswith(("event:", "data:", "id:", ":")):
        datas = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")]
        text = datas[-1] if datas else "{}"
    try:
        return status, json.loads(text)
    except ValueError:
        return status, {"raw": text}


def tool(rig, token, name, args=None, origin=None):
    params = {"name": name, "arguments": args or {}}
    return mcp(rig, token, "tools/call", params, name, origin)


def browser(rig):
    opts = Options()
    opts.binary_location = os.environ.get("IRIX7_CHROMIUM", "/usr/bin/chromium")
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1440,1000",
        "--no-first-run",
        "--disable-background-networking",
    ]:
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    service = Service(os.environ.get("IRIX7_CHROMEDRIVER", "/usr/bin/chromedriver"))
    d = webdriver.Chrome(service=service, options=opts)
    d.execute_cdp_cmd("Network.enable", {})
    return d


def shot(d, rig, name):
    os.makedirs(rig["shots"], exist_ok=True)
    path = os.path.join(rig["shots"], name)
    d.save_screenshot(path)
    return path


def wait(d, what, timeout, why):
    return WebDriverWait(d, timeout, poll_frequency=0.1).until(lambda _: what(), why)


def text_of(d, element_id):
    found = d.find_elements(By.ID, element_id)
    return found[0].text if found else ""


class NetworkLog:
    """What the browser sent and received, from Chromium's performance log."""

    def __init__(self):
        self.urls = []
        self.bodies = []
        self.headers = []
        self.console = []
        # Each response's Content-Encoding, by URL.
        self.codings = {}

    def collect(self, d):
        self.console += d.get_log("browser")
        ids = []
        for entry in d.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            params = msg.get("params", {})
            if msg["method"] == "Network.requestWillBeSent":
                req = params["request"]
                self.urls.append(req["url"])
                self.headers.append(req.get("headers", {}))
            elif msg["method"] == "Network.responseReceived":
                self.urls.append(params["response"]["url"])
                ids.append(params["requestId"])
                headers = {k.lower(): v for k, v in params["response"].get("headers", {}).items()}
                self.codings[params["response"]["url"]] = headers.get("content-encoding")
        for rid in ids:
            try:
                body = d.execute_cdp_cmd("Network.getResponseBody", {"requestId": rid})
            except Exception:
                continue  # a stream still open, or a body the browser no longer holds
            self.bodies.append(body.get("body", ""))


def framing_page(src):
    """A page of another origin (another port) that frames `src`."""
    page = f"<!DOCTYPE html><title>framer</title><iframe src='{src}'></iframe>".encode()

    class Framer(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Framer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def child_frame(d):
    tree = d.execute_cdp_cmd("Page.getFrameTree", {})["frameTree"]
    kids = tree.get("childFrames") or []
    return kids[0]["frame"] if kids else None


def login(d, rig, token):
    d.get(rig["url"] + "/")
    field = wait(d, lambda: d.find_elements(By.ID, "token"), 10, "no token field")[0]
    field.send_keys(token)
    d.find_element(By.ID, "login").click()
    wait(d, lambda: "build" in text_of(d, "st-build"), 20, "no status after the token")


def test_the_console_follows_the_machine_and_keeps_the_token_to_itself(rig):
    d = browser(rig)
    log = NetworkLog()
    try:
        # Without a token: today's page, and the form for one.
        d.get(rig["url"] + "/")
        assert "irix7-mcp" in d.title
        body = d.find_element(By.TAG_NAME, "body").text
        assert "MCP on port 7801, token required" in body, body
        wait(d, lambda: d.find_elements(By.ID, "token"), 10, "no token field")
        shot(d, rig, "01-open.png")

        login(d, rig, rig["admin"])
        assert d.execute_script("return sessionStorage.length") == 1
        assert d.execute_script("return document.cookie") == ""
        wait(d, lambda: "live" == text_of(d, "live"), 15, "the stream did not open")

        # A line another client writes appears within 2 s.
        marker = "console-test-" + uuid.uuid4().hex[:12]
        status, msg = tool(rig, rig["admin"], "console.write", {"text": marker})
        assert status == 200 and not msg["result"].get("isError"), msg
        written = time.monotonic()
        wait(d, lambda: marker in text_of(d, "serial"), 2.0, "the line did not appear in 2 s")
        print(f"line seen {time.monotonic() - written:.2f} s after console.write")

        # The screen loads; the audit shows the write.
        wait(
            d,
            lambda: d.execute_script(
                "const i = document.getElementById('screen'); return i && i.naturalWidth"
            ),
            15,
            "no screen thumbnail",
        )
        wait(d, lambda: "console.write" in text_of(d, "audit"), 10, "no audit line")
        for control in ["reset", "poweroff", "line", "send"]:
            assert d.find_elements(By.ID, control), control
        assert "administer" in text_of(d, "st-role")
        shot(d, rig, "02-live.png")

        # Typed from the page: through console.write, so on the console and in the audit.
        typed = "typed-" + uuid.uuid4().hex[:8]
        d.find_element(By.ID, "line").send_keys(typed)
        d.find_element(By.ID, "send").click()
        wait(d, lambda: typed in text_of(d, "serial"), 5, "the typed line did not come back")

        # Reset, confirmed; the page follows the machine back and shows why it booted.
        before = d.find_element(By.ID, "st-boot").text
        d.find_element(By.ID, "reset").click()
        assert d.find_element(By.ID, "confirm").is_displayed()
        d.find_element(By.ID, "confirm-yes").click()
        wait(d, lambda: "back: booted because" in text_of(d, "state"), 180, "no way back")
        state = text_of(d, "state")
        assert "requested" in state, state
        after = d.find_element(By.ID, "st-boot").text
        assert after != before and "requested" in after, (before, after)
        wait(d, lambda: "live" == text_of(d, "live"), 15, "no stream after the reset")
        shot(d, rig, "03-after-reset.png")
        log.collect(d)

        # A read-only token: no controls that act, and a forged call is refused.
        d.execute_script("sessionStorage.clear()")
        login(d, rig, rig["watcher"])
        assert "observe" in text_of(d, "st-role")
        for control in ["reset", "poweroff", "line", "send"]:
            assert not d.find_elements(By.ID, control), control
        shot(d, rig, "04-read-only.png")
        forged = d.execute_async_script(
            """
            const [token, done] = arguments;
            const meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}};
            fetch("/mcp", {method: "POST", headers: {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                "Mcp-Name": "system.reset", "Authorization": "Bearer " + token},
              body: JSON.stringify({jsonrpc: "2.0", id: 9, method: "tools/call",
                params: {name: "system.reset", arguments: {}, _meta: meta}})})
              .then(r => r.text().then(t => done([r.status, t])))
              .catch(e => done([0, String(e)]));
            """,
            rig["watcher"],
        )
        assert forged[0] == 200, forged
        answer = json.loads(forged[1])
        assert answer["result"]["isError"], answer
        refusal = answer["result"]["content"][0]["text"]
        assert refusal.startswith("E_PERM"), refusal
        time.sleep(1)
        status, msg = tool(rig, rig["admin"], "status")
        assert status == 200 and msg["result"]["structuredContent"]["uptime_ms"] > 1000, msg

        # The page cannot be framed: a page of another origin that frames it gets Chromium's
        # error page in the frame, by the policy.
        log.collect(d)
        framer = framing_page(rig["url"] + "/")
        try:
            d.get(f"http://127.0.0.1:{framer.server_port}/")
            frame = wait(d, lambda: child_frame(d), 10, "no frame")
            assert frame["url"].startswith("chrome-error:"), frame
            assert frame.get("unreachableUrl") == rig["url"] + "/", frame
            shot(d, rig, "05-framed.png")
        finally:
            framer.shutdown()
        log.collect(d)
        framed = [e for e in log.console if "frame-ancestors 'none'" in e["message"]]
        assert framed, log.console
    finally:
        d.quit()
    console = log.console

    # The token in no URL, no response body, no browser console line.
    for token in [rig["admin"], rig["watcher"]]:
        assert not [u for u in log.urls if token in u]
        assert not [b for b in log.bodies if token in b]
        assert not [e for e in console if token in e["message"]]
    assert log.bodies, "no response body was inspected"
    sent = [h.get("Authorization", "") for h in log.headers]
    assert f"Bearer {rig['admin']}" in sent and f"Bearer {rig['watcher']}" in sent
    # Chromium accepts deflate: the script came coded (docs/console.md), and ran.
    script = [c for u, c in log.codings.items() if u.endswith("/console.js")]
    assert script and all(c == "deflate" for c in script), log.codings

    # Nor in the serial ring or the audit.
    status, msg = tool(rig, rig["admin"], "serial.read", {"offset": 0, "max_bytes": 65536})
    if msg.get("result", {}).get("isError"):
        status, msg = tool(rig, rig["admin"], "serial.read", {"max_bytes": 65536})
    ring = msg["result"]["structuredContent"]["data"]
    status, msg = mcp(rig, rig["admin"], "resources/read", {"uri": "irix7://audit"}, "irix7://audit")
    audit = msg["result"]["contents"][0]["text"]
    assert "system.reset" in audit, audit
    for token in [rig["admin"], rig["watcher"]]:
        assert token not in ring and token not in audit

    # A foreign Origin cannot drive /mcp with the administrator's token.
    status, msg = tool(rig, rig["admin"], "status", origin="http://evil.example")
    assert status == 403, (status, msg)
