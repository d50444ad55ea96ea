"""The Python SDK reference server of `cargo xtask bench --peers` (docs/bench.md, "The peers").

The module's 26 tool listings, read from docs/tools.json, its `echo`, and a `status` answering a
fixed object of the module's `status` shape and size (tools/peers/status.json), on the official
SDK's low-level `Server` (the API for tools whose schemas already exist as JSON), served as the
SDK's documentation shows for a stateless streamable-HTTP server answering plain JSON: its
Starlette app under uvicorn.

Usage: python_echo.py TOOLS_JSON STATUS_JSON PORT HOST; it serves 127.0.0.1:PORT and accepts HOST
in `Host` (the bench's requests name the machine `indy`, as the rig bench's do).
"""

import json
import sys

import uvicorn
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings


def main() -> None:
    tools_json, status_json, port, host = sys.argv[1:]
    with open(tools_json, encoding="utf-8") as f:
        tools = [types.Tool.model_validate(t) for t in json.load(f)]
    # What `status` answers: a structured result like the module's, without a machine to read
    # it from.
    with open(status_json, encoding="utf-8") as f:
        status = json.load(f)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = (params.arguments or {}).get("text")
        if params.name == "status":
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=json.dumps(status, separators=(",", ":")))
                ],
                structured_content=status,
            )
        if params.name != "echo":
            message = f"E_NOTSUP: {params.name} is only listed by this peer"
        elif not isinstance(text, str):
            message = "E_INVAL: `text` is required"
        else:
            # The module's echo answers {"text": …} as structured content and as its JSON in a
            # text block, as the specification recommends for a tool with an output schema.
            structured = {"text": text}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(structured))],
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
