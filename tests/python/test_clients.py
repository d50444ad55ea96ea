"""The Python MCP SDK (mcp 2.3.0) as a real client of the module in the rig: every connection
mode, with and without the token."""

import asyncio
import json

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared._httpx_utils import create_mcp_http_client

import rawhttp

# mode -> the protocol version the client must end up speaking.
MODES = {
    "auto": "2026-07-28",
    "legacy": "2025-11-25",
    "2026-07-28": "2026-07-28",
}


def _server(url, token):
    if token is None:
        return url
    hc = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=hc)


async def _exercise(url, mode, token=None):
    async with Client(_server(url, token), mode=mode) as c:
        version = c.protocol_version
        tools = await c.list_tools()
        names = [t.name for t in tools.tools]
        status = await c.call_tool("status", {})
        text = "irix7 \u00e9cho \u2713 " + mode
        echo = await c.call_tool("echo", {"text": text})
        bad = await c.call_tool("echo", {})
        return version, names, status, echo, text, bad


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("locked", [False, True], ids=["open", "token"])
def test_list_and_call(mode, locked, request):
    if locked:
        url = request.getfixturevalue("token_url")
        token = request.getfixturevalue("token")
    else:
        url = request.getfixturevalue("url")
        token = None
    version, names, status, echo, text, bad = asyncio.run(_exercise(url, mode, token))

    assert version == MODES[mode]
    assert "status" in names and "echo" in names
    assert names == sorted(set(names), key=names.index), "tool names repeat"

    assert not status.is_error, status
    s = status.structured_content
    assert s["module"] == "irix7-mcp"
    assert s["ip"].startswith("172.31.77.2")
    assert s["mac"] == "08:00:69:0e:07:01"
    assert s["ram_bytes"] == 64 * 1024 * 1024
    assert s["heap"]["used"] <= s["heap"]["size"]

    assert not echo.is_error, echo
    assert echo.structured_content == {"text": text}
    # The text block carries the structured result's JSON, as the spec recommends.
    assert echo.content[0].type == "text" and json.loads(echo.content[0].text) == {"text": text}

    # A missing required argument is a tool error the model can read, not a protocol error.
    assert bad.is_error
    assert bad.content[0].text.startswith("E_INVAL")


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("given", [None, "wrong-token"], ids=["no-token", "wrong-token"])
def test_client_without_the_right_token_is_refused(mode, given, token_url, token):
    assert given != token

    async def attempt():
        async with Client(_server(token_url, given), mode=mode) as c:
            await c.list_tools()

    with pytest.raises(BaseException) as info:
        asyncio.run(attempt())
    # The SDK turns the server's 401 into MCPError "Unauthorized", inside task groups.
    leaf = info.value
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    assert isinstance(leaf, MCPError), repr(info.value)
    assert "Unauthorized" in str(leaf)
    r = rawhttp.post_modern(token_url, "tools/list", headers=_auth(given))
    assert r.status == 401


def _auth(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


@pytest.mark.parametrize("mode", list(MODES))
def test_progress_reaches_the_sdk_callback(mode, fixtures_url):
    """The fixtures image's test_tool_with_progress streams progress on the request's SSE
    stream; the SDK hands each notification to the call's callback, in order."""
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async def go():
        async with Client(fixtures_url, mode=mode) as c:
            return await c.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)

    result = asyncio.run(go())
    assert not result.is_error, result
    values = [p for p, _ in seen]
    assert len(values) >= 2, seen
    assert values == sorted(set(values)), seen
    assert all(t == 100 for _, t in seen), seen


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_the_listing_reaches_the_sdk_deflate_coded(mode, token_url, token):
    """httpx asks for `gzip, deflate` on its own: the module sends `tools/list` coded, and the
    SDK reads the listing through httpx's decoder."""
    seen = []

    async def on_response(response):
        if b'"tools/list"' in response.request.content:
            seen.append((response.request.headers.get("accept-encoding"),
                         response.headers.get("content-encoding"),
                         response.headers.get("vary")))

    async def listing():
        hc = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        hc.event_hooks = {"request": [], "response": [on_response]}
        async with Client(streamable_http_client(token_url, http_client=hc), mode=mode) as c:
            return [t.name for t in (await c.list_tools()).tools]

    names = asyncio.run(listing())
    assert "status" in names and "echo" in names and len(names) > 20
    assert len(seen) == 1, seen
    accept, coding, vary = seen[0]
    assert "deflate" in accept.lower()
    assert coding == "deflate"
    assert vary == "Accept-Encoding"
