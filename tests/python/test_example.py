"""The loop an agent developer copies, run as they would run it against a machine (the open
product rig): it waits for the banner, writes a file, watches a command's output stream,
captures the screen, resets the machine and waits for it to come back.

`examples/agent_loop.py` (the Python SDK) and `examples/agent_loop.cjs` (the TypeScript SDK v2
client) both run in both protocol eras, each chosen through its SDK's own option."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# mode -> the protocol version the example must end up speaking.
MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


def _env():
    # The examples find the token themselves; the open rig needs none.
    return {k: v for k, v in os.environ.items() if k != "IRIX7_TOKEN"}


def _assert_completed(r, mode, tmp_path):
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert f"speaking {MODES[mode]}" in out, out
    assert "3 ran `cat /agent-loop.txt`: exit 0" in out, out
    # The command's output arrived while it ran, line by line, before its result.
    streamed = [l for l in out.splitlines() if l.startswith("    | ")]
    assert streamed[0] == "    | line 1 written by the agent loop", out
    assert len(streamed) == 5, out
    assert (tmp_path / "agent-loop-screen.png").read_bytes().startswith(b"\x89PNG")
    assert "5 back: build" in out and out.rstrip().endswith("done"), out


@pytest.mark.parametrize("mode", list(MODES))
def test_the_python_agent_loop_example_completes(mode, url, tmp_path):
    r = subprocess.run(
        [sys.executable, str(EXAMPLES / "agent_loop.py"), "--url", url, "--mode", mode]
        + ["--out-dir", str(tmp_path)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    _assert_completed(r, mode, tmp_path)


def _node(node, ts_client_path, args, **kw):
    env = _env() | {"NODE_PATH": ts_client_path}
    return subprocess.run([node, *args], env=env, capture_output=True, text=True, **kw)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_typescript_agent_loop_example_completes(mode, url, node, ts_client_path, tmp_path):
    r = _node(
        node,
        ts_client_path,
        [str(EXAMPLES / "agent_loop.cjs"), "--url", url, "--mode", mode]
        + ["--out-dir", str(tmp_path)],
        timeout=600,
    )
    _assert_completed(r, mode, tmp_path)
