//! The machine's status as one snapshot, shared by the `status` tool, the `irix7://status`
//! resource and the HTML status page so they never disagree.

use crate::hil::platform::{Platform, c_str};
use crate::services::boot::BootReport;
pub use crate::services::duration::{format_duration, write_duration};
use crate::services::fs::cache::CacheStats;
use crate::services::identity::{BUILD_ID, Identity, VERSION};
use crate::services::memory::BudgetUse;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use irix7_kmem::civil::Date;
use irix7_kmem::hex_byte;

/// Heap figures in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HeapUsage {
    pub used: usize,
    pub peak: usize,
    pub size: usize,
}

/// Network figures the server keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetUsage {
    /// The address the module serves on (DHCP or `netaddr`), if configured yet.
    pub ip: Option<[u8; 4]>,
    pub prefix_len: u8,
    pub mac: [u8; 6],
    pub port: u16,
    pub open_connections: usize,
    pub requests: u64,
    /// The Seeq driver's ring positions (`dma.list`).
    pub rings: crate::hil::nic::RingPositions,
}

/// One snapshot of everything `status` reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    pub abi_version: u32,
    /// Which build runs, and whether the kernel fell back to it from a refused deploy.
    pub identity: Identity,
    /// The kernel's version text as it gives it (NUL-padded): kept as bytes, so a snapshot
    /// takes no allocation for it ([`Self::os_version`] reads it).
    pub os_version: [u8; 16],
    pub uptime_ms: u64,
    pub unix_time: u32,
    pub ram_bytes: u32,
    pub heap: HeapUsage,
    pub net: NetUsage,
    /// The filesystem's block cache (the 16-block LRU), when an image is mounted.
    pub cache: Option<CacheStats>,
    /// Heap bytes the module means never to pass (0: no plan).
    pub heap_budget: usize,
    pub budgets: Vec<BudgetUse>,
    /// The tool policy in force (`mcp.policy`), shared with the services rather than copied.
    pub policy: Rc<str>,
    /// Why this boot happened (set by the services; `None` in a bare snapshot).
    pub boot: Option<Rc<BootReport>>,
}

impl Status {
    /// Reads the kernel's status block and merges the module's own figures.
    pub fn collect(
        p: &dyn Platform,
        abi_version: u32,
        heap: HeapUsage,
        net: NetUsage,
        policy: Rc<str>,
    ) -> Self {
        let m = p.machine_status();
        let mut net = net;
        if net.ip.is_none() && m.ip != [0; 4] {
            net.ip = Some(m.ip);
        }
        Status {
            abi_version,
            identity: Identity {
                image: p.image_info(),
            },
            os_version: m.os_version,
            uptime_ms: p.clock_ms(),
            unix_time: m.unix_time,
            ram_bytes: m.ram_bytes,
            heap,
            net,
            cache: None,
            heap_budget: 0,
            budgets: Vec::new(),
            policy,
            boot: None,
        }
    }

    /// Cache hits per lookup, in tenths of a percent (0 before the first lookup). Integer
    /// arithmetic keeps float formatting out of the image.
    pub fn cache_hit_permille(c: &CacheStats) -> u64 {
        let lookups = c.hits.saturating_add(c.misses);
        (c.hits.saturating_mul(1000) + lookups / 2)
            .checked_div(lookups)
            .unwrap_or(0)
    }

    /// One line about the cache, for the text forms.
    pub fn cache_text(&self) -> String {
        match &self.cache {
            Some(c) => {
                let rate = Self::cache_hit_permille(c);
                format!(
                    "{} hits, {} misses, {} evictions ({}.{}% hits), {}/{} blocks of {} bytes, \
                     {} blocks read around it",
                    c.hits,
                    c.misses,
                    c.evictions,
                    rate / 10,
                    rate % 10,
                    c.resident,
                    c.capacity,
                    c.block_size,
                    c.direct_blocks
                )
            }
            None => String::from("no filesystem mounted"),
        }
    }

    pub fn ip_text(&self) -> String {
        match self.net.ip {
            Some([a, b, c, d]) => format!("{a}.{b}.{c}.{d}"),
            None => String::from("unconfigured"),
        }
    }

    pub fn mac_text(&self) -> String {
        mac_text(self.net.mac)
    }

    pub fn date_text(&self) -> String {
        format_utc(self.unix_time)
    }

    /// The kernel's version text.
    pub fn os_version(&self) -> &str {
        c_str(&self.os_version)
    }

    /// The plain-text form (`irix7://status`, the shell's `status`).
    pub fn to_text(&self) -> String {
        let id = &self.identity;
        let deploy = match id.refused_line() {
            Some(line) => format!("deploy      {line}\n"),
            None => String::new(),
        };
        let boot = match &self.boot {
            Some(b) => format!("boot        {}\n", b.line()),
            None => String::new(),
        };
        let mut text = format!(
            "irix7-mcp {VERSION} (ABI {abi}) on IRIX {os}\n\
             build       {BUILD_ID}\n\
             image       sha256 {sha}\n\
             {deploy}\
             {boot}\
             uptime      {up}\n",
            abi = self.abi_version,
            os = self.os_version(),
            sha = id
                .sha256()
                .as_deref()
                .unwrap_or("unknown (kernel ABI < 12)"),
            up = format_duration(self.uptime_ms),
        );
        for (label, value) in &self.rows() {
            text.push_str(&format!("{label:<11} {value}\n"));
        }
        text.push_str(&format!("policy      {}\n", self.policy));
        text
    }

    /// The figures the text and the HTML forms both show, in their order, as labelled rows
    /// (the `status` tool's JSON names the same figures as keys of its own).
    pub fn rows(&self) -> [(&'static str, String); 7] {
        let (h, n) = (&self.heap, &self.net);
        [
            ("date", self.date_text()),
            ("ip", self.ip_text()),
            ("mac", self.mac_text()),
            ("ram", format!("{} MiB", self.ram_bytes >> 20)),
            (
                "module heap",
                format!("{} of {} bytes in use (peak {})", h.used, h.size, h.peak),
            ),
            (
                "connections",
                format!(
                    "{} open, {} requests served",
                    n.open_connections, n.requests
                ),
            ),
            ("disk cache", self.cache_text()),
        ]
    }
}

/// The network figures as text (`irix7://net`, the shell's `net`).
pub fn net_text(st: &Status) -> String {
    let n = &st.net;
    format!(
        "ip          {ip}/{prefix}\n\
         mac         {mac}\n\
         mcp port    {port} (and 80)\n\
         connections {conn} open\n\
         requests    {req} served\n",
        ip = st.ip_text(),
        prefix = n.prefix_len,
        mac = st.mac_text(),
        port = n.port,
        conn = n.open_connections,
        req = n.requests,
    )
}

/// The memory figures as text (`irix7://mem`, the shell's `mem`): the heap, then one line
/// per budget of input-driven work (used / limit, peak, charges refused).
pub fn mem_text(st: &Status) -> String {
    let h = st.heap;
    let mut text = format!(
        "ram         {ram} MiB\n\
         heap size   {size} bytes\n\
         heap used   {used} bytes\n\
         heap free   {free} bytes\n\
         heap peak   {peak} bytes\n\
         heap budget {budget} bytes\n",
        ram = st.ram_bytes >> 20,
        size = h.size,
        used = h.used,
        free = h.size.saturating_sub(h.used),
        peak = h.peak,
        budget = st.heap_budget,
    );
    for b in &st.budgets {
        text.push_str(&format!(
            "budget {name:<10} {used} / {limit} bytes (peak {peak}, {refused} refused)\n",
            name = b.name,
            used = b.used,
            limit = b.limit,
            peak = b.peak,
            refused = b.refused,
        ));
    }
    text
}

/// A MAC address as the console and the status page write it (`08:00:69:..`).
pub fn mac_text(m: [u8; 6]) -> String {
    String::from(Digits::mac(m).as_str())
}

/// `YYYY-MM-DD hh:mm:ss UTC` from seconds since 1970 (proleptic Gregorian calendar).
pub fn format_utc(unix: u32) -> String {
    String::from(Digits::utc(unix).as_str())
}

/// The short texts `status` shows on every call (the date, the address, the MAC), written
/// digit by digit on the stack: through `core::fmt`'s padded integers they cost the call
/// about 5,000 instructions (`docs/bench.md`, "The request floor").
pub struct Digits {
    text: [u8; 23],
    len: usize,
}

/// Two decimal digits of `n` (below 100).
fn two(n: u32) -> [u8; 2] {
    [b'0' + (n / 10 % 10) as u8, b'0' + (n % 10) as u8]
}

impl Digits {
    fn put(&mut self, bytes: &[u8]) {
        if let Some(to) = self.text.get_mut(self.len..self.len + bytes.len()) {
            to.copy_from_slice(bytes);
            self.len += bytes.len();
        }
    }

    /// [`format_utc`]'s text.
    pub fn utc(unix: u32) -> Digits {
        let Date { year, month, day } = Date::from_days(unix / 86400);
        let secs = unix % 86400;
        let mut d = Digits {
            text: [0; 23],
            len: 0,
        };
        d.put(&two(year / 100));
        d.put(&two(year));
        for (sep, n) in [
            (b'-', month),
            (b'-', day),
            (b' ', secs / 3600),
            (b':', secs / 60 % 60),
            (b':', secs % 60),
        ] {
            d.put(&[sep]);
            d.put(&two(n));
        }
        d.put(b" UTC");
        d
    }

    /// A MAC address, `08:00:69:..`.
    pub fn mac(m: [u8; 6]) -> Digits {
        let mut d = Digits {
            text: [0; 23],
            len: 0,
        };
        for (i, &b) in m.iter().enumerate() {
            if i > 0 {
                d.put(b":");
            }
            d.put(&hex_byte(b));
        }
        d
    }

    /// An IPv4 address, dotted decimal.
    pub fn ipv4(ip: [u8; 4]) -> Digits {
        let mut d = Digits {
            text: [0; 23],
            len: 0,
        };
        for (i, &b) in ip.iter().enumerate() {
            if i > 0 {
                d.put(b".");
            }
            let b = u32::from(b);
            match b {
                100.. => {
                    d.put(&[b'0' + (b / 100) as u8]);
                    d.put(&two(b));
                }
                10.. => d.put(&two(b)),
                _ => d.put(&[b'0' + b as u8]),
            }
        }
        d
    }

    /// The text, for a writer that takes ASCII as bytes (no UTF-8 check).
    pub fn as_bytes(&self) -> &[u8] {
        self.text.get(..self.len).unwrap_or(&[])
    }

    pub fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(format_utc(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(format_utc(1_796_000_000), "2026-11-30 00:53:20 UTC");
        assert_eq!(format_utc(u32::MAX), "2106-02-07 06:28:15 UTC");
    }

    #[test]
    fn addresses() {
        assert_eq!(
            mac_text([8, 0, 0x69, 0x0a, 0xbc, 0xff]),
            "08:00:69:0a:bc:ff"
        );
        for (ip, text) in [
            ([0, 0, 0, 0], "0.0.0.0"),
            ([10, 0, 2, 15], "10.0.2.15"),
            ([192, 168, 100, 9], "192.168.100.9"),
            ([255, 255, 255, 255], "255.255.255.255"),
        ] {
            assert_eq!(Digits::ipv4(ip).as_str(), text);
        }
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration(0), "0d 00:00:00.000");
        assert_eq!(format_duration(90_061_001), "1d 01:01:01.001");
    }
}
