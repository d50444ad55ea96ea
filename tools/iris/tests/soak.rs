//! The soak: one rig of the real image taken through many resets in a row, of every kind mixed
//! (a requested reset, a deploy of a changed image, the watchdog after a hang, a module trap the
//! kernel panics on, a deploy the kernel refuses). Each cycle writes a unique line on the console
//! just before the reset and checks that the machine comes back, the cause is right, the
//! previous console ends with that line and the kernel's, the flight record is the previous
//! boot's and names the call in flight where one was, and nothing else the boot contract
//! promises is lost. It prints the time each new boot took to serve (guest instructions and
//! wall time) and everything lost, then fails if anything was.
//!
//! `IRIX7_SOAK_CYCLES` sets the count: `cargo xtask soak` runs 50, `cargo xtask test` the
//! default of 6 (each kind once, and one more). The changed image is
//! the one `tools/iris/tests/deploy.rs` uses (`IRIX7_DEPLOY_IMAGE`).

mod support;

use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use iris::image::sha256_hex;
use irix7_kmem::testing::Lcg;
use serde_json::{Value, json};
use support::guest::{Guest, TOKEN, boot_guest_with};
use support::image::{ProductImage, changed_image};
use support::mcp::{tool_ok, tool_request};
use support::reset::{
    Deploys, call_in_flight, mark, previous_console, resource_text, status_page, try_rpc,
    try_status, wait_for_reset,
};

const DEFAULT_CYCLES: usize = 6;
const WATCHDOG_MS: u64 = 1_500;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Reset,
    Deploy,
    Watchdog,
    Panic,
    Refused,
}

const KINDS: [Kind; 5] = [
    Kind::Reset,
    Kind::Deploy,
    Kind::Watchdog,
    Kind::Panic,
    Kind::Refused,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Reset => "reset",
            Kind::Deploy => "deploy",
            Kind::Watchdog => "watchdog",
            Kind::Panic => "panic",
            Kind::Refused => "refused",
        }
    }

    /// `status.boot.cause` after a reset of this kind.
    fn cause(self) -> &'static str {
        match self {
            Kind::Reset | Kind::Deploy => "requested",
            Kind::Watchdog => "watchdog",
            Kind::Panic => "panic",
            Kind::Refused => "refused",
        }
    }

    /// What the kernel's last line on the previous console says.
    fn kernel_line(self) -> &'static str {
        match self {
            Kind::Reset | Kind::Deploy | Kind::Refused => "reset requested by the module",
            Kind::Watchdog => "MC watchdog expired",
            Kind::Panic => "module trapped",
        }
    }

    /// Whether a call is left in flight when the machine stops.
    fn leaves_a_call(self) -> bool {
        matches!(self, Kind::Watchdog | Kind::Panic)
    }
}

/// The kinds in the order the soak runs them: each run of five is every kind once, in an order
/// of its own (a fixed pseudo-random shuffle), so each kind follows each other one over a long soak.
fn schedule(cycles: usize) -> Vec<Kind> {
    let mut rng = Lcg(1);
    let mut out = Vec::with_capacity(cycles + KINDS.len());
    let mut first = true;
    while out.len() < cycles {
        let mut round = KINDS;
        if !first {
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i + 1));
            }
        }
        first = false;
        out.extend(round);
    }
    out.truncate(cycles);
    out
}

/// One image the machine can run: its path in the deploy directory and its digest.
#[derive(Clone)]
struct Build {
    path: PathBuf,
    sha256: String,
}

fn cycles() -> usize {
    match std::env::var("IRIX7_SOAK_CYCLES") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("IRIX7_SOAK_CYCLES={v}: not a count")),
        Err(_) => DEFAULT_CYCLES,
    }
}

/// What one cycle measured.
struct Cycle {
    kind: Kind,
    /// Guest instructions from the reset to the first answered call after it.
    insns: u64,
    /// Of those, the module's init (the kernel runs nothing else of the guest's at a boot).
    init_insns: u64,
    /// Wall time from the reset to the first answer: the new boot's uptime then (the rig
    /// starts the guest clock at the reset).
    wall_ms: u64,
}

/// The soak's state between cycles.
struct Soak<'a> {
    g: &'a Guest,
    deploys: &'a Deploys,
    /// The two images a deploy alternates between.
    builds: [Build; 2],
    /// Which of them the configuration names (and the machine runs).
    running: usize,
    /// The image refused deploys name: corrupt, under a digest it does not have.
    bad: PathBuf,
    /// `status` as the last boot answered it.
    last: Value,
    resets: u64,
    watchdogs: u64,
    /// What went missing or wrong, cycle by cycle.
    lost: Vec<String>,
}

impl Soak<'_> {
    /// Runs cycle `n`; `Err` when the machine did not come back (the soak cannot go on).
    fn cycle(&mut self, n: usize, kind: Kind) -> Result<Cycle, String> {
        let g = self.g;
        let marker = mark(
            g.mcp,
            &format!("soak cycle {n} ({}) ends here", kind.name()),
        );
        let before = self.last.clone();
        let mut expect_sha = self.builds[self.running].sha256.clone();
        let mut refused = None;
        let waiting = match kind {
            Kind::Reset => {
                reset(g);
                None
            }
            Kind::Deploy => {
                self.running = 1 - self.running;
                let b = &self.builds[self.running];
                self.deploys.name(&b.path, &b.sha256);
                expect_sha = b.sha256.clone();
                reset(g);
                None
            }
            Kind::Refused => {
                let wanted = sha256_hex(format!("soak cycle {n}").as_bytes());
                self.deploys.name(&self.bad, &wanted);
                refused = Some(wanted);
                reset(g);
                None
            }
            Kind::Watchdog | Kind::Panic => {
                let waiting = call_in_flight(g.mcp);
                // The call has started (its record is written at its start) before the hook.
                thread::sleep(Duration::from_millis(300));
                if kind == Kind::Watchdog {
                    g.rig.hang_next_call();
                } else {
                    g.rig.trap_next_call();
                }
                Some(waiting)
            }
        };
        self.resets += 1;
        if !wait_for_reset(g, self.resets) {
            return Err(format!("cycle {n} ({}): no reset", kind.name()));
        }
        let st = try_status(g)
            .ok_or_else(|| format!("cycle {n} ({}): the machine did not come back", kind.name()))?;
        let counters = g.rig.counters();
        // After a refusal the next boot must find a good image named again.
        if refused.is_some() {
            let b = &self.builds[self.running];
            self.deploys.name(&b.path, &b.sha256);
        }
        if let Some(w) = waiting {
            drop(w);
        }
        let measured = Cycle {
            kind,
            insns: counters.total_insns.saturating_sub(counters.reset_insns),
            init_insns: counters.init_insns,
            wall_ms: st["uptime_ms"].as_u64().unwrap_or(u64::MAX),
        };
        if kind == Kind::Watchdog {
            self.watchdogs += 1;
        }
        let mut lost = self.check(&st, &before, kind, &marker, &expect_sha, refused.as_deref());
        if counters.watchdog_resets != self.watchdogs {
            lost.push(format!(
                "{} watchdog resets counted, {} expected",
                counters.watchdog_resets, self.watchdogs
            ));
        }
        self.lost.extend(
            lost.into_iter()
                .map(|l| format!("cycle {n} ({}): {l}", kind.name())),
        );
        self.last = st;
        Ok(measured)
    }

    /// Everything the boot contract promises after a reset of `kind`: what was missed.
    fn check(
        &self,
        st: &Value,
        before: &Value,
        kind: Kind,
        marker: &str,
        expect_sha: &str,
        refused: Option<&str>,
    ) -> Vec<String> {
        let mut lost = Vec::new();
        let mut want = |what: &str, ok: bool, got: &dyn std::fmt::Display| {
            if !ok {
                lost.push(format!("{what}: got {got}"));
            }
        };
        let boot = &st["boot"];
        want("cause", boot["cause"] == kind.cause(), &boot["cause"]);
        let boots = before["boot"]["boots"].as_u64().unwrap_or(0) + 1;
        want("boots counted", boot["boots"] == boots, &boot["boots"]);
        want(
            "previous console kept",
            boot["console"] == "ok",
            &boot["console"],
        );
        let flight = &boot["flight"];
        want(
            "flight record kept",
            flight["state"] == "ok",
            &flight["state"],
        );
        want(
            "flight record of the previous build",
            flight["build"] == before["build_id"],
            &flight["build"],
        );
        want(
            "previous image",
            boot["previous_sha256"] == before["image"]["sha256"],
            &boot["previous_sha256"],
        );
        want(
            "previous uptime",
            boot["previous_uptime_ms"].as_u64().is_some_and(|ms| ms > 0),
            &boot["previous_uptime_ms"],
        );
        want(
            "running image",
            st["image"]["sha256"] == expect_sha,
            &st["image"]["sha256"],
        );
        let calls = if kind.leaves_a_call() {
            json!(["serial.read"])
        } else {
            json!([])
        };
        want(
            "calls in flight",
            flight["calls"] == calls,
            &flight["calls"],
        );
        match kind {
            Kind::Reset => {
                want(
                    "requested by",
                    boot["requested_by"] == "system.reset",
                    &boot["requested_by"],
                );
                want("not a deploy", boot.get("deploy").is_none(), boot);
            }
            Kind::Deploy => {
                want("a deploy", boot["deploy"] == true, boot);
                want(
                    "the new build",
                    st["build_id"] != before["build_id"],
                    &st["build_id"],
                );
            }
            Kind::Panic => want(
                "panic message",
                boot["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("module trapped")),
                &boot["message"],
            ),
            Kind::Watchdog => {}
            Kind::Refused => {
                want(
                    "refusal",
                    st["image"]["deploy"] == "sha256 mismatch",
                    &st["image"]["deploy"],
                );
                want(
                    "refused digest",
                    refused.is_some_and(|r| st["image"]["refused_sha256"] == r),
                    &st["image"]["refused_sha256"],
                );
            }
        }
        if kind != Kind::Refused {
            want(
                "deploy ok",
                st["image"]["deploy"] == "ok",
                &st["image"]["deploy"],
            );
        }
        let console = previous_console(self.g.mcp);
        let mut lines: Vec<&str> = console.lines().collect();
        let last = lines.last().copied().unwrap_or("");
        want(
            "the kernel's last line",
            last.contains(kind.kernel_line()),
            &format!("{last:?}"),
        );
        // The kernel's lines end the console; before them come the audit lines of the calls
        // that led to the reset, and before those the marker.
        while lines.last().is_some_and(|l| l.starts_with("kernel: ")) {
            lines.pop();
        }
        let mut audited = Vec::new();
        while let Some(l) = lines.last().filter(|l| l.starts_with("irix7-mcp: audit ")) {
            audited.push(*l);
            lines.pop();
        }
        let before_audit = lines.last().copied().unwrap_or("");
        want(
            "the last line written before the reset",
            before_audit == marker,
            &format!("{before_audit:?}"),
        );
        let mut calls = vec!["console.write"];
        if !kind.leaves_a_call() {
            calls.push("system.reset");
        }
        // A requested reset is a machine event too, audited beside the call that asked.
        audited.retain(|l| !l.contains(" machine event "));
        let audit_names = |l: &&str, call: &str| l.contains(&format!(" {call} "));
        want(
            "the audit of the calls before the reset",
            audited.len() == calls.len()
                && calls
                    .iter()
                    .rev()
                    .zip(&audited)
                    .all(|(c, l)| audit_names(l, c)),
            &format!("{audited:?}"),
        );
        want(
            "no token on the console",
            !console.contains(TOKEN),
            &"the token",
        );
        let page = status_page(self.g.http);
        want(
            "status page",
            page.contains("<td>boot</td>") && page.contains(kind.cause()),
            &"no cause",
        );
        let text = resource_text(self.g.mcp, "irix7://status");
        want(
            "irix7://status",
            text.contains(&format!("boot        {}", kind.cause())),
            &text,
        );
        if kind.leaves_a_call() {
            let flight = resource_text(self.g.mcp, "irix7://flight/previous");
            want(
                "irix7://flight/previous names the call",
                flight.contains("  serial.read from "),
                &flight,
            );
        }
        lost
    }
}

/// Asks for a reset a tenth of a second from now.
fn reset(g: &Guest) {
    let m = try_rpc(
        g.mcp,
        &tool_request(3, "system.reset", json!({"delay_ms": 100})),
    );
    assert!(m.is_some(), "system.reset answers");
}

/// Minimum, median and maximum.
fn spread(mut v: Vec<u64>) -> (u64, u64, u64) {
    v.sort_unstable();
    match v.len() {
        0 => (0, 0, 0),
        n => (v[0], v[n / 2], v[n - 1]),
    }
}

#[test]
fn many_resets_in_a_row_lose_nothing_the_boot_contract_promises() {
    let Some(product) = ProductImage::find_or_skip() else {
        return;
    };
    let Some(changed) = changed_image() else {
        return;
    };
    let deploys = Deploys::new("soak");
    let a = Build {
        path: deploys.image("a.o", &product.bytes),
        sha256: product.sha256(),
    };
    let b = Build {
        path: deploys.image("b.o", &changed),
        sha256: sha256_hex(&changed),
    };
    assert_ne!(a.sha256, b.sha256, "the changed image must differ");
    let mut corrupt = product.bytes.clone();
    let mid = corrupt.len() / 2;
    corrupt[mid] ^= 0x40;
    let bad = deploys.image("bad.o", &corrupt);
    deploys.name(&a.path, &a.sha256);
    let Some(g) = boot_guest_with(
        &[],
        |o| {
            deploys.apply(o);
            o.watchdog_ms = WATCHDOG_MS;
            o.reboot_on_panic = true;
        },
        |_| {},
    ) else {
        return;
    };
    let first = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(first["boot"]["cause"], "power-on", "{first}");
    let mut soak = Soak {
        g: &g,
        deploys: &deploys,
        builds: [a, b],
        running: 0,
        bad,
        last: first,
        resets: 0,
        watchdogs: 0,
        lost: Vec::new(),
    };
    let plan = schedule(cycles());
    let started = Instant::now();
    let mut done = Vec::new();
    let mut stopped = None;
    for (i, &kind) in plan.iter().enumerate() {
        match soak.cycle(i + 1, kind) {
            Ok(c) => {
                println!(
                    "soak: cycle {:>3} {:<8} served after {:>11} insns (init {:>11}), {:>5} ms",
                    i + 1,
                    kind.name(),
                    c.insns,
                    c.init_insns,
                    c.wall_ms
                );
                done.push(c);
            }
            Err(e) => {
                stopped = Some(e);
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    let lost = soak.lost;
    let (imin, imed, imax) = spread(done.iter().map(|c| c.insns).collect());
    let (wmin, wmed, wmax) = spread(done.iter().map(|c| c.wall_ms).collect());
    let per_kind: Vec<String> = KINDS
        .iter()
        .map(|&k| {
            let n = done.iter().filter(|c| c.kind == k).count();
            format!("{n} {}", k.name())
        })
        .collect();
    println!(
        "soak: {} of {} cycles ({}) in {:.1} s",
        done.len(),
        plan.len(),
        per_kind.join(", "),
        elapsed.as_secs_f64()
    );
    println!(
        "soak: time to serve after a reset: guest instructions min {imin} / median {imed} / max \
         {imax}; wall min {wmin} / median {wmed} / max {wmax} ms"
    );
    println!("soak: lost: {}", lost.len());
    for l in &lost {
        println!("soak:   {l}");
    }
    g.rig.stop().unwrap();
    if let Some(e) = stopped {
        panic!("{e}");
    }
    assert!(lost.is_empty(), "lost: {lost:?}");
}

#[test]
fn the_schedule_runs_each_kind_once_in_every_five() {
    let plan = schedule(50);
    assert_eq!(plan.len(), 50);
    assert_eq!(&plan[..5], &KINDS);
    for round in plan.chunks(5) {
        for k in KINDS {
            assert_eq!(round.iter().filter(|&&r| r == k).count(), 1, "{round:?}");
        }
    }
    assert_ne!(&plan[5..10], &KINDS, "later rounds are shuffled");
}
