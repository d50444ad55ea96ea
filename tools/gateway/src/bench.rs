//! `irix7-gateway bench`: the gateway's cost per forwarded small call. Two rmcp clients
//! (2026-07-28), one to the gateway and one straight to the machine, call `echo` in turn, so
//! both sides see the same machine, host load and moment; prints the median and mean wall
//! time of each side and their difference (docs/bench.md).

use crate::lab::Lab;
use crate::machine::read_token;
use rmcp::model::{CallToolRequestParams, ClientConfig, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientLifecycleMode, ClientServiceExt};
use serde_json::json;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const WARMUP: u32 = 5;
/// One pair of calls per this long: the module allows 20 requests per rolling second from one
/// address (docs/bounds.md), and both clients come from 127.0.0.1.
const PAIR_EVERY: Duration = Duration::from_millis(125);

async fn client(
    url: &str,
    token: &str,
) -> Result<RunningService<RoleClient, ClientConfig>, String> {
    let cfg = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.to_string());
    ClientConfig::default()
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(cfg),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .map_err(|e| format!("connect {url}: {e}"))
}

async fn echo(
    c: &RunningService<RoleClient, ClientConfig>,
    machine: Option<&str>,
) -> Result<Duration, String> {
    let mut args = json!({"text": "bench"});
    if let Some(m) = machine {
        args["machine"] = json!(m);
    }
    let params = CallToolRequestParams::new("echo")
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    let t = Instant::now();
    let r = c.call_tool(params).await.map_err(|e| e.to_string())?;
    let d = t.elapsed();
    if r.is_error == Some(true) {
        return Err(format!("echo failed: {:?}", r.content));
    }
    Ok(d)
}

/// p10, median, p90 and mean in microseconds.
fn summary(v: &mut [Duration]) -> [f64; 4] {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let at = |q: usize| us(v[(v.len() * q / 100).min(v.len() - 1)]);
    let mean = v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64;
    [at(10), at(50), at(90), mean]
}

pub async fn run(lab_path: PathBuf, machine: String, calls: u32) -> Result<(), String> {
    let lab = Lab::load(&lab_path)?;
    let mut specs = lab.machines.clone();
    if let Some(dir) = &lab.rigs {
        specs.extend(crate::rigs::registered(dir).rigs);
    }
    let spec = specs
        .iter()
        .find(|m| m.name == machine)
        .ok_or(format!("no machine `{machine}` in {}", lab_path.display()))?;
    let gw_token = read_token(&lab.token_file)?;
    let m_token = match &spec.token_file {
        Some(p) => read_token(p)?,
        None => String::new(),
    };
    let gw = client(&format!("http://{}/mcp", lab.listen), &gw_token).await?;
    let direct = client(&spec.url, &m_token).await?;
    let calls = calls.max(1);
    let (mut via, mut straight) = (Vec::new(), Vec::new());
    for i in 0..WARMUP + calls {
        let next = tokio::time::Instant::now() + PAIR_EVERY;
        let g = echo(&gw, Some(&machine)).await?;
        let d = echo(&direct, None).await?;
        if i >= WARMUP {
            via.push(g);
            straight.push(d);
        }
        tokio::time::sleep_until(next).await;
    }
    let g = summary(&mut via);
    let d = summary(&mut straight);
    println!("echo on `{machine}`, {calls} calls each side, interleaved (microseconds):");
    println!("                    p10    median       p90      mean");
    let row = |name: &str, v: [f64; 4]| {
        println!(
            "  {name:<12} {:9.0} {:9.0} {:9.0} {:9.0}",
            v[0], v[1], v[2], v[3]
        )
    };
    row("direct", d);
    row("via gateway", g);
    row(
        "difference",
        [g[0] - d[0], g[1] - d[1], g[2] - d[2], g[3] - d[3]],
    );
    Ok(())
}
