//! The shell's builtins: one table row per command, with its usage line for `help`. A builtin
//! writes to the output and returns an exit status (0 success, 1 failure, 2 usage error), or a
//! [`Job`](super::Job) for work that spans polls.

use super::Exit;
use super::jobs::{Cat, Ls, Sleep};
use super::output::Output;
use crate::hil::platform::c_str;
use crate::services::context::Services;
use crate::services::identity::VERSION;
use crate::services::power::{Action, DEFAULT_DELAY_MS};
use crate::services::proc;
use crate::services::status::{format_duration, format_utc};
use crate::services::status::{mem_text, net_text};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// A builtin: `(ctx, arguments without the name, output, now_ms)`.
pub type BuiltinFn = fn(&mut Services, &[String], &mut Output, u64) -> Exit;

pub struct Builtin {
    pub name: &'static str,
    pub usage: &'static str,
    pub help: &'static str,
    pub run: BuiltinFn,
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "help",
        usage: "help",
        help: "list the builtins",
        run: help,
    },
    Builtin {
        name: "echo",
        usage: "echo [-n] [WORD...]",
        help: "print the words (-n: no newline)",
        run: echo,
    },
    Builtin {
        name: "uname",
        usage: "uname [-asnrvm]",
        help: "system name (-a: all of it)",
        run: uname,
    },
    Builtin {
        name: "uptime",
        usage: "uptime",
        help: "time since boot",
        run: uptime,
    },
    Builtin {
        name: "time",
        usage: "time",
        help: "the date and time (UTC) and the monotonic clock",
        run: time,
    },
    Builtin {
        name: "status",
        usage: "status",
        help: "the machine's status (as the status tool)",
        run: status,
    },
    Builtin {
        name: "net",
        usage: "net",
        help: "network address and connections",
        run: net,
    },
    Builtin {
        name: "mem",
        usage: "mem",
        help: "RAM, module heap and overlay use",
        run: mem,
    },
    Builtin {
        name: "audit",
        usage: "audit",
        help: "the audit trail's last lines (as irix7://audit)",
        run: audit,
    },
    Builtin {
        name: "ps",
        usage: "ps",
        help: "the kernel's processes",
        run: ps,
    },
    Builtin {
        name: "ls",
        usage: "ls [-l] [PATH...]",
        help: "list directories of the merged filesystem (-l: long form)",
        run: ls,
    },
    Builtin {
        name: "cat",
        usage: "cat PATH...",
        help: "print files of the merged filesystem",
        run: cat,
    },
    Builtin {
        name: "sleep",
        usage: "sleep SECONDS",
        help: "wait (up to 3600 s; fractions allowed)",
        run: sleep,
    },
    Builtin {
        name: "reboot",
        usage: "reboot",
        help: "reset the machine after answering (as system.reset)",
        run: reboot,
    },
    Builtin {
        name: "poweroff",
        usage: "poweroff",
        help: "power the machine off after answering (as system.poweroff)",
        run: poweroff,
    },
];

/// The builtin called `name`.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Prints `name: usage: …` and returns the usage exit status.
fn usage(out: &mut Output, name: &str) -> Exit {
    let u = find(name).map_or("", |b| b.usage);
    let _ = writeln!(out, "{name}: usage: {u}");
    Exit::Status(2)
}

fn no_args(name: &str, args: &[String], out: &mut Output) -> Option<Exit> {
    if args.is_empty() {
        None
    } else {
        Some(usage(out, name))
    }
}

fn help(_ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("help", args, out) {
        return e;
    }
    out.push_str("builtins (one command per call; quotes '…' \"…\" and \\ work):\n");
    for b in BUILTINS {
        let _ = writeln!(out, "  {:<20} {}", b.usage, b.help);
    }
    Exit::Status(0)
}

fn echo(_ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    let (newline, words) = match args.split_first() {
        Some((first, rest)) if first == "-n" => (false, rest),
        _ => (true, args),
    };
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            out.push_str(" ");
        }
        out.push_str(w);
    }
    if newline {
        out.push_str("\n");
    }
    Exit::Status(0)
}

fn uname(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    let m = ctx.platform.machine_status();
    let version = alloc::format!("irix7-mcp-{VERSION}");
    let fields = [
        ('s', "IRIX"),
        ('n', "indy"),
        ('r', c_str(&m.os_version)),
        ('v', version.as_str()),
        ('m', "IP22"),
    ];
    let mut want = [false; 5];
    for a in args {
        let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) else {
            return usage(out, "uname");
        };
        for f in flags.chars() {
            match (f, fields.iter().position(|(c, _)| *c == f)) {
                ('a', _) => want = [true; 5],
                (_, Some(i)) => want[i] = true,
                _ => return usage(out, "uname"),
            }
        }
    }
    if !want.contains(&true) {
        want[0] = true;
    }
    let mut first = true;
    for (i, (_, text)) in fields.iter().enumerate() {
        if want[i] {
            if !first {
                out.push_str(" ");
            }
            out.push_str(text);
            first = false;
        }
    }
    out.push_str("\n");
    Exit::Status(0)
}

fn uptime(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("uptime", args, out) {
        return e;
    }
    let _ = writeln!(out, "up {}", format_duration(ctx.platform.clock_ms()));
    Exit::Status(0)
}

fn time(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("time", args, out) {
        return e;
    }
    let m = ctx.platform.machine_status();
    let _ = writeln!(
        out,
        "{} (unix {})\nclock {} ms since boot",
        format_utc(m.unix_time),
        m.unix_time,
        ctx.platform.clock_ms()
    );
    Exit::Status(0)
}

fn status(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("status", args, out) {
        return e;
    }
    out.push_str(&ctx.status().to_text());
    Exit::Status(0)
}

fn net(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("net", args, out) {
        return e;
    }
    out.push_str(&net_text(&ctx.status()));
    Exit::Status(0)
}

fn mem(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("mem", args, out) {
        return e;
    }
    out.push_str(&mem_text(&ctx.status()));
    if let Some(fs) = &ctx.fs {
        let u = fs.usage();
        let _ = writeln!(
            out,
            "overlay     {} / {} bytes, {} entries",
            u.used, u.cap, u.entries
        );
    }
    Exit::Status(0)
}

fn audit(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("audit", args, out) {
        return e;
    }
    match ctx.audit.try_borrow() {
        Ok(log) => {
            out.push_str(&log.text());
            Exit::Status(0)
        }
        Err(_) => {
            out.push_str("audit: the log is being written; try again\n");
            Exit::Status(1)
        }
    }
}

fn ps(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if let Some(e) = no_args("ps", args, out) {
        return e;
    }
    out.push_str("  PID STATE      CPU(ms) NAME\n");
    for p in proc::processes(&*ctx.platform) {
        let _ = writeln!(
            out,
            "{:>5} {:<8} {:>9} {}",
            p.pid,
            proc::state_name(p.state),
            p.cpu_ms,
            c_str(&p.name)
        );
    }
    Exit::Status(0)
}

fn ls(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    let mut long = false;
    let mut paths: Vec<String> = Vec::new();
    for a in args {
        match a.as_str() {
            "-l" => long = true,
            p if p.starts_with('-') && p.len() > 1 => return usage(out, "ls"),
            p => paths.push(String::from(p)),
        }
    }
    if paths.is_empty() {
        paths.push(String::from("/"));
    }
    if ctx.fs.is_none() {
        out.push_str("ls: no filesystem mounted\n");
        return Exit::Status(1);
    }
    Exit::Job(Box::new(Ls::new(paths, long)))
}

fn cat(ctx: &mut Services, args: &[String], out: &mut Output, _now: u64) -> Exit {
    if args.is_empty() {
        return usage(out, "cat");
    }
    if ctx.fs.is_none() {
        out.push_str("cat: no filesystem mounted\n");
        return Exit::Status(1);
    }
    Exit::Job(Box::new(Cat::new(ctx, args)))
}

/// Most seconds `sleep` waits.
pub const SLEEP_MAX_S: u64 = 3600;

/// Milliseconds from `5`, `0.25`, `.5`, `2.`: digits with an optional fraction (rounded
/// down to the millisecond).
pub fn parse_seconds(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ms = 0u64;
    for (i, b) in frac.bytes().take(3).enumerate() {
        ms += u64::from(b - b'0') * [100, 10, 1][i];
    }
    secs.checked_mul(1000)?.checked_add(ms)
}

fn sleep(_ctx: &mut Services, args: &[String], out: &mut Output, now: u64) -> Exit {
    let [arg] = args else {
        return usage(out, "sleep");
    };
    match parse_seconds(arg) {
        Some(ms) if ms <= SLEEP_MAX_S * 1000 => Exit::Job(Box::new(Sleep::new(now, ms))),
        Some(_) => {
            let _ = writeln!(out, "sleep: at most {SLEEP_MAX_S} seconds");
            Exit::Status(1)
        }
        None => {
            let _ = writeln!(out, "sleep: invalid time `{arg}`");
            usage(out, "sleep")
        }
    }
}

fn power(
    ctx: &mut Services,
    out: &mut Output,
    now: u64,
    (action, by): (Action, &'static str),
    verb: &str,
) -> Exit {
    match ctx.schedule_power(action, now, DEFAULT_DELAY_MS, by) {
        Ok(p) => {
            let _ = writeln!(out, "{verb} in {} ms", p.at_ms.saturating_sub(now));
            Exit::Status(0)
        }
        Err(e) => {
            let _ = writeln!(out, "{}: {e}", action.as_str());
            Exit::Status(1)
        }
    }
}

fn reboot(ctx: &mut Services, args: &[String], out: &mut Output, now: u64) -> Exit {
    if let Some(e) = no_args("reboot", args, out) {
        return e;
    }
    power(ctx, out, now, (Action::Reset, "reboot"), "rebooting")
}

fn poweroff(ctx: &mut Services, args: &[String], out: &mut Output, now: u64) -> Exit {
    if let Some(e) = no_args("poweroff", args, out) {
        return e;
    }
    power(
        ctx,
        out,
        now,
        (Action::Poweroff, "poweroff"),
        "powering off",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("5"), Some(5000));
        assert_eq!(parse_seconds("0.25"), Some(250));
        assert_eq!(parse_seconds(".5"), Some(500));
        assert_eq!(parse_seconds("2."), Some(2000));
        assert_eq!(parse_seconds("1.23456"), Some(1234));
        for bad in ["", ".", "-1", "1e3", "abc", "1.2.3", "+1", " 1"] {
            assert_eq!(parse_seconds(bad), None, "{bad}");
        }
        assert_eq!(parse_seconds("99999999999999999999"), None);
        assert_eq!(parse_seconds("18446744073709552"), None, "overflows in ms");
    }
}
