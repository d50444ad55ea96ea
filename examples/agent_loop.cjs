#!/usr/bin/env node
// An agent's loop against a running IRIX 7 machine, with the official MCP TypeScript SDK v2
// client (@modelcontextprotocol/client 2.4.0), as plain JavaScript: copy it and run it, no
// build step.
//
// It boots nothing: start a machine first (`cargo iris` boots the rig and forwards port 7801),
// then run, from the repository's root,
//
//     NODE_PATH=target/node/mcp-client-2.4.0/node_modules node examples/agent_loop.cjs \
//         [--url URL] [--token TOKEN] [--mode MODE]
//
// (`cargo xtask clients` installs the client there, and Node 22 in target/node/node22; in a
// project of your own, `npm install @modelcontextprotocol/client@2.4.0` beside the script will
// do without NODE_PATH). It is CommonJS (`.cjs`, `require`) because `require` honours
// NODE_PATH, so it runs against a client installed anywhere; an ES module's bare `import` only
// looks in node_modules directories above the script.
//
// - URL: `--url`, else `$IRIX7_URL`, else http://127.0.0.1:7801/mcp.
// - Token: `--token`, else `$IRIX7_TOKEN`, else the file the rig writes for the URL's port
//   (`target/iris/token-<port>`, read again after the reset: a generated token changes when
//   the machine resets), else none (a machine booted with `mcp.token=none`).
// - MODE, the protocol era, chosen through the SDK's own `versionNegotiation.mode`:
//   `auto` (the default: the SDK probes with `server/discover` and takes 2026-07-28 when the
//   machine offers it, else falls back to a session), `legacy` (a 2025-11-25 session, no
//   probe) or `2026-07-28` (pinned: sessionless, no fallback).
//
// The loop is the one `examples/agent_loop.py` runs, step for step:
// 1. wait for the module's banner on the serial console (`serial.read` with `until`, which
//    returns as soon as the text is there: no polling);
// 2. write a file (`fs.write`);
// 3. run a command that reads it and watch its output as it is printed (`shell.exec`: each
//    piece of output arrives as a progress notification's message, which the SDK hands to
//    `onprogress`);
// 4. capture the screen (`screen.capture`, a PNG);
// 5. reset the machine (`system.reset`) and wait until it is back: it answers with a fresh
//    uptime, and its console shows the banner again.
//
// Each step prints one line; the exit status is non-zero when a step fails.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");
const { Client, StreamableHTTPClientTransport } = require("@modelcontextprotocol/client");

// The line the module prints on the console once its tools are registered.
const BANNER = "tools offered";
const REPO = path.resolve(__dirname, "..");
// `--mode` -> the SDK's `versionNegotiation.mode`.
const MODES = { auto: "auto", legacy: "legacy", "2026-07-28": { pin: "2026-07-28" } };

class StepFailed extends Error {}

// A function giving the token to use now: `given`, else `$IRIX7_TOKEN`, else the token the rig
// wrote for this URL's port, read again on each call (a machine that generated its token
// generates a new one when it resets), else none.
function tokenSource(url, given) {
  const fixed = given || process.env.IRIX7_TOKEN;
  if (fixed) return () => fixed;
  const port = new URL(url).port || "80";
  const file = path.join(REPO, "target", "iris", `token-${port}`);
  return () => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim() : undefined);
}

// A connected SDK client for the machine in the era `mode` chooses, with the bearer token (from
// `token()`) on every request. `options` are the connect's request options (`timeout`).
async function connect(url, token, mode, options = {}) {
  const t = token();
  const headers = t ? { Authorization: `Bearer ${t}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client(
    { name: "irix7-agent-loop", version: "1.0.0" },
    { versionNegotiation: { mode: MODES[mode] } },
  );
  await client.connect(transport, options);
  return { client, transport };
}

// Ends the session (DELETE; a 2026-07-28 connection has none) and the connection; a machine
// that is gone fails the DELETE, which is fine.
async function disconnect({ client, transport }) {
  if (transport.sessionId) await transport.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}

// Calls a tool; its result, or StepFailed with the tool's error text. `options` are the SDK's
// request options (`onprogress`, `timeout`).
async function tool(c, name, args = {}, options = {}) {
  const r = await c.client.callTool({ name, arguments: args }, options);
  if (r.isError) {
    const text = r.content && r.content[0] ? r.content[0].text : JSON.stringify(r);
    throw new StepFailed(`${name}: ${text}`);
  }
  return r;
}

// Bytes ever written to the console.
async function consoleHead(c) {
  return (await tool(c, "serial.read", { max_bytes: 1 })).structuredContent.head;
}

// Waits on the console for the banner past `offset` (0: the oldest byte the ring holds); the
// offset just after it, or null when the ring no longer holds it (a machine up for long).
async function waitForBanner(c, offset = 0, timeoutS = 60) {
  const args = { offset, until: BANNER, wait_ms: timeoutS * 1000 };
  // The SDK's own request timeout (60 s by default) must outlast the wait.
  const s = (await tool(c, "serial.read", args, { timeout: (timeoutS + 30) * 1000 })).structuredContent;
  if (s.matched) return s.match_offset + BANNER.length;
  if (s.lost > 0) return null;
  throw new StepFailed(`no '${BANNER}' on the console within ${timeoutS} s`);
}

// Runs a shell command, printing its output as it streams; the final result and the text
// that streamed.
async function runCommand(c, command) {
  const pieces = [];
  const onprogress = ({ message }) => {
    if (!message) return;
    pieces.push(message);
    for (const line of message.replace(/\r?\n$/, "").split(/\r?\n/)) console.log(`    | ${line}`);
  };
  const r = await tool(c, "shell.exec", { command }, { onprogress, resetTimeoutOnProgress: true });
  return [r, pieces.join("")];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// After a reset: the machine's status once a new boot answers. That is one whose uptime is below
// the old boot's, or any that answers after the machine was seen gone (a boot slower than the
// old one's uptime has counted past it by the time it answers).
async function waitUntilBack(url, token, mode, uptimeBefore, timeoutS = 120) {
  const deadline = Date.now() + timeoutS * 1000;
  let wentAway = false;
  while (Date.now() < deadline) {
    let c;
    try {
      c = await connect(url, token, mode, { timeout: 5000 });
      c.client.onerror = () => {};
      const st = (await tool(c, "status", {}, { timeout: 5000 })).structuredContent;
      if (wentAway || st.uptime_ms < uptimeBefore) return st;
    } catch {
      // The machine is rebooting: connection refused, reset, timeout.
      wentAway = true;
    } finally {
      if (c) await disconnect(c);
    }
    await sleep(500);
  }
  throw new StepFailed(`the machine did not come back within ${timeoutS} s`);
}

async function agentLoop(url, token, mode, outDir) {
  let c = await connect(url, token, mode);
  console.log(`connected: ${url} speaking ${c.client.getNegotiatedProtocolVersion()}`);
  let st = (await tool(c, "status")).structuredContent;
  console.log(`machine: ${st.module} build ${st.build_id}, up ${st.uptime_ms} ms`);

  // 1. The banner (the first look waits briefly: on a machine up for long it has scrolled out
  // of the ring, and the machine answering says enough).
  let after = await waitForBanner(c, 0, 3);
  if (after === null) console.log("1 banner: no longer in the console's ring; the machine is up");
  else console.log(`1 banner: '${BANNER}' on the console, ends at offset ${after}`);

  // 2. A file.
  const file = "/agent-loop.txt";
  let text = "";
  for (let i = 1; i <= 5; i++) text += `line ${i} written by the agent loop\n`;
  const w = (await tool(c, "fs.write", { path: file, content: text })).structuredContent;
  console.log(`2 wrote ${file}: ${JSON.stringify(w)}`);

  // 3. A command reading it, its output watched as it streams.
  const [r, streamed] = await runCommand(c, `cat ${file}`);
  const out = r.structuredContent;
  if (out.exit_status !== 0 || out.output !== text) {
    throw new StepFailed(`cat ${file}: ${JSON.stringify(out)}`);
  }
  console.log(`3 ran \`cat ${file}\`: exit 0, ${Buffer.byteLength(streamed)} bytes streamed as it ran`);

  // 4. The screen.
  const shot = await tool(c, "screen.capture", { scale: 4 });
  const image = shot.content.find((b) => b.type === "image");
  if (!image) throw new StepFailed(`screen.capture returned no image: ${JSON.stringify(shot.content)}`);
  const png = Buffer.from(image.data, "base64");
  if (!png.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) {
    throw new StepFailed("screen.capture: not a PNG");
  }
  const shotPath = path.join(outDir, "agent-loop-screen.png");
  fs.writeFileSync(shotPath, png);
  console.log(`4 screen: ${png.length} bytes of PNG in ${shotPath}`);

  // 5. Reset. The console keeps counting across it (or starts again from 0 on a machine whose
  // ring does not survive a reset): the new boot's banner is past `head`.
  const uptime = (await tool(c, "status")).structuredContent.uptime_ms;
  const head = await consoleHead(c);
  // The session (legacy era) dies with the machine: the SDK's event stream fails and its DELETE
  // is refused, which is expected here, so their errors are not printed.
  c.client.onerror = () => {};
  await tool(c, "system.reset", { delay_ms: 200 });
  await disconnect(c);
  console.log("5 reset requested; waiting for the machine");
  st = await waitUntilBack(url, token, mode, uptime);
  c = await connect(url, token, mode);
  try {
    const start = (await consoleHead(c)) >= head ? head : 0;
    after = await waitForBanner(c, start);
    if (after === null) throw new StepFailed("the new boot's banner is not in the console's ring");
  } finally {
    await disconnect(c);
  }
  console.log(`5 back: build ${st.build_id}, up ${st.uptime_ms} ms, banner at ${after}`);
}

async function main() {
  const { values: opts } = parseArgs({
    options: {
      url: { type: "string", default: process.env.IRIX7_URL || "http://127.0.0.1:7801/mcp" },
      token: { type: "string" },
      mode: { type: "string", default: "auto" },
      "out-dir": { type: "string", default: "." },
      help: { type: "boolean", short: "h" },
    },
  });
  if (opts.help) {
    console.log(
      "usage: node examples/agent_loop.cjs [--url URL] [--token TOKEN] [--mode auto|legacy|2026-07-28] [--out-dir DIR]",
    );
    return 0;
  }
  if (!Object.hasOwn(MODES, opts.mode)) {
    console.error(`--mode ${opts.mode}: want auto, legacy or 2026-07-28`);
    return 2;
  }
  try {
    await agentLoop(opts.url, tokenSource(opts.url, opts.token), opts.mode, opts["out-dir"]);
  } catch (e) {
    console.error(`FAILED: ${e instanceof StepFailed ? e.message : e.stack || e}`);
    return 1;
  }
  console.log("done");
  return 0;
}

// Exits once the loop is over, whatever the SDK still has pending (a reconnect timer of an event
// stream to a machine that reset).
main().then((code) => process.exit(code));
