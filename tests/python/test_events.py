"""Machine events through the Python MCP SDK: a legacy session subscribed to irix7://events
(resources/subscribe, updates on its GET stream) and a 2026-07-28 listener
(subscriptions/listen) both hear a requested reset before the machine goes. The events live
in the module's memory, so what a client can see across the reset is: the reset-requested
event while the machine is still up, then, once it serves again, a fresh ring that starts
with the new boot (seq 1) and no longer holds the request. The test waits for the machine to
serve again, so the files after it find it up."""

import asyncio
import json
import time

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

URI = "irix7://events"
# Long enough to hear the update and read the ring before the machine goes.
RESET_DELAY_MS = 5000


async def _events(c):
    r = await c.read_resource(URI)
    return json.loads(r.contents[0].text)


async def _legacy_update(url, subscribed, heard):
    """A legacy session: subscribes, then waits for the update on its GET stream."""
    got = asyncio.Event()

    async def handler(message):
        if isinstance(message, types.ResourceUpdatedNotification) and message.params.uri == URI:
            got.set()

    async with Client(url, mode="legacy", message_handler=handler) as c:
        assert c.protocol_version != "2026-07-28"
        await c.subscribe_resource(URI)
        subscribed.set()
        await asyncio.wait_for(got.wait(), 20)
        heard["legacy"] = await _events(c)


async def _modern_update(url, subscribed, heard):
    """A 2026-07-28 client: listens, then waits for the update on the listen stream."""
    async with Client(url, mode="2026-07-28") as c:
        async with c.listen(resource_subscriptions=[URI]) as sub:
            subscribed.set()

            async def first_update():
                async for event in sub:
                    if isinstance(event, ResourceUpdated) and event.uri == URI:
                        return

            await asyncio.wait_for(first_update(), 20)
        heard["modern"] = await _events(c)


async def _served_again(url, within_s=60):
    """The events once the machine answers again after its reset."""
    start = time.monotonic()
    while True:
        try:
            async with Client(url, mode="2026-07-28") as c:
                v = await _events(c)
            if not any(e["kind"] == "reset-requested" for e in v["events"]):
                return v
        except Exception:
            pass
        assert time.monotonic() - start < within_s, "the machine did not serve again"
        await asyncio.sleep(0.5)


# The legacy era is what is tested here: its subscribe is deprecated only for 2026-07-28.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
def test_both_eras_hear_a_requested_reset_and_the_next_boot_starts_a_fresh_ring(url):
    async def go():
        async with Client(url, mode="2026-07-28") as c:
            before = await _events(c)
            assert before["events"][0]["kind"] == "boot", before
            subscribed = [asyncio.Event(), asyncio.Event()]
            heard = {}
            listeners = asyncio.gather(
                _legacy_update(url, subscribed[0], heard),
                _modern_update(url, subscribed[1], heard),
            )
            waiting = asyncio.ensure_future(listeners)
            await asyncio.wait_for(asyncio.gather(*(s.wait() for s in subscribed)), 20)
            # Past the watch's first look (it takes the version; 250 ms between looks).
            await asyncio.sleep(1)
            reset = await c.call_tool("system.reset", {"delay_ms": RESET_DELAY_MS})
            assert not reset.is_error, reset
            await waiting
        return before, heard, await _served_again(url)

    before, heard, after = asyncio.run(go())
    for era, v in heard.items():
        last = v["events"][-1]
        assert last["kind"] == "reset-requested", (era, v)
        assert last["detail"] == f"system.reset, in {RESET_DELAY_MS} ms", (era, v)
        assert last["seq"] == v["total"] > before["total"], (era, v)
    first = after["events"][0]
    assert (first["seq"], first["kind"]) == (1, "boot"), after
    # The kernel says why this boot happened: the reset the client asked for.
    assert after["boot_cause"] == "requested", after
    assert first["detail"].startswith("cause requested, module "), after
    assert after["uptime_ms"] < heard["modern"]["uptime_ms"] + 60_000, after
