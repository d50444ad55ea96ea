//! `status`'s structured result. About half of it shows what only a boot or the network's
//! configuration changes (the ABI, why the machine booted, the build, the image's digest,
//! the addresses, the versions, the policy): those members are written once, when what they
//! show changes, and copied into each result ([`FixedMembers`]); the figures that move (heap,
//! budgets, cache, clocks, connections) are written every call.

use crate::services::boot::BootReport;
use crate::services::identity::{BUILD_ID, HexDigits, SHORT_DIGITS, VERSION};
use crate::services::status::{Digits, Status};
use alloc::rc::Rc;
use indy::abi::{DEPLOY_OK, ImageInfo, deploy_reason};
use rpc::json::{Members, ObjectWriter, Written};

/// Room for a status with an image, a cache and a few budgets: ~1 KB of text.
const STATUS_BYTES: usize = 1792;

/// The members of `status` that change only with what [`Fixed`] holds, as four runs between
/// the moving ones (keys are in order across the result): the ABI and the boot; the build;
/// the image, the addresses and the module's version; the OS version, policy, port and RAM.
#[derive(Default)]
pub struct FixedMembers {
    shows: Option<Fixed>,
    runs: [Members; 4],
}

/// What the fixed members were written from. The boot report and the policy are compared by
/// the allocation they share with the services: neither is changed in place, and a new one
/// is written out once.
struct Fixed {
    abi: u32,
    boot: Option<Rc<BootReport>>,
    image: Option<ImageInfo>,
    ip: Option<[u8; 4]>,
    mac: [u8; 6],
    os_version: [u8; 16],
    policy: Rc<str>,
    port: u16,
    ram_bytes: u32,
}

impl Fixed {
    fn of(st: &Status) -> Self {
        Fixed {
            abi: st.abi_version,
            boot: st.boot.clone(),
            image: st.identity.image,
            ip: st.net.ip,
            mac: st.net.mac,
            os_version: st.os_version,
            policy: st.policy.clone(),
            port: st.net.port,
            ram_bytes: st.ram_bytes,
        }
    }

    fn shows(&self, st: &Status) -> bool {
        let same_boot = match (&self.boot, &st.boot) {
            (Some(a), Some(b)) => Rc::ptr_eq(a, b),
            (a, b) => a.is_none() && b.is_none(),
        };
        same_boot
            && self.abi == st.abi_version
            && self.image == st.identity.image
            && self.ip == st.net.ip
            && self.mac == st.net.mac
            && self.os_version == st.os_version
            && Rc::ptr_eq(&self.policy, &st.policy)
            && self.port == st.net.port
            && self.ram_bytes == st.ram_bytes
    }
}

impl FixedMembers {
    /// The runs for `st`: those written before while they show the same, else written now.
    pub fn of(&mut self, st: &Status) -> &[Members; 4] {
        if !self.shows.as_ref().is_some_and(|f| f.shows(st)) {
            self.runs = Self::written(st);
            self.shows = Some(Fixed::of(st));
        }
        &self.runs
    }

    /// The runs for `st`, written now.
    fn written(st: &Status) -> [Members; 4] {
        let run = |write: &dyn Fn(&mut ObjectWriter)| {
            let mut w = ObjectWriter::new(256);
            write(&mut w);
            w.finish().into_members()
        };
        [
            run(&|w| {
                w.key("abi").u64(st.abi_version.into());
                if let Some(b) = &st.boot {
                    boot_json(w, b);
                }
            }),
            run(&|w| {
                w.key("build_id").str(BUILD_ID);
            }),
            run(&|w| image_and_addresses(w, st)),
            run(&|w| {
                w.key("os_version").str(st.os_version());
                w.key("policy").str(&st.policy);
                w.key("port").u64(st.net.port.into());
                w.key("ram_bytes").u64(st.ram_bytes.into());
            }),
        ]
    }
}

/// The status as `status`'s structured result, members in key order, with the `fixed` runs
/// written for the same status ([`FixedMembers::of`]).
pub fn status_json(st: &Status, fixed: &[Members; 4]) -> Written {
    let [abi_and_boot, build, image_and_addresses, os_to_ram] = fixed;
    let mut w = ObjectWriter::new(STATUS_BYTES);
    w.members(abi_and_boot);
    w.key("budgets").begin_array();
    for b in &st.budgets {
        w.begin_object();
        w.key("limit").u64(b.limit as u64).key("name").str(b.name);
        w.key("peak")
            .u64(b.peak as u64)
            .key("refused")
            .u64(b.refused);
        w.key("used").u64(b.used as u64).end_object();
    }
    w.end_array().members(build);
    if let Some(c) = &st.cache {
        w.key("cache").begin_object();
        w.key("block_size").u64(c.block_size.into());
        w.key("capacity").u64(c.capacity.into());
        w.key("direct_blocks").u64(c.direct_blocks);
        w.key("evictions").u64(c.evictions).key("hits").u64(c.hits);
        w.key("misses").u64(c.misses);
        w.key("resident").u64(c.resident.into()).end_object();
    }
    w.key("date").ascii(Digits::utc(st.unix_time).as_bytes());
    w.key("heap").begin_object();
    w.key("budget").u64(st.heap_budget as u64);
    w.key("peak").u64(st.heap.peak as u64);
    w.key("size").u64(st.heap.size as u64);
    w.key("used").u64(st.heap.used as u64).end_object();
    w.members(image_and_addresses);
    w.key("open_connections")
        .u64(st.net.open_connections as u64);
    w.members(os_to_ram);
    w.key("requests").u64(st.net.requests);
    w.key("unix_time").u64(st.unix_time.into());
    w.key("uptime_ms").u64(st.uptime_ms);
    w.finish()
}

/// `image`, `ip`, `mac`, `module` and `module_version`.
fn image_and_addresses(w: &mut ObjectWriter, st: &Status) {
    if let Some(i) = st.identity.image {
        w.key("image").begin_object();
        match i.deploy {
            DEPLOY_OK => w.key("deploy").str("ok"),
            why => w
                .key("deploy")
                .str(deploy_reason(why))
                .key("refused_sha256")
                .ascii(HexDigits::of(&i.refused_sha256).as_bytes()),
        };
        let sha256 = HexDigits::of(&i.sha256);
        w.key("sha256").ascii(sha256.as_bytes());
        w.key("sha256_short")
            .ascii(sha256.as_bytes().get(..SHORT_DIGITS).unwrap_or(&[]));
        w.end_object();
    }
    match st.net.ip {
        Some(ip) => w.key("ip").ascii(Digits::ipv4(ip).as_bytes()),
        None => w.key("ip").str("unconfigured"),
    };
    w.key("mac").ascii(Digits::mac(st.net.mac).as_bytes());
    w.key("module")
        .str("irix7-mcp")
        .key("module_version")
        .str(VERSION);
}

/// `status.boot`: the cause and a summary of what survived of the previous boot.
fn boot_json(w: &mut ObjectWriter, b: &BootReport) {
    w.key("boot").begin_object();
    w.key("boots").u64(b.boots.into());
    w.key("cause").str(b.cause_name());
    w.key("console").str(b.ring_state());
    if b.deploy {
        w.key("deploy").bool(true);
    }
    w.key("flight").begin_object();
    if let Ok(f) = &b.flight {
        w.key("build").str(&f.build);
        w.key("calls").begin_array();
        for c in &f.calls {
            w.str(&c.tool);
        }
        w.end_array();
        if !f.panic.is_empty() {
            w.key("panic").str(&f.panic);
        }
    }
    w.key("state").str(b.flight_state());
    if let Ok(f) = &b.flight {
        if f.torn > 0 {
            w.key("torn").u64(f.torn.into());
        }
        w.key("uptime_ms").u64(f.uptime_ms);
    }
    w.end_object();
    if !b.message.is_empty() {
        w.key("message").str(&b.message);
    }
    if let Some(sha) = &b.prev_sha256 {
        w.key("previous_sha256")
            .ascii(HexDigits::of(sha).as_bytes());
    }
    w.key("previous_uptime_ms").u64(b.prev_uptime_ms.into());
    if let Some(by) = b.requested_by() {
        w.key("requested_by").str(by);
    }
    w.end_object();
}
