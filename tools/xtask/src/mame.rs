//! `cargo xtask mame`: boots MAME's Indy (`indy_4610`) headless on the project's PROM stand-in
//! (`mame/prom`) and checks that its console comes up, on both paths the host can see: the
//! Z85C30's channel B through MAME's null modem into a file, and the RAM mailbox the Lua
//! script copies to MAME's output (`docs/hardware-fidelity.md`).
//!
//! MAME runs in a network namespace of its own (`unshare -n`): whatever network device it
//! opens exists only there, so it never reaches a real network.

use crate::cmd::{self, repo_root};
use crate::prereqs;
use mame_prom::mailbox;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The MAME system: an Indy with an R4600 at 100 MHz (the module's mips2 code runs on it).
const SYSTEM: &str = "indy_4610";
/// Where everything MAME reads and writes lives.
const DIR: &str = "target/mame";
/// The ROM files MAME's Indy asks for, with the sizes it requires. Only the PROM matters: the
/// keyboard controller's files are placeholders (MAME runs with a wrong checksum, warning).
const PROM_FILE: &str = "indy_4610/ip24prom.070-9101-011.bin";
const PROM_SIZE: usize = 512 * 1024;
const PLACEHOLDERS: &[(&str, usize)] = &[
    ("kb_ms_natural/natural.bin", 4096),
    ("ps2_keybc/72x8455.zm82", 2048),
    ("ps2_keybc/128251-001.u3", 2048),
];
/// The MAC of MAME's Seeq (`:edlc`): SGI's OUI, then "MAE".
const MAC: &str = "08:00:69:4d:41:45";
/// Wall-clock bound on one MAME run, whatever the emulated time asked for.
const WALL_LIMIT: Duration = Duration::from_secs(120);

/// How to run MAME.
pub struct Options {
    /// Emulated seconds before MAME stops on its own (the script stops it sooner when the
    /// stand-in halts).
    pub seconds: u32,
    /// Give the namespace's tap an address and run `rom/tools/mcp-smoke.py` against the module
    /// over MAME's Seeq, then stop MAME.
    pub smoke: bool,
    /// Name another digest than the image's in the boot environment: the stand-in must refuse
    /// the image and halt before the module runs.
    pub wrong_digest: bool,
    /// Give the stand-in the demo cell (`tools/cell`) and run the rig's GDB test
    /// (`tools/iris/tests/gdb.rs`), then a fault of the cell through `debug.*`
    /// (`tools/iris/tests/debug.rs`), against the module and its cell over MAME's Seeq, then
    /// stop MAME. MAME runs without its recompiler (`-nodrc`), which would miss a `break` written
    /// into code it had already compiled.
    pub gdb: bool,
}

/// Installs MAME if missing, builds the PROM stand-in, writes the ROM directory, the cfg and
/// the Lua script, boots and checks the console.
pub fn run(opts: &Options) -> Result<(), String> {
    prereqs::ensure()?;
    let dir = repo_root().join(DIR);
    let prom = build_prom()?;
    println!(
        "prom    {} bytes of code and data, padded to {PROM_SIZE}",
        prom.len()
    );
    write_roms(&dir.join("roms"), &prom)?;
    write_cfg(&dir.join("cfg"))?;
    let image = crate::launch::product_image()?;
    println!("image   {} sha256 {}", image.path.display(), image.sha256);
    let gdb = if opts.gdb {
        let cell = crate::cell::build_cell()?;
        let tests = test_binaries()?;
        println!(
            "cell    {}; the tests {} and {}",
            cell.display(),
            tests.gdb.display(),
            tests.debug.display()
        );
        Some((cell, tests))
    } else {
        None
    };
    let client = opts.smoke || gdb.is_some();
    let token = client.then(random_token).transpose()?;
    let env = dir.join("boot-env.conf");
    let mut env_text = boot_env(token.as_deref())?;
    if gdb.is_some() {
        // The name the rig's tests send in `Host` (`tools/iris/tests/support/guest.rs`).
        env_text.push_str("mcp.hosts = indy\n");
    }
    let wrong = opts.wrong_digest.then(|| other_digest(&image.sha256));
    if let Some(w) = &wrong {
        // The last line naming a key wins (`mame/prom/src/boot_env.rs`).
        env_text.push_str(&format!("mcp.sha256 = {w}\n"));
    }
    // It holds the smoke run's `mcp.token`.
    crate::private::write(&env, env_text.as_bytes())?;
    let script = dir.join("boot.lua");
    // Serving the smoke test, the module runs until the shell script stops MAME.
    let serve_frames = if client { None } else { Some(SERVE_FRAMES) };
    let stop = dir.join("stop");
    let _ = std::fs::remove_file(&stop);
    let cell = gdb.as_ref().map(|(cell, _)| cell.as_path());
    write_file(
        &script,
        lua_script(&image.path, &env, cell, &stop, serve_frames).as_bytes(),
    )?;
    let scc_out = dir.join("scc-b.out");
    // A stale capture must not pass for this run's; MAME writes the console, which shows a
    // generated token, into the emptied file, keeping its mode.
    crate::private::create(&scc_out)?;
    for stale in ["capture.png", "screen.bmp"] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    let _ = std::fs::remove_dir_all(dir.join("snap"));

    let t = Instant::now();
    // The smoke run ends when mcp-smoke does: MAME's own stop is only a backstop.
    let seconds = if client {
        opts.seconds.max(SMOKE_LIMIT.as_secs() as u32)
    } else {
        opts.seconds
    };
    let args = mame_args(&dir, &script, &scc_out, seconds, gdb.is_some());
    let (out, smoke) = match (&token, &gdb) {
        (Some(token), Some((cell, tests))) => {
            let body = gdb_body(token, cell, tests);
            run_client(&dir, &args, &stop, &body)?
        }
        (Some(token), None) => {
            let body = smoke_body(&dir, token, &image.sha256)?;
            run_client(&dir, &args, &stop, &body)?
        }
        (None, _) => (run_mame(&dir, &args)?, Ok(())),
    };
    let expect = Expect {
        digest: image.sha256.clone(),
        refuse: wrong,
    };
    let scc = std::fs::read(&scc_out).unwrap_or_default();
    println!(
        "mame    {SYSTEM}, {:.1} s wall clock",
        t.elapsed().as_secs_f64()
    );
    println!("--- console (Z85C30 channel B via MAME's null modem)");
    // The stand-in ends with NULs to flush the transmitter; they are not console text.
    print!(
        "{}",
        String::from_utf8_lossy(&scc).replace(['\r', '\0'], "")
    );
    println!("--- console (RAM mailbox, via the Lua script)");
    print!("{}", out.console);
    println!("---");
    if let Some(line) = &out.result {
        println!("{line}");
    }
    check(&out, &scc, &expect)?;
    smoke?;
    if opts.smoke {
        let t = Instant::now();
        let same = crate::mame_screen::compare(&dir)?;
        println!(
            "mame: {same} (compared in {:.1} s)",
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// What one MAME run printed: the mailbox console and the script's last word.
struct Run {
    console: String,
    result: Option<String>,
    state: Option<u32>,
    /// The stand-in said it polls the module.
    serving: bool,
}

/// What the console must show.
struct Expect {
    /// The image's SHA-256, which the stand-in must print as verified.
    digest: String,
    /// The digest the boot environment names instead, when the image must be refused.
    refuse: Option<String>,
}

/// `digest` with its first hex digit changed.
fn other_digest(digest: &str) -> String {
    let flipped = if digest.starts_with('0') { '1' } else { '0' };
    format!("{flipped}{}", &digest[1.min(digest.len())..])
}

/// The run passes when the stand-in reached the serving state and the console shows, on both
/// paths, the PROM's banner, the digest verified and the module's banner.
fn check(out: &Run, scc: &[u8], expect: &Expect) -> Result<(), String> {
    let scc = String::from_utf8_lossy(scc).replace(['\r', '\0'], "");
    if let Some(wrong) = &expect.refuse {
        return check_refusal(out, &scc, &expect.digest, wrong);
    }
    let verified = format!("sha256 {} verified", expect.digest);
    let wanted = [mame_prom::BANNER, verified.as_str()];
    for (path, text) in [
        ("serial port", scc.as_str()),
        ("mailbox", out.console.as_str()),
    ] {
        for w in wanted {
            if !text.contains(w) {
                return Err(format!("the console ({path}) lacks `{w}`"));
            }
        }
        if !has_module_banner(text) {
            return Err(format!("the console ({path}) lacks the module's banner"));
        }
    }
    match out.state {
        Some(mailbox::STATE_SERVING) | None if out.serving => {
            println!(
                "mame: the product image booted: digest verified and the module's banner on the serial port and the mailbox"
            );
            Ok(())
        }
        Some(s) if s != mailbox::STATE_SERVING => {
            Err(format!("the stand-in stopped in state {s} (see above)"))
        }
        _ => Err("MAME stopped before the module was served".into()),
    }
}

/// A refused image: both console paths name the image's digest and the configured one, the
/// stand-in halts in the failed state, and the module never printed its banner.
fn check_refusal(out: &Run, scc: &str, digest: &str, wrong: &str) -> Result<(), String> {
    let said = format!("sha256 {digest} is not mcp.sha256 {wrong}");
    for (path, text) in [("serial port", scc), ("mailbox", out.console.as_str())] {
        if !text.contains(&said) || !text.contains("kernel: sha256 mismatch; halted") {
            return Err(format!(
                "the console ({path}) does not show the refusal `{said}`"
            ));
        }
        if has_module_banner(text) {
            return Err(format!(
                "the module ran although its digest was refused ({path})"
            ));
        }
    }
    match out.state {
        Some(mailbox::STATE_FAILED) => {
            println!("mame: an image whose digest the configuration does not name was refused");
            Ok(())
        }
        other => Err(format!("the stand-in ended in state {other:?}, not failed")),
    }
}

/// The start of the module's banner (`docs/abi.md`, `irix7_mcp_init`).
const MODULE_BANNER: &str = "irix7-mcp ";

/// Whether a line of `text` is the module's banner: `irix7-mcp <version>, ABI <n>, …`.
fn has_module_banner(text: &str) -> bool {
    text.lines()
        .any(|l| l.starts_with(MODULE_BANNER) && l.contains(", ABI "))
}

/// Builds `mame/prom` for the R4x00 and links it at the reset vector into a flat binary.
fn build_prom() -> Result<Vec<u8>, String> {
    let root = repo_root();
    let target_dir = root.join("target/mips/mame-prom");
    let rustflags = [
        "-Zlocation-detail=none",
        "-Zunstable-options",
        "-Cpanic=immediate-abort",
    ];
    cmd::run(
        Command::new("cargo")
            .current_dir(root)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
            .env_remove("RUSTFLAGS")
            .args(["rustc", "--quiet", "-p", "irix7-mame-prom", "--lib"])
            .args(["--crate-type", "staticlib", "--profile", "image"])
            .args(["--target", "mips-irix7.json", "-Z", "json-target-spec"])
            .args(["-Z", "build-std=core,alloc"])
            .args(["-Z", "build-std-features=compiler-builtins-mem"])
            .arg("--target-dir")
            .arg(&target_dir),
    )?;
    let lib = target_dir.join("mips-irix7/image/libmame_prom.a");
    let elf = root.join(DIR).join("prom.elf");
    std::fs::create_dir_all(root.join(DIR)).map_err(|e| format!("{DIR}: {e}"))?;
    cmd::run(
        Command::new(cmd::rust_lld()?)
            .args(["-flavor", "gnu", "--gc-sections", "-e", "_reset"])
            .arg("-T")
            .arg(root.join("mame/prom/prom.ld"))
            .arg("-o")
            .arg(&elf)
            .arg(&lib),
    )?;
    let data = std::fs::read(&elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    flatten(&data)
}

/// The PROM's bytes: each loadable segment's file contents at its load address less the reset
/// vector's (`.data` loads in the PROM and runs in RAM; `.bss` has no bytes to place).
fn flatten(elf: &[u8]) -> Result<Vec<u8>, String> {
    use object::read::elf::{ElfFile32, ProgramHeader};
    const RESET_VECTOR: u64 = 0xBFC0_0000;
    let file = ElfFile32::<object::BigEndian>::parse(elf)
        .map_err(|e| format!("the PROM stand-in is not an ELF32 file: {e}"))?;
    let endian = file.endian();
    let mut out = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != object::elf::PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let at = u64::from(ph.p_paddr(endian))
            .checked_sub(RESET_VECTOR)
            .ok_or("a PROM segment loads below the reset vector")?;
        let bytes = ph
            .data(endian, elf)
            .map_err(|_| "a PROM segment lies outside the file")?;
        let end = at + bytes.len() as u64;
        if end > PROM_SIZE as u64 {
            return Err(format!(
                "the PROM stand-in needs {end} bytes, over {PROM_SIZE}"
            ));
        }
        if out.len() < end as usize {
            out.resize(end as usize, 0xFF);
        }
        out[at as usize..end as usize].copy_from_slice(bytes);
    }
    if out.is_empty() {
        return Err("the PROM stand-in has no loadable bytes".into());
    }
    Ok(out)
}

/// The PROM padded with 0xFF (erased flash) and the placeholder files, each of its exact size.
fn write_roms(roms: &Path, prom: &[u8]) -> Result<(), String> {
    let mut image = prom.to_vec();
    image.resize(PROM_SIZE, 0xFF);
    write_file(&roms.join(PROM_FILE), &image)?;
    for (name, size) in PLACEHOLDERS {
        write_file(&roms.join(name), &vec![0; *size])?;
    }
    Ok(())
}

/// MAME's per-machine cfg: the Seeq's MAC (MAME keeps it there, not in the machine's NVRAM).
fn write_cfg(cfg: &Path) -> Result<(), String> {
    let text = format!(
        "<?xml version=\"1.0\"?>\n\
         <mameconfig version=\"10\">\n\
         \x20   <system name=\"{SYSTEM}\">\n\
         \x20       <network>\n\
         \x20           <device tag=\":edlc\" mac=\"{MAC}\" />\n\
         \x20       </network>\n\
         \x20   </system>\n\
         </mameconfig>\n"
    );
    write_file(&cfg.join(format!("{SYSTEM}.cfg")), text.as_bytes())
}

/// The autoboot script: once a frame, copies new mailbox console bytes to MAME's stdout; when
/// the stand-in asks for the image, writes the image and the boot environment into RAM; once
/// the module has been served for [`SERVE_FRAMES`] frames, or the stand-in stops, prints the
/// state (and the exception registers) and stops MAME.
fn lua_script(
    image: &Path,
    env: &Path,
    cell: Option<&Path>,
    stop: &Path,
    serve_frames: Option<u32>,
) -> String {
    use mailbox::*;
    use mame_prom::layout::{CELL_IMAGE, ENV, IMAGE};
    use mame_prom::power;
    let (image, env) = (image.display().to_string(), env.display().to_string());
    // With a cell, the script writes its ELF beside the image; without, a length of 0.
    let cell = cell.map_or_else(
        || "0".to_string(),
        |c| {
            format!(
                "deliver({:#x}, {:?}, {})",
                CELL_IMAGE.0,
                c.display().to_string(),
                CELL_IMAGE.1
            )
        },
    );
    let stop = stop.display().to_string();
    // Lua's integers reach 2^63: "never" is a frame count no run reaches.
    let serve_frames = serve_frames.map_or(i64::MAX, i64::from);
    format!(
        r#"-- Written by `cargo xtask mame` (tools/xtask/src/mame.rs); the layout is mame/prom's mailbox.
-- MAME runs this script again after a machine reset, in the same Lua state, while the first
-- run's frame callback and taps stay in force: the second run does nothing.
if irix7_script_running then return end
irix7_script_running = true
local cpu = manager.machine.devices[":maincpu"]
local mem = cpu.spaces["program"]
local base = {PHYS:#x}
local seen = 0
local frames = 0
local serving = 0
local done = false

{cmap_read}
-- MAME's MC and IOC2 store the reset and power-off writes without acting on them
-- (mame/prom/src/power.rs): these taps notice them, and the frame callback resets or stops
-- the machine as the hardware would. A tap's offset is its 64-bit word; the mask names lanes.
local sysinit, power_off = false, false
reset_tap = mem:install_write_tap({cpuctrl0_word:#x}, {cpuctrl0_word:#x} + 7, "mc-sysinit", function(offset, data, mask)
  if math.type(data) == "integer" and ((mask >> {cpuctrl0_shift}) & 0xffffffff) ~= 0 and ((data >> {cpuctrl0_shift}) & {sysinit:#x}) ~= 0 then sysinit = true end
end)
power_tap = mem:install_write_tap({panel_word:#x}, {panel_word:#x} + 7, "ioc2-panel", function(offset, data, mask)
  if math.type(data) == "integer" and ((mask >> {panel_shift}) & 0xff) ~= 0 and ((data >> {panel_shift}) & {poweron:#x}) == 0 then power_off = true end
end)
local function deliver(addr, path, max)
  local f = assert(io.open(path, "rb"))
  local data = f:read("a")
  f:close()
  local n = #data
  if n > max then error(path .. " is larger than its staging area") end
  local i = 1
  while i + 3 <= n do
    mem:write_u32(addr + i - 1, (string.unpack(">I4", data, i)))
    i = i + 4
  end
  while i <= n do
    mem:write_u8(addr + i - 1, data:byte(i))
    i = i + 1
  end
  return n
end

emu.register_frame_done(function()
  if done then return end
  frames = frames + 1
  if sysinit then
    sysinit = false
    print("[lua] MC CPU control 0 SYSINIT written: resetting the machine")
    manager.machine:soft_reset()
    return
  end
  if mem:read_u32(base) ~= {MAGIC:#x} then return end
  local head = mem:read_u32(base + {HEAD:#x})
  if head < seen then
    -- The machine was reset: the stand-in starts its ring over.
    print("[lua] the machine restarted")
    seen = 0
  end
  if head - seen > {RING_SIZE} then
    io.write("[mailbox: " .. (head - seen - {RING_SIZE}) .. " bytes lost]\n")
    seen = head - {RING_SIZE}
  end
  while seen < head do
    io.write(string.char(mem:read_u8(base + {RING:#x} + (seen % {RING_SIZE}))))
    seen = seen + 1
  end
  io.flush()
  if mem:read_u32(base + {DELIVERY:#x}) == {WANT_IMAGE:#x} then
    local n = deliver({image_at:#x}, {image:?}, {image_max})
    local e = deliver({env_at:#x}, {env:?}, {env_max})
    local c = {cell}
    mem:write_u32(base + {IMAGE_LEN:#x}, n)
    mem:write_u32(base + {ENV_LEN:#x}, e)
    mem:write_u32(base + {CELL_LEN:#x}, c)
    mem:write_u32(base + {DELIVERY:#x}, {DELIVERED:#x})
    print(string.format("[lua] delivered the image (%d bytes) and the boot environment (%d bytes)", n, e))
  end
  local state = mem:read_u32(base + {STATE:#x})
  if state == {STATE_SERVING} then
    serving = serving + 1
    -- The stand-in drew its picture before loading the module, which draws nothing: this
    -- frame is the one the module's captures read back.
    if serving == 2 then
      manager.machine.video:snapshot()
      print("[lua] snapshot of the screen taken")
    end
  end
  -- Twice a second, whether the smoke script asks MAME to stop (a clean exit keeps the serial
  -- capture, which a killed MAME loses).
  local stop = false
  if frames % 30 == 0 then
    local f = io.open({stop:?}, "r")
    if f then f:close(); stop = true end
  end
  if power_off then
    print("{powered_off_line}")
  end
  if (state ~= {STATE_RUNNING} and state ~= {STATE_SERVING}) or serving >= {serve_frames} or stop or power_off then
    print(string.format("[lua] state %d after %d frames, %d polls, PC %08x, Cause %08x, EPC %08x, BadVAddr %08x, %d CMAP reads answered",
      state, frames, mem:read_u32(base + {POLLS:#x}), cpu.state["PC"].value,
      mem:read_u32(base + {CAUSE:#x}), mem:read_u32(base + {EPC:#x}),
      mem:read_u32(base + {BADVADDR:#x}), cmap_reads))
    io.flush()
    done = true
    manager.machine:exit()
  end
end)
"#,
        cmap_read = crate::mame_screen::CMAP_READ_LUA,
        powered_off_line = POWERED_OFF_LINE,
        cpuctrl0_word = power::CPUCTRL0 & !7,
        cpuctrl0_shift = 8 * (4 - (power::CPUCTRL0 & 7)),
        sysinit = power::CPUCTRL0_SYSINIT,
        panel_word = power::PANEL & !7,
        panel_shift = 8 * (7 - (power::PANEL & 7)),
        poweron = power::PANEL_POWERON,
        image_at = IMAGE.0,
        image_max = IMAGE.1,
        env_at = ENV.0,
        env_max = ENV.1,
    )
}

/// Frames (1/60 s of emulated time each) the module runs after its `init` before the script
/// stops MAME.
const SERVE_FRAMES: u32 = 120;

/// The boot environment: `boot/config.conf`, then the NVRAM variables the module reads (a
/// token only for the smoke test, which must know it; otherwise the module makes one up).
fn boot_env(token: Option<&str>) -> Result<String, String> {
    let path = repo_root().join(crate::image::CONFIG_PATH);
    let config = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut env = format!(
        "{config}\n# cargo xtask mame: the machine's NVRAM variables\neaddr = {MAC}\nnetaddr = {MODULE_IP}/24\n"
    );
    if let Some(t) = token {
        env.push_str(&format!("mcp.token = {t}\n"));
    }
    Ok(env)
}

/// The module's address inside MAME's network namespace, and the host side's on the tap.
const MODULE_IP: &str = "10.77.0.2";
const HOST_IP: &str = "10.77.0.1";

/// 32 hex digits from the kernel's random source: the smoke run's bearer token.
fn random_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("/dev/urandom: {e}"))?;
    Ok(crate::image::hex(&bytes))
}

/// What the Lua script prints when the stand-in clears the front panel's power bit.
const POWERED_OFF_LINE: &str = "[lua] IOC2 front panel power bit cleared: the machine is off";

/// What the stand-in prints once the module's `init` succeeded.
const SERVING_LINE: &str = "kernel: module initialised, polling";

/// MAME's command line (after the program): headless, the ROM directory, the script, the
/// per-machine directories, and channel B's null modem into `scc_out`.
fn mame_args(dir: &Path, script: &Path, scc_out: &Path, seconds: u32, nodrc: bool) -> Vec<String> {
    let p = |q: &Path| q.display().to_string();
    let mut a: Vec<String> = vec![SYSTEM.into(), "-rompath".into(), p(&dir.join("roms"))];
    if nodrc {
        // MAME's MIPS3 recompiler checks only a compiled block's first word and treats `cache`
        // as a no-op: a `break` the debugger writes into code it compiled would be missed.
        a.push("-nodrc".into());
    }
    for s in [
        "-video",
        "none",
        "-sound",
        "none",
        "-nothrottle",
        "-skip_gameinfo",
        "-autoboot_delay",
        "0",
        "-noreadconfig",
    ] {
        a.push(s.into());
    }
    a.extend(["-seconds_to_run".into(), seconds.to_string()]);
    a.extend(["-autoboot_script".into(), p(script)]);
    a.extend(["-cfg_directory".into(), p(&dir.join("cfg"))]);
    a.extend(["-nvram_directory".into(), p(&dir.join("nvram"))]);
    a.extend(["-snapshot_directory".into(), p(&dir.join("snap"))]);
    a.extend(["-homepath".into(), p(dir)]);
    a.extend([
        "-ioc2:rs232b".into(),
        "null_modem".into(),
        "-bitb".into(),
        p(scc_out),
    ]);
    a
}

/// `unshare`'s flags: a network namespace of its own, and without root a user namespace that
/// maps us to root inside it so that the namespace (and a tap in it) is allowed.
fn unshare_flags() -> &'static str {
    let root_user = cmd::output(Command::new("id").arg("-u")).is_ok_and(|s| s.trim() == "0");
    if root_user { "-n" } else { "-rn" }
}

/// Runs MAME in a network namespace of its own, bounded by [`WALL_LIMIT`].
fn run_mame(dir: &Path, args: &[String]) -> Result<Run, String> {
    let mut c = Command::new("unshare");
    c.arg(unshare_flags())
        .arg(mame_binary())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| format!("cannot run MAME: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("MAME's stdout")?;
    let mut stderr = child.stderr.take().ok_or("MAME's stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let status = wait_bounded(&mut child, WALL_LIMIT, "MAME")?;
    let out = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    let run = parse_output(&out);
    if !status.success() {
        // MAME 0.251 segfaults at exit in about half the runs whenever an autoboot script is
        // loaded, even an empty one (none in eight runs without a script): after the script
        // printed its verdict, that crash is MAME's teardown, not the machine's.
        if run.result.is_some() && status.signal() == Some(SIGSEGV) {
            println!("note: MAME crashed at exit after the run ended (MAME 0.251's teardown)");
            return Ok(run);
        }
        eprint!("{err}");
        return Err(format!("MAME failed ({status})"));
    }
    Ok(run)
}

/// The signal of a segmentation fault.
const SIGSEGV: i32 = 11;

/// Waits for `child`, killing it after `limit`.
fn wait_bounded(
    child: &mut std::process::Child,
    limit: Duration,
    what: &str,
) -> Result<std::process::ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().map_err(|e| format!("{what}: {e}"))? {
            return Ok(st);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{what} ran longer than {} s", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Wall-clock bound on the whole smoke run (MAME's boot, the tap, mcp-smoke).
const SMOKE_LIMIT: Duration = Duration::from_secs(300);

/// Quotes `s` for the shell.
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// What the smoke run does once the module serves: finds it with `irix7-gateway discover`
/// (mDNS), runs `rom/tools/mcp-smoke.py` against it (no disk: block and fs checks skipped),
/// then `system.poweroff`, which must turn MAME off.
fn smoke_body(dir: &Path, token: &str, sha256: &str) -> Result<String, String> {
    let smoke = repo_root().join("rom/tools/mcp-smoke.py");
    let out_file = dir.join("mame.out");
    Ok(format!(
        r#"# The lab gateway's mDNS browse finds the module's _mcp._tcp announcement over MAME's Seeq.
{gateway} discover --seconds 5 > {found} 2>&1
found=0
if grep -q {want} {found}; then
  echo "smoke: irix7-gateway discover found the module over mDNS"
else
  echo "FAIL  irix7-gateway discover did not find the module: $(tr '\n' ' ' < {found})"; found=1
fi
env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY \
  python3 {smoke} --url http://{module}:7801/mcp --token {token} --sha256 {sha256} \
  --skip-block --skip-fs --save-screen {dir} --reset
rc=$?
t2=$(date +%s)
echo "smoke: MAME up $((t1 - t0)) s before the module served, mcp-smoke $((t2 - t1)) s"
# Last, system.poweroff: the stand-in clears the IOC2 front panel's power bit and the Lua script
# turns MAME off, which must happen on its own.
env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY \
  python3 - {smoke} http://{module}:7801/mcp {token} <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mcp_smoke", sys.argv[1])
smoke = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smoke)
r = smoke.Client(sys.argv[2], sys.argv[3]).modern(
    "tools/call", {{"name": "system.poweroff", "arguments": {{}}}})
print("smoke: system.poweroff answered" + (" with an error" if r.get("isError") else ""))
PY
for i in $(seq 1 200); do kill -0 $mame 2>/dev/null || break; sleep 0.1; done
if grep -qF {powered_off} {out} && ! kill -0 $mame 2>/dev/null; then
  echo "smoke: system.poweroff cleared the front panel's power bit and the machine went off ($(($(date +%s) - t2)) s)"
else
  echo "FAIL  system.poweroff did not turn the machine off through the IOC2 front panel"; rc=1
fi
[ $rc -eq 0 ] && rc=$found
"#,
        out = q(&out_file.display().to_string()),
        module = MODULE_IP,
        smoke = q(&smoke.display().to_string()),
        token = q(token),
        sha256 = q(sha256),
        gateway = q(&crate::lab::gateway_binary()?.display().to_string()),
        found = q(&dir.join("discover.out").display().to_string()),
        dir = q(&dir.display().to_string()),
        powered_off = q(POWERED_OFF_LINE),
        want = q(&format!("^{}\thttp://{MODULE_IP}:7801/mcp\t", mdns_name())),
    ))
}

/// The rig's GDB and `debug.*` tests (`tools/iris/tests/gdb.rs`, `debug.rs`), built as test
/// binaries: their paths.
fn test_binaries() -> Result<TestBinaries, String> {
    // The suite's `cargo test --workspace --all-features` builds the same binaries.
    let out = cmd::output(
        Command::new("cargo")
            .current_dir(repo_root())
            .args(["test", "--workspace", "--all-features", "--no-run"])
            .args(["--test", "gdb", "--test", "debug"])
            .args(["--message-format", "json-render-diagnostics"]),
    )?;
    let binary = |name: &str| {
        out.lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
            .find_map(|m| m["executable"].as_str().map(PathBuf::from))
            .ok_or_else(|| format!("cargo built no test binary named {name}"))
    };
    Ok(TestBinaries {
        gdb: binary("gdb")?,
        debug: binary("debug")?,
    })
}

struct TestBinaries {
    gdb: PathBuf,
    debug: PathBuf,
}

/// The tests that debug a module outside the rig, in the order they run: the GDB session
/// (`tools/iris/tests/gdb.rs`), then a fault of the cell through `debug.*` (`debug.rs`), which
/// leaves the cell stopped at its fault.
const GDB_TEST: &str = "gdb_debugs_the_cell_of_a_module_elsewhere";
const FAULT_TEST: &str = "a_fault_of_the_cell_of_a_module_elsewhere_is_a_stop";

/// What the GDB run does once the module serves: the rig's GDB test, then its fault test,
/// against the module at [`MODULE_IP`] and the cell the stand-in runs.
fn gdb_body(token: &str, cell: &Path, tests: &TestBinaries) -> String {
    format!(
        r#"run_test() {{
  env -u http_proxy -u HTTP_PROXY -u https_proxy -u HTTPS_PROXY -u all_proxy -u ALL_PROXY \
    IRIX7_GDB_MODULE={module}:7801 IRIX7_MCP_TOKEN={token} IRIX7_CELL={cell} IRIX7_GDB_SHOW=1 \
    "$1" --ignored --exact "$2" --nocapture --test-threads 1 2>&1
}}
rc=0
run_test {gdb} {gdb_test} || {{ echo "FAIL  the GDB test failed against the module in MAME"; rc=1; }}
t2=$(date +%s)
run_test {debug} {fault_test} || {{ echo "FAIL  the fault test failed against the module in MAME"; rc=1; }}
t3=$(date +%s)
echo "gdb: MAME up $((t1 - t0)) s before the module served, the GDB test $((t2 - t1)) s, the fault test $((t3 - t2)) s"
"#,
        module = MODULE_IP,
        token = q(token),
        cell = q(&cell.display().to_string()),
        gdb = q(&tests.gdb.display().to_string()),
        debug = q(&tests.debug.display().to_string()),
        gdb_test = GDB_TEST,
        fault_test = FAULT_TEST,
    )
}

/// A client run: one shell script in a fresh network namespace starts MAME, gives the tap MAME
/// opens there the host's address, waits for the module, runs `body` (a shell fragment that
/// sets `rc`: 0 passed, 1 failed) and stops MAME. Returns MAME's output and whether the body
/// passed, with the script's failure lines as the reason when it did not (they are printed as
/// they come too).
fn run_client(
    dir: &Path,
    args: &[String],
    stop_file: &Path,
    body: &str,
) -> Result<(Run, Result<(), String>), String> {
    let mame: Vec<String> = std::iter::once(mame_binary().display().to_string())
        .chain(args.iter().cloned())
        .map(|a| q(&a))
        .collect();
    let out_file = dir.join("mame.out");
    let script = format!(
        r#"# Written by `cargo xtask mame` (tools/xtask/src/mame.rs); runs under unshare -n.
ip link set lo up
{mame} > {out} 2> {err} < /dev/null &
mame=$!
t0=$(date +%s)
# Ask the Lua script to stop MAME; kill it only if it has not gone after 20 s.
stop() {{
  touch {stop}
  for i in $(seq 1 200); do kill -0 $mame 2>/dev/null || break; sleep 0.1; done
  kill $mame 2>/dev/null
  wait $mame 2>/dev/null
}}
tap=
for i in $(seq 1 600); do
  tap=$(ip -o link show | sed -n 's/^[0-9]*: \(tap[^:@]*\).*/\1/p' | head -n 1)
  [ -n "$tap" ] && break
  sleep 0.1
done
if [ -z "$tap" ]; then echo "FAIL  MAME opened no tap"; stop; exit 2; fi
ip addr add {host}/24 dev "$tap" && ip link set "$tap" up || {{ echo "FAIL  cannot address $tap"; stop; exit 2; }}
echo "mame: $tap is {host}/24; the module is {module}"
for i in $(seq 1 1200); do
  grep -q {serving} {out} && break
  kill -0 $mame 2>/dev/null || break
  sleep 0.1
done
if ! grep -q {serving} {out}; then echo "FAIL  the module did not come up"; stop; exit 2; fi
t1=$(date +%s)
{body}
stop
exit $rc
"#,
        mame = mame.join(" "),
        out = q(&out_file.display().to_string()),
        err = q(&dir.join("mame.err").display().to_string()),
        stop = q(&stop_file.display().to_string()),
        host = HOST_IP,
        module = MODULE_IP,
        serving = q(SERVING_LINE),
    );
    let path = dir.join("client.sh");
    write_file(&path, script.as_bytes())?;
    let _ = std::fs::remove_file(&out_file);
    let mut child = Command::new("unshare")
        .arg(unshare_flags())
        .arg("sh")
        .arg(&path)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let stdout = child.stdout.take().ok_or("the client run's stdout")?;
    let failures = std::thread::spawn(move || echo_failures(stdout));
    // On a timeout the reader is left behind: a program the script started may still hold
    // the pipe.
    let status = wait_bounded(&mut child, SMOKE_LIMIT, "the client run")?;
    // The reader ends with the script (MAME's output goes to files, not to this pipe).
    let failures = failures.join().unwrap_or_default();
    let out = std::fs::read(&out_file).unwrap_or_default();
    let run = parse_output(&String::from_utf8_lossy(&out));
    match status.code() {
        Some(0) => Ok((run, Ok(()))),
        Some(1) => Ok((
            run,
            Err(format!(
                "the run against the module in MAME failed: {}",
                failures.join("; ")
            )),
        )),
        _ => {
            print!("{}", run.console);
            let err = std::fs::read_to_string(dir.join("mame.err")).unwrap_or_default();
            // The stand-in's ROM files always fail MAME's checksums: that is not the reason.
            let noise = [
                "CHECKSUMS",
                "EXPECTED:",
                "FOUND:",
                "might not run correctly",
            ];
            let err = err.lines().filter(|l| !noise.iter().any(|n| l.contains(n)));
            Err(format!(
                "the run failed before its client ({status}): {}; the console ends: {}; \
                 MAME's stderr ends: {}",
                failures.join("; "),
                last_lines(run.console.lines(), 3),
                last_lines(err, 3)
            ))
        }
    }
}

/// The last `n` of `lines`, joined on one line.
fn last_lines<'a>(lines: impl DoubleEndedIterator<Item = &'a str>, n: usize) -> String {
    let mut tail: Vec<&str> = lines.rev().take(n).collect();
    tail.reverse();
    tail.join(" | ")
}

/// Prints the smoke script's output as it comes and keeps its `FAIL` lines (mcp-smoke's and the
/// script's own), which say what went wrong.
fn echo_failures(stdout: std::process::ChildStdout) -> Vec<String> {
    use std::io::BufRead;
    let mut failures = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        println!("{line}");
        if line.starts_with("FAIL") {
            failures.push(line);
        }
    }
    failures
}

/// The name the module announces with mDNS: `indy-` and the MAC's last three bytes.
fn mdns_name() -> String {
    format!("indy-{}", MAC[9..].replace(':', ""))
}

/// Splits MAME's stdout into the console the script copied and its `[lua] state` line.
/// MAME's own lines (the ROM checksum warnings) go to stdout too; they are dropped.
fn parse_output(out: &str) -> Run {
    let mut console = String::new();
    let mut result = None;
    let mut state = None;
    for line in out.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("[lua] state ") {
            state = rest.split_whitespace().next().and_then(|s| s.parse().ok());
            result = Some(line.trim_end().to_string());
        } else if !is_mame_noise(line) {
            console.push_str(line);
        }
    }
    let serving = console.contains(SERVING_LINE);
    Run {
        console,
        result,
        state,
        serving,
    }
}

/// MAME's report of the ROM files it found with other checksums than its database's.
fn is_mame_noise(line: &str) -> bool {
    line.contains("WRONG CHECKSUMS")
        || line.trim_start().starts_with("EXPECTED:")
        || line.trim_start().starts_with("FOUND:")
        || line.starts_with("WARNING: the machine might not run correctly")
        || line.starts_with("Average speed:")
}

/// Debian installs MAME in /usr/games, which is not on every PATH.
fn mame_binary() -> PathBuf {
    let games = Path::new("/usr/games/mame");
    if games.exists() {
        games.to_path_buf()
    } else {
        PathBuf::from("mame")
    }
}

fn write_file(path: &Path, data: &[u8]) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(path, data).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_splits_console_from_the_result_and_mame_warnings() {
        let out = "ip24prom.070-9101-011.bin WRONG CHECKSUMS:\n    EXPECTED: CRC(5e7f7e3a)\n       FOUND: CRC(afaf0d00)\nWARNING: the machine might not run correctly.\nirix7-mame-prom 0.1.0: reset\nsha256 ab verified\nirix7-mcp 0.1.0, ABI 12\nkernel: module initialised, polling\n[lua] state 4 after 8 frames, PC bfc00950\n";
        let run = parse_output(out);
        assert_eq!(
            run.console,
            "irix7-mame-prom 0.1.0: reset\nsha256 ab verified\nirix7-mcp 0.1.0, ABI 12\nkernel: module initialised, polling\n"
        );
        assert_eq!(run.state, Some(mailbox::STATE_SERVING));
        let expect = Expect {
            digest: "ab".into(),
            refuse: None,
        };
        assert!(check(&run, run.console.as_bytes(), &expect).is_ok());
        assert!(check(&run, b"irix7-mame-prom\r\n", &expect).is_err());
        let other = Expect {
            digest: "cd".into(),
            refuse: None,
        };
        assert!(check(&run, run.console.as_bytes(), &other).is_err());
        let halted = parse_output("irix7-mame-prom\n[lua] state 1 after 3 frames\n");
        assert!(check(&halted, halted.console.as_bytes(), &expect).is_err());
    }

    #[test]
    fn a_refusal_needs_both_digests_the_halt_and_no_module() {
        let refused = "loading irix7-mcp from file:m.o\nsha256 ab is not mcp.sha256 0b\nkernel: sha256 mismatch; halted\n";
        let run = parse_output(&format!("{refused}[lua] state 2 after 9 frames\n"));
        let expect = Expect {
            digest: "ab".into(),
            refuse: Some("0b".into()),
        };
        assert!(check(&run, refused.as_bytes(), &expect).is_ok());
        assert!(check(&run, b"", &expect).is_err());
        let ran = parse_output(&format!(
            "{refused}irix7-mcp 0.1.0, ABI 12\n[lua] state 2\n"
        ));
        assert!(check(&ran, ran.console.as_bytes(), &expect).is_err());
        let served = parse_output(&format!("{refused}[lua] state 4\n"));
        assert!(check(&served, refused.as_bytes(), &expect).is_err());
        assert_eq!(other_digest("ab"), "0b");
        assert_eq!(other_digest("0b"), "1b");
    }

    #[test]
    fn script_delivers_where_the_stand_in_looks() {
        let s = lua_script(
            Path::new("/i.o"),
            Path::new("/e.conf"),
            None,
            Path::new("/s"),
            Some(120),
        );
        assert!(s.contains("serving >= 120 or stop or power_off then"));
        let forever = lua_script(
            Path::new("/i.o"),
            Path::new("/e.conf"),
            Some(Path::new("/c.elf")),
            Path::new("/s"),
            None,
        );
        assert!(forever.contains("io.open(\"/s\", \"r\")"));
        assert!(forever.contains(&format!(
            "serving >= {} or stop or power_off then",
            i64::MAX
        )));
        assert!(s.contains("local base = 0xfff0000"));
        assert!(s.contains(&format!("{:#x}", mailbox::MAGIC)));
        assert!(s.contains("deliver(0xe800000, \"/i.o\", 15728640)"));
        // The cell's ELF when there is one, else a length of 0.
        assert!(s.contains("local c = 0\n"));
        assert!(s.contains("mem:write_u32(base + 0x30, c)"));
        assert!(forever.contains("local c = deliver(0xf700000, \"/c.elf\", 1048576)"));
        assert!(s.contains("deliver(0xf800000, \"/e.conf\", 65536)"));
        // The reset and power-off taps watch CPU control 0 and the front panel's words.
        assert!(s.contains("install_write_tap(0x1fa00000, 0x1fa00000 + 7"));
        assert!(s.contains("install_write_tap(0x1fbd9850, 0x1fbd9850 + 7"));
        assert!(s.contains("((data >> 32) & 0x1) == 0"));
    }
}
