//! `irix7-gateway`: one local MCP endpoint in front of a lab of irix7-mcp machines. It reads a
//! lab file, listens on 127.0.0.1 behind its own bearer token, and forwards each call to the
//! machine the agent names, holding the machines' tokens itself (docs/gateway.md).

#![forbid(unsafe_code)]

mod adopt;
mod audit;
mod auth;
mod bench;
mod discover;
mod events;
mod lab;
mod lan;
mod machine;
mod neighbour;
mod policy;
mod privilege;
mod redact;
mod rigs;
mod server;

use clap::{Parser, Subcommand};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "irix7-gateway",
    about = "One local MCP endpoint for a lab of irix7-mcp machines"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve the lab in FILE.
    Serve {
        /// The lab file (TOML; docs/gateway.md).
        lab: PathBuf,
    },
    /// Browse the LAN for machines announcing `_mcp._tcp` (mDNS/DNS-SD) and list them.
    Discover {
        /// How long to listen for answers.
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Append the machines this lab file lacks (each with a token file to fill in and the
        /// MAC it answered from), after showing what they claim and asking.
        #[arg(long)]
        adopt: Option<PathBuf>,
        /// Adopt without asking.
        #[arg(long, requires = "adopt")]
        yes: bool,
        /// Also adopt machines that announce `auth=none`: the gateway forwards agents' calls
        /// to them without a token. Without it, each is asked about (never with --yes).
        #[arg(long, requires = "adopt")]
        allow_open: bool,
    },
    /// Time small calls through a running gateway and straight to the machine, side by side.
    Bench {
        /// The lab file the gateway serves (for its URL and token and the machine's).
        lab: PathBuf,
        /// The machine to call.
        #[arg(long)]
        machine: String,
        /// Calls per side.
        #[arg(long, default_value_t = 100)]
        calls: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("irix7-gateway: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = match cli.command {
        Cmd::Serve { lab } => rt.block_on(serve(lab)),
        Cmd::Discover {
            seconds,
            adopt,
            yes,
            allow_open,
        } => discover(seconds, adopt, yes, allow_open),
        Cmd::Bench {
            lab,
            machine,
            calls,
        } => rt.block_on(bench::run(lab, machine, calls)),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("irix7-gateway: {e}");
            ExitCode::FAILURE
        }
    }
}

fn discover(
    seconds: u64,
    adopt: Option<PathBuf>,
    yes: bool,
    allow_open: bool,
) -> Result<(), String> {
    use discover::printable;
    let heard = discover::browse(std::time::Duration::from_secs(seconds.clamp(1, 600)), false)?;
    for f in &heard.found {
        println!(
            "{}\t{}\tversion {}\tauth {}",
            f.name,
            f.url,
            f.version.as_deref().unwrap_or("?"),
            f.auth.as_deref().unwrap_or("?")
        );
    }
    for r in &heard.refused {
        println!("refused\t{}\t{}", printable(&r.instance), printable(&r.why));
    }
    let n = heard.found.len();
    println!(
        "{n} machine{} answered in {seconds} s",
        if n == 1 { "" } else { "s" }
    );
    let Some(lab) = adopt else {
        return Ok(());
    };
    let text = std::fs::read_to_string(&lab).map_err(|e| format!("{}: {e}", lab.display()))?;
    let base = lab.parent().unwrap_or(std::path::Path::new("."));
    for s in adopt::survey(&text, base, &heard.found, neighbour::known)? {
        show_known(&s, &lab);
    }
    let mut op = Terminal {
        lab: &lab,
        yes,
        allow_open,
    };
    let out = adopt::adopt(&lab, &heard.found, &mut op, |f| {
        neighbour::probe(f.ip, f.port)
    })?;
    for (name, why) in &out.refused {
        println!("not adopted\t{name}\t{why}");
    }
    for (name, mac) in &out.adopted {
        let open = heard
            .found
            .iter()
            .any(|f| &f.name == name && adopt::is_open(f));
        println!(
            "adopted {name} (MAC {mac}) into {}: {}",
            lab.display(),
            if open {
                "OPEN, the gateway calls it without a token".to_string()
            } else {
                format!(
                    "compare the MAC with the machine's label, then put its token in tokens/{name} beside it"
                )
            }
        );
    }
    Ok(())
}

/// One line for a machine the lab file already has: its pinned MAC, and what changed.
fn show_known(s: &adopt::Seen, lab: &std::path::Path) {
    let mac = |m: &Option<neighbour::Mac>| m.map_or("not pinned".to_string(), |m| m.to_string());
    match s {
        adopt::Seen::New(_) => {}
        adopt::Seen::Elsewhere { found, name } => println!(
            "known\t{}\tat {}, which is lab machine {name}'s: not adopted",
            found.name, found.url
        ),
        adopt::Seen::Known {
            found,
            url,
            pinned,
            now,
        } => {
            let mut line = format!("known\t{}\tMAC {}", found.name, mac(pinned));
            if url != &found.url {
                line.push_str(&format!(
                    "; MOVED: answers at {}, the lab has {url}",
                    found.url
                ));
            }
            if let (Some(p), Some(n)) = (pinned, now)
                && p != n
            {
                line.push_str(&format!(
                    "; MAC CHANGED: the host sees {n} at {} (pinned {p})",
                    found.ip
                ));
            }
            if s.changed() {
                line.push_str(&format!(
                    ": not adopted; to adopt it anew, remove [machines.{}] from {} and run --adopt again",
                    found.name,
                    lab.display()
                ));
            }
            println!("{line}");
        }
    }
}

/// The operator at a terminal; `--yes` agrees without asking (but allows no open machine
/// without `--allow-open`).
struct Terminal<'a> {
    lab: &'a std::path::Path,
    yes: bool,
    allow_open: bool,
}

impl adopt::Operator for Terminal<'_> {
    fn agree(&mut self, new: &[&discover::Found]) -> bool {
        for f in new {
            let claim = match f.claimed_tail() {
                Some([a, b, c]) => format!("its name claims a MAC ending {a:02x}:{b:02x}:{c:02x}"),
                None => "its name claims no MAC".into(),
            };
            println!(
                "to adopt: {} at {} port {} ({}), {claim}, auth {}, build {}, version {}",
                f.name,
                f.ip,
                f.port,
                f.url,
                f.auth.as_deref().unwrap_or("?"),
                f.build.as_deref().unwrap_or("?"),
                f.version.as_deref().unwrap_or("?"),
            );
        }
        self.yes
            || ask(&format!(
                "connect to these once to read their MACs, and adopt them into {}? [y/N] ",
                self.lab.display()
            ))
    }

    fn allow_open(&mut self, f: &discover::Found) -> bool {
        self.allow_open
            || (!self.yes
                && ask(&format!(
                    "{} announces auth=none: the gateway would forward agents' calls to it \
                     without a token (and anyone on the LAN may call it too). Adopt it open? [y/N] ",
                    f.name
                )))
    }
}

/// True if the operator answers yes on the terminal; no terminal is no.
fn ask(question: &str) -> bool {
    use std::io::{IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        eprintln!("irix7-gateway: not a terminal: run with --yes to adopt without asking");
        return false;
    }
    print!("{question}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).is_ok() && line.trim().eq_ignore_ascii_case("y")
}

async fn serve(lab_path: PathBuf) -> Result<(), String> {
    let lab = lab::Lab::load(&lab_path)?;
    let token = auth::ensure_token(&lab.token_file)?;
    let gateway = server::Gateway::new(&lab);
    gateway.start_relay();
    let handler = server::Handler(gateway.clone());
    let service: StreamableHttpService<server::Handler, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(handler.clone()),
            Arc::new(auth::session_manager()),
            // No browser has business here: a request that carries any Origin is refused
            // (rmcp also refuses a Host other than the loopback names).
            StreamableHttpServerConfig::default().enforce_origin_validation(),
        );
    let app = axum::Router::new().nest_service("/mcp", service).layer(
        axum::middleware::from_fn_with_state(Arc::new(token), auth::require_bearer),
    );
    let listener = tokio::net::TcpListener::bind(lab.listen)
        .await
        .map_err(|e| format!("listen on {}: {e}", lab.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!(
        "irix7-gateway: http://{addr}/mcp, token in {}, {} machines{}, audit log {}",
        lab.token_file.display(),
        lab.machines.len(),
        lab.rigs.as_ref().map_or(String::new(), |d| format!(
            " plus the rigs registered in {}",
            d.display()
        )),
        lab.audit_log.display()
    );
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| e.to_string())
}
