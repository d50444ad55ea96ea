"""`examples/agent_loop.py`, the loop an agent developer copies, run as they would run it
against a machine (the open product rig) in both protocol eras: it waits for the banner,
writes a file, watches a command's output stream, captures the screen, resets the machine
and waits for it to come back."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"


# mode -> the protocol version the example must end up speaking.
MODES = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}


@pytest.mark.parametrize("mode", list(MODES))
def test_the_agent_loop_example_completes(mode, url, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "IRIX7_TOKEN"}
    r = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", url, "--mode", mode, "--out-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
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
