//! Durations as the console, the status reports and the status page write them.

use alloc::string::String;
use core::fmt::Write;

/// `3d 04:05:06.789` style.
pub fn format_duration(ms: u64) -> String {
    let mut text = String::new();
    let _ = write_duration(&mut text, ms);
    text
}

/// [`format_duration`] into `out` (the status page writes it without a string of its own).
pub fn write_duration(out: &mut impl Write, ms: u64) -> core::fmt::Result {
    let s = ms / 1000;
    let (d, h, m) = (s / 86400, (s / 3600) % 24, (s / 60) % 60);
    write!(out, "{d}d {h:02}:{m:02}:{:02}.{:03}", s % 60, ms % 1000)
}
