//! Adopting what a browse heard into a lab file (`irix7-gateway discover --adopt LAB.toml`).
//!
//! The answers are untrusted (`discover.rs` checked their fields and addresses), so adoption
//! goes in this order (review H1, L4):
//! 1. what the lab already holds is told apart ([`survey`]): a known name is never adopted
//!    again, and shows the MAC it was pinned to (and the one the host sees now, if it differs);
//! 2. the operator is shown what each new answer claims (name, address, port, the MAC tail a
//!    default name carries, `auth`) and agrees, before anything connects to it;
//! 3. a machine that announced `auth=none` is adopted only if the operator allows it open: the
//!    gateway would forward agents' calls to it without a token;
//! 4. each agreed machine is connected to once, for its MAC in the host's neighbour table, which
//!    must end in the tail its name claims and be no other lab machine's; it is pinned (`mac`);
//! 5. the lab file is written by the TOML serializer (never by pasting strings), the only token
//!    file an adopted machine gets is `tokens/<its name>` beside the lab file, which the operator
//!    fills, and the result must parse to the old machines plus exactly the adopted ones.

use crate::discover::Found;
use crate::lab::{self, Lab, check_name};
use crate::neighbour::Mac;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;

/// A machine that answered, beside what the lab file says of it.
#[derive(Debug, PartialEq, Eq)]
pub enum Seen<'a> {
    /// The lab has it neither by name nor by address: it may be adopted.
    New(&'a Found),
    /// The lab has a machine of this name. Never adopted again: a changed address or MAC is
    /// shown, and re-adopting is removing the entry first.
    Known {
        found: &'a Found,
        /// The lab entry's URL.
        url: String,
        /// The MAC the entry is pinned to, if any.
        pinned: Option<Mac>,
        /// What the host's neighbour table holds for the answer's address already (read
        /// only: nothing is sent to find it).
        now: Option<Mac>,
    },
    /// Its address is the lab machine `name`'s (under another name).
    Elsewhere { found: &'a Found, name: String },
}

impl Seen<'_> {
    /// True if a known machine's entry and the answer disagree on its address or its MAC.
    pub fn changed(&self) -> bool {
        match self {
            Seen::Known {
                found,
                url,
                pinned,
                now,
            } => url != &found.url || matches!((pinned, now), (Some(p), Some(n)) if p != n),
            _ => false,
        }
    }
}

/// Each machine of `found` beside the lab file in `text`; `now` tells what the host's
/// neighbour table already holds for an address.
pub fn survey<'a>(
    text: &str,
    base: &Path,
    found: &'a [Found],
    now: impl Fn(Ipv4Addr) -> Option<Mac>,
) -> Result<Vec<Seen<'a>>, String> {
    let lab = Lab::parse(text, base)?;
    let mut out: Vec<Seen> = Vec::new();
    for f in found {
        let seen = if let Some(m) = lab.machines.iter().find(|m| m.name == f.name) {
            Seen::Known {
                found: f,
                url: m.url.clone(),
                pinned: m.mac,
                now: now(f.ip),
            }
        } else if let Some(m) = lab
            .machines
            .iter()
            .find(|m| lab::same_machine(&m.url, &f.url))
        {
            Seen::Elsewhere {
                found: f,
                name: m.name.clone(),
            }
        } else if let Some(Seen::New(o)) = out
            .iter()
            .find(|s| matches!(s, Seen::New(o) if lab::same_machine(&o.url, &f.url)))
        {
            Seen::Elsewhere {
                found: f,
                name: o.name.clone(),
            }
        } else {
            Seen::New(f)
        };
        out.push(seen);
    }
    Ok(out)
}

/// The machines of `found` the lab file in `text` does not have, by name or by address
/// (however its URL spells it).
pub fn new_machines<'a>(
    text: &str,
    base: &Path,
    found: &'a [Found],
) -> Result<Vec<&'a Found>, String> {
    Ok(survey(text, base, found, |_| None)?
        .into_iter()
        .filter_map(|s| match s {
            Seen::New(f) => Some(f),
            _ => None,
        })
        .collect())
}

/// The operator's say, asked before anything is sent to a machine that answered.
pub trait Operator {
    /// Shown the machines to adopt as their answers claim them to be: true to go on.
    fn agree(&mut self, new: &[&Found]) -> bool;
    /// A machine that announced `auth=none`: true to adopt it open, so the gateway forwards
    /// agents' calls to it without a token.
    fn allow_open(&mut self, f: &Found) -> bool;
}

/// What an adoption did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Each machine written into the lab file, with the MAC it is pinned to.
    pub adopted: Vec<(String, Mac)>,
    /// Each machine the operator agreed to that was not written, and why.
    pub refused: Vec<(String, String)>,
}

/// Appends the machines of `found` the lab file at `path` lacks, in the order the module's
/// docs give: `op` agrees first, then `probe` (a connection, then the neighbour table) gives
/// each one's MAC to check and pin. An answer announcing `auth=none` is adopted only if `op`
/// allows it open. Nothing agreed: an error, and the file is left as it was.
pub fn adopt(
    path: &Path,
    found: &[Found],
    op: &mut impl Operator,
    mut probe: impl FnMut(&Found) -> Option<Mac>,
) -> Result<Outcome, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let new = new_machines(&text, base, found)?;
    if new.is_empty() {
        return Ok(Outcome::default());
    }
    if !op.agree(&new) {
        return Err("nothing adopted".into());
    }
    let pinned: Vec<(String, Mac)> = Lab::parse(&text, base)?
        .machines
        .into_iter()
        .filter_map(|m| Some((m.name, m.mac?)))
        .collect();
    let mut out = Outcome::default();
    let mut take: Vec<(&Found, Mac)> = Vec::new();
    for f in new {
        if is_open(f) && !op.allow_open(f) {
            out.refused.push((
                f.name.clone(),
                "announces auth=none and was not allowed open (--allow-open)".into(),
            ));
            continue;
        }
        let Some(mac) = probe(f) else {
            out.refused.push((
                f.name.clone(),
                format!(
                    "no MAC for {} in the host's neighbour table after connecting to port {}",
                    f.ip, f.port
                ),
            ));
            continue;
        };
        if let Some(tail) = f.claimed_tail().filter(|t| *t != mac.tail()) {
            let [a, b, c] = tail;
            out.refused.push((
                f.name.clone(),
                format!(
                    "{} answers from MAC {mac}, which does not end in the {a:02x}:{b:02x}:{c:02x} its name claims",
                    f.ip
                ),
            ));
            continue;
        }
        let holder = pinned
            .iter()
            .map(|(n, m)| (n, *m))
            .chain(take.iter().map(|(t, m)| (&t.name, *m)))
            .find(|(_, m)| *m == mac);
        if let Some((other, _)) = holder {
            out.refused.push((
                f.name.clone(),
                format!("{} answers from MAC {mac}, which is {other}'s", f.ip),
            ));
            continue;
        }
        take.push((f, mac));
    }
    if take.is_empty() {
        return Ok(out);
    }
    let text = append(&text, base, &take)?;
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    out.adopted = take.iter().map(|(f, m)| (f.name.clone(), *m)).collect();
    Ok(out)
}

/// True if the machine announced that it takes no token.
pub fn is_open(f: &Found) -> bool {
    f.auth.as_deref() == Some("none")
}

/// One adopted machine as the lab file holds it.
#[derive(Serialize)]
struct Entry<'a> {
    url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    token_file: Option<String>,
    mac: String,
}

#[derive(Serialize)]
struct Adopted<'a> {
    machines: BTreeMap<&'a str, Entry<'a>>,
}

/// `text` with `new` appended as `[machines.<name>]` tables written by the TOML serializer;
/// the operator's text is kept as written. The result must parse to the old machines plus
/// exactly these, as intended, or nothing is written.
fn append(text: &str, base: &Path, new: &[(&Found, Mac)]) -> Result<String, String> {
    let token_file = |f: &Found| (!is_open(f)).then(|| format!("tokens/{}", f.name));
    let mut adopted = Adopted {
        machines: BTreeMap::new(),
    };
    for (f, mac) in new {
        check_name(&f.name)?;
        adopted.machines.insert(
            &f.name,
            Entry {
                url: &f.url,
                token_file: token_file(f),
                mac: mac.to_string(),
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
        "\n# Adopted by `irix7-gateway discover`: compare each MAC with the machine's label, \
         then put its token in its token file.\n",
    );
    out.push_str(&tables);
    let before = Lab::parse(text, base)?.machines.len();
    let after = Lab::parse(&out, base)
        .map_err(|e| format!("the lab file would not parse after adopting: {e}"))?;
    let intended = |f: &Found, mac: Mac| {
        after.machines.iter().any(|m| {
            m.name == f.name
                && m.url == f.url
                && m.mac == Some(mac)
                && m.token_file == token_file(f).map(|t| base.join(t))
        })
    };
    if after.machines.len() != before + new.len() || !new.iter().all(|(f, m)| intended(f, *m)) {
        return Err("the lab file would not hold exactly the adopted machines".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::tests::crafted_answers;
    use std::cell::RefCell;
    use std::path::PathBuf;

    fn found(name: &str, url: &str, auth: &str) -> Found {
        let ip = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str()?.parse().ok())
            .unwrap_or(Ipv4Addr::new(10, 0, 0, 1));
        Found {
            name: name.into(),
            ip,
            port: 7801,
            url: url.into(),
            version: Some("0.1.0+abc".into()),
            build: Some("abc".into()),
            auth: Some(auth.into()),
        }
    }

    fn mac(s: &str) -> Mac {
        s.parse().unwrap()
    }

    /// A MAC for each address, ending in what a default name would carry: 10.0.0.7 is
    /// 08:00:69:00:00:07.
    fn mac_of(f: &Found) -> Mac {
        Mac([8, 0, 0x69, 0, 0, f.ip.octets()[3]])
    }

    /// What `text` becomes after adopting what it lacks of `found` (each pinned to
    /// [`mac_of`]), and the names adopted.
    fn adopt_text(
        text: &str,
        base: &Path,
        found: &[Found],
    ) -> Result<(String, Vec<String>), String> {
        let new = new_machines(text, base, found)?;
        let names = new.iter().map(|f| f.name.clone()).collect();
        let with_macs: Vec<(&Found, Mac)> = new.into_iter().map(|f| (f, mac_of(f))).collect();
        Ok((append(text, base, &with_macs)?, names))
    }

    /// An operator who answers as told and notes what was asked in `log`, where the probes
    /// note theirs: one order of events.
    struct Script<'a> {
        agree: bool,
        open: bool,
        log: &'a RefCell<Vec<String>>,
    }

    impl Operator for Script<'_> {
        fn agree(&mut self, new: &[&Found]) -> bool {
            let names: Vec<&str> = new.iter().map(|f| f.name.as_str()).collect();
            self.log
                .borrow_mut()
                .push(format!("agree {}", names.join(",")));
            self.agree
        }
        fn allow_open(&mut self, f: &Found) -> bool {
            self.log.borrow_mut().push(format!("open {}", f.name));
            self.open
        }
    }

    fn script(agree: bool, open: bool, log: &RefCell<Vec<String>>) -> Script<'_> {
        Script { agree, open, log }
    }

    /// A probe that notes itself in `log` and finds [`mac_of`].
    fn probe(log: &RefCell<Vec<String>>) -> impl FnMut(&Found) -> Option<Mac> + '_ {
        move |f| {
            log.borrow_mut().push(format!("probe {}", f.name));
            Some(mac_of(f))
        }
    }

    /// A lab file of its own for one test.
    fn lab_file(test: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("irix7-gateway-adopt-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lab.toml");
        std::fs::write(&path, text).unwrap();
        path
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
        assert_eq!(m("indy-4d4145").mac, Some(mac("08:00:69:00:00:07")));
        assert_eq!(m("open-one").token_file, None);
        assert!(
            text.starts_with(lab),
            "the operator's text is kept as written"
        );
    }

    /// The crafted answers of `discover::tests`: the file parses to exactly the honest entry.
    #[test]
    fn a_crafted_answer_adopts_nothing_unsafe() {
        let (_, b) = crafted_answers();
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

    /// Review L4: the operator is asked before anything connects to an answered address; a
    /// refusal sends nothing and writes nothing.
    #[test]
    fn nothing_connects_before_the_operator_agrees() {
        let lab = "listen = \"127.0.0.1:7800\"\n";
        let path = lab_file("agree", lab);
        let answers = [
            found("indy-000007", "http://10.0.0.7:7801/mcp", "bearer"),
            found("indy-000008", "http://10.0.0.8:7801/mcp", "bearer"),
        ];
        let log = RefCell::new(Vec::new());
        let mut no = script(false, false, &log);
        assert!(adopt(&path, &answers, &mut no, probe(&log)).is_err());
        assert_eq!(*log.borrow(), ["agree indy-000007,indy-000008"], "no probe");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), lab);

        let log = RefCell::new(Vec::new());
        let mut yes = script(true, false, &log);
        let out = adopt(&path, &answers, &mut yes, probe(&log)).unwrap();
        assert_eq!(
            *log.borrow(),
            [
                "agree indy-000007,indy-000008",
                "probe indy-000007",
                "probe indy-000008"
            ]
        );
        assert_eq!(
            out.adopted,
            [
                ("indy-000007".to_string(), mac("08:00:69:00:00:07")),
                ("indy-000008".to_string(), mac("08:00:69:00:00:08")),
            ]
        );
        let parsed = Lab::load(&path).unwrap();
        assert_eq!(parsed.machines[0].mac, Some(mac("08:00:69:00:00:07")));
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("mac = \"08:00:69:00:00:08\"")
        );
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// Review L4: an `auth=none` answer becomes a machine the gateway calls without a token
    /// only when the operator allows it open, and is not connected to otherwise.
    #[test]
    fn an_open_machine_is_adopted_only_when_allowed() {
        let lab = "";
        let answers = [
            found("indy-000007", "http://10.0.0.7:7801/mcp", "bearer"),
            found("indy-000008", "http://10.0.0.8:7801/mcp", "none"),
        ];
        for allow in [false, true] {
            let path = lab_file(&format!("open-{allow}"), lab);
            let log = RefCell::new(Vec::new());
            let mut op = script(true, allow, &log);
            let out = adopt(&path, &answers, &mut op, probe(&log)).unwrap();
            let mut want = vec![
                "agree indy-000007,indy-000008",
                "probe indy-000007",
                "open indy-000008",
            ];
            if allow {
                want.push("probe indy-000008");
            }
            assert_eq!(
                *log.borrow(),
                want,
                "the open one is probed only when allowed"
            );
            let parsed = Lab::load(&path).unwrap();
            let names: Vec<&str> = parsed.machines.iter().map(|m| m.name.as_str()).collect();
            if allow {
                assert_eq!(names, ["indy-000007", "indy-000008"]);
                assert_eq!(parsed.machines[1].token_file, None);
                assert_eq!(parsed.machines[1].mac, Some(mac("08:00:69:00:00:08")));
                assert!(out.refused.is_empty());
            } else {
                assert_eq!(names, ["indy-000007"]);
                assert_eq!(out.refused.len(), 1);
                assert!(out.refused[0].1.contains("auth=none"), "{:?}", out.refused);
            }
            let _ = std::fs::remove_dir_all(path.parent().unwrap());
        }
    }

    /// Review L4: the MAC found after connecting must end in the tail the name claims, be
    /// found at all, and be no other lab machine's; what passes is pinned.
    #[test]
    fn the_mac_is_verified_and_pinned() {
        let lab =
            "[machines.bench]\nurl = \"http://10.0.0.5:7801/mcp\"\nmac = \"08:00:69:aa:bb:cc\"\n";
        let path = lab_file("verify", lab);
        let answers = [
            found("indy-4d4145", "http://10.0.0.7:7801/mcp", "bearer"),
            found("indy-000008", "http://10.0.0.8:7801/mcp", "bearer"),
            found("indy-000009", "http://10.0.0.9:7801/mcp", "bearer"),
            found("renamed", "http://10.0.0.10:7801/mcp", "bearer"),
            found("named", "http://10.0.0.11:7801/mcp", "bearer"),
        ];
        let log = RefCell::new(Vec::new());
        let mut op = script(true, false, &log);
        let out = adopt(&path, &answers, &mut op, |f| match f.name.as_str() {
            "indy-4d4145" => Some(mac("02:00:00:00:00:66")),
            "indy-000008" => None,
            "renamed" => Some(mac("08:00:69:AA:BB:CC")),
            _ => Some(mac_of(f)),
        })
        .unwrap();
        let why = |n: &str| {
            out.refused
                .iter()
                .find(|r| r.0 == n)
                .map(|r| r.1.clone())
                .unwrap_or_default()
        };
        assert!(
            why("indy-4d4145").contains("does not end in the 4d:41:45 its name claims"),
            "{}",
            why("indy-4d4145")
        );
        assert!(why("indy-000008").contains("no MAC for 10.0.0.8"));
        assert!(why("renamed").contains("bench's"), "{}", why("renamed"));
        assert_eq!(
            out.adopted,
            [
                ("indy-000009".to_string(), mac("08:00:69:00:00:09")),
                ("named".to_string(), mac("08:00:69:00:00:0b")),
            ],
            "a name that claims no tail is pinned to what answered"
        );
        let parsed = Lab::load(&path).unwrap();
        assert_eq!(parsed.machines.len(), 3);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }

    /// Review L4: a known name is never adopted again; it shows the MAC it was pinned to, and a
    /// changed address or MAC shows as such.
    #[test]
    fn a_known_name_shows_its_pinned_mac_and_any_change() {
        let lab = "[machines.indy-000007]\nurl = \"http://10.0.0.7:7801/mcp\"\nmac = \"08:00:69:00:00:07\"\n\
                   [machines.indy-000008]\nurl = \"http://10.0.0.8:7801/mcp\"\nmac = \"08:00:69:00:00:08\"\n\
                   [machines.indy-000009]\nurl = \"http://10.0.0.9:7801/mcp\"\n\
                   [machines.bench]\nurl = \"http://10.0.0.5:7801/mcp\"\n";
        let answers = [
            found("indy-000007", "http://10.0.0.7:7801/mcp", "bearer"),
            found("indy-000008", "http://10.0.0.8:7801/mcp", "bearer"),
            found("indy-000009", "http://10.0.0.19:7801/mcp", "bearer"),
            found("indy-00000a", "http://10.0.0.5:7801/mcp", "bearer"),
            found("indy-00000b", "http://10.0.0.11:7801/mcp", "bearer"),
        ];
        let now = |ip: Ipv4Addr| match ip.octets()[3] {
            7 => Some(mac("08:00:69:00:00:07")),
            8 => Some(mac("02:00:00:00:00:66")),
            _ => None,
        };
        let seen = survey(lab, Path::new("/lab"), &answers, now).unwrap();
        assert_eq!(
            seen[0],
            Seen::Known {
                found: &answers[0],
                url: "http://10.0.0.7:7801/mcp".into(),
                pinned: Some(mac("08:00:69:00:00:07")),
                now: Some(mac("08:00:69:00:00:07")),
            }
        );
        assert!(!seen[0].changed());
        assert!(seen[1].changed(), "another MAC at the pinned name");
        assert!(
            matches!(&seen[1], Seen::Known { pinned: Some(p), now: Some(n), .. }
            if *p == mac("08:00:69:00:00:08") && *n == mac("02:00:00:00:00:66"))
        );
        assert!(seen[2].changed(), "another address");
        assert!(matches!(&seen[2], Seen::Known { pinned: None, .. }));
        assert_eq!(
            seen[3],
            Seen::Elsewhere {
                found: &answers[3],
                name: "bench".into()
            }
        );
        assert_eq!(seen[4], Seen::New(&answers[4]));

        let path = lab_file("known", lab);
        let log = RefCell::new(Vec::new());
        let mut op = script(true, true, &log);
        let out = adopt(&path, &answers, &mut op, probe(&log)).unwrap();
        assert_eq!(
            *log.borrow(),
            ["agree indy-00000b", "probe indy-00000b"],
            "only the new one"
        );
        assert_eq!(out.adopted.len(), 1);
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}
