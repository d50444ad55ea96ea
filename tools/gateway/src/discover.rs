//! Finding machines on the LAN. The module announces itself with mDNS/DNS-SD as `_mcp._tcp`
//! (its TXT carries path, eras, version, build and auth; `docs/network.md`); `irix7-gateway
//! discover` browses for a while with the `mdns-sd` crate, lists what answered and, with
//! `--adopt LAB.toml`, appends the machines the lab file does not have yet (`adopt.rs`). Rigs
//! are not on the host's LAN (their wire is virtual): they register under `target/iris/rigs/`
//! instead.
//!
//! Anyone on the LAN can answer a browse, so an answer is untrusted input: its TXT values must
//! be short runs of `[A-Za-z0-9._/+-]` and its address one of the host's LAN (`lan.rs`), else
//! the whole answer is refused, with the reason.

use crate::lab::{NAME_MAX, check_name};
use crate::lan::Lan;
use mdns_sd::{IfKind, ResolvedService, ServiceDaemon, ServiceEvent};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

/// The DNS-SD service type the module announces.
pub const SERVICE: &str = "_mcp._tcp.local.";
/// Most machines one browse reports (a lab holds at most `lab::MACHINES_MAX` anyway).
const FOUND_MAX: usize = 256;
/// Longest TXT `path` accepted.
const PATH_MAX: usize = 128;
/// Longest TXT `build`, `version` or `auth` accepted.
const WORD_MAX: usize = 64;
/// Longest piece of a refused value quoted back.
const QUOTE_MAX: usize = 80;

/// A machine that answered, every field checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The instance name, made a lab machine name (letters, digits, `-`, `_`).
    pub name: String,
    /// The address it answered from: its lowest IPv4 address on the host's LAN.
    pub ip: Ipv4Addr,
    pub port: u16,
    pub url: String,
    pub version: Option<String>,
    pub build: Option<String>,
    /// `bearer` (a token is needed: the operator puts it in the token file) or `none`.
    pub auth: Option<String>,
}

impl Found {
    /// The MAC tail its name claims: a module without `mcp.name` is `indy-` and its MAC's last
    /// three bytes (`indy-4d4145`); `None` for any other name.
    pub fn claimed_tail(&self) -> Option<[u8; 3]> {
        let hex = self.name.strip_prefix("indy-")?;
        if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
        Some([byte(0)?, byte(2)?, byte(4)?])
    }
}

/// An answer that was not taken, and why (both printable: see [`printable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    pub instance: String,
    pub why: String,
}

/// What one browse heard.
#[derive(Debug, Default)]
pub struct Browse {
    pub found: Vec<Found>,
    pub refused: Vec<Refused>,
}

/// Browses for `wait`; `loopback` also listens on the loopback interface (tests: what answers
/// there is heard, and refused, as any loopback answer is).
pub fn browse(wait: Duration, loopback: bool) -> Result<Browse, String> {
    let daemon = ServiceDaemon::new().map_err(|e| format!("mDNS: {e}"))?;
    if loopback {
        daemon
            .enable_interface(IfKind::LoopbackV4)
            .map_err(|e| format!("mDNS: {e}"))?;
    }
    let events = daemon.browse(SERVICE).map_err(|e| format!("mDNS: {e}"))?;
    let deadline = Instant::now() + wait;
    let mut answers = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match events.recv_timeout(left) {
            Ok(ServiceEvent::ServiceResolved(s)) if answers.len() < FOUND_MAX => {
                answers.push(*s);
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = daemon.shutdown();
    Ok(heard(&answers, &Lan::of_host()))
}

/// What these answers tell, each checked (its address against `lan`), by machine name.
pub fn heard(answers: &[ResolvedService], lan: &Lan) -> Browse {
    sorted(answers.iter().map(|a| found_of(a, lan)).collect())
}

/// The answers by machine name. A name answered from two URLs is refused whole: one of them
/// is not the machine it claims to be, and nothing here tells which.
fn sorted(answers: Vec<Result<Found, Refused>>) -> Browse {
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let mut twice = BTreeSet::new();
    let mut out = Browse::default();
    for a in answers {
        match a {
            Ok(f) => match found.get(&f.name) {
                Some(seen) if seen.url != f.url => {
                    twice.insert((f.name.clone(), seen.url.clone(), f.url.clone()));
                }
                Some(_) => {}
                None => {
                    found.insert(f.name.clone(), f);
                }
            },
            Err(r) => out.refused.push(r),
        }
    }
    for (name, a, b) in twice {
        if found.remove(&name).is_some() || !out.refused.iter().any(|r| r.instance == name) {
            out.refused.push(Refused {
                why: format!("answered from two addresses ({a} and {b}): one is an impostor"),
                instance: name,
            });
        }
    }
    out.found = found.into_values().collect();
    out
}

/// A resolved instance as a lab machine: its address, port and TXT `path`; or why it is
/// refused.
fn found_of(s: &ResolvedService, lan: &Lan) -> Result<Found, Refused> {
    let full = s.get_fullname();
    let refuse = |why: String| Refused {
        instance: quote(full.as_bytes()),
        why,
    };
    let instance = full
        .strip_suffix(SERVICE)
        .and_then(|i| i.strip_suffix('.'))
        .ok_or_else(|| refuse("not an instance of _mcp._tcp".into()))?;
    if instance.chars().any(char::is_control) {
        return Err(refuse("control characters in the instance name".into()));
    }
    let name = machine_name(instance)
        .ok_or_else(|| refuse("no letter or digit to name a machine by".into()))?;
    let mut v4: Vec<Ipv4Addr> = s
        .get_addresses()
        .iter()
        .filter_map(|a| match a.to_ip_addr() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        })
        .collect();
    v4.sort();
    let ip = v4.iter().copied().find(|ip| lan.judge(*ip).is_ok());
    let ip = ip.ok_or_else(|| {
        let whys: Vec<String> = v4
            .iter()
            .take(4)
            .filter_map(|ip| lan.judge(*ip).err())
            .collect();
        refuse(if whys.is_empty() {
            "no IPv4 address".into()
        } else {
            format!("no LAN address: {}", whys.join(", "))
        })
    })?;
    let path = txt(s, "path", PATH_MAX)
        .map_err(&refuse)?
        .unwrap_or_else(|| "/mcp".into());
    check_path(&path).map_err(&refuse)?;
    let auth = txt(s, "auth", WORD_MAX).map_err(&refuse)?;
    if let Some(a) = auth.as_deref()
        && a != "bearer"
        && a != "none"
    {
        return Err(refuse(format!("TXT auth `{a}` is neither bearer nor none")));
    }
    Ok(Found {
        name,
        ip,
        port: s.get_port(),
        url: format!("http://{ip}:{}{path}", s.get_port()),
        version: txt(s, "version", WORD_MAX).map_err(&refuse)?,
        build: txt(s, "build", WORD_MAX).map_err(&refuse)?,
        auth,
    })
}

/// TXT `key`'s value if the answer has one: 1 to `max` bytes of `[A-Za-z0-9._/+-]`.
fn txt(s: &ResolvedService, key: &str, max: usize) -> Result<Option<String>, String> {
    let v = match s.get_property_val(key) {
        None => return Ok(None),
        Some(None) => return Err(format!("TXT {key} has no value")),
        Some(Some(v)) => v,
    };
    let safe = |b: &u8| b.is_ascii_alphanumeric() || b"._/+-".contains(b);
    if v.is_empty() || v.len() > max || !v.iter().all(safe) {
        return Err(format!(
            "TXT {key} `{}`: 1 to {max} of `A-Z a-z 0-9 . _ / + -` only",
            quote(v)
        ));
    }
    Ok(Some(String::from_utf8_lossy(v).into_owned()))
}

/// A URL path of plain segments: `/mcp`, `/a/b`; no `.`, `..` or empty segment.
fn check_path(path: &str) -> Result<(), String> {
    let plain = path
        .strip_prefix('/')
        .is_some_and(|rest| rest.split('/').all(|seg| !matches!(seg, "" | "." | "..")));
    if plain {
        Ok(())
    } else {
        Err(format!(
            "TXT path `{}` is not /segment[/segment...]",
            printable(path)
        ))
    }
}

/// An instance name as a lab machine name: other characters become `-`, cut to the limit.
fn machine_name(instance: &str) -> Option<String> {
    let name: String = instance
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(NAME_MAX)
        .collect();
    (check_name(&name).is_ok() && name.bytes().any(|b| b.is_ascii_alphanumeric())).then_some(name)
}

/// `s` safe to print on a terminal: printable ASCII as it is, everything else (escape
/// sequences, line breaks, bidirectional overrides, any non-ASCII) as a Rust escape.
pub fn printable(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_graphic() || c == ' ' {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

/// Bytes from the network, cut to `QUOTE_MAX` and made printable.
fn quote(v: &[u8]) -> String {
    let cut = &v[..v.len().min(QUOTE_MAX)];
    printable(&String::from_utf8_lossy(cut))
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use mdns_sd::ServiceInfo;

    /// An mDNS answer as the browse hands it over, from `ip`, with these TXT pairs.
    pub fn answer(instance: &str, ip: &str, txt: &[(&str, &str)]) -> ResolvedService {
        ServiceInfo::new(SERVICE, instance, "host.local.", ip, 7801, txt)
            .unwrap()
            .as_resolved_service()
    }

    /// The host's LAN in these tests: 10.0.0.0/24 and 192.168.1.0/24.
    pub fn test_lan() -> Lan {
        Lan::new([
            ("10.0.0.1".parse().unwrap(), 24),
            ("192.168.1.1".parse().unwrap(), 24),
        ])
    }

    /// The review's attack and its kin: TXT values with line breaks, quotes, a
    /// `[machines.loot]` table naming another machine's token file, a path with `..`, terminal
    /// escapes, a forged instance name, and an impostor answering under a real machine's name.
    /// Only the honest machine is taken.
    pub fn crafted_answers() -> (Vec<ResolvedService>, Browse) {
        let loot = "x)\n[machines.loot]\nurl = \"http://10.0.0.66/mcp\"\n\
                    token_file = \"/home/op/.config/indy/bench.token\"\n#";
        let honest = [
            ("path", "/mcp"),
            ("build", "6f6fed9c3268"),
            ("version", "0.1.0+6f6fed9c3268"),
            ("auth", "bearer"),
        ];
        let answers = vec![
            answer("indy-build", "10.0.0.20", &[("build", loot)]),
            answer(
                "indy-path",
                "10.0.0.21",
                &[
                    (
                        "path",
                        "/mcp\"\n[machines.loot]\nurl = \"http://10.0.0.66/mcp",
                    ),
                    ("auth", "none"),
                ],
            ),
            answer("indy-dots", "10.0.0.22", &[("path", "/../../tokens/bench")]),
            answer("indy-dot", "10.0.0.23", &[("path", "/mcp/./x")]),
            answer("indy-quote", "10.0.0.24", &[("version", "1\"2")]),
            answer("indy-esc", "10.0.0.25", &[("build", "\u{1b}]0;pwned\u{7}")]),
            answer("indy-auth", "10.0.0.26", &[("auth", "basic")]),
            answer(
                "indy-long",
                "10.0.0.27",
                &[("build", &"a".repeat(WORD_MAX + 1))],
            ),
            answer("bench\n[machines.loot]", "10.0.0.28", &honest),
            answer("indy-4d4145", "10.0.0.7", &honest),
            // An impostor of an existing name: neither answer is adopted.
            answer("indy-0a1b2c", "10.0.0.30", &honest),
            answer("indy-0a1b2c", "10.0.0.66", &honest),
        ];
        let b = heard(&answers, &test_lan());
        (answers, b)
    }

    #[test]
    fn a_crafted_answer_is_refused_with_its_reason() {
        let (answers, b) = crafted_answers();
        let names: Vec<&str> = b.found.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["indy-4d4145"], "{:#?}", b.refused);
        assert_eq!(b.refused.len(), answers.len() - 2, "{:#?}", b.refused);
        for r in &b.refused {
            let shown = format!("{} {}", r.instance, r.why);
            assert!(
                shown.chars().all(|c| c.is_ascii_graphic() || c == ' '),
                "a refusal prints as one line without escapes: {shown:?}"
            );
        }
        let why = |inst: &str| {
            b.refused
                .iter()
                .find(|r| r.instance.starts_with(inst))
                .map(|r| r.why.clone())
                .unwrap_or_default()
        };
        assert!(
            why("indy-build").contains("TXT build"),
            "{}",
            why("indy-build")
        );
        assert!(why("indy-path").contains("TXT path"));
        assert!(why("indy-dots").contains("not /segment"));
        assert!(why("indy-esc").contains("\\u{1b}"), "{}", why("indy-esc"));
        assert!(why("indy-auth").contains("neither bearer nor none"));
        assert!(why("bench\\n").contains("control characters"));
        assert!(why("indy-0a1b2c").contains("impostor"));
    }

    /// Review L4: an answer naming a loopback, link-local, unspecified, multicast, broadcast
    /// or foreign address is refused, and says which; a machine with a LAN address beside
    /// such ones is taken at its LAN address.
    #[test]
    fn an_answer_off_the_lan_is_refused() {
        let honest = [("path", "/mcp"), ("auth", "bearer")];
        let answers = vec![
            answer("indy-loop", "127.0.0.1", &honest),
            answer("indy-loop2", "127.0.1.1", &honest),
            answer("indy-ll", "169.254.10.20", &honest),
            answer("indy-zero", "0.0.0.0", &honest),
            answer("indy-mcast", "224.0.0.251", &honest),
            answer("indy-bcast", "255.255.255.255", &honest),
            answer("indy-netbcast", "192.168.1.255", &honest),
            answer("indy-far", "8.8.8.8", &honest),
            answer("indy-other", "192.168.7.7", &honest),
            answer("indy-mixed", "127.0.0.1,169.254.1.1,192.168.1.40", &honest),
        ];
        let b = heard(&answers, &test_lan());
        let found: Vec<(&str, String)> = b
            .found
            .iter()
            .map(|f| (f.name.as_str(), f.url.clone()))
            .collect();
        assert_eq!(
            found,
            [("indy-mixed", "http://192.168.1.40:7801/mcp".to_string())]
        );
        let why = |inst: &str| {
            b.refused
                .iter()
                .find(|r| r.instance.starts_with(&format!("{inst}.")))
                .map(|r| r.why.clone())
                .unwrap_or_else(|| panic!("{inst} not refused: {:#?}", b.refused))
        };
        assert!(why("indy-loop").contains("127.0.0.1 is loopback"));
        assert!(why("indy-loop2").contains("loopback"));
        assert!(why("indy-ll").contains("link-local"));
        assert!(why("indy-zero").contains("unspecified"));
        assert!(why("indy-mcast").contains("multicast"));
        assert!(why("indy-bcast").contains("broadcast"));
        assert!(why("indy-netbcast").contains("broadcast address"));
        assert!(why("indy-far").contains("none of this host's networks"));
        assert!(why("indy-other").contains("none of this host's networks"));
        assert!(why("indy-loop").starts_with("no LAN address"));
    }

    #[test]
    fn a_default_name_claims_its_mac_tail() {
        let (_, b) = crafted_answers();
        assert_eq!(b.found[0].claimed_tail(), Some([0x4d, 0x41, 0x45]));
        let mut f = b.found[0].clone();
        for (name, tail) in [
            ("indy-0A1b2C", Some([0x0a, 0x1b, 0x2c])),
            ("indy-0a1b2", None),
            ("indy-0a1b2c3", None),
            ("indy-0a1b2g", None),
            ("bench", None),
            ("xindy-0a1b2c", None),
        ] {
            f.name = name.into();
            assert_eq!(f.claimed_tail(), tail, "{name}");
        }
    }

    #[test]
    fn instance_names_become_machine_names() {
        assert_eq!(machine_name("indy-0a1b2c").as_deref(), Some("indy-0a1b2c"));
        assert_eq!(
            machine_name("Bench Indy (2)").as_deref(),
            Some("Bench-Indy--2-")
        );
        assert_eq!(
            machine_name(&"x".repeat(80)).map(|n| n.len()),
            Some(NAME_MAX)
        );
        assert_eq!(machine_name(""), None);
        assert_eq!(machine_name("((()))"), None);
    }

    #[test]
    fn printing_escapes_what_a_terminal_would_obey() {
        assert_eq!(printable("indy 0.1.0+abc"), "indy 0.1.0+abc");
        assert_eq!(printable("a\u{1b}[2Jb\n"), "a\\u{1b}[2Jb\\n");
        assert_eq!(printable("\u{202e}txt"), "\\u{202e}txt");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
    }

    /// A responder on this host's loopback, announcing what the module announces, is heard
    /// over real mDNS, and refused for its loopback address (review L4).
    #[test]
    fn a_browse_hears_an_announced_machine_and_refuses_loopback() {
        let responder = ServiceDaemon::new().unwrap();
        responder.enable_interface(IfKind::LoopbackV4).unwrap();
        let txt = [
            ("path", "/mcp"),
            ("eras", "2026-07-28,2025-11-25"),
            ("version", "0.1.0+t.1234"),
            ("build", "t"),
            ("auth", "bearer"),
        ];
        let info = ServiceInfo::new(
            SERVICE,
            "indy-test42",
            "indy-test42.local.",
            "127.0.0.1",
            17801,
            &txt[..],
        )
        .unwrap();
        responder.register(info).unwrap();
        let heard = browse(Duration::from_secs(5), true).unwrap();
        let _ = responder.shutdown();
        assert!(
            !heard.found.iter().any(|f| f.name == "indy-test42"),
            "{:?}",
            heard.found
        );
        let r = heard
            .refused
            .iter()
            .find(|r| r.instance.starts_with("indy-test42."))
            .unwrap_or_else(|| panic!("not heard: {:?}", heard.refused));
        assert!(r.why.contains("127.0.0.1 is loopback"), "{}", r.why);
    }
}
