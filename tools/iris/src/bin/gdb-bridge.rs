//! The host bridge GDB runs as `target remote | gdb-bridge …`: GDB's remote protocol on its
//! standard input and output, carried to the module's `POST /debug/rsp` on the MCP port with
//! the bearer token (docs/debug.md). It sends what GDB wrote as one exchange's body and writes
//! the stub's answer back; while GDB waits for the context to stop it asks again at once (the
//! module holds each ask up to half a second). When GDB closes the pipe it ends the session
//! with `DELETE /debug/rsp`, which puts back every breakpoint and lets the context run.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "gdb-bridge",
    about = "GDB's remote protocol on stdin/stdout, to the module's /debug/rsp"
)]
struct Cli {
    /// The machine's address.
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Its MCP port (the rig forwards 7801 by default).
    #[arg(long, default_value_t = 7801)]
    port: u16,
    /// The name to put in `Host` (one of the machine's names, `mcp.hosts`).
    #[arg(long, default_value = "localhost")]
    host_name: String,
    /// A file holding the administrator's token (the rig writes target/iris/token-<port>);
    /// without it the token comes from IRIX7_MCP_TOKEN, never from the command line, which
    /// every user of the host can see.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// The context to debug.
    #[arg(long, default_value_t = 1)]
    ctx: u32,
}

/// Whether a packet GDB sent lets the context run (continue or step, in any form).
fn resumes(packet: &[u8]) -> bool {
    let body = packet.strip_prefix(b"$").unwrap_or(packet);
    matches!(body.first(), Some(b'c' | b's' | b'C' | b'S'))
        || ["vCont;c", "vCont;s", "vCont;C", "vCont;S"]
            .iter()
            .any(|p| body.starts_with(p.as_bytes()))
}

/// Whether the stub's bytes hold a stop reply (the context stopped, exited or was killed).
fn stop_reply(bytes: &[u8]) -> bool {
    bytes
        .windows(2)
        .any(|w| w[0] == b'$' && matches!(w[1], b'T' | b'S' | b'W' | b'X'))
}

struct Link {
    cli: Cli,
    token: String,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
}

impl Link {
    /// One exchange: `method` with `body`, the answer's body back (reconnecting once when a
    /// kept-alive connection was closed under it).
    fn exchange(&mut self, method: &str, body: &[u8]) -> Result<Vec<u8>, String> {
        for attempt in 0..2 {
            if self.stream.is_none() {
                let s = TcpStream::connect((self.cli.addr.as_str(), self.cli.port))
                    .map_err(|e| format!("connect {}:{}: {e}", self.cli.addr, self.cli.port))?;
                let _ = s.set_nodelay(true);
                self.stream = Some(s);
                self.buf.clear();
            }
            let Some(stream) = self.stream.as_mut() else {
                continue;
            };
            let head = format!(
                "{method} /debug/rsp?ctx={} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
                 Content-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
                self.cli.ctx,
                self.cli.host_name,
                self.token,
                body.len()
            );
            let sent = stream
                .write_all(head.as_bytes())
                .and_then(|_| stream.write_all(body));
            let got = sent.map_err(|e| e.to_string()).and_then(|_| {
                host_http::read_response(stream, &mut self.buf, false).map_err(|e| format!("{e:?}"))
            });
            match got {
                Ok(r) if r.status == 200 || r.status == 204 => return Ok(r.body),
                Ok(r) => return Err(format!("{} {}: {}", r.status, r.reason, r.text().trim())),
                Err(e) if attempt == 0 => {
                    let _ = e;
                    self.stream = None;
                }
                Err(e) => return Err(e),
            }
        }
        Err("no connection".into())
    }
}

/// Largest body one exchange carries (the module's bound).
const BODY_MAX: usize = 8192;

fn run(cli: Cli) -> Result<(), String> {
    let token = match &cli.token_file {
        Some(f) => std::fs::read_to_string(f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .trim()
            .to_string(),
        None => std::env::var("IRIX7_MCP_TOKEN")
            .map_err(|_| "give --token-file FILE (or set IRIX7_MCP_TOKEN)".to_string())?,
    };
    let mut link = Link {
        cli,
        token,
        stream: None,
        buf: Vec::new(),
    };
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut b = [0u8; 4096];
        loop {
            match stdin.read(&mut b) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(b[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let mut stdout = std::io::stdout().lock();
    let mut running = false;
    let mut input: Vec<u8> = Vec::new();
    loop {
        // Block for GDB unless it waits for a stop: then ask the stub again at once.
        let first = if running || !input.is_empty() {
            match rx.recv_timeout(Duration::from_millis(1)) {
                Ok(b) => Some(b),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            }
        } else {
            match rx.recv() {
                Ok(b) => Some(b),
                Err(_) => break,
            }
        };
        input.extend(first.into_iter().flatten());
        while let Ok(more) = rx.try_recv() {
            input.extend(more);
        }
        let n = input.len().min(BODY_MAX);
        let body: Vec<u8> = input.drain(..n).collect();
        // Each packet of GDB's in this body, by its '$'.
        for (i, _) in body.iter().enumerate().filter(|(_, b)| **b == b'$') {
            if resumes(&body[i..]) {
                running = true;
            }
        }
        let answer = link.exchange("POST", &body)?;
        if stop_reply(&answer) {
            running = false;
        }
        stdout
            .write_all(&answer)
            .and_then(|_| stdout.flush())
            .map_err(|e| e.to_string())?;
    }
    let _ = link.exchange("DELETE", &[]);
    Ok(())
}

fn main() {
    if let Err(e) = run(Cli::parse()) {
        eprintln!("gdb-bridge: {e}");
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resumes_and_stop_replies() {
        assert!(resumes(b"$c#63"));
        assert!(resumes(b"$vCont;s:1#23"));
        assert!(resumes(b"$s#73"));
        assert!(!resumes(b"$g#67"));
        assert!(!resumes(b"$vCont?#49"));
        assert!(stop_reply(b"+$T05swbreak:;#00"));
        assert!(stop_reply(b"$S02#b5"));
        assert!(!stop_reply(b"+$OK#9a"));
    }
}
