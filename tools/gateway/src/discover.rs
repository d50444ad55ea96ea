//! Finding machines on the LAN. The module announces itself with mDNS/DNS-SD as `_mcp._tcp`
//! (its TXT carries path, eras, version, build and auth; `docs/network.md`); `irix7-gateway
//! discover` browses for a while with the `mdns-sd` crate, lists what answered and, with
//! `--adopt LAB.toml`, appends the machines the lab file does not have yet. Rigs are not on the
//! host's LAN (their wire is virtual): they register under `target/iris/rigs/` instead.
//!
//! Anyone on the LAN can answer a browse, so an answer is untrusted input: its TXT values must
//! be short runs of `[A-Za-z0-9._/+-]` (else the whole answer is refused, with the reason),
//! the lab file is written by the TOML serializer, and the only token file an adopted machine
//! gets is `tokens/<its name>` beside the lab file, which the operator fills.

use crate::lab::{self, Lab, NAME_MAX, check_name};
use mdns_sd::{IfKind, ResolvedService, ServiceDaemon, ServiceEvent};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
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
    /// The address it answered from: its lowest IPv4 address, a link-local one only if it
    /// has no other.
    pub ip: Ipv4Addr,
    pub port: u16,
    pub url: String,
    pub version: Option<String>,
    pub build: Option<String>,
    /// `bearer` (a token is needed: the operator puts it in the token file) or `none`.
    pub auth: Option<String>,
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

/// Browses for `wait`; `loopback` also listens on the loopback interface (tests).
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
                answers.push(found_of(&s));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let _ = daemon.shutdown();
    Ok(sorted(answers))
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
fn found_of(s: &ResolvedService) -> Result<Found, Refused> {
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
    let ip = s
        .get_addresses()
        .iter()
        .filter_map(|a| match a.to_ip_addr() {
            IpAddr::V4(v4) => Some(v4),
            IpAddr::V6(_) => None,
        })
        .filter(|ip| !(ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast()))
        .min_by_key(|ip| (ip.is_link_local(), *ip))
        .ok_or_else(|| refuse("no usable IPv4 address".into()))?;
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

/// The hardware address the host's neighbour table holds for `ip` (Linux), if any.
pub fn mac_of(ip: Ipv4Addr) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/arp").ok()?;
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let mac = *cols.get(3)?;
        let ok = cols.first()?.parse::<Ipv4Addr>().ok()? == ip
            && mac.len() == 17
            && mac != "00:00:00:00:00:00"
            && mac.bytes().enumerate().all(|(i, b)| {
                if i % 3 == 2 {
                    b == b':'
                } else {
                    b.is_ascii_hexdigit()
                }
            });
        ok.then(|| mac.to_string())
    })
}

/// One adopted machine as the lab file holds it.
#[derive(Serialize)]
struct Entry<'a> {
    url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_file: Option<String>,
}

#[derive(Serialize)]
struct Adopted<'a> {
    machines: BTreeMap<&'a str, Entry<'a>>,
}

/// The machines of `found` the lab file in `text` does not have, by name or by address
/// (however its URL spells it).
pub fn new_machines<'a>(
    text: &str,
    base: &Path,
    found: &'a [Found],
) -> Result<Vec<&'a Found>, String> {
    let lab = Lab::parse(text, base)?;
    let mut out: Vec<&Found> = Vec::new();
    for f in found {
        let known = lab
            .machines
            .iter()
            .any(|m| m.name == f.name || lab::same_machine(&m.url, &f.url))
            || out
                .iter()
                .any(|o| o.name == f.name || lab::same_machine(&o.url, &f.url));
        if !known {
            out.push(f);
        }
    }
    Ok(out)
}

/// Appends `new` to the lab file at `path` once `confirm` agreed (it is shown them first).
/// Each gets a token file beside the lab file (`tokens/<name>`) unless it announced
/// `auth=none`. Returns the names adopted.
pub fn adopt(
    path: &Path,
    found: &[Found],
    confirm: impl FnOnce(&[&Found]) -> bool,
) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let new = new_machines(&text, base, found)?;
    if new.is_empty() {
        return Ok(Vec::new());
    }
    if !confirm(&new) {
        return Err("nothing adopted".into());
    }
    let text = append(&text, base, &new)?;
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(new.iter().map(|f| f.name.clone()).collect())
}

/// `text` with `new` appended as `[machines.<name>]` tables written by the TOML serializer;
/// the operator's text is kept as written. The result must parse to the old machines plus
/// exactly these, as intended, or nothing is written.
fn append(text: &str, base: &Path, new: &[&Found]) -> Result<String, String> {
    let token_file =
        |f: &Found| (f.auth.as_deref() != Some("none")).then(|| format!("tokens/{}", f.name));
    let mut adopted = Adopted {
        machines: BTreeMap::new(),
    };
    for f in new {
        check_name(&f.name)?;
        adopted.machines.insert(
            &f.name,
            Entry {
                url: &f.url,
                token_file: token_file(f),
            },
        );
    }
    let tables =
        toml::to_string(&adopted).map_err(|e| format!("cannot write the lab file: {e}"))?;
    let mut out = String::from(text);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(
        "\n# Adopted by `irix7-gateway discover`: put each machine's token in its token file.\n",
    );
    out.push_str(&tables);
    let before = Lab::parse(text, base)?.machines.len();
    let after = Lab::parse(&out, base)
        .map_err(|e| format!("the lab file would not parse after adopting: {e}"))?;
    let intended = |f: &Found| {
        after.machines.iter().any(|m| {
            m.name == f.name
                && m.url == f.url
                && m.token_file == token_file(f).map(|t| base.join(t))
        })
    };
    if after.machines.len() != before + new.len() || !new.iter().all(|f| intended(f)) {
        return Err("the lab file would not hold exactly the adopted machines".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mdns_sd::ServiceInfo;

    fn found(name: &str, url: &str, auth: &str) -> Found {
        Found {
            name: name.into(),
            ip: Ipv4Addr::new(10, 0, 0, 1),
            port: 7801,
            url: url.into(),
            version: Some("0.1.0+abc".into()),
            build: Some("abc".into()),
            auth: Some(auth.into()),
        }
    }

    /// What `text` becomes after adopting what it lacks of `found`, and the names adopted.
    fn adopt_text(
        text: &str,
        base: &Path,
        found: &[Found],
    ) -> Result<(String, Vec<String>), String> {
        let new = new_machines(text, base, found)?;
        let names = new.iter().map(|f| f.name.clone()).collect();
        Ok((append(text, base, &new)?, names))
    }

    /// An mDNS answer as the browse hands it over, from `ip`, with these TXT pairs.
    fn answer(instance: &str, ip: &str, txt: &[(&str, &str)]) -> ResolvedService {
        ServiceInfo::new(SERVICE, instance, "host.local.", ip, 7801, txt)
            .unwrap()
            .as_resolved_service()
    }

    #[test]
    fn adopting_appends_only_new_machines_and_keeps_the_file_valid() {
        let lab =
            "listen = \"127.0.0.1:7800\"\n\n[machines.bench]\nurl = \"http://10.0.0.5:7801/mcp\"\n";
        let (text, names) = adopt_text(
            lab,
            Path::new("."),
            &[
                found("bench", "http://10.0.0.9:7801/mcp", "bearer"),
                found("indy-0a1b2c", "http://10.0.0.5:7801/mcp", "bearer"),
                found("indy-0a1b2d", "http://10.0.0.5:7801/other", "bearer"),
                found("indy-4d4145", "http://10.0.0.7:7801/mcp", "bearer"),
                found("open-one", "http://10.0.0.8:7801/mcp", "none"),
            ],
        )
        .unwrap();
        assert_eq!(
            names,
            ["indy-4d4145", "open-one"],
            "same name or same address and port: known"
        );
        let parsed = Lab::parse(&text, Path::new("/lab")).unwrap();
        let m = |n: &str| {
            parsed
                .machines
                .iter()
                .find(|m| m.name == n)
                .unwrap()
                .clone()
        };
        assert_eq!(m("indy-4d4145").url, "http://10.0.0.7:7801/mcp");
        assert_eq!(
            m("indy-4d4145").token_file.as_deref(),
            Some(Path::new("/lab/tokens/indy-4d4145"))
        );
        assert_eq!(m("open-one").token_file, None);
        assert!(
            text.starts_with(lab),
            "the operator's text is kept as written"
        );
    }

    /// The review's attack and its kin: TXT values with line breaks, quotes, a
    /// `[machines.loot]` table naming another machine's token file, a path with `..`, terminal
    /// escapes, a forged instance name, and an impostor answering under a real machine's name.
    /// Only the honest machine is adopted, and the file parses to exactly its entry.
    #[test]
    fn a_crafted_answer_adopts_nothing_unsafe() {
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
        let b = sorted(answers.iter().map(found_of).collect());
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

        let lab =
            "[machines.bench]\nurl = \"http://10.0.0.5:7801/mcp\"\ntoken_file = \"bench.token\"\n";
        let (text, adopted) = adopt_text(lab, Path::new("/lab"), &b.found).unwrap();
        assert_eq!(adopted, ["indy-4d4145"]);
        assert!(
            !text.contains("loot") && !text.contains("10.0.0.66"),
            "{text}"
        );
        let parsed = Lab::parse(&text, Path::new("/lab")).unwrap();
        let rows: Vec<(&str, &str, Option<&Path>)> = parsed
            .machines
            .iter()
            .map(|m| (m.name.as_str(), m.url.as_str(), m.token_file.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    "bench",
                    "http://10.0.0.5:7801/mcp",
                    Some(Path::new("/lab/bench.token"))
                ),
                (
                    "indy-4d4145",
                    "http://10.0.0.7:7801/mcp",
                    Some(Path::new("/lab/tokens/indy-4d4145"))
                ),
            ]
        );
    }

    /// Even a `Found` built by hand with hostile fields cannot break out of its table: the
    /// serializer quotes the URL, and a name that is not a machine name is refused.
    #[test]
    fn the_serializer_quotes_what_it_writes() {
        let evil = found(
            "x",
            "http://10.0.0.5:7801/mcp\"\n[machines.loot]\nurl = \"http://10.0.0.66/",
            "bearer",
        );
        let (text, _) = adopt_text("", Path::new("/lab"), std::slice::from_ref(&evil)).unwrap();
        let parsed = Lab::parse(&text, Path::new("/lab")).unwrap();
        assert_eq!(parsed.machines.len(), 1);
        assert_eq!(parsed.machines[0].url, evil.url);
        let bad = found("a]\n[machines.loot", "http://10.0.0.5:7801/mcp", "bearer");
        assert!(adopt_text("", Path::new("/lab"), &[bad]).is_err());
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

    /// A responder on this host's loopback, announcing what the module announces, is found
    /// with its URL and TXT.
    #[test]
    fn a_browse_finds_an_announced_machine() {
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
        let found = browse(Duration::from_secs(5), true).unwrap().found;
        let _ = responder.shutdown();
        let f = found
            .iter()
            .find(|f| f.name == "indy-test42")
            .unwrap_or_else(|| panic!("not found: {found:?}"));
        assert_eq!(f.url, "http://127.0.0.1:17801/mcp");
        assert_eq!(f.ip, Ipv4Addr::LOCALHOST);
        assert_eq!(
            (f.build.as_deref(), f.auth.as_deref()),
            (Some("t"), Some("bearer"))
        );
    }
}
