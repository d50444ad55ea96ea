//! `cargo xtask conformance`: the official MCP conformance suites against the conformance image
//! booted in the rig — 0.2.0-alpha.12 with the 2026-07-28 requirement set, and 0.1.16 with every
//! legacy-era scenario. Known gaps live in `tests/conformance/<suite>.yml`; any other failure
//! (or a listed failure that now passes) fails the run.

use crate::clients::{self, NpmPackage};
use crate::cmd::repo_root;
use crate::launch::{self, Rig, Spec};
use std::io::Write;
use std::process::Command;

/// One suite run.
struct Suite {
    /// Also the name of the expected-failures file and the output directory.
    name: &'static str,
    package: &'static NpmPackage,
    /// Scenario selection.
    select: &'static [&'static str],
}

const SUITES: &[Suite] = &[
    Suite {
        name: "2026-07-28",
        package: &clients::CONFORMANCE_2026,
        select: &["--requirements", "2026-07-28"],
    },
    Suite {
        name: "2025-11-25",
        package: &clients::CONFORMANCE_LEGACY,
        select: &["--suite", "all"],
    },
];

/// Counts read from a suite's summary lines (`✓ name: N passed, M failed`).
#[derive(Default, Debug, PartialEq)]
struct Tally {
    scenarios_ok: usize,
    scenarios_failed: usize,
    checks_ok: usize,
    checks_failed: usize,
    /// Failed scenarios, with their counts.
    failed: Vec<String>,
}

fn tally(output: &str) -> Tally {
    let mut t = Tally::default();
    let summary = match output.find("=== SUMMARY ===") {
        Some(at) => &output[at..],
        None => return t,
    };
    for line in summary.lines() {
        let (ok, rest) = if let Some(r) = line.strip_prefix("✓ ") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("✗ ") {
            (false, r)
        } else {
            continue;
        };
        let Some((name, counts)) = rest.rsplit_once(": ") else {
            continue;
        };
        let mut nums = counts
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .filter_map(|s| s.parse::<usize>().ok());
        let (Some(p), Some(f)) = (nums.next(), nums.next()) else {
            continue;
        };
        t.checks_ok += p;
        t.checks_failed += f;
        if ok {
            t.scenarios_ok += 1;
        } else {
            t.scenarios_failed += 1;
            t.failed.push(format!("{name} ({f} of {} checks)", p + f));
        }
    }
    t
}

/// The suites colour their verdicts; logs read better without the escapes.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_escape = false;
    for c in line.chars() {
        match (in_escape, c) {
            (false, '\u{1b}') => in_escape = true,
            (false, c) => out.push(c),
            (true, c) if c.is_ascii_alphabetic() => in_escape = false,
            (true, _) => {}
        }
    }
    out
}

/// Runs every suite against `url`; Err names the suites with unexpected results.
fn run_suites(url: &str) -> Result<(), String> {
    let root = repo_root();
    let out_root = root.join("target/clients/conformance");
    let mut bad = Vec::new();
    for s in SUITES {
        let expected = root
            .join("tests/conformance")
            .join(format!("{}.yml", s.name));
        let out_dir = out_root.join(s.name);
        let _ = std::fs::remove_dir_all(&out_dir);
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        println!(
            "conformance {} ({}): {url}",
            s.name,
            s.package.spec.rsplit('@').next().unwrap_or("")
        );
        let out = Command::new(clients::node_bin())
            .current_dir(root)
            .arg(s.package.dir().join("dist/index.js"))
            .args(["server", "--url", url])
            .args(s.select)
            .arg("--expected-failures")
            .arg(&expected)
            .arg("-o")
            .arg(&out_dir)
            .output()
            .map_err(|e| format!("cannot run node: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let log = out_root.join(format!("{}.log", s.name));
        std::fs::File::create(&log)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let t = tally(&text);
        for f in &t.failed {
            println!("  failed: {f}");
        }
        // The suite's own verdict on the baseline: what follows its totals line.
        if let Some(at) = text.find("\nTotal: ") {
            let after = &text[at + 1..];
            for line in after.lines().skip(1).filter(|l| !l.trim().is_empty()) {
                println!("  | {}", strip_ansi(line));
            }
        }
        println!(
            "  {}: scenarios {} ok / {} failed; checks {} ok / {} failed; exit {}; log {}",
            s.name,
            t.scenarios_ok,
            t.scenarios_failed,
            t.checks_ok,
            t.checks_failed,
            out.status.code().map_or("signal".into(), |c| c.to_string()),
            log.strip_prefix(root).unwrap_or(&log).display()
        );
        if !out.status.success() || t.scenarios_ok + t.scenarios_failed == 0 {
            bad.push(s.name);
        }
    }
    if bad.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "conformance: unexpected results in {} (see target/clients/conformance)",
            bad.join(", ")
        ))
    }
}

/// `cargo xtask conformance [--url URL]`: without a URL, boots the conformance image in the rig,
/// open (`mcp.token=none`): the suites' runner sends no credentials.
pub fn run(url: Option<String>) -> Result<(), String> {
    clients::ensure()?;
    if let Some(url) = url {
        return run_suites(&url);
    }
    let img = launch::conformance_image()?;
    let bin = launch::rig_binary()?;
    let mut rig = Rig::start(
        &bin,
        &Spec {
            name: "conformance",
            image: &img,
            env: vec!["mcp.token=none".into()],
        },
    )?;
    let r = run_suites(&rig.mcp_url());
    rig.check_alive()?;
    r
}

/// For `cargo xtask test`.
pub fn step() -> Result<(), String> {
    run(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tally_reads_the_summary_only() {
        let out = "✗ early: 1 passed, 1 failed\n=== SUMMARY ===\n\
                   ✓ tools-list: 4 passed, 0 failed\n\
                   ✗ tasks-lifecycle: 1 passed, 8 failed\n\
                   ✓ tasks-status-notifications: 0 passed, 0 failed\n\
                   \nTotal: 5 passed, 8 failed\n  ✗ tasks-lifecycle (extension)\n";
        let t = tally(out);
        assert_eq!(t.scenarios_ok, 2);
        assert_eq!(t.scenarios_failed, 1);
        assert_eq!((t.checks_ok, t.checks_failed), (5, 8));
        assert_eq!(
            t.failed,
            vec!["tasks-lifecycle (8 of 9 checks)".to_string()]
        );
    }

    #[test]
    fn ansi_colours_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[32mBaseline ok\u{1b}[0m"), "Baseline ok");
    }

    #[test]
    fn tally_without_summary_is_empty() {
        assert_eq!(tally("Error: connect ECONNREFUSED"), Tally::default());
    }
}
