//! Time: the memory controller's RPSS counter as the monotonic clock (100 ns ticks at the reset
//! divider, 32 bits, so extended in software), and the DS1386's BCD date as Unix time.

/// The RPSS counter (a word register in a 64-bit slot).
pub const RPSS: u32 = indy::map::MC.base + 0x1004;
/// RPSS ticks per millisecond: 10 MHz after reset (divider 0x104 on the 50 MHz MC clock).
pub const RPSS_PER_MS: u64 = 10_000;

/// Extends a wrapping 32-bit counter to 64 bits; read it at least once per wrap (429 s).
#[derive(Default)]
pub struct Extender {
    last: u32,
    high: u64,
}

impl Extender {
    pub fn extend(&mut self, now: u32) -> u64 {
        if now < self.last {
            self.high += 1 << 32;
        }
        self.last = now;
        self.high | u64::from(now)
    }
}

/// DS1386 register numbers (each at 1FBE_0000 + 4n).
pub const DS_SECONDS: u32 = 1;
pub const DS_MINUTES: u32 = 2;
pub const DS_HOURS: u32 = 4;
pub const DS_DATE: u32 = 8;
pub const DS_MONTH: u32 = 9;
pub const DS_YEAR: u32 = 10;

fn bcd(b: u8) -> Option<u32> {
    let (hi, lo) = (u32::from(b >> 4), u32::from(b & 0xF));
    (hi < 10 && lo < 10).then_some(hi * 10 + lo)
}

/// Unix time from the DS1386's registers (`regs[n]` is register n); `None` for a date the
/// registers cannot hold. Two-digit years 70-99 are 19xx, 00-69 20xx; a 12-hour clock is read
/// with its PM bit.
pub fn unix_time(regs: &[u8; 11]) -> Option<u32> {
    let sec = bcd(regs[DS_SECONDS as usize] & 0x7F)?;
    let min = bcd(regs[DS_MINUTES as usize] & 0x7F)?;
    let h = regs[DS_HOURS as usize];
    let hour = if h & 0x40 != 0 {
        let h12 = bcd(h & 0x1F)? % 12;
        h12 + if h & 0x20 != 0 { 12 } else { 0 }
    } else {
        bcd(h & 0x3F)?
    };
    let day = bcd(regs[DS_DATE as usize] & 0x3F)?;
    let month = bcd(regs[DS_MONTH as usize] & 0x1F)?;
    let yy = bcd(regs[DS_YEAR as usize])?;
    let year = if yy >= 70 { 1900 + yy } else { 2000 + yy };
    if sec > 59 || min > 59 || hour > 23 || !(1..=31).contains(&day) || !(1..=12).contains(&month) {
        return None;
    }
    // Days from 1970-01-01 to the civil date (Howard Hinnant's days_from_civil).
    let (y, m) = if month <= 2 {
        (year as i64 - 1, month + 9)
    } else {
        (year as i64, month - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * i64::from(m) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let t = days * 86_400 + i64::from(hour * 3600 + min * 60 + sec);
    u32::try_from(t).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extender_counts_wraps() {
        let mut e = Extender::default();
        assert_eq!(e.extend(5), 5);
        assert_eq!(e.extend(u32::MAX), u64::from(u32::MAX));
        assert_eq!(e.extend(3), (1 << 32) | 3);
    }

    #[test]
    fn ds1386_date_to_unix_time() {
        // 2026-12-02 06:27:38, 24-hour clock.
        let mut r = [0u8; 11];
        r[1] = 0x38;
        r[2] = 0x27;
        r[4] = 0x06;
        r[8] = 0x02;
        r[9] = 0x12;
        r[10] = 0x26;
        assert_eq!(unix_time(&r), Some(1_796_192_858));
        // 12-hour clock, 6 PM.
        r[4] = 0x40 | 0x20 | 0x06;
        assert_eq!(unix_time(&r), Some(1_796_192_858 + 12 * 3600));
        r[9] = 0x13;
        assert_eq!(unix_time(&r), None);
        r[9] = 0x01;
        r[10] = 0x70;
        r[8] = 0x01;
        r[4] = 0;
        r[2] = 0;
        r[1] = 0;
        assert_eq!(unix_time(&r), Some(0));
    }
}
