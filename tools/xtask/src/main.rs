//! `cargo xtask`: builds the module image, audits it, runs the rig, the tests and the
//! benchmarks. The README's two commands (`cargo iris`, `cargo xtask test`) start here.

mod bench_json;
mod cell;
mod clients;
mod cmd;
mod conformance;
mod console;
mod deploy;
mod docs;
mod image;
mod isa;
mod lab;
mod launch;
mod layers;
mod mame;
mod mame_screen;
mod peers;
mod prereqs;
mod private;
mod sizes;
mod soak;
mod suite;
mod unicorn;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Build, audit, boot and test irix7-mcp")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the module image (ELF32 BE relocatable) and print its sections and SHA-256.
    Image {
        /// Rewrite `mcp.sha256` in boot/config.conf to the new image's digest.
        #[arg(long)]
        update_config: bool,
        /// Fail unless boot/config.conf already names this image's digest.
        #[arg(long, conflicts_with = "update_config")]
        check_config: bool,
        /// Bake the token in this file (outside the repository) into the image.
        #[arg(long, value_name = "PATH")]
        token_file: Option<PathBuf>,
        /// Module features (`conformance` builds the conformance test image).
        #[arg(long, value_delimiter = ',')]
        features: Vec<String>,
        /// Output path, relative to the repository root.
        #[arg(long, default_value = image::IMAGE_PATH)]
        out: PathBuf,
        /// Append `-TAG` to the build id (a test image that differs only in its id).
        #[arg(long, value_name = "TAG")]
        build_tag: Option<String>,
    },
    /// Build the image, name it in boot/config.conf, reset the running machine through MCP
    /// (`system.reset`) and wait until the new build answers.
    Deploy {
        /// The machine's MCP endpoint.
        #[arg(long, default_value = "http://127.0.0.1:7801/mcp")]
        url: String,
        /// A file holding the machine's bearer token.
        #[arg(long, value_name = "PATH")]
        token_file: Option<PathBuf>,
        /// Append `-TAG` to the build id.
        #[arg(long, value_name = "TAG")]
        build_tag: Option<String>,
        /// Seconds to wait for the new build to answer.
        #[arg(long, value_name = "SECS", default_value_t = 120)]
        timeout: u64,
    },
    /// Disassemble the image and refuse instructions the R4400's 32-bit kernel cannot run.
    CheckIsa {
        /// An image to audit instead of building the product image.
        #[arg(long)]
        image: Option<PathBuf>,
    },
    /// Build the image and the rig, then boot the emulated Indy (arguments go to the rig).
    Iris {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the X25519 test image (target/image/x25519-test.o) that tools/iris/tests/x25519.rs
    /// boots: long straight-line blocks (docs/rig.md, "Which Unicorn").
    X25519Image,
    /// Build the demo cell (target/cell/cell.elf) the rig runs beside the module for debugging
    /// (`iris --cell`, docs/debug.md).
    Cell,
    /// Check that the module's imports follow its layers, and where `unsafe` and path attributes may be.
    Layers,
    /// Build the EROFS fixture images into target/fixtures.
    Fixtures,
    /// Install prerequisites, then run every check and test.
    Test,
    /// One rig through many resets in a row, of every kind mixed (tools/iris/tests/soak.rs):
    /// prints the time to serve after each and anything lost.
    Soak {
        /// How many resets.
        #[arg(long, default_value_t = 50)]
        cycles: usize,
    },
    /// Print the benchmark figures beside their budgets.
    Bench {
        /// Also write every figure as one JSON object to FILE (docs/bench.md lists the keys).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Then measure the rmcp and Python SDK reference servers (tools/peers) under callgrind
        /// on the same requests and print them beside the module's figures; fails when the
        /// module is not at least 2x below rmcp on every small call.
        #[arg(long)]
        peers: bool,
        /// Make the small calls' results of this run of the rig bench the peers' answers
        /// (tools/peers/results.json).
        #[arg(long)]
        update_peer_fixtures: bool,
    },
    /// Regenerate the tool catalogue (docs/tools.md, docs/tools.json) from the registry.
    Docs,
    /// Install the prerequisites only (Debian packages, rust-src, the rig's fixed Unicorn).
    Prereqs,
    /// Boot MAME's Indy (indy_4610) headless on the project's PROM stand-in and check its console.
    Mame {
        /// Emulated seconds before MAME stops (the Lua script stops it when the stand-in halts).
        #[arg(long, default_value_t = 20)]
        seconds: u32,
        /// Run rom/tools/mcp-smoke.py against the module over MAME's Seeq (through a tap inside
        /// the run's own network namespace), without the disk checks.
        #[arg(long)]
        smoke: bool,
        /// Configure another digest than the image's: passes when the stand-in refuses the image.
        #[arg(long, conflicts_with = "smoke")]
        wrong_digest: bool,
        /// Run the demo cell beside the module, and the rig's GDB test (tools/iris/tests/gdb.rs)
        /// then a fault of the cell through debug.* against it over MAME's Seeq, MAME without its
        /// recompiler (-nodrc).
        #[arg(long, conflicts_with_all = ["smoke", "wrong_digest"])]
        gdb: bool,
    },
    /// Run the official MCP conformance suites against the conformance image in the rig.
    Conformance {
        /// Test a server already running at this MCP URL instead of booting the rig.
        #[arg(long)]
        url: Option<String>,
    },
    /// Start N rigs behind one irix7-gateway and print its URL and token (docs/gateway.md).
    Lab {
        /// How many rigs.
        #[arg(default_value_t = 3)]
        n: usize,
        /// The gateway's port on 127.0.0.1.
        #[arg(long, default_value_t = 7800)]
        port: u16,
        /// Run tests/python/test_lab.py against three rigs instead (arguments go to pytest).
        #[arg(long)]
        test: bool,
        #[arg(last = true)]
        pytest: Vec<String>,
    },
    /// Drive the browser console in headless Chromium against a rig of its own
    /// (tests/python/test_console.py; arguments go to pytest; screenshots in target/console).
    Console {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        pytest: Vec<String>,
    },
    /// Run the Python client and HTTP tests (tests/python) against rigs (arguments go to pytest).
    Clients {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Image {
            update_config,
            check_config,
            token_file,
            features,
            out,
            build_tag,
        } => {
            let opts = image::Options {
                features,
                token_file,
                cpu: None,
                out,
                build_tag,
                package: None,
            };
            image_cmd(&opts, update_config, check_config)
        }
        Cmd::Deploy {
            url,
            token_file,
            build_tag,
            timeout,
        } => deploy::run(&deploy::Options {
            url,
            token_file,
            build_tag,
            timeout: std::time::Duration::from_secs(timeout),
        }),
        Cmd::CheckIsa { image } => check_isa(image),
        Cmd::Iris { args } => iris(args),
        Cmd::X25519Image => image::build_x25519_test_image(),
        Cmd::Cell => cell::build_cell().map(|_| ()),
        Cmd::Layers => layers::run(),
        Cmd::Fixtures => build_fixtures().map(|_| ()),
        Cmd::Test => suite::test(),
        Cmd::Soak { cycles } => soak::run(cycles),
        Cmd::Bench {
            json,
            peers,
            update_peer_fixtures,
        } => suite::bench(json.as_deref(), peers, update_peer_fixtures),
        Cmd::Docs => docs::run_docs(),
        Cmd::Prereqs => prereqs::ensure(),
        Cmd::Mame {
            seconds,
            smoke,
            wrong_digest,
            gdb,
        } => mame::run(&mame::Options {
            seconds,
            smoke,
            wrong_digest,
            gdb,
        }),
        Cmd::Conformance { url } => conformance::run(url),
        Cmd::Clients { args } => clients::run(&args),
        Cmd::Console { pytest } => console::run(&pytest),
        Cmd::Lab {
            n,
            port,
            test,
            pytest,
        } => {
            if test {
                lab::test(&pytest)
            } else {
                lab::run(n, port)
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn image_cmd(opts: &image::Options, update: bool, check: bool) -> Result<(), String> {
    let img = image::build(opts)?;
    img.print_summary()?;
    let configured = image::config_digest()?;
    if update {
        image::update_config(&img.sha256)?;
        println!("{} now names this image", image::CONFIG_PATH);
    } else if check {
        match configured {
            Some(d) if d == img.sha256 => println!("{} matches", image::CONFIG_PATH),
            Some(d) => {
                return Err(format!(
                    "{} names sha256 {d}, the image is {}; run `cargo xtask image --update-config`",
                    image::CONFIG_PATH,
                    img.sha256
                ));
            }
            None => return Err(format!("{} has no mcp.sha256 line", image::CONFIG_PATH)),
        }
    } else if configured.as_deref() != Some(img.sha256.as_str()) {
        println!(
            "note: {} names another digest (--update-config to adopt this image)",
            image::CONFIG_PATH
        );
    }
    Ok(())
}

fn check_isa(path: Option<PathBuf>) -> Result<(), String> {
    prereqs::ensure()?;
    let img = match path {
        Some(p) => image::Image::load(&p)?,
        None => image::build(&image::Options {
            out: image::IMAGE_PATH.into(),
            ..Default::default()
        })?,
    };
    let (findings, count) = isa::audit(&img)?;
    for f in &findings {
        println!("  {:#08x}  {:<40} {}", f.offset, f.text, f.reason);
    }
    if findings.is_empty() {
        println!("check-isa: {count} instructions, all R4400 32-bit kernel safe");
        Ok(())
    } else {
        Err(format!(
            "check-isa: {} of {count} instructions refused",
            findings.len()
        ))
    }
}

fn build_fixtures() -> Result<Vec<PathBuf>, String> {
    let root = cmd::repo_root();
    irix7_fixtures::build_fixture_images(root, &root.join("target/fixtures"))
}

/// `cargo iris`: everything a newcomer needs, then the rig in the foreground.
fn iris(mut args: Vec<String>) -> Result<(), String> {
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    prereqs::ensure()?;
    let img = image::build(&image::Options {
        out: image::IMAGE_PATH.into(),
        ..Default::default()
    })?;
    img.print_summary()?;
    build_fixtures()?;
    let status = Command::new(launch::rig_binary()?)
        .current_dir(cmd::repo_root())
        .args(&args)
        .status()
        .map_err(|e| format!("cannot start the rig: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("the rig stopped ({status})"))
    }
}
