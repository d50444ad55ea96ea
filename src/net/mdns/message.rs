//! The DNS messages of the responder (RFC 1035's format, RFC 6762/6763's rules): reading a
//! query's questions, writing the answer. Pure functions over byte slices, bounded everywhere:
//! a name is at most 255 bytes and 128 labels or pointers, a query at most [`QUESTIONS_MAX`]
//! questions; a malformed query is dropped, never half-answered.

/// Record types and the class this responder knows.
pub const TYPE_A: u16 = 1;
pub const TYPE_PTR: u16 = 12;
pub const TYPE_TXT: u16 = 16;
pub const TYPE_SRV: u16 = 33;
pub const TYPE_ANY: u16 = 255;
const CLASS_IN: u16 = 1;
/// The top bit of a question's class asks for a unicast answer (QU); of a record's class, says
/// the record replaces what a cache has under its name (cache flush, for unique records).
const CLASS_TOP: u16 = 0x8000;

/// Questions read from one query.
pub const QUESTIONS_MAX: usize = 8;
/// A name's length as written in a message, and a walk's steps (labels plus pointers).
const NAME_MAX: usize = 255;
const STEPS_MAX: usize = 128;

/// How long records live in caches (RFC 6762 §10: 120 s for records naming a host, 75 min for
/// the others). Answers to legacy unicast queries cap them at 10 s (§6.7).
const TTL_HOST: u32 = 120;
const TTL_OTHER: u32 = 4500;
const TTL_LEGACY: u32 = 10;

/// What the machine announces: one `_mcp._tcp` service instance on one host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    /// The instance and host label (`indy-0a1b2c`): `<name>._mcp._tcp.local`, `<name>.local`.
    pub name: alloc::string::String,
    pub port: u16,
    pub ipv4: [u8; 4],
    /// TXT strings (`key=value`), each at most 255 bytes.
    pub txt: alloc::vec::Vec<alloc::string::String>,
}

/// Which records an answer carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    /// `_services._dns-sd._udp.local PTR _mcp._tcp.local` (service type enumeration).
    pub types: bool,
    /// `_mcp._tcp.local PTR <name>._mcp._tcp.local`.
    pub ptr: bool,
    pub srv: bool,
    pub txt: bool,
    pub a: bool,
}

impl Wanted {
    pub fn any(&self) -> bool {
        self.types || self.ptr || self.srv || self.txt || self.a
    }

    /// Everything, for announcements.
    pub fn all() -> Self {
        Wanted {
            types: false,
            ptr: true,
            srv: true,
            txt: true,
            a: true,
        }
    }
}

/// A query this responder answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    pub id: u16,
    pub wanted: Wanted,
    /// Some question had the QU bit: answer by unicast.
    pub unicast: bool,
    /// Where the questions end (a legacy unicast answer repeats them).
    pub questions_end: usize,
    pub questions: u16,
}

/// Reads `msg` as a query for `service`; None when it is not a query, is malformed, or asks
/// for nothing this machine has.
pub fn read_query(msg: &[u8], service: &Service) -> Option<Query> {
    let header = msg.get(..12)?;
    let id = u16::from_be_bytes([header[0], header[1]]);
    let flags = u16::from_be_bytes([header[2], header[3]]);
    // Responses (QR) and anything but a standard query (opcode 0) are not for a responder.
    if flags & 0x8000 != 0 || flags & 0x7800 != 0 {
        return None;
    }
    let count = u16::from_be_bytes([header[4], header[5]]);
    if count == 0 || usize::from(count) > QUESTIONS_MAX {
        return None;
    }
    let mut wanted = Wanted::default();
    let mut unicast = false;
    let mut pos = 12;
    let mut name = [0u8; NAME_MAX + 1];
    for _ in 0..count {
        let (len, next) = read_name(msg, pos, &mut name)?;
        let fixed = msg.get(next..next + 4)?;
        let qtype = u16::from_be_bytes([fixed[0], fixed[1]]);
        let qclass = u16::from_be_bytes([fixed[2], fixed[3]]);
        pos = next + 4;
        if qclass & !CLASS_TOP != CLASS_IN && qclass & !CLASS_TOP != TYPE_ANY {
            continue;
        }
        let before = wanted;
        want(&name[..len], qtype, service, &mut wanted);
        if wanted != before && qclass & CLASS_TOP != 0 {
            unicast = true;
        }
    }
    wanted.any().then_some(Query {
        id,
        wanted,
        unicast,
        questions_end: pos,
        questions: count,
    })
}

/// Adds what one question (its name in dotted lowercase, `a.b.local.`) asks of `service`.
fn want(name: &[u8], qtype: u16, service: &Service, w: &mut Wanted) {
    let any = qtype == TYPE_ANY;
    if name == b"_services._dns-sd._udp.local." && (any || qtype == TYPE_PTR) {
        w.types = true;
    } else if name == b"_mcp._tcp.local." && (any || qtype == TYPE_PTR) {
        w.ptr = true;
    } else if is_name(name, &service.name, b"._mcp._tcp.local.") {
        w.srv |= any || qtype == TYPE_SRV;
        w.txt |= any || qtype == TYPE_TXT;
    } else if is_name(name, &service.name, b".local.") && (any || qtype == TYPE_A) {
        w.a = true;
    }
}

/// `name` is `<label><suffix>`, the label compared without regard to ASCII case.
fn is_name(name: &[u8], label: &str, suffix: &[u8]) -> bool {
    name.len() == label.len() + suffix.len()
        && name[..label.len()].eq_ignore_ascii_case(label.as_bytes())
        && &name[label.len()..] == suffix
}

/// Reads the name at `pos` into `out` as dotted lowercase text with a final dot (the root
/// alone is "."); returns its length and where the message goes on after it. Compression
/// pointers must point backwards (RFC 1035 §4.1.4), which with the step bound rules out loops.
fn read_name(msg: &[u8], pos: usize, out: &mut [u8; NAME_MAX + 1]) -> Option<(usize, usize)> {
    let (mut at, mut len, mut after) = (pos, 0usize, None);
    for _ in 0..STEPS_MAX {
        let b = *msg.get(at)?;
        match b & 0xc0 {
            0x00 if b == 0 => {
                if len == 0 {
                    out[0] = b'.';
                    len = 1;
                }
                return Some((len, after.unwrap_or(at + 1)));
            }
            0x00 => {
                let label = msg.get(at + 1..at + 1 + usize::from(b))?;
                if len + label.len() + 1 > NAME_MAX {
                    return None;
                }
                for (o, c) in out[len..].iter_mut().zip(label) {
                    *o = c.to_ascii_lowercase();
                }
                len += label.len();
                out[len] = b'.';
                len += 1;
                at += 1 + label.len();
            }
            0xc0 => {
                let target = usize::from(u16::from_be_bytes([b, *msg.get(at + 1)?]) & 0x3fff);
                if target >= at {
                    return None;
                }
                after.get_or_insert(at + 2);
                at = target;
            }
            // 0x40 and 0x80: extended label types, not in use.
            _ => return None,
        }
    }
    None
}

/// Writes records into a fixed buffer; an answer that would not fit is not sent.
struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len.checked_add(bytes.len())?;
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    fn u16(&mut self, v: u16) -> Option<()> {
        self.put(&v.to_be_bytes())
    }

    /// A name from labels, uncompressed.
    fn name(&mut self, labels: &[&str]) -> Option<()> {
        for l in labels {
            let n = u8::try_from(l.len()).ok().filter(|&n| n > 0 && n < 64)?;
            self.put(&[n])?;
            self.put(l.as_bytes())?;
        }
        self.put(&[0])
    }

    /// One record's name, type, class and TTL, then its data from `data`.
    fn record(
        &mut self,
        name: &[&str],
        rtype: u16,
        unique: bool,
        ttl: u32,
        data: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.name(name)?;
        self.u16(rtype)?;
        self.u16(if unique {
            CLASS_IN | CLASS_TOP
        } else {
            CLASS_IN
        })?;
        self.put(&ttl.to_be_bytes())?;
        let len_at = self.len;
        self.u16(0)?;
        data(self)?;
        let rdlen = u16::try_from(self.len - len_at - 2).ok()?;
        self.buf[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        Some(())
    }
}

/// How an answer goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// To the group (224.0.0.251:5353).
    Multicast,
    /// To the querier's address and port: a QU question (RFC 6762 §5.4).
    Unicast,
    /// To a querier not on port 5353, a plain DNS resolver (RFC 6762 §6.7): the query's id,
    /// its questions repeated, short TTLs, no cache-flush bits.
    Legacy,
}

/// Writes the answer to `q` (or, with `q` None, an announcement of everything) into `out`;
/// returns its length, or None if it does not fit.
pub fn write_answer(
    service: &Service,
    q: Option<(&Query, &[u8])>,
    reply: Reply,
    out: &mut [u8],
) -> Option<usize> {
    let wanted = q.map_or(Wanted::all(), |(q, _)| q.wanted);
    let legacy = reply == Reply::Legacy;
    let mut w = Writer { buf: out, len: 0 };
    w.u16(if legacy {
        q.map_or(0, |(q, _)| q.id)
    } else {
        0
    })?;
    w.u16(0x8400)?; // a response, authoritative
    let echo = match (legacy, q) {
        (true, Some((q, msg))) => Some((q.questions, msg.get(12..q.questions_end)?)),
        _ => None,
    };
    w.u16(echo.map_or(0, |(n, _)| n))?;
    // Answers: what was asked. Additional records: what a client asking for the service
    // needs next (RFC 6763 §12.1), so one query resolves it.
    let answers = [wanted.types, wanted.ptr, wanted.srv, wanted.txt, wanted.a];
    let additional = [
        false,
        false,
        wanted.ptr && !wanted.srv,
        wanted.ptr && !wanted.txt,
        (wanted.ptr || wanted.srv) && !wanted.a,
    ];
    let count = |set: &[bool; 5]| set.iter().filter(|&&b| b).count() as u16;
    w.u16(count(&answers))?;
    w.u16(0)?;
    w.u16(count(&additional))?;
    if let Some((_, questions)) = echo {
        w.put(questions)?;
    }
    let ttl = |t: u32| if legacy { t.min(TTL_LEGACY) } else { t };
    let unique = !legacy;
    let name = service.name.as_str();
    let instance = [name, "_mcp", "_tcp", "local"];
    for set in [answers, additional] {
        if set[0] {
            w.record(
                &["_services", "_dns-sd", "_udp", "local"],
                TYPE_PTR,
                false,
                ttl(TTL_OTHER),
                |w| w.name(&["_mcp", "_tcp", "local"]),
            )?;
        }
        if set[1] {
            w.record(
                &["_mcp", "_tcp", "local"],
                TYPE_PTR,
                false,
                ttl(TTL_OTHER),
                |w| w.name(&instance),
            )?;
        }
        if set[2] {
            w.record(&instance, TYPE_SRV, unique, ttl(TTL_HOST), |w| {
                w.u16(0)?; // priority
                w.u16(0)?; // weight
                w.u16(service.port)?;
                w.name(&[name, "local"])
            })?;
        }
        if set[3] {
            w.record(&instance, TYPE_TXT, unique, ttl(TTL_OTHER), |w| {
                for s in &service.txt {
                    w.put(&[u8::try_from(s.len()).ok()?])?;
                    w.put(s.as_bytes())?;
                }
                Some(())
            })?;
        }
        if set[4] {
            w.record(&[name, "local"], TYPE_A, unique, ttl(TTL_HOST), |w| {
                w.put(&service.ipv4)
            })?;
        }
    }
    Some(w.len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;
    use irix7_kmem::testing::Lcg;

    fn service() -> Service {
        Service {
            name: String::from("indy-0a1b2c"),
            port: 7801,
            ipv4: [10, 7, 0, 1],
            txt: vec![String::from("path=/mcp"), String::from("auth=bearer")],
        }
    }

    /// A query: (name, type, class) questions, names uncompressed.
    fn query(id: u16, questions: &[(&str, u16, u16)]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(&(questions.len() as u16).to_be_bytes());
        m.extend_from_slice(&[0; 6]);
        for (name, t, c) in questions {
            for l in name.split('.').filter(|l| !l.is_empty()) {
                m.push(l.len() as u8);
                m.extend_from_slice(l.as_bytes());
            }
            m.push(0);
            m.extend_from_slice(&t.to_be_bytes());
            m.extend_from_slice(&c.to_be_bytes());
        }
        m
    }

    #[derive(Debug, PartialEq)]
    struct Rec {
        name: String,
        rtype: u16,
        class: u16,
        ttl: u32,
        data: Vec<u8>,
    }

    /// The header's id and counts and every record of an answer.
    fn records(msg: &[u8]) -> (u16, [u16; 4], Vec<Rec>) {
        let c = |i: usize| u16::from_be_bytes([msg[i], msg[i + 1]]);
        let counts = [c(4), c(6), c(8), c(10)];
        assert_eq!(c(2), 0x8400);
        let mut pos = 12;
        let mut name = [0u8; NAME_MAX + 1];
        for _ in 0..counts[0] {
            pos = read_name(msg, pos, &mut name).unwrap().1 + 4;
        }
        let mut out = Vec::new();
        for _ in 0..counts[1] + counts[2] + counts[3] {
            let (len, next) = read_name(msg, pos, &mut name).unwrap();
            let rdlen = usize::from(c(next + 8));
            out.push(Rec {
                name: String::from_utf8(name[..len].to_vec()).unwrap(),
                rtype: c(next),
                class: c(next + 2),
                ttl: u32::from_be_bytes(msg[next + 4..next + 8].try_into().unwrap()),
                data: msg[next + 10..next + 10 + rdlen].to_vec(),
            });
            pos = next + 10 + rdlen;
        }
        assert_eq!(pos, msg.len(), "nothing after the records");
        (c(0), counts, out)
    }

    fn answer(q: &[u8], reply: Reply) -> (u16, [u16; 4], Vec<Rec>) {
        let s = service();
        let parsed = read_query(q, &s).expect("a query for this machine");
        let mut out = [0u8; 1024];
        let n = write_answer(&s, Some((&parsed, q)), reply, &mut out).unwrap();
        records(&out[..n])
    }

    #[test]
    fn a_service_browse_gets_the_instance_and_everything_to_reach_it() {
        let q = query(0, &[("_mcp._tcp.local", TYPE_PTR, CLASS_IN)]);
        let (id, counts, recs) = answer(&q, Reply::Multicast);
        assert_eq!((id, counts), (0, [0, 1, 0, 3]));
        let types: Vec<u16> = recs.iter().map(|r| r.rtype).collect();
        assert_eq!(types, [TYPE_PTR, TYPE_SRV, TYPE_TXT, TYPE_A]);
        assert_eq!(recs[0].name, "_mcp._tcp.local.");
        assert_eq!(recs[0].class, CLASS_IN, "PTR is shared: no cache flush");
        assert_eq!(
            recs[0].data,
            b"\x0bindy-0a1b2c\x04_mcp\x04_tcp\x05local\x00"
        );
        assert_eq!(recs[1].name, "indy-0a1b2c._mcp._tcp.local.");
        assert_eq!(recs[1].class, CLASS_IN | CLASS_TOP);
        assert_eq!(
            recs[1].data, b"\x00\x00\x00\x00\x1e\x79\x0bindy-0a1b2c\x05local\x00",
            "priority 0, weight 0, port 7801, target <name>.local"
        );
        assert_eq!(recs[2].data, b"\x09path=/mcp\x0bauth=bearer");
        assert_eq!(
            (recs[3].name.as_str(), &recs[3].data[..]),
            ("indy-0a1b2c.local.", &[10, 7, 0, 1][..])
        );
        assert_eq!((recs[1].ttl, recs[2].ttl), (120, 4500));
    }

    #[test]
    fn names_match_without_regard_to_case_and_other_names_get_nothing() {
        let s = service();
        let q = query(0, &[("INDY-0A1B2C.Local", TYPE_A, CLASS_IN)]);
        let (_, counts, recs) = answer(&q, Reply::Multicast);
        assert_eq!(counts, [0, 1, 0, 0]);
        assert_eq!(recs[0].rtype, TYPE_A);
        for other in [
            ("_http._tcp.local", TYPE_PTR),
            ("indy-0a1b2d.local", TYPE_A),
            ("indy-0a1b2c.local", TYPE_TXT),
            ("indy-0a1b2c.local.evil", TYPE_A),
            ("_mcp._tcp.local", TYPE_A),
        ] {
            assert_eq!(
                read_query(&query(0, &[(other.0, other.1, CLASS_IN)]), &s),
                None,
                "{other:?}"
            );
        }
        // A response is not a query.
        let mut r = query(0, &[("_mcp._tcp.local", TYPE_PTR, CLASS_IN)]);
        r[2] = 0x84;
        assert_eq!(read_query(&r, &s), None);
    }

    #[test]
    fn any_and_several_questions_and_the_qu_bit() {
        let q = query(
            0,
            &[
                (
                    "indy-0a1b2c._mcp._tcp.local",
                    TYPE_ANY,
                    CLASS_IN | CLASS_TOP,
                ),
                ("_services._dns-sd._udp.local", TYPE_PTR, CLASS_IN),
            ],
        );
        let parsed = read_query(&q, &service()).unwrap();
        assert!(parsed.unicast);
        let w = parsed.wanted;
        assert!(w.srv && w.txt && w.types && !w.ptr && !w.a);
        let (_, counts, recs) = answer(&q, Reply::Unicast);
        assert_eq!(
            counts,
            [0, 3, 0, 1],
            "types, SRV, TXT; the host's A as additional"
        );
        assert_eq!(recs[0].data, b"\x04_mcp\x04_tcp\x05local\x00");
    }

    #[test]
    fn a_legacy_query_gets_its_id_and_questions_back_and_short_ttls() {
        let q = query(0x1234, &[("_mcp._tcp.local", TYPE_PTR, CLASS_IN)]);
        let (id, counts, recs) = answer(&q, Reply::Legacy);
        assert_eq!((id, counts), (0x1234, [1, 1, 0, 3]));
        assert!(recs.iter().all(|r| r.ttl <= 10 && r.class == CLASS_IN));
    }

    #[test]
    fn compression_pointers_are_followed_backwards_only() {
        let s = service();
        // Second question: "indy-0a1b2c" then a pointer to "local" in the first.
        let mut q = query(0, &[("_mcp._tcp.local", TYPE_PTR, CLASS_IN)]);
        q[5] = 2;
        let local_at = 12 + 1 + 4 + 1 + 4;
        q.push(11);
        q.extend_from_slice(b"indy-0a1b2c");
        q.extend_from_slice(&(0xc000u16 | local_at as u16).to_be_bytes());
        q.extend_from_slice(&TYPE_A.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        let parsed = read_query(&q, &s).unwrap();
        assert!(parsed.wanted.ptr && parsed.wanted.a);
        assert_eq!(parsed.questions_end, q.len());

        // A pointer to itself and a pointer forwards: dropped, not looped on.
        let mut looped = query(0, &[]);
        looped[5] = 1;
        looped.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(read_query(&looped, &s), None);
        let mut forward = query(0, &[]);
        forward[5] = 1;
        forward.extend_from_slice(&[0xc0, 20, 0, 1, 0, 1, 0]);
        assert_eq!(read_query(&forward, &s), None);
    }

    #[test]
    fn malformed_and_oversized_queries_are_dropped() {
        let s = service();
        let q = query(0, &[("_mcp._tcp.local", TYPE_PTR, CLASS_IN)]);
        for n in 0..q.len() {
            assert_eq!(read_query(&q[..n], &s), None, "cut at {n}");
        }
        let many = vec![("_mcp._tcp.local", TYPE_PTR, CLASS_IN); QUESTIONS_MAX + 1];
        assert_eq!(read_query(&query(0, &many), &s), None);
        // A name over 255 bytes.
        let long = [
            ["abcdefghijklmnopqrstuvwxyz0123456789"; 8].join("."),
            ".local".to_string(),
        ]
        .concat();
        assert_eq!(
            read_query(&query(0, &[(&long, TYPE_A, CLASS_IN)]), &s),
            None
        );
        // Labels of the reserved 0x40/0x80 kinds.
        let mut ext = query(0, &[]);
        ext[5] = 1;
        ext.extend_from_slice(&[0x41, 0, 0, 1, 0, 1]);
        assert_eq!(read_query(&ext, &s), None);
        // Pseudo-random bytes: no panic, whatever comes of them.
        let mut rng = Lcg(1);
        for _ in 0..2000 {
            let mut m = q.clone();
            for _ in 0..3 {
                let i = rng.below(m.len());
                m[i] = rng.next_u64() as u8;
            }
            if let Some(p) = read_query(&m, &s) {
                let mut out = [0u8; 1024];
                for r in [Reply::Multicast, Reply::Unicast, Reply::Legacy] {
                    let _ = write_answer(&s, Some((&p, &m)), r, &mut out);
                }
            }
        }
    }

    #[test]
    fn an_answer_that_does_not_fit_is_not_written() {
        let s = service();
        let mut small = [0u8; 60];
        assert_eq!(write_answer(&s, None, Reply::Multicast, &mut small), None);
        let mut out = [0u8; 1024];
        let n = write_answer(&s, None, Reply::Multicast, &mut out).unwrap();
        let (_, counts, _) = records(&out[..n]);
        assert_eq!(counts, [0, 4, 0, 0], "an announcement: PTR, SRV, TXT, A");
    }
}
