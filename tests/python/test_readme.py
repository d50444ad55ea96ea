"""The README's curl walkthrough, run as written against the rig: each `sh` block of the
"Talking to the module with curl" section is one bash script; only the port differs (in the
URL and in the name of the token file the rig writes, `target/iris/token-<port>`)."""

import json
import os
import re
import subprocess
import tempfile
import time

import rawhttp

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
SECTION = "## Talking to the module with curl"
README_ADDR = "127.0.0.1:7801"
README_TOKEN_FILE = "target/iris/token-7801"
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def blocks():
    text = open(README, encoding="utf-8").read()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end >= 0 else len(text)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def run_block(script, url):
    host, port, _ = rawhttp.split(url)
    assert README_ADDR in script
    script = script.replace(README_ADDR, f"{host}:{port}")
    assert README_TOKEN_FILE in script
    script = script.replace(README_TOKEN_FILE, os.path.join(ROOT, f"target/iris/token-{port}"))
    with tempfile.TemporaryDirectory() as cwd:  # where a block's files (screen.bmp) land
        p = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
        )
    assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    return [line for line in p.stdout.splitlines() if line.strip()]


def test_readme_has_three_blocks():
    b = blocks()
    assert len(b) == 3
    assert "server/discover" in b[0] and "initialize" in b[1] and "screen.bmp" in b[2]


def test_modern_walkthrough(token_url):
    time.sleep(1.2)  # a fresh rate window for this client address
    out = run_block(blocks()[0], token_url)
    assert len(out) == 3, out
    discover, listing, call = (json.loads(line) for line in out)
    assert discover["id"] == 1
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert "tools" in discover["result"]["capabilities"]
    names = [t["name"] for t in listing["result"]["tools"]]
    assert "status" in names and "echo" in names
    assert call["result"]["structuredContent"] == {"text": "hello Indy"}
    assert call["result"]["resultType"] == "complete"


def test_legacy_walkthrough(token_url):
    time.sleep(1.2)
    out = run_block(blocks()[1], token_url)
    assert len(out) == 5, out
    assert re.fullmatch(r"session [\x21-\x7e]+", out[0]), out[0]
    assert out[1] == "202"
    listing = json.loads(out[2])
    assert "echo" in [t["name"] for t in listing["result"]["tools"]]
    status = json.loads(out[3])
    assert status["id"] == 3
    assert status["result"]["structuredContent"]["module"] == "irix7-mcp"
    assert out[4] == "200"


def test_screen_walkthrough(token_url):
    out = run_block(blocks()[2], token_url)
    # A 54-byte header and 1280 x 1024 rows of 3-byte pixels (rows are already 4-byte aligned).
    assert out == [f"200 image/bmp {54 + 1280 * 1024 * 3}"], out
