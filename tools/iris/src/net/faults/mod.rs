//! A faulty virtual wire (`--wire-faults`): decorators around the host end of the wire, in the
//! shape of smoltcp's `phy::Device`, that lose, corrupt, reorder, duplicate and delay frames in
//! both directions. Loss, the frame size limit and the rate limit are smoltcp's own
//! `FaultInjector`; corruption (which it gets wrong for sent frames, see `corrupt.rs`),
//! reordering, duplication and delay, which smoltcp does not offer, are one small [`Fault`]
//! each, made a device by [`Faulted`]. Every random choice comes from the spec's seed, so a
//! given seed makes the same choices for the same sequence of frames. See `docs/rig.md`.

mod corrupt;
mod delay;
mod duplicate;
mod reorder;

use std::fmt;

use smoltcp::phy::{self, Device, DeviceCapabilities, FaultInjector};
use smoltcp::time::{Duration, Instant};

pub use corrupt::Corrupt;
pub use delay::Delay;
pub use duplicate::Duplicate;
pub use reorder::Reorder;

/// Frames a decorator holds back per direction; past that it leaves them on the wire (received
/// frames) or refuses to take more (sent frames), so a stalled peer cannot grow the rig's memory.
pub const MAX_HELD: usize = 256;
/// Longest delay a spec may ask for.
pub const MAX_DELAY_MS: u64 = 10_000;
/// Smallest and largest frame size limit (`size=`): an Ethernet minimum frame to the wire's
/// largest host frame.
pub const SIZE_LIMITS: std::ops::RangeInclusive<usize> = 60..=1514;

/// What `--wire-faults` asks of the wire. Percentages are per frame and per direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WireFaults {
    /// Frames lost (`loss=`).
    pub loss_pct: u8,
    /// Frames with one bit flipped (`corrupt=`).
    pub corrupt_pct: u8,
    /// Frames held back until the next frame has overtaken them (`reorder=`).
    pub reorder_pct: u8,
    /// Frames delivered twice (`dup=`).
    pub dup_pct: u8,
    /// Every frame is delivered this much later (`delay=`).
    pub delay_ms: u64,
    /// Frames longer than this are lost (`size=`); 0 = no limit.
    pub max_size: usize,
    /// At most `frames` per `per_ms` in each direction, the rest lost (`rate=FRAMES/MSms`).
    pub rate: Option<(u64, u64)>,
    /// Seed of every random choice (`seed=`, default 1).
    pub seed: u64,
}

impl WireFaults {
    /// Parses `KEY=VALUE[,KEY=VALUE…]`, e.g. `loss=5,corrupt=1,reorder=2,dup=1,delay=3ms,seed=7`.
    pub fn parse(spec: &str) -> Result<WireFaults, String> {
        let mut f = WireFaults {
            seed: 1,
            ..WireFaults::default()
        };
        let mut seen: Vec<&str> = Vec::new();
        for item in spec.split(',').map(str::trim) {
            let (key, value) = item
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("{item:?} is not KEY=VALUE"))?;
            if seen.contains(&key) {
                return Err(format!("{key} given twice"));
            }
            seen.push(key);
            let pct = || {
                value
                    .trim_end_matches('%')
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= 100)
                    .ok_or_else(|| format!("{key}={value}: want a whole percentage 0..=100"))
            };
            let ms = |v: &str| {
                v.strip_suffix("ms")
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .ok_or_else(|| format!("{key}={value}: want milliseconds, e.g. 3ms"))
            };
            match key {
                "loss" => f.loss_pct = pct()?,
                "corrupt" => f.corrupt_pct = pct()?,
                "reorder" => f.reorder_pct = pct()?,
                "dup" => f.dup_pct = pct()?,
                "delay" => {
                    f.delay_ms = ms(value)?;
                    if f.delay_ms > MAX_DELAY_MS {
                        return Err(format!("delay={value}: at most {MAX_DELAY_MS}ms"));
                    }
                }
                "size" => {
                    f.max_size = value
                        .parse::<usize>()
                        .ok()
                        .filter(|s| SIZE_LIMITS.contains(s))
                        .ok_or_else(|| {
                            format!(
                                "size={value}: want a frame size in bytes, {}..={}",
                                SIZE_LIMITS.start(),
                                SIZE_LIMITS.end()
                            )
                        })?;
                }
                "rate" => {
                    let want = || format!("rate={value}: want FRAMES/MSms, e.g. 100/10ms");
                    let (n, per) = value.split_once('/').ok_or_else(want)?;
                    let n = n.trim().parse::<u64>().ok().filter(|n| *n > 0);
                    let per = ms(per.trim())
                        .ok()
                        .filter(|p| (1..=MAX_DELAY_MS).contains(p));
                    f.rate = Some((n.ok_or_else(want)?, per.ok_or_else(want)?));
                }
                "seed" => {
                    f.seed = value
                        .parse::<u64>()
                        .map_err(|_| format!("seed={value}: want a whole number"))?;
                }
                _ => {
                    return Err(format!(
                        "unknown key {key:?} (loss, corrupt, reorder, dup, delay, size, rate, seed)"
                    ));
                }
            }
        }
        Ok(f)
    }
}

impl fmt::Display for WireFaults {
    fn fmt(&self, out: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            out,
            "loss={},corrupt={},reorder={},dup={},delay={}ms",
            self.loss_pct, self.corrupt_pct, self.reorder_pct, self.dup_pct, self.delay_ms
        )?;
        if self.max_size > 0 {
            write!(out, ",size={}", self.max_size)?;
        }
        if let Some((n, per)) = self.rate {
            write!(out, ",rate={n}/{per}ms")?;
        }
        write!(out, ",seed={}", self.seed)
    }
}

/// The host end with its faults, as the host stack sees it: the stack's frames are delayed,
/// maybe reordered, maybe duplicated, then (each copy on its own) maybe corrupted and maybe lost
/// on their way to `D`; frames from `D` meet the same faults in the opposite order.
pub type Faulty<D> =
    Faulted<Delay, Faulted<Reorder, Faulted<Duplicate, Faulted<Corrupt, FaultInjector<D>>>>>;

/// Wraps `dev` in the faults `f` asks for (with no faults, every frame passes unchanged).
pub fn faulty<D: Device>(dev: D, f: &WireFaults) -> Faulty<D> {
    // smoltcp's xorshift is stuck at zero when seeded with zero: the low bit keeps it off.
    let mut injector = FaultInjector::new(dev, (Dice::new(f.seed, 0).draw() as u32) | 1);
    injector.set_drop_chance(f.loss_pct);
    injector.set_max_packet_size(f.max_size);
    if let Some((n, per_ms)) = f.rate {
        injector.set_max_tx_rate(n);
        injector.set_max_rx_rate(n);
        injector.set_bucket_interval(Duration::from_millis(per_ms));
    }
    let corrupt = Corrupt::new(f.corrupt_pct, f.seed).around(injector);
    let dup = Duplicate::new(f.dup_pct, f.seed).around(corrupt);
    let reorder = Reorder::new(f.reorder_pct, f.seed).around(dup);
    Delay::new(Duration::from_millis(f.delay_ms)).around(reorder)
}

/// One kind of fault: what becomes of frames on their way in from, and out to, the device it
/// sits in front of. [`Faulted`] makes it a `phy::Device` of its own, so faults stack.
pub trait Fault: Sized {
    /// The next frame for the stack, if one is due, taken from `inner`.
    fn receive<D: Device>(&mut self, inner: &mut D, now: Instant) -> Option<Vec<u8>>;

    /// A frame the stack sent, on its way to `inner`.
    fn send<D: Device>(&mut self, inner: &mut D, now: Instant, frame: Vec<u8>);

    /// Whether the stack may send now: by default, when `inner` would take a frame.
    fn ready<D: Device>(&mut self, inner: &mut D, now: Instant) -> bool {
        inner.transmit(now).is_some()
    }

    /// This fault in front of `inner`.
    fn around<D: Device>(self, inner: D) -> Faulted<Self, D> {
        Faulted { fault: self, inner }
    }
}

/// A [`Fault`] in front of a device, seen by the stack as a device.
pub struct Faulted<F, D> {
    fault: F,
    inner: D,
}

impl<F: Fault, D: Device> Outbox for Faulted<F, D> {
    fn post(&mut self, now: Instant, frame: Vec<u8>) {
        self.fault.send(&mut self.inner, now, frame);
    }
}

impl<F: Fault, D: Device> Device for Faulted<F, D> {
    type RxToken<'a>
        = FrameRx
    where
        Self: 'a;
    type TxToken<'a>
        = FrameTx<'a, Self>
    where
        Self: 'a;

    fn receive(&mut self, now: Instant) -> Option<(FrameRx, FrameTx<'_, Self>)> {
        let frame = self.fault.receive(&mut self.inner, now)?;
        Some((FrameRx(frame), FrameTx::new(self, now)))
    }

    fn transmit(&mut self, now: Instant) -> Option<FrameTx<'_, Self>> {
        self.fault
            .ready(&mut self.inner, now)
            .then(|| FrameTx::new(self, now))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.inner.capabilities()
    }
}

/// A deterministic source of per-frame choices (SplitMix64), one per decorator and direction.
#[derive(Debug, Clone)]
pub struct Dice(u64);

impl Dice {
    /// The generator for `seed` and `stream` (different streams never share a sequence).
    pub fn new(seed: u64, stream: u64) -> Dice {
        Dice(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    pub fn draw(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `pct` percent.
    pub fn roll(&mut self, pct: u8) -> bool {
        pct > 0 && self.draw() % 100 < u64::from(pct)
    }
}

/// A received frame the decorator owns (it may have been held back, or be a second copy).
pub struct FrameRx(pub Vec<u8>);

impl phy::RxToken for FrameRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

/// Where a decorator puts a frame the stack sends.
pub trait Outbox {
    fn post(&mut self, now: Instant, frame: Vec<u8>);
}

/// A send through a decorator: the stack fills a buffer, the decorator's [`Outbox`] decides
/// what happens to it.
pub struct FrameTx<'a, O: Outbox> {
    outbox: &'a mut O,
    now: Instant,
}

impl<'a, O: Outbox> FrameTx<'a, O> {
    pub fn new(outbox: &'a mut O, now: Instant) -> FrameTx<'a, O> {
        FrameTx { outbox, now }
    }
}

impl<O: Outbox> phy::TxToken for FrameTx<'_, O> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        self.outbox.post(self.now, frame);
        r
    }
}

/// The next frame `dev` has received, copied out.
pub fn take_frame<D: Device>(dev: &mut D, now: Instant) -> Option<Vec<u8>> {
    let (rx, _) = dev.receive(now)?;
    Some(phy::RxToken::consume(rx, <[u8]>::to_vec))
}

/// Sends `frame` through `dev`; false (the frame is lost) when `dev` takes nothing now.
pub fn give_frame<D: Device>(dev: &mut D, now: Instant, frame: &[u8]) -> bool {
    match dev.transmit(now) {
        Some(tx) => {
            phy::TxToken::consume(tx, frame.len(), |b| b.copy_from_slice(frame));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_parses_and_prints_back() {
        let f = WireFaults::parse("loss=5,corrupt=1,reorder=2,dup=1,delay=3ms,seed=7").unwrap();
        assert_eq!(
            f,
            WireFaults {
                loss_pct: 5,
                corrupt_pct: 1,
                reorder_pct: 2,
                dup_pct: 1,
                delay_ms: 3,
                max_size: 0,
                rate: None,
                seed: 7
            }
        );
        assert_eq!(WireFaults::parse(&f.to_string()).unwrap(), f);
        let g = WireFaults::parse(" loss = 10% , size=600, rate=100/10ms").unwrap();
        assert_eq!(
            (g.loss_pct, g.max_size, g.rate, g.seed),
            (10, 600, Some((100, 10)), 1)
        );
        assert_eq!(WireFaults::parse(&g.to_string()).unwrap(), g);
    }

    #[test]
    fn a_bad_spec_is_named() {
        for (spec, says) in [
            ("loss=101", "0..=100"),
            ("loss=-1", "0..=100"),
            ("loss=2.5", "0..=100"),
            ("delay=3", "milliseconds"),
            ("delay=20000ms", "at most"),
            ("size=20", "60..=1514"),
            ("rate=0/10ms", "FRAMES/MSms"),
            ("rate=10", "FRAMES/MSms"),
            ("seed=x", "whole number"),
            ("jitter=1ms", "unknown key"),
            ("loss", "KEY=VALUE"),
            ("", "KEY=VALUE"),
            ("loss=1,loss=2", "twice"),
        ] {
            let e = WireFaults::parse(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }

    #[test]
    fn dice_follow_their_seed() {
        let roll = |seed, stream| {
            let mut d = Dice::new(seed, stream);
            (0..1000).filter(|_| d.roll(5)).count()
        };
        assert_eq!(roll(7, 0), roll(7, 0));
        assert_ne!(
            (0..8).map(|s| roll(7, s)).collect::<Vec<_>>(),
            (0..8).map(|s| roll(8, s)).collect::<Vec<_>>()
        );
        // About 5 in 100.
        assert!((25..=75).contains(&roll(7, 0)), "{}", roll(7, 0));
        assert!(!Dice::new(1, 0).roll(0));
        assert!((0..100).all(|_| Dice::new(3, 1).roll(100)));
    }
}
