//! The rig links the project's fixed Unicorn (docs/rig.md, "Which Unicorn"), which
//! `cargo xtask prereqs` builds under target/unicorn and names in the pkg-config file that
//! `.cargo/config.toml` points `PKG_CONFIG_LIBDIR` at. Without that file unicorn-engine-sys
//! would quietly build its stock sources, so the build stops here with what to run instead.
//! `IRIS_STOCK_UNICORN=1` with `UNICORN_NO_PKG_CONFIG=1` builds the rig on the stock library on
//! purpose (cfg `iris_stock_unicorn`), to reproduce what the fixes cure; use another
//! `--target-dir`, so that the usual one keeps the fixed library.

use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    println!("cargo:rerun-if-env-changed=UNICORN_NO_PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=IRIS_STOCK_UNICORN");
    println!("cargo:rustc-check-cfg=cfg(iris_stock_unicorn)");
    if env::var_os("IRIS_STOCK_UNICORN").is_some() {
        if env::var_os("UNICORN_NO_PKG_CONFIG").is_none() {
            panic!(
                "IRIS_STOCK_UNICORN needs UNICORN_NO_PKG_CONFIG=1 as well, or the fixed Unicorn is linked"
            );
        }
        println!("cargo:rustc-cfg=iris_stock_unicorn");
        return;
    }
    let how = "run `cargo xtask prereqs` (`cargo iris` and `cargo xtask test` run it too) to \
               build it under target/unicorn; docs/rig.md, \"Which Unicorn\"";
    if env::var_os("UNICORN_NO_PKG_CONFIG").is_some() {
        panic!(
            "UNICORN_NO_PKG_CONFIG is set: unicorn-engine-sys would build its stock sources, \
             whose MIPS translator crashes on long straight-line code. The rig links the \
             project's fixed Unicorn: unset it and {how}"
        );
    }
    let Some(dir) = env::var_os("PKG_CONFIG_LIBDIR") else {
        panic!(
            "PKG_CONFIG_LIBDIR is not set (.cargo/config.toml sets it to target/unicorn/pkgconfig): \
             the rig links the project's fixed Unicorn; {how}"
        );
    };
    let pc = Path::new(&dir).join("unicorn.pc");
    println!("cargo:rerun-if-changed={}", pc.display());
    if !pc.is_file() {
        panic!(
            "{} is missing: the rig links the project's fixed Unicorn, not the stock one \
             unicorn-engine-sys would build; {how}",
            pc.display()
        );
    }
}
