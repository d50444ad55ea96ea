//! `iris`: boot the irix7-mcp module on the emulated Indy. Console output goes to stdout, rig
//! diagnostics to stderr. Exit status: 0 power-off, `--run-ms` elapsed; 1 config/image refused;
//! 2 guest crash or hang; 3 module failure; 4 rig failure.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, FromArgMatches, Parser};

use iris::kernel::disks::parse_disk_arg;
use iris::rig::{DEFAULT_HANG_INSNS, RigOptions, RunEnd};
use iris::{Rig, RigError};

#[derive(Parser, Debug)]
#[command(
    name = "iris",
    version,
    about = "The iris rig: an emulated SGI Indy running the irix7-mcp module"
)]
struct Cli {
    /// Boot configuration (default: boot/config.conf under the repository root).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Repository root for relative image and disk paths (default: found from the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// NVRAM environment variable, e.g. mcp.token=secret (repeatable; overrides --env-file).
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
    /// File of KEY=VALUE lines for the NVRAM environment.
    #[arg(long, value_name = "PATH")]
    env_file: Option<PathBuf>,
    /// RAM size in MiB (16..=256).
    #[arg(long, value_name = "MIB", default_value_t = iris::memmap::DEFAULT_RAM_MIB)]
    ram: u32,
    /// Offer the module at most KIB of heap (the ABI promises 1024) instead of the rest of RAM.
    #[arg(long = "heap", value_name = "KIB")]
    heap: Option<u32>,
    /// Pin the wall time the kernel reports to SECONDS (Unix time) at boot, instead of the host's.
    #[arg(long = "unix-time", value_name = "SECONDS")]
    unix_time: Option<u32>,
    /// Attach a raw disk image (512-byte blocks) as SCSI target ID (repeatable).
    #[arg(long = "disk", value_name = "ID=PATH", value_parser = parse_disk_arg)]
    disks: Vec<(u8, PathBuf)>,
    /// Attach no disk (not even the default target/fixtures/rootfs.erofs).
    #[arg(long)]
    no_disk: bool,
    /// MC watchdog period in ms (0 = off). Default: the Indy's ~67 s.
    #[arg(long, value_name = "MS", default_value_t = indy::regs::mc::WATCHDOG_PERIOD_MS)]
    watchdog_ms: u64,
    /// With the watchdog off, report a guest call running past this many instructions as a hang.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_HANG_INSNS)]
    hang_insns: u64,
    /// Stop after this many milliseconds (the module's exit runs; status 0).
    #[arg(long, value_name = "MS")]
    run_ms: Option<u64>,
    /// Do not echo the console to stdout.
    #[arg(long)]
    quiet: bool,
    /// Present the screen in 24-bit RGB (default: 8-bit colour index, as the PROM sets it).
    #[arg(long)]
    screen_rgb24: bool,
    /// Forward host 127.0.0.1:HOST to guest port GUEST (repeatable). Given at least once, it
    /// replaces the defaults 7801:7801 and 8088:80.
    #[arg(long = "forward", value_name = "HOST:GUEST", value_parser = iris::net::parse_forward)]
    forwards: Vec<iris::net::Forward>,
    /// Forward no ports at all.
    #[arg(long, conflicts_with = "forwards")]
    no_forward: bool,
    /// Write every Ethernet frame on the virtual wire to FILE (pcap, for Wireshark/tcpdump).
    #[arg(long, value_name = "FILE", conflicts_with = "no_forward")]
    pcap: Option<std::path::PathBuf>,
    /// Make the virtual wire faulty in both directions, e.g.
    /// loss=5,corrupt=1,reorder=2,dup=1,delay=3ms,seed=7 (percentages per frame; also
    /// size=BYTES and rate=FRAMES/MSms). See docs/rig.md.
    #[arg(long, value_name = "SPEC", value_parser = iris::net::WireFaults::parse, conflicts_with = "no_forward")]
    wire_faults: Option<iris::net::WireFaults>,
    /// Keep the last image that booted in FILE (relative to the root), to fall back to when
    /// the configured one is refused, also after the rig restarts.
    #[arg(long, value_name = "FILE", default_value = iris::rig::DEFAULT_LAST_GOOD)]
    last_good: PathBuf,
    /// Keep the last good image only in memory (a new start of the rig has none).
    #[arg(long, conflicts_with = "last_good")]
    no_last_good: bool,
    /// When the module traps, panic the kernel and reset the machine (the next boot says
    /// `panic`) instead of stopping the rig.
    #[arg(long)]
    reboot_on_panic: bool,
    /// Run this cell beside the module (a static R4400 ELF linked in the cell window, e.g.
    /// target/cell/cell.elf from `cargo xtask cell`): a context the module can debug.
    #[arg(long, value_name = "ELF")]
    cell: Option<PathBuf>,
    /// Count guest instructions per function of the module after init and print the top 30
    /// when the run ends (with --run-ms, or at power-off).
    #[arg(long)]
    profile: bool,
}

fn run(cli: Cli) -> Result<RunEnd, RigError> {
    let forwards = match (cli.no_forward, cli.forwards.is_empty()) {
        (true, _) => Vec::new(),
        (false, true) => iris::net::DEFAULT_FORWARDS.to_vec(),
        (false, false) => cli.forwards,
    };
    let opts = RigOptions {
        root: cli.root,
        config: cli.config,
        env: cli.env,
        env_file: cli.env_file,
        ram_mib: cli.ram,
        heap_kib: cli.heap,
        unix_time: cli.unix_time,
        disks: cli.disks,
        no_disk: cli.no_disk,
        watchdog_ms: cli.watchdog_ms,
        hang_insns: cli.hang_insns,
        quiet: cli.quiet,
        forwards: forwards.clone(),
        pcap: cli.pcap,
        wire_faults: cli.wire_faults,
        last_good_file: (!cli.no_last_good).then_some(cli.last_good),
        reboot_on_panic: cli.reboot_on_panic,
        cell: cli.cell,
    };
    let mut rig = Rig::new(opts)?;
    if cli.screen_rgb24 {
        let screen = rig.screen();
        screen
            .borrow_mut()
            .set_depth(iris::devices::newport::Depth::Rgb24);
    }
    if !cli.quiet {
        if let Some(f) = &cli.wire_faults {
            eprintln!("iris: wire faults {f}");
        }
        let n = rig.net().host_net();
        for (a, f) in rig.net().forward_addrs().iter().zip(&forwards) {
            eprintln!(
                "iris: forwarding {a} -> {}:{} (host stack {})",
                n.guest_ip, f.guest_port, n.host_ip
            );
        }
    }
    rig.boot()?;
    if cli.profile {
        rig.profile_start()?;
    }
    let limit = cli.run_ms.map_or(Duration::MAX, Duration::from_millis);
    let end = rig.run_until(limit, |_| false)?;
    if let Some(p) = rig.profile_stop()? {
        eprintln!("iris: guest instructions by function since init:");
        eprint!("{}", p.report(30));
    }
    rig.stop()?;
    if !cli.quiet {
        let c = rig.counters();
        eprintln!(
            "iris: {end:?} after {} polls, {} guest instructions (init {}), {} resets",
            c.polls, c.total_insns, c.init_insns, c.resets
        );
    }
    Ok(end)
}

fn main() -> ExitCode {
    // `--version` also names the emulator and its fixes (docs/rig.md, "Which Unicorn").
    let version = format!(
        "{}\n{}",
        env!("CARGO_PKG_VERSION"),
        iris::cpu::emulator_line()
    );
    let matches = Cli::command()
        .version(&*Box::leak(version.into_boxed_str()))
        .get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    match run(cli) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iris: {e}");
            ExitCode::from(e.exit_code() as u8)
        }
    }
}
