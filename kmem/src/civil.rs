//! The civil date of a day count: the `status` tool's date and the task timestamps of the
//! protocol crate both write one, and neither may depend on the other.

/// A date of the proleptic Gregorian calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Date {
    pub year: u32,
    /// 1 to 12.
    pub month: u32,
    /// 1 to 31.
    pub day: u32,
}

impl Date {
    /// The date `days` days after 1970-01-01. 32-bit arithmetic throughout: 64-bit division is
    /// a library call on MIPS32. Never inlined: one copy serves both crates.
    #[inline(never)]
    pub fn from_days(days: u32) -> Date {
        // Count from 0000-03-01 so that a leap day ends its year; 400 years are 146,097 days.
        let z = days + 719_468;
        let era = z / 146_097;
        let doe = z % 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        Date {
            year: yoe + era * 400 + u32::from(month <= 2),
            month,
            day,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Date;

    #[test]
    fn dates() {
        for (days, (year, month, day)) in [
            (0, (1970, 1, 1)),
            (59, (1970, 3, 1)),
            (11_016, (2000, 2, 29)),
            (11_017, (2000, 3, 1)),
            (20_787, (2026, 11, 30)),
            (49_710, (2106, 2, 7)),
        ] {
            assert_eq!(Date::from_days(days), Date { year, month, day }, "{days}");
        }
    }
}
