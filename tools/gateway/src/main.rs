//! `irix7-gateway`: one local MCP endpoint in front of a lab of irix7-mcp machines. It reads a
//! lab file, listens on 127.0.0.1 behind its own bearer token, and forwards each call to the
//! machine the agent names, holding the machines' tokens itself (docs/gateway.md).

#![forbid(unsafe_code)]

mod audit;
mod auth;
mod bench;
mod discover;
mod events;
mod lab;
mod machine;
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
        /// Append the machines this lab file lacks (each with a token file to fill in), after
        /// showing their addresses and asking.
        #[arg(long)]
        adopt: Option<PathBuf>,
        /// Adopt without asking.
        #[arg(long, requires = "adopt")]
        yes: bool,
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
        } => discover(seconds, adopt, yes),
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

fn discover(seconds: u64, adopt: Option<PathBuf>, yes: bool) -> Result<(), String> {
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
    if let Some(lab) = adopt {
        let confirm = |new: &[&discover::Found]| {
            for f in new {
                // A connection puts the machine in the host's neighbour table, for its MAC.
                let _ = std::net::TcpStream::connect_timeout(
                    &(f.ip, f.port).into(),
                    std::time::Duration::from_secs(1),
                );
                println!(
                    "to adopt: {} at {} (MAC {}), {}, build {}, version {}",
                    f.name,
                    f.ip,
                    discover::mac_of(f.ip).unwrap_or_else(|| "unknown".into()),
                    f.url,
                    f.build.as_deref().unwrap_or("?"),
                    f.version.as_deref().unwrap_or("?"),
                );
            }
            yes || ask(&format!("adopt these into {}? [y/N] ", lab.display()))
        };
        let names = discover::adopt(&lab, &heard.found, confirm)?;
        for n in &names {
            println!(
                "adopted {n} into {} (put its token in tokens/{n} beside it)",
                lab.display()
            );
        }
    }
    Ok(())
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
