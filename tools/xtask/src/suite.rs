//! `cargo xtask test` and `cargo xtask bench`: the whole suite, in the order a fresh machine
//! needs it (prerequisites, formatting, the image, its audit, unit tests, end-to-end tests).

use crate::cmd::{self, repo_root};
use crate::{bench_json, cell, clients, conformance, image, isa, lab, layers, prereqs};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// One named step of the suite.
struct Step {
    name: &'static str,
    run: fn() -> Result<(), String>,
}

const STEPS: &[Step] = &[
    Step {
        name: "prerequisites",
        run: prereqs::ensure,
    },
    Step {
        name: "cargo fmt --check",
        run: fmt,
    },
    Step {
        name: "layering: imports, unsafe and path attributes where they belong",
        run: layers::run,
    },
    Step {
        name: "product image matches boot/config.conf",
        run: image_matches_config,
    },
    Step {
        name: "ISA audit passes on the image",
        run: audit_product,
    },
    Step {
        name: "ISA audit rejects a mips3-built object",
        run: audit_rejects_mips3,
    },
    Step {
        name: "EROFS fixture images",
        run: fixture_images,
    },
    Step {
        name: "clippy -D warnings (host crates)",
        run: clippy_host,
    },
    Step {
        name: "clippy -D warnings (module, R4400 target)",
        run: clippy_target,
    },
    Step {
        name: "the changed image of the deploy test (product image, tagged build id)",
        run: image::build_deploy_test_image,
    },
    Step {
        name: "the X25519 test image (x25519-dalek: long straight-line blocks)",
        run: image::build_x25519_test_image,
    },
    Step {
        name: "the demo cell the debugger tests run beside the module (tools/cell)",
        run: build_cell,
    },
    Step {
        name: "MAME's Indy boots the product image, passes mcp-smoke over its Seeq (diskless), refuses a wrong digest and passes the GDB test against its cell",
        run: mame_step,
    },
    Step {
        name: "unit and end-to-end tests",
        run: cargo_test,
    },
    Step {
        name: "mcp-smoke against the rig (fixture disk; diskless)",
        run: smoke,
    },
    Step {
        name: "mcp-smoke against the rig on the 1 MiB of heap the ABI promises (fixture disk)",
        run: smoke_small_heap,
    },
    Step {
        name: "fuzz targets, a short run each",
        run: fuzz_short,
    },
    Step {
        name: "MCP conformance suites against the rig",
        run: conformance::step,
    },
    Step {
        name: "Python MCP clients, HTTP acceptance and README curl against the rig",
        run: clients_step,
    },
    Step {
        name: "the browser console in headless Chromium (tests/python/test_console.py)",
        run: console_step,
    },
    Step {
        name: "the lab: three rigs behind irix7-gateway, Python MCP SDK (tests/python/test_lab.py)",
        run: lab_step,
    },
];

fn build_cell() -> Result<(), String> {
    cell::build_cell().map(|_| ())
}

/// The smoke run, the refused-image run, then the GDB run (the rig's GDB test against the
/// module and the demo cell in MAME, `-nodrc`), each once. The first two used to get a second
/// run when they failed: about one MAME boot in five found the IOC2 unreachable (the HPC3's
/// PIO configuration is heap garbage in MAME 0.251 until written) and the serial capture
/// empty; the stand-in now configures the channel first (`mame/prom/src/pbus.rs`).
fn mame_step() -> Result<(), String> {
    crate::mame::run(&crate::mame::Options {
        seconds: 20,
        smoke: true,
        wrong_digest: false,
        gdb: false,
    })?;
    crate::mame::run(&crate::mame::Options {
        seconds: 20,
        smoke: false,
        wrong_digest: true,
        gdb: false,
    })?;
    crate::mame::run(&crate::mame::Options {
        seconds: 20,
        smoke: false,
        wrong_digest: false,
        gdb: true,
    })
}

fn clients_step() -> Result<(), String> {
    clients::run(&[])
}

fn console_step() -> Result<(), String> {
    crate::console::run(&[])
}

fn lab_step() -> Result<(), String> {
    lab::test(&[])
}

pub fn test() -> Result<(), String> {
    let mut failed = Vec::new();
    for step in STEPS {
        println!("\n=== {} ===", step.name);
        let t = Instant::now();
        let r = (step.run)();
        match &r {
            Ok(()) => println!("--- ok: {} ({:.1} s)", step.name, t.elapsed().as_secs_f64()),
            Err(e) => {
                println!("--- FAILED: {}: {e}", step.name);
                failed.push((step.name, e.clone()));
            }
        }
        // Without the prerequisites nothing else can run meaningfully.
        if r.is_err() && step.name == "prerequisites" {
            break;
        }
    }
    println!();
    // The reason again at the end: a CI log is often read from its tail only.
    for (name, why) in &failed {
        println!("failed: {name}: {why}");
    }
    println!(
        "xtask: {} passed, {} failed",
        STEPS.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err("the suite failed".into())
    }
}

fn cargo() -> Command {
    let mut c = Command::new("cargo");
    c.current_dir(repo_root());
    c
}

fn fmt() -> Result<(), String> {
    cmd::run(cargo().args(["fmt", "--all", "--check"]))
}

fn product_image() -> Result<image::Image, String> {
    image::build(&image::Options {
        out: image::IMAGE_PATH.into(),
        ..Default::default()
    })
}

fn image_matches_config() -> Result<(), String> {
    let img = product_image()?;
    img.print_summary()?;
    match image::config_digest()? {
        Some(d) if d == img.sha256 => Ok(()),
        other => Err(format!(
            "boot/config.conf names {other:?}, the image is {}: run `cargo xtask image --update-config` and commit",
            img.sha256
        )),
    }
}

fn audit_product() -> Result<(), String> {
    let img = image::Image::load(&repo_root().join(image::IMAGE_PATH))?;
    let (findings, count) = isa::audit(&img)?;
    for f in findings.iter().take(20) {
        println!("  {:#08x} {} ({})", f.offset, f.text, f.reason);
    }
    if findings.is_empty() {
        println!("{count} instructions audited, none refused");
        Ok(())
    } else {
        Err(format!("{} refused instructions", findings.len()))
    }
}

fn audit_rejects_mips3() -> Result<(), String> {
    let img = image::build(&image::Options {
        cpu: Some("mips3".into()),
        out: "target/image/irix7-mcp-mips3.o".into(),
        ..Default::default()
    })?;
    let (findings, count) = isa::audit(&img)?;
    let sixty_four = findings
        .iter()
        .filter(|f| f.reason == "64-bit operation")
        .count();
    println!(
        "mips3 object: {} of {count} instructions refused, {sixty_four} of them 64-bit",
        findings.len()
    );
    for f in findings.iter().take(3) {
        println!("  e.g. {:#08x} {}", f.offset, f.text);
    }
    if sixty_four > 0 {
        Ok(())
    } else {
        Err("the audit accepted a mips3 object".into())
    }
}

fn fixture_images() -> Result<(), String> {
    let root = repo_root();
    for p in irix7_fixtures::build_fixture_images(root, &root.join("target/fixtures"))? {
        println!("  {}", p.strip_prefix(root).unwrap_or(&p).display());
    }
    Ok(())
}

fn clippy_host() -> Result<(), String> {
    cmd::run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--quiet",
        "--",
        "-D",
        "warnings",
    ]))
}

fn clippy_target() -> Result<(), String> {
    let clippy = |crates: &[&str]| {
        cmd::run(
            cargo()
                .env("RUSTC_BOOTSTRAP", "1")
                .args(["clippy", "--quiet"])
                .args(crates)
                .args(["--target", "mips-irix7.json"])
                .args(["-Z", "json-target-spec", "-Z", "build-std=core,alloc"])
                .args(["--target-dir", "target/mips/clippy", "--", "-D", "warnings"]),
        )
    };
    let module = [
        "-p",
        "irix7-mcp",
        "-p",
        "irix7-kmem",
        "-p",
        "irix7-mame-prom",
        "-p",
        "irix7-loader",
    ];
    // The X25519 test image is a workspace of its own (its own lock file).
    let x25519 = format!("{}/Cargo.toml", image::X25519_CRATE.dir);
    // So is the demo cell.
    let cell = format!("{}/Cargo.toml", cell::CELL_DIR);
    clippy(&module)
        .and(clippy(&["--manifest-path", &x25519, "--locked"]))
        .and(clippy(&["--manifest-path", &cell, "--locked"]))
}

/// The workspace's tests, every binary run even after one fails. A failing test is named in
/// the step's error, with why it failed, since a CI log is read from its tail. A test is run
/// once: one that fails only sometimes is a bug to find, not a retry.
fn cargo_test() -> Result<(), String> {
    let root = repo_root();
    let mut c = cargo();
    c.env("IRIX7_IMAGE", root.join(image::IMAGE_PATH))
        .env("IRIX7_DEPLOY_IMAGE", root.join(image::DEPLOY_TEST_IMAGE))
        .env("IRIX7_X25519_IMAGE", root.join(image::X25519_TEST_IMAGE))
        // Whatever count the caller's environment asks of the soak, the suite runs its own.
        .env("IRIX7_SOAK_CYCLES", crate::soak::SUITE_CYCLES.to_string())
        .args(["test", "--workspace", "--all-features", "--no-fail-fast"]);
    let failed = tests_failed(&mut c)?;
    if failed.is_empty() {
        return Ok(());
    }
    let failed = failed
        .iter()
        .map(|(name, why)| format!("{name} ({why})"))
        .collect::<Vec<_>>()
        .join("; ");
    Err(format!("tests failed: {failed}"))
}

/// Runs a `cargo test`, its output passed through, and returns the tests that failed, each
/// with its panic. Errors if cargo fails with no test named as failed (a build error, a
/// crashed test binary).
fn tests_failed(c: &mut Command) -> Result<Vec<(String, String)>, String> {
    use std::io::{BufRead, BufReader};
    let mut child = c
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo test: {e}"))?;
    let mut failures = Failures::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            failures.line(&line);
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("cargo test did not end: {e}"))?;
    if !status.success() && failures.failed.is_empty() {
        return Err(format!(
            "cargo test failed ({status}) with no test named as failed"
        ));
    }
    Ok(failures.failed)
}

/// The failed tests a test harness's output names, each with its panic (location and
/// message), read a line at a time.
#[derive(Default)]
struct Failures {
    failed: Vec<(String, String)>,
    /// The test whose captured output is being printed (`---- name stdout ----`).
    current: Option<String>,
}

const NO_PANIC: &str = "no panic message";

impl Failures {
    fn line(&mut self, line: &str) {
        if let Some(name) = line
            .strip_prefix("test ")
            .and_then(|l| l.strip_suffix(" ... FAILED"))
        {
            self.failed.push((name.to_string(), NO_PANIC.to_string()));
            return;
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|l| l.strip_suffix(" stdout ----"))
        {
            self.current = Some(name.to_string());
            return;
        }
        let Some(why) = self
            .current
            .as_ref()
            .and_then(|name| self.failed.iter_mut().find(|(n, _)| n == name))
            .map(|(_, why)| why)
        else {
            return;
        };
        if why == NO_PANIC && line.contains("panicked at") {
            *why = line.trim().to_string();
        } else if why.ends_with(':') {
            // The panic's message is on the line after its location.
            *why = format!("{why} {}", line.trim());
        }
    }
}

/// `rom/tools/mcp-smoke.py` against the product image on the release rig: once with the fixture
/// disk as SCSI target 2, once diskless with the block and fs checks skipped. The rigs boot as
/// a machine does by default, with a generated token; the script gets it with `--token`.
fn smoke() -> Result<(), String> {
    smoke_runs(&[
        (
            "smoke-disk",
            &["--disk", "2=target/fixtures/rootfs.erofs"],
            // The rig's DS1386 starts at the host's time: the date the module reports is read
            // through the whole RTC path (rig model, kernel, ABI status block).
            &["--clock-within", "300"],
        ),
        (
            "smoke-diskless",
            &["--no-disk"],
            &["--skip-block", "--skip-fs"],
        ),
    ])
}

/// The same script on a rig whose kernel gives the module exactly the 1 MiB of heap the ABI
/// promises (`--heap 1024`): the module sizes its pool and budgets to it and serves everything
/// the script asks.
fn smoke_small_heap() -> Result<(), String> {
    smoke_runs(&[(
        "smoke-1mib",
        &["--heap", "1024", "--disk", "2=target/fixtures/rootfs.erofs"],
        &[],
    )])
}

/// A smoke run: its name, the rig's arguments, the script's.
type SmokeRun<'a> = (&'a str, &'a [&'a str], &'a [&'a str]);

/// `rom/tools/mcp-smoke.py` against the product image on one release rig per run.
fn smoke_runs(runs: &[SmokeRun]) -> Result<(), String> {
    let bin = crate::launch::rig_binary()?;
    let built = crate::launch::product_image()?;
    // A private copy: a rebuild of target/image meanwhile must not change what the rigs load.
    let copy = repo_root().join("target/smoke/irix7-mcp.o");
    std::fs::create_dir_all(repo_root().join("target/smoke"))
        .and_then(|_| std::fs::write(&copy, &built.bytes))
        .map_err(|e| format!("{}: {e}", copy.display()))?;
    let product = image::Image::load(&copy)?;
    let script = repo_root().join("rom/tools/mcp-smoke.py");
    for &(name, rig_args, smoke_args) in runs {
        let spec = crate::launch::Spec {
            name,
            image: &product,
            env: vec![],
        };
        let mut rig = crate::launch::Rig::start_with_args(&bin, &spec, rig_args)?;
        let token = rig.generated_token()?;
        let r = cmd::run(
            Command::new("python3")
                .arg(&script)
                .arg("--url")
                .arg(rig.mcp_url())
                .arg("--token")
                .arg(&token)
                .arg("--sha256")
                .arg(&product.sha256)
                .args(smoke_args),
        );
        rig.check_alive()?;
        r.map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

/// Seconds each fuzz target runs in the suite (a long campaign is `docs/fuzzing.md`'s).
const FUZZ_SECONDS: u32 = 20;
/// Each target and its longest input: 1 MiB (more than the module's body limit) where a body
/// reaches the parsers, less where the harness's own limits refuse long inputs early anyway.
const FUZZ_TARGETS: &[(&str, usize)] = &[
    ("http_parser", 64 << 10),
    ("json_reader", 64 << 10),
    ("mcp_dispatch", 1 << 20),
    ("full_path", 1 << 20),
    ("erofs_reader", 64 << 10),
    ("mdns_query", 2 << 10),
    ("flight_record", 4 << 10),
    ("gdb_rsp", 64 << 10),
];

/// The fuzz crate's tests (the heap budget, the full-path seeds' answers, the kept crash
/// inputs), then a short run of each target from its committed seeds and kept crash inputs.
fn fuzz_short() -> Result<(), String> {
    let have = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        cmd::run(Command::new("cargo").args([
            "install",
            "cargo-fuzz",
            "--locked",
            "--version",
            "0.13.2",
        ]))?;
    }
    let fuzz_dir = repo_root().join("fuzz");
    cmd::run(
        Command::new("cargo")
            .current_dir(&fuzz_dir)
            .args(["test", "--release"]),
    )?;
    for &(t, max_len) in FUZZ_TARGETS {
        let corpus = fuzz_dir.join("corpus").join(t);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let mut run = Command::new("cargo");
        run.current_dir(&fuzz_dir)
            .args(["fuzz", "run", "--sanitizer", "none", t])
            .arg(&corpus)
            .arg(fuzz_dir.join("seeds").join(t));
        let kept = fuzz_dir.join("regressions").join(t);
        if kept.is_dir() {
            run.arg(kept);
        }
        cmd::run(
            run.arg("--")
                .arg(format!("-max_total_time={FUZZ_SECONDS}"))
                .arg(format!("-max_len={max_len}"))
                .arg("-print_final_stats=1"),
        )?;
    }
    Ok(())
}

/// Where the lockstep bench writes its figures (`--json`), for `bench --json` to complete.
const BENCH_FIGURES: &str = "target/bench/figures.json";

/// Section sizes, then the lockstep benchmark (`tools/iris/examples/bench/`) in the release
/// rig: exact guest instruction counts and heap figures beside their budgets, then the hostile
/// suite's. With `peers`, then the same requests against the SDK reference servers, side by
/// side (`peers.rs`), which fails when the module is not twice below rmcp on every small call.
/// With `update_peer_fixtures`, the small calls' results of this run become the peers' answers
/// first. With `json`, every figure goes to that file as well (`bench_json::write_json`), the
/// peers' under `peers`.
pub fn bench(json: Option<&Path>, peers: bool, update_peer_fixtures: bool) -> Result<(), String> {
    prereqs::ensure()?;
    let img = product_image()?;
    img.print_summary()?;
    let text_rodata: u64 = img
        .sections()?
        .iter()
        .filter(|(name, _)| name == ".text" || name == ".rodata")
        .map(|(_, size)| size)
        .sum();
    let size = if text_rodata as usize <= image::IMAGE_BUDGET {
        Ok(())
    } else {
        Err(format!(
            "image text+rodata {text_rodata} bytes is over its budget of {} bytes",
            image::IMAGE_BUDGET
        ))
    };
    fixture_images()?;
    let figures = repo_root().join(BENCH_FIGURES);
    // A file left by an earlier run must not stand in for this one's.
    let _ = std::fs::remove_file(&figures);
    let _ = std::fs::remove_file(repo_root().join(crate::peers::BENCH_RESULTS));
    let lockstep = cmd::run(
        cargo()
            .args([
                "run",
                "--quiet",
                "--release",
                "-p",
                "iris",
                "--example",
                "bench",
                "--",
            ])
            .arg(&img.path)
            .arg("--json")
            .arg(&figures),
    );
    // The hostile suite's figures are wanted even when a lockstep figure is over budget.
    let hostile = hostile_bench();
    if update_peer_fixtures {
        crate::peers::update_fixtures()?;
    }
    let (peers, beside_peers) = if peers {
        let module = bench_json::read_figures(&figures)?;
        let (figures, verdict) = crate::peers::run(&module)?;
        (Some(figures), verdict)
    } else {
        (None, Ok(()))
    };
    if let Some(path) = json {
        let mut extra = vec![("image_text_rodata", text_rodata)];
        if let Ok(f) = std::fs::read_to_string(repo_root().join(HOSTILE_FIGURES))
            .map_err(|e| e.to_string())
            .and_then(|t| HostileFigures::parse(&t))
        {
            extra.push(("hostile_longest_poll", f.max_poll_insns));
            extra.push(("hostile_heap_peak", f.heap_peak));
        }
        bench_json::write_json(path, bench_json::read_figures(&figures)?, &extra, peers)?;
        println!("figures written to {}", path.display());
    }
    // Every failure is named, not only the first.
    let failures: Vec<String> = [size, lockstep, hostile, beside_peers]
        .into_iter()
        .filter_map(Result::err)
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// The hostile-load suite, whose figures the bench reports beside their budgets.
const HOSTILE_TEST: &str = "tools/iris/tests/hostile.rs";
/// Where that suite writes them: `max_poll_insns N`, `heap_peak BYTES`, `heap_budget BYTES`.
const HOSTILE_FIGURES: &str = "target/bench/hostile.txt";
/// Budget of the largest single poll (issue 12: no client holds the machine for longer).
const MAX_POLL_BUDGET: u64 = 10_000_000;

/// Runs the hostile suite as the test step runs the iris tests (dev profile, the product image)
/// and checks its figures against their budgets. Without the suite in the tree, says so.
fn hostile_bench() -> Result<(), String> {
    println!("hostile suite ({HOSTILE_TEST}, as `cargo xtask test` runs it):");
    let root = repo_root();
    if !root.join(HOSTILE_TEST).is_file() {
        println!(
            "  {HOSTILE_TEST} is not in this tree: largest poll and heap peak under hostile load are not measured"
        );
        return Ok(());
    }
    let figures = root.join(HOSTILE_FIGURES);
    // A file left by an earlier run must not stand in for this one's.
    let _ = std::fs::remove_file(&figures);
    // The suite writes its figures before it judges, so they are printed even when it fails.
    let suite = cmd::run(
        cargo()
            .env("IRIX7_IMAGE", root.join(image::IMAGE_PATH))
            .args([
                "test",
                "--quiet",
                "-p",
                "iris",
                "--all-features",
                "--test",
                "hostile",
            ]),
    );
    let text = std::fs::read_to_string(&figures)
        .map_err(|e| format!("the hostile suite wrote no figures ({HOSTILE_FIGURES}: {e})"))?;
    let f = HostileFigures::parse(&text)?;
    let mut over = Vec::new();
    for (name, value, unit, budget) in f.checks() {
        let verdict = if value <= budget {
            "ok"
        } else {
            over.push(name);
            "OVER BUDGET"
        };
        println!("  {name:<44} {value:>14} {unit:<6} budget {budget:>12}  {verdict}");
    }
    suite?;
    if over.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "over budget under hostile load: {}",
            over.join(", ")
        ))
    }
}

/// The hostile suite's figures.
#[derive(Debug, PartialEq, Eq)]
struct HostileFigures {
    max_poll_insns: u64,
    heap_peak: u64,
    heap_budget: u64,
}

impl HostileFigures {
    /// Reads `NAME VALUE` lines; all three figures are required, other names are ignored.
    fn parse(text: &str) -> Result<HostileFigures, String> {
        let get = |name: &str| {
            let mut values = text.lines().filter_map(|l| {
                let mut w = l.split_whitespace();
                (w.next() == Some(name)).then(|| w.next().unwrap_or(""))
            });
            match (values.next(), values.next()) {
                (Some(v), None) => v
                    .parse::<u64>()
                    .map_err(|_| format!("{HOSTILE_FIGURES}: {name} {v:?} is not a whole number")),
                (None, _) => Err(format!("{HOSTILE_FIGURES}: no {name} line")),
                (Some(_), Some(_)) => Err(format!("{HOSTILE_FIGURES}: {name} given twice")),
            }
        };
        Ok(HostileFigures {
            max_poll_insns: get("max_poll_insns")?,
            heap_peak: get("heap_peak")?,
            heap_budget: get("heap_budget")?,
        })
    }

    /// Each figure with its budget.
    fn checks(&self) -> [(&'static str, u64, &'static str, u64); 2] {
        [
            (
                "largest single poll",
                self.max_poll_insns,
                "insns",
                MAX_POLL_BUDGET,
            ),
            ("heap peak", self.heap_peak, "bytes", self.heap_budget),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_tests_are_named_with_their_panics() {
        let out = "running 3 tests
test a::passes ... ok
test a::fails ... FAILED
test quiet ... FAILED

failures:

---- a::fails stdout ----

thread 'a::fails' (42) panicked at tools/iris/tests/x.rs:10:5:
echo took 6 s
note: run with `RUST_BACKTRACE=1`
---- quiet stdout ----
some output

failures:
    a::fails
    quiet
";
        let mut f = Failures::default();
        for line in out.lines() {
            f.line(line);
        }
        assert_eq!(
            f.failed,
            [
                (
                    "a::fails".to_string(),
                    "thread 'a::fails' (42) panicked at tools/iris/tests/x.rs:10:5: echo took 6 s"
                        .to_string()
                ),
                ("quiet".to_string(), NO_PANIC.to_string()),
            ]
        );
    }

    #[test]
    fn hostile_figures_are_read_and_held_to_their_budgets() {
        let text = "# written by tools/iris/tests/hostile.rs\nmax_poll_insns 9000000\nheap_peak 3000000\nconnections 512\nheap_budget 4194304\n";
        let f = HostileFigures::parse(text).unwrap();
        assert_eq!(
            f,
            HostileFigures {
                max_poll_insns: 9_000_000,
                heap_peak: 3_000_000,
                heap_budget: 4_194_304
            }
        );
        assert!(f.checks().iter().all(|(_, v, _, b)| v <= b));
        let over =
            HostileFigures::parse("max_poll_insns 10000001\nheap_peak 5\nheap_budget 4\n").unwrap();
        assert!(over.checks().iter().all(|(_, v, _, b)| v > b));
    }

    #[test]
    fn a_missing_or_bad_hostile_figure_is_an_error() {
        for (text, says) in [
            ("max_poll_insns 1\nheap_peak 2\n", "no heap_budget"),
            (
                "max_poll_insns x\nheap_peak 2\nheap_budget 3\n",
                "not a whole number",
            ),
            (
                "max_poll_insns\nheap_peak 2\nheap_budget 3\n",
                "not a whole number",
            ),
            (
                "max_poll_insns 1\nmax_poll_insns 2\nheap_peak 2\nheap_budget 3\n",
                "twice",
            ),
            ("", "no max_poll_insns"),
        ] {
            let e = HostileFigures::parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
    }
}
