"""Where the servers under test are: `cargo xtask clients` (and `cargo xtask test`) boot the
rigs and pass their URLs in the environment.

IRIX7_URL            product image booted open by choice (--env mcp.token=none)
IRIX7_TOKEN_URL      product image booted as a machine boots by default: no mcp.token, so it
                     generates a token (printed on its console; the rig writes it to
                     target/iris/token-<port>)
IRIX7_TOKEN          that token
IRIX7_FIXTURES_URL   conformance image (product tools plus the everything-server fixtures,
                     among them the slow tool test_tool_with_progress), open (mcp.token=none)
IRIX7_NODE           the Node 22 binary `cargo xtask clients` installs
IRIX7_TS_CLIENT_PATH the node_modules directory holding the TypeScript SDK v2 client (for NODE_PATH)
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


def _env(name):
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set: run these tests through `cargo xtask clients`")
    return value


@pytest.fixture(scope="session")
def url():
    return _env("IRIX7_URL")


@pytest.fixture(scope="session")
def token_url():
    return _env("IRIX7_TOKEN_URL")


@pytest.fixture(scope="session")
def token():
    return _env("IRIX7_TOKEN")


@pytest.fixture(scope="session")
def fixtures_url():
    return _env("IRIX7_FIXTURES_URL")


@pytest.fixture(scope="session")
def node():
    return _env("IRIX7_NODE")


@pytest.fixture(scope="session")
def ts_client_path():
    return _env("IRIX7_TS_CLIENT_PATH")
