// The live console: turns the status page into a console once the developer gives a token.
// Every action is a JSON-RPC call to /mcp (2026-07-28, stateless), so the policy, the roles,
// the rate limits and the audit apply to the page as to any agent (docs/console.md).
// The token lives only in this tab's sessionStorage and leaves it only in an
// `Authorization: Bearer` header of a fetch: never in a URL, a cookie or a log.
"use strict";
(() => {
  const VERSION = "2026-07-28";
  const KEY = "irix7-mcp.token";
  // Bounds: what the page keeps of the console, and the most one stream frame may hold.
  const SERIAL_KEEP = 64 * 1024;
  const FRAME_MAX = 64 * 1024;
  const AUDIT_LINES = 40;
  const SCREEN_EVERY_MS = 5000;

  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v);
    }
    e.append(...kids);
    return e;
  };
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  let token = sessionStorage.getItem(KEY);
  let nextId = 1;
  let tools = new Map();
  let listening = null;
  let serialOffset;
  let status = null;
  let statusAt = 0;
  let resetting = false;
  let lastScreen = 0;
  let auditTimer = 0;
  let screenTimer = 0;
  let pollTimer = 0;
  let ticking = 0;

  class Refused extends Error {
    constructor(httpStatus, message) {
      super(message);
      this.httpStatus = httpStatus;
    }
  }

  function headers(method, name, accept) {
    const h = {
      "Content-Type": "application/json",
      Accept: accept,
      "MCP-Protocol-Version": VERSION,
      "Mcp-Method": method,
      Authorization: "Bearer " + token,
    };
    if (name) h["Mcp-Name"] = name;
    return h;
  }

  function body(id, method, params) {
    params = Object.assign({}, params);
    params._meta = {
      "io.modelcontextprotocol/protocolVersion": VERSION,
      "io.modelcontextprotocol/clientCapabilities": {},
    };
    return JSON.stringify({ jsonrpc: "2.0", id, method, params });
  }

  // The JSON-RPC messages of an event stream's text (its `data:` lines, frame by frame).
  function sseMessages(text) {
    const out = [];
    for (const frame of text.split(/\r?\n\r?\n/)) {
      const data = frame
        .split(/\r?\n/)
        .filter((l) => l.startsWith("data:"))
        .map((l) => l.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) {
        try {
          out.push(JSON.parse(data));
        } catch (_) {
          // Not JSON: not ours to read.
        }
      }
    }
    return out;
  }

  // One request to /mcp; resolves to its result, throws Refused for an HTTP or JSON-RPC error.
  async function rpc(method, params, name) {
    const id = nextId++;
    const r = await fetch("/mcp", {
      method: "POST",
      headers: headers(method, name, "application/json, text/event-stream"),
      body: body(id, method, params),
      cache: "no-store",
      credentials: "omit",
    });
    const text = await r.text();
    let msg;
    if ((r.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
      msg = sseMessages(text).find((m) => m.id === id);
    } else {
      try {
        msg = JSON.parse(text);
      } catch (_) {
        msg = undefined;
      }
    }
    if (!r.ok || !msg || msg.error) {
      const why = msg && msg.error ? msg.error.message : text.trim() || r.statusText;
      throw new Refused(r.status, why);
    }
    return msg.result;
  }

  // A tool call; throws Refused with the tool's `E_<CODE>: …` text when it reports an error.
  async function call(tool, args) {
    const result = await rpc("tools/call", { name: tool, arguments: args || {} }, tool);
    if (result.isError) {
      const t = (result.content || []).find((c) => c.type === "text");
      throw new Refused(200, t ? t.text : tool + " failed");
    }
    return result;
  }

  const structured = (result) => result.structuredContent || {};

  // Whether the stream is open ("live"), shown apart from the messages.
  function liveness(text, cls) {
    const s = $("live");
    if (!s) return;
    s.textContent = text;
    s.className = cls;
  }

  function say(text, cls) {
    const s = $("state");
    if (!s) return;
    s.textContent = text;
    s.className = cls || "note";
  }

  // ---- the token form ----

  function showLogin(why) {
    stopListening();
    const old = $("console");
    if (old) old.remove();
    if ($("login-form")) {
      $("login-why").textContent = why || "";
      return;
    }
    const input = el("input", {
      id: "token",
      type: "password",
      autocomplete: "off",
      spellcheck: "false",
      "aria-label": "token",
      placeholder: "token (kept in this tab only)",
    });
    const form = el(
      "form",
      { id: "login-form", class: "bar" },
      el("span", { text: "Live console:" }),
      input,
      el("button", { id: "login", type: "submit", text: "Open" }),
      el("span", { id: "login-why", class: "error", text: why || "" }),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const value = input.value.trim();
      input.value = "";
      if (!value) return;
      token = value;
      sessionStorage.setItem(KEY, value);
      form.remove();
      start();
    });
    document.body.append(form);
  }

  function logout(why) {
    token = null;
    sessionStorage.removeItem(KEY);
    showLogin(why);
  }

  // ---- the console's layout ----

  function row(label, id) {
    return el("tr", {}, el("td", { text: label }), el("td", { id }));
  }

  function build() {
    const may = (t) => tools.has(t);
    const statusTable = el(
      "table",
      { id: "status" },
      row("build", "st-build"),
      row("uptime", "st-uptime"),
      row("last boot", "st-boot"),
      row("heap", "st-heap"),
      row("connections", "st-conn"),
      row("policy", "st-policy"),
      row("role", "st-role"),
    );
    const actions = el("div", { class: "bar" });
    for (const [tool, label, id] of [
      ["system.reset", "Reset", "reset"],
      ["system.poweroff", "Power off", "poweroff"],
    ]) {
      if (!may(tool)) continue;
      const b = el("button", { id, class: "danger", type: "button", text: label + "\u2026" });
      b.addEventListener("click", () => confirmThen(label, tool));
      actions.append(b);
    }
    const out = el("button", { id: "logout", type: "button", text: "Forget token" });
    out.addEventListener("click", () => logout(""));
    actions.append(
      out,
      el("span", { id: "live", class: "note" }),
      el("span", { id: "state", class: "note" }),
    );
    const confirm = el("div", { id: "confirm", class: "bar confirm", hidden: "" });

    const serial = el("pre", { id: "serial", "aria-label": "serial console" });
    const left = el("div", {}, el("h2", { text: "Serial console" }), serial);
    if (may("console.write") || may("input.keys")) left.append(typingLine(may));

    const img = el("img", { id: "screen", alt: "the screen (thumbnail)" });
    const refresh = el("button", { id: "refresh-screen", type: "button", text: "Refresh" });
    refresh.addEventListener("click", () => screen());
    const right = el("div", {}, el("h2", { text: "Screen" }), img);
    const bar = el("div", { class: "bar" }, refresh);
    if (may("screen.capture")) {
      const bmp = el("a", { id: "bmp", href: "#", text: "full BMP" });
      bmp.addEventListener("click", (ev) => {
        ev.preventDefault();
        fullBmp();
      });
      bar.append(bmp);
    }
    right.append(bar, el("h2", { text: "Audit (newest last)" }), el("pre", { id: "audit" }));

    const section = el(
      "section",
      { id: "console" },
      el("h2", { text: "Live console" }),
      statusTable,
      actions,
      confirm,
      el("div", { class: "grid" }, left, right),
    );
    document.body.append(section);
  }

  function typingLine(may) {
    const line = el("input", {
      id: "line",
      autocomplete: "off",
      "aria-label": "line to send",
      placeholder: "a line for the console",
    });
    const form = el("form", { id: "line-form", class: "bar" }, line);
    const keys = may("input.keys");
    const mode = el("input", { id: "as-keys", type: "checkbox" });
    if (keys && may("console.write")) {
      form.append(el("label", {}, mode, " as keystrokes"));
    }
    form.append(el("button", { id: "send", type: "submit", text: "Send" }));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const text = line.value;
      if (!text) return;
      const asKeys = keys && (mode.checked || !may("console.write"));
      try {
        if (asKeys) await call("input.keys", { keys: text + "\r" });
        else await call("console.write", { text });
        line.value = "";
      } catch (e) {
        say(e.message, "error");
      }
    });
    return form;
  }

  function confirmThen(label, tool) {
    const box = $("confirm");
    box.replaceChildren();
    const yes = el("button", {
      id: "confirm-yes",
      class: "danger",
      type: "button",
      text: "Yes, " + label.toLowerCase(),
    });
    const no = el("button", { id: "confirm-no", type: "button", text: "Cancel" });
    box.append(el("span", { text: label + " the machine? Running work is lost." }), yes, no);
    box.hidden = false;
    no.addEventListener("click", () => (box.hidden = true));
    yes.addEventListener("click", () => {
      box.hidden = true;
      if (tool === "system.reset") reset();
      else powerOff();
    });
  }

  // ---- what the page shows ----

  function fmtUptime(ms) {
    const s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400);
    const p = (n) => String(n).padStart(2, "0");
    return `${d}d ${p(Math.floor(s / 3600) % 24)}:${p(Math.floor(s / 60) % 60)}:${p(s % 60)}`;
  }

  function showUptime() {
    if (!status || !$("st-uptime")) return;
    $("st-uptime").textContent = fmtUptime(status.uptime_ms + (Date.now() - statusAt));
  }

  function bootLine(b) {
    if (!b) return "unknown";
    let line = b.cause;
    if (b.previous_uptime_ms) line += ", previous boot ran " + fmtUptime(b.previous_uptime_ms);
    if (b.boots) line += ` (boot ${b.boots})`;
    return line;
  }

  async function refreshStatus() {
    const s = structured(await call("status"));
    status = s;
    statusAt = Date.now();
    const set = (id, text) => $(id) && ($(id).textContent = text);
    set("st-build", `${s.module || "irix7-mcp"} ${s.module_version || ""} build ${s.build_id}`);
    set("st-boot", bootLine(s.boot));
    if (s.heap) set("st-heap", `${s.heap.used} of ${s.heap.size} bytes in use (peak ${s.heap.peak})`);
    set("st-conn", `${s.open_connections} open, ${s.requests} requests served`);
    set("st-policy", s.policy || "");
    showUptime();
    return s;
  }

  function showRole() {
    const order = ["observe", "operate", "administer"];
    let top = 0;
    for (const t of tools.values()) {
      const p = order.indexOf((t._meta || {})["irix7/privilege"]);
      if (p > top) top = p;
    }
    $("st-role").textContent = `${order[top]} (${tools.size} tools)`;
  }

  function appendSerial(text) {
    const pre = $("serial");
    if (!pre) return;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    let all = pre.textContent + text;
    if (all.length > SERIAL_KEEP) all = all.slice(all.length - SERIAL_KEEP);
    pre.textContent = all;
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  let pulling = false;
  // Reads the serial ring from where the page is, by the rules of `serial.read`: bytes the
  // ring dropped before the page read them are counted, and a ring that restarted (a new
  // boot) is read from its oldest byte.
  async function pullSerial() {
    if (pulling) return;
    pulling = true;
    try {
      for (let round = 0; round < 16; round++) {
        const args = { max_bytes: 8192 };
        if (serialOffset !== undefined) args.offset = serialOffset;
        let r;
        try {
          r = structured(await call("serial.read", args));
        } catch (e) {
          if (e.httpStatus === 200 && /^E_RANGE/.test(e.message)) {
            appendSerial("\n--- the console restarted (a new boot) ---\n");
            serialOffset = undefined;
            continue;
          }
          throw e;
        }
        if (r.lost) appendSerial(`\n--- ${r.lost} bytes lost ---\n`);
        appendSerial(r.data || "");
        serialOffset = r.next_offset;
        if (r.eof || !r.bytes) break;
      }
    } finally {
      pulling = false;
    }
  }

  async function refreshAudit() {
    const r = await rpc("resources/read", { uri: "irix7://audit" }, "irix7://audit");
    const text = ((r.contents || [])[0] || {}).text || "";
    const lines = text.split("\n").filter((l) => l && !l.startsWith("#"));
    $("audit").textContent = lines.slice(-AUDIT_LINES).join("\n");
    $("audit").scrollTop = $("audit").scrollHeight;
  }

  async function screen() {
    if (!tools.has("screen.capture")) return;
    lastScreen = Date.now();
    const r = await call("screen.capture");
    const image = (r.content || []).find((c) => c.type === "image");
    if (image && /^image\/png$/.test(image.mimeType)) {
      $("screen").src = "data:image/png;base64," + image.data;
    }
  }

  // The full BMP needs the token, which a plain link cannot carry: fetched here, handed to
  // the browser as a download of its bytes.
  async function fullBmp() {
    try {
      const r = await fetch("/screen.bmp", {
        headers: { Authorization: "Bearer " + token },
        cache: "no-store",
        credentials: "omit",
      });
      if (!r.ok) throw new Refused(r.status, (await r.text()).trim());
      const url = URL.createObjectURL(await r.blob());
      const a = el("a", { href: url, download: "screen.bmp" });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    } catch (e) {
      say("full BMP: " + e.message, "error");
    }
  }

  // Throttled refreshes: the audit and the screen follow the console's activity.
  function soon(kind) {
    if (kind === "audit" && !auditTimer) {
      auditTimer = setTimeout(() => {
        auditTimer = 0;
        refreshAudit().catch(failed);
      }, 300);
    }
    if (kind === "screen" && !screenTimer) {
      const wait = Math.max(300, lastScreen + SCREEN_EVERY_MS - Date.now());
      screenTimer = setTimeout(() => {
        screenTimer = 0;
        screen().catch(failed);
      }, wait);
    }
  }

  function onUpdate(uri) {
    if (uri === "irix7://serial") {
      pullSerial().catch(failed);
      soon("audit");
      soon("screen");
    } else if (uri === "irix7://status") {
      refreshStatus().catch(failed);
    } else if (uri === "irix7://events") {
      soon("audit");
      refreshStatus().catch(failed);
    }
  }

  // ---- the live stream (subscriptions/listen, read with fetch: EventSource sends no
  // Authorization header) ----

  function stopListening() {
    if (listening) listening.abort();
    listening = null;
  }

  async function listen() {
    stopListening();
    const ctl = new AbortController();
    listening = ctl;
    const uris = ["irix7://serial", "irix7://status", "irix7://events"];
    try {
      const r = await fetch("/mcp", {
        method: "POST",
        headers: headers("subscriptions/listen", null, "text/event-stream"),
        body: body(nextId++, "subscriptions/listen", {
          notifications: { resourceSubscriptions: uris },
        }),
        cache: "no-store",
        credentials: "omit",
        signal: ctl.signal,
      });
      if (!r.ok) throw new Refused(r.status, (await r.text()).slice(0, 200));
      liveness("live", "ok");
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += dec.decode(value, { stream: true });
        let cut;
        while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
          for (const m of sseMessages(frame)) {
            if (m.method === "notifications/resources/updated") onUpdate(m.params.uri);
          }
        }
        if (buf.length > FRAME_MAX) throw new Error("an event larger than the page takes");
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      if (e instanceof Refused && e.httpStatus === 401) return logout("the token was refused");
    } finally {
      if (listening === ctl) {
        listening = null;
        liveness("reconnecting", "note");
      }
    }
    // The stream ended by itself: the machine went away, or a stream slot was not free.
    if (!resetting && token) {
      setTimeout(() => {
        if (!resetting && token && !listening) follow();
      }, 2000);
    }
  }

  // Without a stream, the page still follows the console by asking every 2 s.
  function poll() {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(async () => {
      if (!token) return;
      if (!listening && !resetting) {
        await pullSerial().catch(failed);
        soon("audit");
      }
      poll();
    }, 2000);
  }

  function failed(e) {
    if (e instanceof Refused && e.httpStatus === 401) return logout("the token was refused");
    if (!resetting) say(e.message, "error");
  }

  // ---- reset and power-off: through /mcp like any agent's call ----

  async function reset() {
    const before = status;
    try {
      await call("system.reset");
    } catch (e) {
      return say("reset: " + e.message, "error");
    }
    resetting = true;
    stopListening();
    liveness("offline", "note");
    say("reset requested; waiting for the machine to come back\u2026", "note");
    const deadline = Date.now() + 300000;
    await sleep(1000);
    while (Date.now() < deadline) {
      try {
        const s = structured(await call("status"));
        const boots = (x) => (x && x.boot ? x.boot.boots : 0);
        const newBoot =
          !before ||
          boots(s) !== boots(before) ||
          s.uptime_ms < before.uptime_ms + (Date.now() - statusAt);
        if (newBoot) break;
      } catch (e) {
        if (e instanceof Refused && e.httpStatus === 401) {
          resetting = false;
          return logout("the token was refused after the reset");
        }
      }
      await sleep(1000);
    }
    resetting = false;
    appendSerial("\n--- reset: the machine is back ---\n");
    serialOffset = undefined;
    await follow();
    say("back: booted because " + bootLine(status && status.boot), "ok");
  }

  async function powerOff() {
    try {
      await call("system.poweroff");
      resetting = true;
      stopListening();
      say("powered off: the machine no longer answers", "note");
    } catch (e) {
      say("power off: " + e.message, "error");
    }
  }

  // ---- start ----

  // (Re)reads everything and opens the stream: at the start and after a reset.
  async function follow() {
    await refreshStatus();
    await pullSerial();
    await refreshAudit();
    listen();
    await screen().catch(failed);
  }

  async function start() {
    try {
      const listed = await rpc("tools/list", {});
      tools = new Map((listed.tools || []).map((t) => [t.name, t]));
      build();
      showRole();
      liveness("connecting", "note");
      await follow();
      poll();
      if (!ticking) ticking = setInterval(showUptime, 1000);
    } catch (e) {
      if (e instanceof Refused && e.httpStatus === 401) return logout("the token was refused");
      if (e instanceof Refused && e.httpStatus === 403) return logout(e.message);
      failed(e);
    }
  }

  if (token) start();
  else showLogin("");
})();
