"""Plain HTTP/1.1 to the MCP endpoint with http.client, for what the SDK clients hide:
status codes, headers, session ids, rate limits, SSE framing."""

import http.client
import importlib.util
import json
import os
import urllib.parse


def _load_smoke():
    """rom/tools/mcp-smoke.py, which builds the modern request envelope for both (its name is
    not an importable module name, so it is loaded from its path)."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "rom", "tools", "mcp-smoke.py")
    spec = importlib.util.spec_from_file_location("mcp_smoke", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_smoke = _load_smoke()
MODERN = _smoke.MODERN
LEGACY = _smoke.LEGACY
ACCEPT = "application/json, text/event-stream"


class Reply:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-case names
        self.body = body

    def json(self):
        return json.loads(self.body)

    def sse_messages(self):
        """The JSON-RPC messages of an SSE body (`data:` lines of each event)."""
        out = []
        for event in self.body.decode().replace("\r\n", "\n").split("\n\n"):
            data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
            if data and "".join(data):
                out.append(json.loads("\n".join(data)))
        return out

    def messages(self):
        """JSON body or SSE events, as a list of JSON-RPC messages."""
        if self.headers.get("content-type", "").startswith("text/event-stream"):
            return self.sse_messages()
        return [self.json()]


def split(url):
    u = urllib.parse.urlsplit(url)
    return u.hostname, u.port, u.path


def connect(url, timeout=30):
    host, port, _ = split(url)
    return http.client.HTTPConnection(host, port, timeout=timeout)


def request(url, method="POST", body=None, headers=None, conn=None, timeout=30):
    """One request; a fresh connection unless `conn` is given."""
    own = conn is None
    c = connect(url, timeout) if own else conn
    try:
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        h = {"Content-Type": "application/json", "Accept": ACCEPT}
        h.update(headers or {})
        c.request(method, split(url)[2], body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        return Reply(r.status, {k.lower(): v for k, v in r.getheaders()}, raw)
    finally:
        if own:
            c.close()


def modern(method, params=None, rid=1, meta=None):
    """(body, headers) of a 2026-07-28 request."""
    return _smoke.modern_request(method, params, rid, meta, client="irix7-tests")


def post_modern(url, method, params=None, rid=1, meta=None, headers=None, conn=None):
    body, h = modern(method, params, rid, meta)
    h.update(headers or {})
    return request(url, body=body, headers=h, conn=conn)


class LegacySession:
    """initialize → Mcp-Session-Id → notifications/initialized."""

    def __init__(self, url, headers=None, capabilities=None):
        self.url = url
        self.base = dict(headers or {})
        r = request(
            url,
            body={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": capabilities or {},
                    "clientInfo": {"name": "irix7-tests", "version": "1"},
                },
            },
            headers=self.base,
        )
        assert r.status == 200, (r.status, r.body)
        self.init = r.messages()[-1]
        self.sid = r.headers["mcp-session-id"]
        self.next_id = 1
        r = self.notify("notifications/initialized")
        assert r.status == 202, (r.status, r.body)

    def headers(self):
        h = dict(self.base)
        h["Mcp-Session-Id"] = self.sid
        h["MCP-Protocol-Version"] = LEGACY
        return h

    def call(self, method, params=None, conn=None, headers=None):
        rid = self.next_id
        self.next_id += 1
        h = self.headers()
        h.update(headers or {})
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}
        return request(self.url, body=body, headers=h, conn=conn)

    def notify(self, method, params=None):
        h = self.headers()
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        return request(self.url, body=body, headers=h)
