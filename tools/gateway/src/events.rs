//! The lab's event stream, `lab://events`: every machine's events (its `irix7://events`, read
//! every few seconds) relayed in the order the gateway saw them, each tagged with its machine,
//! and the gateway's own word when a machine stops answering. A bounded ring (the oldest
//! dropped first, and counted); a version channel wakes the subscribers of both eras.
//!
//! A machine's events live in its memory and start again at `seq` 1 after each boot, so the
//! relay keeps, per machine, the last `seq` it took and the uptime it saw: an uptime lower
//! than the last, or fewer events than the last `seq`, means a new boot, and its events are
//! taken from the start. (A boot that both outlived the last read of the one before and
//! recorded more events would pass for the same boot: with reads every few seconds, that
//! takes a machine that was up for only seconds before it reset.)

use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

pub const URI: &str = "lab://events";
/// What the relay reads on each machine.
pub const MACHINE_URI: &str = "irix7://events";
/// Events kept.
pub const MAX_EVENTS: usize = 256;
/// Bytes of a detail kept (the module's are at most 160).
const MAX_DETAIL: usize = 256;
/// Characters of a kind kept.
const MAX_KIND: usize = 32;

/// Where the relay stands with one machine.
#[derive(Clone, Copy, Debug, Default)]
struct Cursor {
    /// The last machine `seq` taken in the machine's current boot.
    seq: u64,
    /// The machine's uptime when its events were last read.
    uptime_ms: u64,
    /// The last read failed (so the next failure is not reported again).
    lost: bool,
}

pub struct LabEvents {
    inner: Mutex<Inner>,
    version: watch::Sender<u64>,
}

#[derive(Default)]
struct Inner {
    ring: VecDeque<Value>,
    next_seq: u64,
    dropped: u64,
    cursors: HashMap<String, Cursor>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn clip(s: &str, max: usize) -> String {
    s[..s.floor_char_boundary(max)].to_string()
}

impl Default for LabEvents {
    fn default() -> Self {
        LabEvents {
            inner: Mutex::new(Inner {
                next_seq: 1,
                ..Inner::default()
            }),
            version: watch::channel(0).0,
        }
    }
}

impl LabEvents {
    /// A receiver that wakes when an event is added.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    /// Takes what a machine's `irix7://events` answered: the events past its cursor.
    /// Returns how many were added.
    pub fn ingest(&self, machine: &str, resource: &Value) -> usize {
        let uptime = resource["uptime_ms"].as_u64().unwrap_or(0);
        let Some(events) = resource["events"].as_array() else {
            return 0;
        };
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let mut cur = inner.cursors.get(machine).copied().unwrap_or_default();
        let total = resource["total"].as_u64().unwrap_or(u64::MAX);
        if uptime < cur.uptime_ms || total < cur.seq {
            // A new boot: its events are numbered from 1 again.
            cur.seq = 0;
        }
        cur.uptime_ms = uptime;
        cur.lost = false;
        let mut added = 0;
        for e in events {
            let Some(seq) = e["seq"].as_u64().filter(|s| *s > cur.seq) else {
                continue;
            };
            cur.seq = seq;
            let kind = clip(e["kind"].as_str().unwrap_or("?"), MAX_KIND);
            let detail = clip(e["detail"].as_str().unwrap_or(""), MAX_DETAIL);
            let extra = json!({"machine_seq": seq, "machine_at_ms": e["at_ms"]});
            inner.push(machine, &kind, &detail, extra);
            added += 1;
        }
        inner.cursors.insert(machine.to_string(), cur);
        drop(inner);
        if added > 0 {
            self.version.send_modify(|v| *v += added as u64);
        }
        added
    }

    /// A machine whose events could not be read: one `unreachable` event until it answers
    /// again.
    pub fn unreachable(&self, machine: &str, why: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let cur = inner.cursors.entry(machine.to_string()).or_default();
        if cur.lost {
            return;
        }
        cur.lost = true;
        inner.push(machine, "unreachable", &clip(why, MAX_DETAIL), json!({}));
        drop(inner);
        self.version.send_modify(|v| *v += 1);
    }

    /// The resource's JSON: `events` oldest first (newest last), `total`, `dropped`.
    pub fn json(&self) -> Value {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        json!({
            "events": inner.ring,
            "total": inner.next_seq - 1,
            "dropped": inner.dropped,
        })
    }
}

impl Inner {
    fn push(&mut self, machine: &str, kind: &str, detail: &str, extra: Value) {
        if self.ring.len() >= MAX_EVENTS && self.ring.pop_front().is_some() {
            self.dropped += 1;
        }
        let mut e = json!({
            "seq": self.next_seq,
            "at_ms": now_ms(),
            "machine": machine,
            "kind": kind,
            "detail": detail,
        });
        if let (Some(e), Some(extra)) = (e.as_object_mut(), extra.as_object()) {
            e.extend(extra.clone());
        }
        self.ring.push_back(e);
        self.next_seq += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(uptime: u64, events: &[(u64, &str)]) -> Value {
        let events: Vec<Value> = events
            .iter()
            .map(|(seq, kind)| json!({"seq": seq, "at_ms": 10 * seq, "kind": kind, "detail": "d"}))
            .collect();
        json!({"events": events, "uptime_ms": uptime, "total": events.len()})
    }

    fn kinds(ev: &LabEvents) -> Vec<(String, String)> {
        ev.json()["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["machine"].as_str().unwrap().to_string(),
                    e["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn each_machine_event_is_relayed_once_and_a_new_boot_from_its_start() {
        let ev = LabEvents::default();
        let mut rx = ev.watch();
        assert_eq!(
            ev.ingest("rig1", &resource(100, &[(1, "boot"), (2, "address")])),
            2
        );
        assert!(rx.has_changed().unwrap());
        rx.mark_unchanged();
        assert_eq!(
            ev.ingest("rig1", &resource(200, &[(1, "boot"), (2, "address")])),
            0
        );
        assert!(!rx.has_changed().unwrap());
        assert_eq!(ev.ingest("rig2", &resource(50, &[(1, "boot")])), 1);
        let three = [(1, "boot"), (2, "address"), (3, "reset-requested")];
        assert_eq!(ev.ingest("rig1", &resource(300, &three)), 1);
        // rig1 rebooted: a lower uptime, its ring from 1 again (shorter than before).
        assert_eq!(ev.ingest("rig1", &resource(40, &[(1, "boot")])), 1);
        ev.unreachable("rig2", "no answer");
        ev.unreachable("rig2", "no answer");
        let want = [
            ("rig1", "boot"),
            ("rig1", "address"),
            ("rig2", "boot"),
            ("rig1", "reset-requested"),
            ("rig1", "boot"),
            ("rig2", "unreachable"),
        ];
        let got = kinds(&ev);
        assert_eq!(
            got,
            want.map(|(m, k)| (m.to_string(), k.to_string())),
            "{}",
            ev.json()
        );
        let v = ev.json();
        assert_eq!(v["total"], 6);
        assert_eq!(v["events"][3]["machine_seq"], 3);
        assert_eq!(v["events"][3]["machine_at_ms"], 30);
        assert!(
            v["events"]
                .as_array()
                .unwrap()
                .windows(2)
                .all(|w| w[1]["seq"].as_u64().unwrap() == w[0]["seq"].as_u64().unwrap() + 1)
        );
        // Back again: the next failure is reported anew.
        ev.ingest("rig2", &resource(60, &[(1, "boot")]));
        ev.unreachable("rig2", "gone");
        assert_eq!(ev.json()["total"], 7);
    }

    #[test]
    fn the_ring_is_bounded_and_counts_what_it_dropped() {
        let ev = LabEvents::default();
        let many: Vec<(u64, &str)> = (1..=300).map(|s| (s, "address")).collect();
        assert_eq!(ev.ingest("rig1", &resource(1, &many)), 300);
        let v = ev.json();
        assert_eq!(v["events"].as_array().unwrap().len(), MAX_EVENTS);
        assert_eq!(v["dropped"], 300 - MAX_EVENTS as u64);
        assert_eq!(v["events"][0]["machine_seq"], 300 - MAX_EVENTS as u64 + 1);
        // A machine's long strings are cut.
        let long = json!({"uptime_ms": 2, "events": [{"seq": 301, "kind": "k".repeat(100), "detail": "é".repeat(300)}]});
        ev.ingest("rig1", &long);
        let last = ev.json()["events"][MAX_EVENTS - 1].clone();
        assert_eq!(last["kind"].as_str().unwrap().len(), MAX_KIND);
        assert!(last["detail"].as_str().unwrap().len() <= MAX_DETAIL);
    }
}
