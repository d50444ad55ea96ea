//! `cargo xtask deploy`: build the image, name it in `boot/config.conf`, ask the running machine
//! to reset (`system.reset` over MCP), then wait until the new build answers and say what it saw:
//! the new build id and digest, or the kernel's refusal and the last good image it runs instead.

use crate::image;
use host_http::Response;
use rpc::testing::McpRequest;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How to deploy.
pub struct Options {
    /// The machine's MCP endpoint, `http://host:port/path`.
    pub url: String,
    /// A file holding the machine's bearer token; without one, the file the rig writes for a
    /// local forwarded port (`target/iris/token-<port>`) when it exists.
    pub token_file: Option<PathBuf>,
    /// Appended to the build id (see `image::Options::build_tag`).
    pub build_tag: Option<String>,
    /// How long to wait for the new build to answer.
    pub timeout: Duration,
}

/// Milliseconds between `system.reset`'s answer and the reset.
const RESET_DELAY_MS: u64 = 250;
/// Pause between two looks at the machine (its per-client limit is 20 requests a second).
const PACE: Duration = Duration::from_millis(500);
/// Largest response read.
const MAX_RESPONSE: u64 = 1 << 20;

pub fn run(opts: &Options) -> Result<(), String> {
    let endpoint = Endpoint::parse(&opts.url)?;
    let rig_file = rig_token_file(&endpoint).filter(|p| p.is_file());
    let client = Client {
        endpoint,
        token_file: opts.token_file.clone().or(rig_file),
    };
    // A token file that cannot be read is said before anything is built.
    client.token()?;

    let img = image::build(&image::Options {
        out: image::IMAGE_PATH.into(),
        build_tag: opts.build_tag.clone(),
        ..Default::default()
    })?;
    let build_id = img.build_id.clone().unwrap_or_default();
    println!(
        "built   {} ({} bytes), build {build_id}, sha256 {}",
        image::IMAGE_PATH,
        img.bytes.len(),
        img.sha256
    );
    image::update_config(&img.sha256)?;
    println!("{} now names it", image::CONFIG_PATH);

    let before = client.status()?;
    println!("running {}", describe(&before));
    let uptime_before = before["uptime_ms"].as_u64().unwrap_or(0);
    let seen_before = Instant::now();
    let reset = client.call("system.reset", json!({"delay_ms": RESET_DELAY_MS}))?;
    if reset["action"] != "reset" {
        return Err(format!("system.reset answered {reset}"));
    }
    println!("reset   in {RESET_DELAY_MS} ms; waiting for build {build_id}");

    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(RESET_DELAY_MS));
    let mut last_error = None;
    loop {
        // Each look reads the token file again: a rig whose module generates its token at
        // each boot rewrites it after the reset, and the old token gets 401 from then on.
        let st = client.status();
        if let Err(e) = &st {
            last_error = Some(e.clone());
        }
        if let Ok(st) = st {
            let rebooted = st["uptime_ms"]
                .as_u64()
                .is_some_and(|u| has_rebooted(uptime_before, seen_before.elapsed(), u));
            let sha = st["image"]["sha256"].as_str().unwrap_or_default();
            // Before the reset the old instance answers; a redeploy of the same build must not
            // be taken for done until the machine has rebooted.
            if rebooted && sha == img.sha256 && st["build_id"] == build_id.as_str() {
                println!(
                    "up      {} after {:.1} s",
                    describe(&st),
                    start.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            if rebooted {
                println!("up      {}", describe(&st));
                return Err(match st["image"]["deploy"].as_str() {
                    Some(why) if why != "ok" => format!(
                        "the kernel refused the deploy ({why}) and runs the last good image {sha}"
                    ),
                    _ => format!("the machine came back on another image ({sha})"),
                });
            }
        }
        if start.elapsed() > opts.timeout {
            return Err(format!(
                "build {build_id} did not answer within {:?}{}",
                opts.timeout,
                last_error.map_or(String::new(), |e| format!(" (last: {e})"))
            ));
        }
        std::thread::sleep(PACE);
    }
}

/// Whether an uptime of `now` ms, read `elapsed` after one of `before` ms, is a new boot's:
/// without a reboot it would be about `before + elapsed`; the reset comes `RESET_DELAY_MS`
/// after the request, so a new boot's uptime is at least that much less. Half of it is the
/// margin for the time the requests themselves took.
fn has_rebooted(before: u64, elapsed: Duration, now: u64) -> bool {
    now + RESET_DELAY_MS / 2 < before + elapsed.as_millis() as u64
}

/// What `status` says about the running build, in one line.
fn describe(st: &Value) -> String {
    let image = &st["image"];
    let mut line = format!(
        "irix7-mcp {} build {}, image sha256 {}, uptime {} ms",
        st["module_version"].as_str().unwrap_or("?"),
        st["build_id"].as_str().unwrap_or("?"),
        image["sha256"].as_str().unwrap_or("unknown"),
        st["uptime_ms"]
    );
    if let (Some(why), Some(refused)) = (
        image["deploy"].as_str().filter(|d| *d != "ok"),
        image["refused_sha256"].as_str(),
    ) {
        line.push_str(&format!(" (deploy of {refused} refused: {why})"));
    }
    line
}

/// `http://host:port/path`.
struct Endpoint {
    authority: String,
    path: String,
}

/// Where the rig writes the token its module generated, for an endpoint on a local port
/// (`docs/rig.md`); `None` for a remote machine.
fn rig_token_file(e: &Endpoint) -> Option<PathBuf> {
    let (host, port) = e.authority.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    matches!(host, "127.0.0.1" | "localhost")
        .then(|| crate::cmd::repo_root().join(format!("target/iris/token-{port}")))
}

impl Endpoint {
    fn parse(url: &str) -> Result<Endpoint, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/mcp"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{url}: no host"));
        }
        Ok(Endpoint {
            authority: authority.to_string(),
            path: path.to_string(),
        })
    }
}

struct Client {
    endpoint: Endpoint,
    /// Read again for every request (see `run`); `None`: the machine takes no token.
    token_file: Option<PathBuf>,
}

impl Client {
    /// The token the file holds now, trimmed.
    fn token(&self) -> Result<Option<String>, String> {
        let Some(p) = &self.token_file else {
            return Ok(None);
        };
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("token file {}: {e}", p.display()))?;
        Ok(Some(text.trim().to_string()))
    }

    /// The `status` tool's structured result.
    fn status(&self) -> Result<Value, String> {
        self.call("status", json!({}))
    }

    /// One stateless `tools/call`: the structured result, or why there is none.
    fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let e = &self.endpoint;
        let request = McpRequest::modern("tools/call", json!({"name": tool, "arguments": args}))
            .meta(
                "io.modelcontextprotocol/clientInfo",
                json!({"name": "xtask-deploy", "version": "1"}),
            )
            .header("Connection", "close")
            .http(&e.path, &e.authority, self.token()?.as_deref());
        let addr = e
            .authority
            .to_socket_addrs()
            .map_err(|err| format!("{}: {err}", e.authority))?
            .next()
            .ok_or_else(|| format!("{} has no address", e.authority))?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))
            .map_err(|err| format!("{addr}: {err}"))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|err| err.to_string())?;
        s.write_all(&request)
            .map_err(|err| format!("{addr}: {err}"))?;
        let response = host_http::read_response(&mut s.take(MAX_RESPONSE), &mut Vec::new(), false)
            .map_err(|err| format!("{addr}: {err}"))?;
        let msg = message(&response)?;
        let result = msg.get("result").ok_or_else(|| format!("{tool}: {msg}"))?;
        if result["isError"] == true {
            return Err(format!("{tool}: {}", result["content"][0]["text"]));
        }
        Ok(result["structuredContent"].clone())
    }
}

/// The JSON-RPC message of a response: a JSON body, or the last `data:` line of an event
/// stream.
fn message(response: &Response) -> Result<Value, String> {
    match response.status {
        200 => {}
        401 => return Err("HTTP 401: the machine wants its token (--token-file)".into()),
        status => return Err(format!("HTTP {status}")),
    }
    let text = response.text();
    let event_stream = response
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/event-stream"));
    let json = if event_stream {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .ok_or("an event stream with no data")?
            .trim()
            .to_string()
    } else {
        text
    };
    serde_json::from_str(&json).map_err(|e| format!("not JSON ({e}): {json}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:7801/mcp").unwrap();
        assert_eq!(
            (e.authority.as_str(), e.path.as_str()),
            ("127.0.0.1:7801", "/mcp")
        );
        assert_eq!(Endpoint::parse("http://indy:7801").unwrap().path, "/mcp");
        assert!(Endpoint::parse("https://indy/mcp").is_err());
        assert!(Endpoint::parse("http://u@indy/mcp").is_err());
    }

    #[test]
    fn the_rigs_token_file_is_for_local_ports_only() {
        let file = |url| rig_token_file(&Endpoint::parse(url).unwrap());
        let want = crate::cmd::repo_root().join("target/iris/token-7801");
        assert_eq!(file("http://127.0.0.1:7801/mcp"), Some(want.clone()));
        assert_eq!(file("http://localhost:7801/mcp"), Some(want));
        assert_eq!(file("http://indy:7801/mcp"), None);
        assert_eq!(file("http://127.0.0.1/mcp"), None);
    }

    #[test]
    fn reboots() {
        let s = Duration::from_secs;
        // Still the old boot: its uptime went on.
        assert!(!has_rebooted(20_000, s(2), 22_010));
        assert!(!has_rebooted(300, s(2), 2_250));
        // A new boot, also when the old one was younger than the new one is now.
        assert!(has_rebooted(20_000, s(2), 1_500));
        assert!(has_rebooted(300, s(3), 1_000));
    }

    /// `message` of a whole response as it arrives at the end of the connection.
    fn parse(wire: &[u8]) -> Result<Value, String> {
        let mut r = wire;
        let response = host_http::read_response(&mut r, &mut Vec::new(), false).unwrap();
        message(&response)
    }

    #[test]
    fn responses() {
        let json = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"id\":1}";
        assert_eq!(parse(json).unwrap(), json!({"id": 1}));
        let sse = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                    Transfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n9\r\n {\"id\":2}\r\n0\r\n\r\n";
        assert_eq!(parse(sse).unwrap(), json!({"id": 2}));
        assert!(
            parse(b"HTTP/1.1 401 Unauthorized\r\n\r\n")
                .unwrap_err()
                .starts_with("HTTP 401")
        );
        assert_eq!(
            parse(b"HTTP/1.1 404 Not Found\r\n\r\n").unwrap_err(),
            "HTTP 404"
        );
    }

    /// The review's NIT: after a reset the rig's module generates a new token and the rig
    /// rewrites its file; the next look must bear the new one. A one-connection-at-a-time
    /// server answers `status` to the token its file holds and 401 to any other.
    #[test]
    fn each_look_reads_the_token_file_again() {
        use std::io::BufRead;
        let dir = std::env::temp_dir().join(format!("xtask-deploy-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token-7801");
        std::fs::write(&file, "aaaa\n").unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let mut seen = Vec::new();
            for want in ["aaaa", "bbbb", "bbbb"] {
                let (s, _) = listener.accept().unwrap();
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                let (mut auth, mut len) = (String::new(), 0usize);
                loop {
                    let mut line = String::new();
                    r.read_line(&mut line).unwrap();
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Authorization: Bearer ") {
                        auth = v.to_string();
                    }
                    if let Some(v) = line.strip_prefix("Content-Length: ") {
                        len = v.parse().unwrap();
                    }
                }
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                let answer = if auth == want {
                    let msg = json!({"jsonrpc": "2.0", "id": 1,
                        "result": {"structuredContent": {"uptime_ms": 5}}})
                    .to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                         Content-Length: {}\r\nConnection: close\r\n\r\n{msg}",
                        msg.len()
                    )
                } else {
                    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .to_string()
                };
                (&s).write_all(answer.as_bytes()).unwrap();
                seen.push(auth);
            }
            seen
        });
        let client = Client {
            endpoint: Endpoint::parse(&format!("http://127.0.0.1:{port}/mcp")).unwrap(),
            token_file: Some(file.clone()),
        };
        assert_eq!(client.status().unwrap()["uptime_ms"], 5);
        // The reset: the old token is refused from now on, and the rig writes the new one.
        let refused = client.status().unwrap_err();
        assert!(refused.starts_with("HTTP 401"), "{refused}");
        std::fs::write(&file, "bbbb\n").unwrap();
        assert_eq!(client.status().unwrap()["uptime_ms"], 5);
        assert_eq!(server.join().unwrap(), ["aaaa", "aaaa", "bbbb"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_request_is_a_modern_stateless_call() {
        let request = McpRequest::modern("tools/call", json!({"name": "status"}))
            .header("Connection", "close")
            .http("/mcp", "indy:7801", Some("t"));
        let text = String::from_utf8(request).unwrap();
        for line in [
            "POST /mcp HTTP/1.1\r\nHost: indy:7801\r\nAuthorization: Bearer t\r\n",
            "MCP-Protocol-Version: ",
            "Mcp-Name: status\r\n",
            "Connection: close\r\n",
        ] {
            assert!(text.contains(line), "{text}");
        }
    }
}
