"""The Python SDK reference server of `cargo xtask bench --peers` (docs/bench.md, "The peers").

The module's tool listings, read from docs/tools.json, its `echo`, and `status`, `fs.stat`,
`serial.read`, `fs.list` and `proc.list` answering fixed results of the module's shape and size
(tools/peers/results.json, one real result of each taken from the rig bench), on the official
SDK's low-level `Server` (the API for tools whose schemas already exist as JSON), served as the
SDK's documentation shows for a stateless streamable-HTTP server answering plain JSON: its
Starlette app under uvicorn.

Each call's arguments are checked against the tool's input schema with `jsonschema` (the SDK's
own dependency, which its client uses to check tool results), a validator compiled once per
tool at start, so a peer does the work the module's schema check does before it answers.

Usage: python_peer.py TOOLS_JSON RESULTS_JSON PORT HOST; it serves 127.0.0.1:PORT and accepts
HOST in `Host` (the bench's requests name the machine `indy`, as the rig bench's do).
"""

import json
import sys

import uvicorn
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings


def main() -> None:
    tools_json, results_json, port, host = sys.argv[1:]
    with open(tools_json, encoding="utf-8") as f:
        listings = json.load(f)
    tools = [types.Tool.model_validate(t) for t in listings]
    validators = {}
    for t in listings:
        schema = t["inputSchema"]
        validators[t["name"]] = validator_for(schema)(schema)
    # What each small call answers: results like the module's, without a machine to read them
    # from.
    with open(results_json, encoding="utf-8") as f:
        results = {e["tool"]: e["result"] for e in json.load(f)}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        arguments = params.arguments or {}
        validator = validators.get(name)
        if name != "echo" and name not in results:
            message = f"E_NOTSUP: {name} is only listed by this peer"
        elif validator is None:
            message = f"E_NOTSUP: {name} is not listed"
        elif (error := best_match(validator.iter_errors(arguments))) is not None:
            message = f"E_INVAL: {name}: {error.message}"
        else:
            # The module answers each result as structured content and as its JSON (without
            # blanks) in a text block, as the specification recommends for a tool with an output
            # schema.
            structured = {"text": arguments["text"]} if name == "echo" else results[name]
            text = json.dumps(structured, separators=(",", ":"))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)],
                structured_content=structured,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )

    server = Server("irix7-peer-python", on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(allowed_hosts=[host]),
    )
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
