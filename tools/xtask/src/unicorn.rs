//! The rig's Unicorn, fixed: the published `unicorn-engine-sys` crate's bundled C sources are
//! copied under `target/unicorn/`, the edits below are applied to the copy, and cmake builds a
//! static MIPS-only `libunicorn.a` from it. A `unicorn.pc` in `target/unicorn/pkgconfig/` (where
//! `.cargo/config.toml` points `PKG_CONFIG_LIBDIR`) makes the crate's build script link that
//! library instead of building its stock copy. Nothing of Unicorn's source is in the
//! repository: only these edits (docs/rig.md, "Which Unicorn").
//!
//! Idempotent and quick when done: the build lives in `target/unicorn/<version>-<key>/`, keyed
//! by the crate version (from Cargo.lock) and a hash of the edits and build options; a stamp
//! file there says it is complete.

use crate::cmd::{self, repo_root};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The crate whose bundled sources are built.
const CRATE: &str = "unicorn-engine-sys";
/// The only version the edits were written against: another one is refused until they are
/// checked against its sources.
const VERSION: &str = "2.1.5";
/// Where the builds and the pkg-config file go, under the repository root.
const DIR: &str = "target/unicorn";
/// The directory `.cargo/config.toml` names as `PKG_CONFIG_LIBDIR`.
pub const PKGCONFIG_DIR: &str = "target/unicorn/pkgconfig";
/// The symbol our edits add, which the rig refers to (`tools/iris/src/cpu.rs`): a rig linked
/// against a Unicorn without the fixes does not link. Its value names the fixes.
pub const FIXES_SYMBOL: &str = "irix7_unicorn_fixes";
/// What that symbol returns: bump the number when the edits change what the rig can rely on.
pub const FIXES: &str = "irix7-mcp fixes 1: mips-delay-slot-temporary, stale-delay-slot-flag, temporaries-exhausted-error, pending-branch-on-new-pc";

/// One edit of one source file: `find` must occur exactly once (else the sources are not the
/// ones the edit was written for, and the build stops naming it).
struct Edit {
    file: &'static str,
    why: &'static str,
    find: &'static str,
    replace: &'static str,
}

/// The fixes. Each `replace` keeps the code it replaces except for the fix itself.
const EDITS: &[Edit] = &[
    Edit {
        file: "qemu/target/mips/translate.c",
        why: "the MIPS translator took a new TCG temporary for every instruction (the delay-slot \
              flag's value) and never freed it: a straight run of a few hundred instructions \
              overran TCGContext.temps. The flag is now set with one constant move, patched to \
              the slot state as before, and no temporary at all",
        find: "    dyn_is_slot = tcg_const_i32(tcg_ctx, 0);\n    slot_op = tcg_last_op(tcg_ctx);\n    tcg_gen_mov_i32(tcg_ctx, tcg_ctx->delay_slot_flag, dyn_is_slot);\n",
        replace: "    /* irix7-mcp: no temporary per instruction (they were never freed). */\n    tcg_gen_movi_i32(tcg_ctx, tcg_ctx->delay_slot_flag, 0);\n    slot_op = tcg_last_op(tcg_ctx);\n",
    },
    Edit {
        file: "qemu/target/mips/translate.c",
        why: "the variable the edit above no longer uses",
        find: "    TCGv_i32 dyn_is_slot = NULL;\n",
        replace: "",
    },
    Edit {
        file: "qemu/tcg/tcg.c",
        why: "a translation abandoned by a longjmp (a guest fault while fetching its code) never \
              reaches tb_stop or gen_tb_end, so delay_slot_flag kept naming a temporary of that \
              translation, and the next emu_start's first block read it (gen_tb_start) after \
              the pool was reset: forget it whenever the pool is reset",
        find: "void tcg_func_start(TCGContext *s)\n{\n    tcg_pool_reset(s);\n    s->nb_temps = s->nb_globals;\n",
        replace: "void tcg_func_start(TCGContext *s)\n{\n    tcg_pool_reset(s);\n    s->nb_temps = s->nb_globals;\n    /* irix7-mcp: no temporary of an earlier (perhaps abandoned) translation survives. */\n    s->delay_slot_flag = NULL;\n",
    },
    Edit {
        file: "qemu/tcg/tcg.c",
        why: "running out of temporaries was checked only in debug builds of the C code and \
              otherwise wrote past TCGContext.temps; now the translation is abandoned and \
              emu_start returns UC_ERR_RESOURCE with the PC at the block it was translating \
              (outside emu_start there is nothing to return to: a message and abort)",
        find: "static inline TCGTemp *tcg_temp_alloc(TCGContext *s)\n{\n    int n = s->nb_temps++;\n    tcg_debug_assert(n < TCG_MAX_TEMPS);\n",
        replace: "/* irix7-mcp: out of temporaries: stop, never write past temps[]. */\nstatic void QEMU_NORETURN tcg_temps_exhausted(TCGContext *s)\n{\n    struct uc_struct *uc = s->uc;\n\n    s->nb_temps = TCG_MAX_TEMPS;\n    if (uc->nested_level > 0 && uc->cpu && !uc->cpu->stopped) {\n        uc->invalid_error = UC_ERR_RESOURCE;\n        cpu_exit(uc->cpu);\n        cpu_loop_exit(uc->cpu);\n    }\n    fprintf(stderr, \"unicorn: TCG temporaries exhausted (%d) outside emu_start\\n\",\n            TCG_MAX_TEMPS);\n    abort();\n}\n\nstatic inline TCGTemp *tcg_temp_alloc(TCGContext *s)\n{\n    int n = s->nb_temps++;\n    if (unlikely(n >= TCG_MAX_TEMPS)) {\n        tcg_temps_exhausted(s);\n    }\n",
    },
    Edit {
        file: "qemu/target/mips/unicorn.c",
        why: "a stop or a guest exception inside a branch's delay slot leaves the branch pending \
              in hflags (with its target), and writing the PC did not clear it: the next \
              emu_start at another address ran its first instruction as that delay slot and \
              then jumped to the old target. Moving the PC elsewhere now drops the pending \
              branch; writing the PC it stopped at (resuming) keeps it",
        find: "        case UC_MIPS_REG_PC:\n            CHECK_REG_TYPE(mipsreg_t);\n            env->active_tc.PC = *(mipsreg_t *)value & ~1ULL;\n",
        replace: "        case UC_MIPS_REG_PC:\n            CHECK_REG_TYPE(mipsreg_t);\n            /* irix7-mcp: starting elsewhere is not resuming a delay slot. */\n            if ((*(mipsreg_t *)value & ~1ULL) != env->active_tc.PC) {\n                env->hflags &= ~MIPS_HFLAG_BMASK;\n            }\n            env->active_tc.PC = *(mipsreg_t *)value & ~1ULL;\n",
    },
];

/// Appended to `uc.c`: the symbol the rig links against (see [`FIXES_SYMBOL`]).
fn marker() -> String {
    format!(
        "\n/* irix7-mcp: the rig refers to this symbol, so it cannot link a Unicorn without the fixes. */\nconst char *{FIXES_SYMBOL}(void)\n{{\n    return \"{FIXES}\";\n}}\n"
    )
}

/// cmake's configuration: the MIPS targets only, one static archive, no tests or install.
const CMAKE_DEFINES: &[&str] = &[
    "-DCMAKE_BUILD_TYPE=Release",
    "-DUNICORN_ARCH=mips",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DUNICORN_LEGACY_STATIC_ARCHIVE=ON",
    "-DUNICORN_BUILD_TESTS=OFF",
    "-DUNICORN_INSTALL=OFF",
];

/// The build's key: the crate version and everything that decides what is built.
fn key(version: &str) -> String {
    let mut h = Sha256::new();
    h.update(version.as_bytes());
    for e in EDITS {
        for part in [e.file, e.find, e.replace] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    h.update(marker().as_bytes());
    for d in CMAKE_DEFINES {
        h.update(d.as_bytes());
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("{version}-{}", &hex[..16])
}

/// The version of `unicorn-engine-sys` that Cargo.lock pins.
fn locked_version(lock: &str) -> Option<String> {
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == format!("name = \"{CRATE}\"") {
            let v = lines.next()?.trim().strip_prefix("version = \"")?;
            return Some(v.strip_suffix('"')?.to_string());
        }
    }
    None
}

/// The pkg-config file pointing at the build in `lib`.
fn pc_file(version: &str, key: &str, lib: &Path) -> String {
    format!(
        "# Written by `cargo xtask prereqs` (tools/xtask/src/unicorn.rs): the rig's fixed Unicorn.\n\
         libdir={}\n\
         Name: unicorn\n\
         Description: Unicorn {version} from the unicorn-engine-sys crate, with irix7-mcp's fixes (build {key})\n\
         Version: {version}\n\
         Libs: -L${{libdir}} -lunicorn\n\
         Libs.private: -lpthread -lm\n",
        lib.display()
    )
}

/// Builds the fixed Unicorn unless it is there already; points pkg-config at it. Needs cmake
/// (`prereqs::ensure` installs it first).
pub fn ensure() -> Result<(), String> {
    let root = repo_root();
    let lock =
        fs::read_to_string(root.join("Cargo.lock")).map_err(|e| format!("Cargo.lock: {e}"))?;
    let version =
        locked_version(&lock).ok_or_else(|| format!("Cargo.lock does not pin {CRATE}"))?;
    if version != VERSION {
        return Err(format!(
            "Cargo.lock pins {CRATE} {version}, but the rig's Unicorn fixes (tools/xtask/src/unicorn.rs) \
             were written for {VERSION}: check each edit against the new sources, then change VERSION"
        ));
    }
    let key = key(&version);
    let out = root.join(DIR).join(&key);
    let lib = out.join("lib");
    let stamp = out.join("stamp");
    let pc_dir = root.join(PKGCONFIG_DIR);
    let pc_path = pc_dir.join("unicorn.pc");
    let pc = pc_file(&version, &key, &lib);
    let built = stamp.is_file() && lib.join("libunicorn.a").is_file();
    if built && fs::read_to_string(&pc_path).is_ok_and(|t| t == pc) {
        return Ok(());
    }
    if !built {
        build(&version, &key, &out)?;
    }
    fs::create_dir_all(&pc_dir).map_err(|e| format!("{}: {e}", pc_dir.display()))?;
    fs::write(&pc_path, pc).map_err(|e| format!("{}: {e}", pc_path.display()))?;
    // Cargo does not watch the .pc file: the crate's build script must run again to link the
    // new library rather than whatever it linked before (the stock one, or an older build).
    // `cargo clean -p` cleans one profile's directory: the dev one, then the release one.
    for profile in [&[][..], &["--release"][..]] {
        cmd::run(
            Command::new("cargo")
                .current_dir(root)
                .args(["clean", "--quiet", "-p", CRATE])
                .args(profile),
        )?;
    }
    remove_other_builds(&root.join(DIR), &key);
    println!("prereqs: the rig will link Unicorn {version} with the fixes ({DIR}/{key})");
    Ok(())
}

/// Copies the crate's sources, applies the edits, runs cmake; the result goes to `out`.
fn build(version: &str, key: &str, out: &Path) -> Result<(), String> {
    let src = crate_sources(version)?;
    println!(
        "prereqs: building Unicorn {version} with the rig's fixes from {} (MIPS only, static)",
        src.display()
    );
    let work = out.with_file_name(format!("{key}.tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    let tree = work.join("src");
    copy_tree(&src, &tree)?;
    for e in EDITS {
        apply(&tree, e)?;
    }
    let uc = tree.join("uc.c");
    let mut text = fs::read_to_string(&uc).map_err(|e| format!("{}: {e}", uc.display()))?;
    text.push_str(&marker());
    fs::write(&uc, text).map_err(|e| format!("{}: {e}", uc.display()))?;

    let build = work.join("build");
    cmd::run(
        Command::new("cmake")
            .arg("-S")
            .arg(&tree)
            .arg("-B")
            .arg(&build)
            .args(CMAKE_DEFINES)
            .arg("-Wno-dev"),
    )?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    cmd::run(
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .args(["--parallel", &jobs.to_string()]),
    )?;
    let archive = build.join("libunicorn.a");
    let lib = work.join("lib");
    fs::create_dir_all(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
    fs::copy(&archive, lib.join("libunicorn.a"))
        .map_err(|e| format!("{}: {e}", archive.display()))?;
    fs::write(
        work.join("stamp"),
        format!("{CRATE} {version}, build {key}\n{FIXES}\n"),
    )
    .map_err(|e| format!("stamp: {e}"))?;
    let _ = fs::remove_dir_all(out);
    fs::rename(&work, out).map_err(|e| format!("{} -> {}: {e}", work.display(), out.display()))
}

/// The directory cargo unpacked `unicorn-engine-sys` into (fetching it if need be).
fn crate_sources(version: &str) -> Result<PathBuf, String> {
    let meta = cmd::output(Command::new("cargo").current_dir(repo_root()).args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
    ]))?;
    let meta: serde_json::Value =
        serde_json::from_str(&meta).map_err(|e| format!("cargo metadata: {e}"))?;
    meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == CRATE && p["version"] == version)
        .and_then(|p| p["manifest_path"].as_str())
        .and_then(|m| Path::new(m).parent())
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("cargo metadata lists no {CRATE} {version}"))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", src.display()))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

fn apply(tree: &Path, e: &Edit) -> Result<(), String> {
    let path = tree.join(e.file);
    let text = fs::read_to_string(&path).map_err(|err| format!("{}: {err}", path.display()))?;
    let edited = apply_to(&text, e)?;
    fs::write(&path, edited).map_err(|err| format!("{}: {err}", path.display()))
}

/// `e` applied to `text`, or why it cannot be.
fn apply_to(text: &str, e: &Edit) -> Result<String, String> {
    match text.matches(e.find).count() {
        1 => Ok(text.replacen(e.find, e.replace, 1)),
        n => Err(format!(
            "{}: the code this fix replaces occurs {n} times, not once (fix: {}): \
             these are not the sources the fix was written for",
            e.file, e.why
        )),
    }
}

/// Removes the builds of other keys (older fixes): nothing should link them any more.
fn remove_other_builds(dir: &Path, key: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != key && name != "pkgconfig" && entry.path().is_dir() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locked_version_is_read_from_cargo_lock() {
        let lock = "[[package]]\nname = \"unicorn-engine\"\nversion = \"2.1.5\"\n\n[[package]]\nname = \"unicorn-engine-sys\"\nversion = \"2.1.5\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\n";
        assert_eq!(locked_version(lock).as_deref(), Some("2.1.5"));
        assert_eq!(locked_version("[[package]]\nname = \"x\"\n"), None);
        let ours = fs::read_to_string(repo_root().join("Cargo.lock")).unwrap();
        assert_eq!(locked_version(&ours).as_deref(), Some(VERSION));
    }

    #[test]
    fn an_edit_applies_once_or_names_its_file() {
        let e = &EDITS[2];
        let text = format!("x\n{}y\n", e.find);
        assert_eq!(apply_to(&text, e).unwrap(), format!("x\n{}y\n", e.replace));
        let twice = format!("{}{}", e.find, e.find);
        for bad in ["", twice.as_str()] {
            let err = apply_to(bad, e).unwrap_err();
            assert!(err.contains("qemu/tcg/tcg.c"), "{err}");
        }
    }

    /// Every edit finds its code exactly once in the crate's sources (cargo metadata finds
    /// them, as the build does), and edits of one file do not overlap.
    #[test]
    fn every_edit_applies_to_the_crate_sources() {
        let src = crate_sources(VERSION).unwrap();
        let mut files: Vec<&str> = EDITS.iter().map(|e| e.file).collect();
        files.dedup();
        for file in files {
            let mut text = fs::read_to_string(src.join(file)).unwrap();
            for e in EDITS.iter().filter(|e| e.file == file) {
                text = apply_to(&text, e).unwrap();
            }
            assert!(text.contains("irix7-mcp"), "{file}");
        }
    }

    #[test]
    fn the_key_follows_the_version_and_the_edits() {
        assert_eq!(key("2.1.5"), key("2.1.5"));
        assert_ne!(key("2.1.5"), key("2.1.6"));
        assert!(key("2.1.5").starts_with("2.1.5-"));
    }

    /// `.cargo/config.toml` must send pkg-config where the pc file is written, and must not
    /// turn pkg-config off for Unicorn.
    #[test]
    fn cargo_config_points_pkg_config_at_the_fixed_build() {
        let config = fs::read_to_string(repo_root().join(".cargo/config.toml")).unwrap();
        let line = config
            .lines()
            .find(|l| l.starts_with("PKG_CONFIG_LIBDIR"))
            .expect("PKG_CONFIG_LIBDIR in [env]");
        assert!(line.contains(&format!("\"{PKGCONFIG_DIR}\"")), "{line}");
        assert!(line.contains("relative = true") && line.contains("force = true"));
        assert!(!config.contains("\nUNICORN_NO_PKG_CONFIG"));
    }

    /// The rig names the same symbol and fixes as the edits add.
    #[test]
    fn the_rig_expects_these_fixes() {
        let cpu = fs::read_to_string(repo_root().join("tools/iris/src/cpu.rs")).unwrap();
        assert!(cpu.contains(&format!("fn {FIXES_SYMBOL}()")));
        assert!(cpu.contains(&format!("\"{FIXES}\"")));
    }
}
