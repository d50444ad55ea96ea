//! Each ABI table entry through the stub trampolines: arguments in $a0–$a3, results in $v0
//! (and $v1 for u64), big-endian data in guest memory.

mod support;

use std::time::Duration;

use indy::map::unmapped_phys;
use iris::kernel::abi::AbiFn;
use iris::{Rig, RunEnd};
use support::synthetic::*;

/// An argument the poll loads before the call.
#[derive(Clone, Copy)]
enum Arg {
    Imm(u32),
    Sym(&'static str),
}

/// A module whose poll sets $a0..$a3, calls ABI entry `field`, and stores $v0/$v1 in `ret_v0`/
/// `ret_v1` (data at .data+8/+16); `buf` is 4 KiB of .bss; `key` is in .rodata.
fn call_module(field: usize, args: &[Arg], key: &str) -> ModuleObj {
    let mut p = Asm::default();
    p.prologue();
    for (i, a) in args.iter().enumerate() {
        let reg = A0 + i as u32;
        match *a {
            Arg::Imm(v) => p.ops(&[lui(reg, (v >> 16) as u16), ori(reg, reg, v as u16)]),
            Arg::Sym(s) => p.la(reg, s),
        };
    }
    p.call_abi(field)
        .sw_sym(V0, "ret_v0", T0)
        .sw_sym(V1, "ret_v1", T0)
        .op(mov(V0, ZERO))
        .epilogue();
    let mut m = hello_module("ready\n", p);
    m.data.push(("ret_v0".into(), vec![0xEE; 4]));
    m.data.push(("ret_v1".into(), vec![0xEE; 4]));
    m.bss.push(("buf".into(), 4096));
    m.rodata.push(("key".into(), key.as_bytes().to_vec()));
    m
}

struct Booted {
    rig: Rig,
}

impl Booted {
    fn new(tag: &str, m: &ModuleObj, tweak: impl FnOnce(&mut iris::RigOptions)) -> Booted {
        let mut opts = synthetic_options(tag, &m.build());
        tweak(&mut opts);
        Booted {
            rig: boot_synthetic(opts).unwrap(),
        }
    }
    fn sec(&self, name: &str) -> u32 {
        self.rig
            .image()
            .unwrap()
            .sections
            .iter()
            .find(|s| s.0 == name)
            .unwrap()
            .1
    }
    fn read(&mut self, va: u32, len: usize) -> Vec<u8> {
        self.rig
            .read_phys(u64::from(unmapped_phys(va).unwrap()), len)
            .unwrap()
    }
    fn word(&mut self, va: u32) -> u32 {
        u32::from_be_bytes(self.read(va, 4).try_into().unwrap())
    }
    fn v0(&mut self) -> u32 {
        let d = self.sec(".data");
        self.word(d + 8)
    }
    fn v1(&mut self) -> u32 {
        let d = self.sec(".data");
        self.word(d + 16)
    }
    fn buf(&mut self, len: usize) -> Vec<u8> {
        let b = self.sec(".bss");
        self.read(b, len)
    }
    fn poll(&mut self) {
        self.rig.step().unwrap();
    }
}

#[test]
fn env_get_present_absent_and_cut() {
    let m = call_module(
        field!(env_get),
        &[Arg::Sym("key"), Arg::Imm(7), Arg::Sym("buf"), Arg::Imm(64)],
        "netaddr",
    );
    let mut b = Booted::new("env", &m, |o| o.env.push("netaddr=192.168.9.77".into()));
    b.poll();
    assert_eq!(b.v0(), 12);
    assert_eq!(b.buf(13), b"192.168.9.77\0");

    let m = call_module(
        field!(env_get),
        &[Arg::Sym("key"), Arg::Imm(9), Arg::Sym("buf"), Arg::Imm(4)],
        "mcp.token",
    );
    let mut b = Booted::new("env-cut", &m, |o| {
        o.env.push("mcp.token=s3cret-token".into())
    });
    b.poll();
    assert_eq!(b.v0(), 12, "the full length, though only 4 bytes fit");
    assert_eq!(b.buf(5), b"s3cr\0");

    let m = call_module(
        field!(env_get),
        &[Arg::Sym("key"), Arg::Imm(6), Arg::Sym("buf"), Arg::Imm(64)],
        "nosuch",
    );
    let mut b = Booted::new("env-absent", &m, |_| {});
    b.poll();
    assert_eq!(b.v0() as i32, -1);
}

#[test]
fn env_file_and_defaults() {
    let m = call_module(
        field!(env_get),
        &[Arg::Sym("key"), Arg::Imm(5), Arg::Sym("buf"), Arg::Imm(64)],
        "eaddr",
    );
    let mut b = Booted::new("env-default", &m, |_| {});
    b.poll();
    let n = b.v0() as usize;
    assert_eq!(b.buf(n), iris::config::DEFAULT_ENV[0].1.as_bytes());

    let m = call_module(
        field!(env_get),
        &[Arg::Sym("key"), Arg::Imm(8), Arg::Sym("buf"), Arg::Imm(64)],
        "mcp.port",
    );
    let mut b = Booted::new("env-file", &m, |o| {
        let f = o.root.as_ref().unwrap().join("nvram.env");
        std::fs::write(&f, "# nvram\nmcp.port = 9000\n").unwrap();
        o.env_file = Some(f);
    });
    b.poll();
    let n = b.v0() as usize;
    assert_eq!(b.buf(n), b"9000");
}

#[test]
fn clock_ms_returns_u64_high_in_v0_low_in_v1() {
    let m = call_module(field!(clock_ms), &[], "");
    let mut b = Booted::new("clock", &m, |_| {});
    b.rig.advance_clock(5 << 32);
    let before = b.rig.now_ms();
    b.poll();
    let after = b.rig.now_ms();
    let got = (u64::from(b.v0()) << 32) | u64::from(b.v1());
    assert!(
        got >= before && got <= after,
        "{before} <= {got} <= {after}"
    );
    assert_eq!(b.v0(), 5);
}

fn disk_file(tag: &str) -> (std::path::PathBuf, Vec<u8>) {
    let dir = temp_root(tag);
    let data: Vec<u8> = (0..3 * 512).map(|i| (i * 7 % 256) as u8).collect();
    let path = dir.join("disk.img");
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

#[test]
fn block_read_and_count() {
    let (path, data) = disk_file("disk");
    let attach = |o: &mut iris::RigOptions| {
        o.no_disk = false;
        o.disks = vec![(2, path.clone())];
    };
    let m = call_module(
        field!(block_read),
        &[Arg::Imm(2), Arg::Imm(1), Arg::Imm(2), Arg::Sym("buf")],
        "",
    );
    let mut b = Booted::new("blk", &m, attach);
    assert!(
        b.rig.console_text().contains("scsi target 2: "),
        "{}",
        b.rig.console_text()
    );
    b.poll();
    assert_eq!(b.v0(), 0);
    assert_eq!(b.buf(1024), data[512..1536]);
    assert_eq!(b.rig.kernel_stats().blocks_read, 2);

    for (args, want) in [
        ([2, 2, 2], indy::abi::status::E_RANGE),
        ([5, 0, 1], indy::abi::status::E_NODEV),
        ([2, 0, 100_000], indy::abi::status::E_INVAL),
    ] {
        let m = call_module(
            field!(block_read),
            &[
                Arg::Imm(args[0]),
                Arg::Imm(args[1]),
                Arg::Imm(args[2]),
                Arg::Sym("buf"),
            ],
            "",
        );
        let mut b = Booted::new("blk-err", &m, attach);
        b.poll();
        assert_eq!(b.v0() as i32, want, "{args:?}");
    }

    let m = call_module(field!(block_count), &[Arg::Imm(2)], "");
    let mut b = Booted::new("blk-count", &m, attach);
    b.poll();
    assert_eq!(b.v0(), 3);
    let m = call_module(field!(block_count), &[Arg::Imm(2)], "");
    let mut b = Booted::new("blk-none", &m, |o| o.no_disk = true);
    b.poll();
    assert_eq!(b.v0() as i32, indy::abi::status::E_NODEV);
}

#[test]
fn proc_list_fills_entries() {
    let m = call_module(field!(proc_list), &[Arg::Sym("buf"), Arg::Imm(16)], "");
    let mut b = Booted::new("procs", &m, |_| {});
    b.poll();
    let n = b.v0() as usize;
    assert_eq!(n, 6);
    let raw = b.buf(32 * n);
    let name = |i: usize| {
        String::from_utf8_lossy(&raw[32 * i + 12..32 * i + 32])
            .trim_end_matches('\0')
            .to_string()
    };
    assert_eq!(name(0), "kernel");
    assert_eq!(name(n - 1), "mcpd");
    assert_eq!(
        u32::from_be_bytes(raw[32..36].try_into().unwrap()),
        1,
        "pid of init"
    );
    // max = 2 fills two.
    let m = call_module(field!(proc_list), &[Arg::Sym("buf"), Arg::Imm(2)], "");
    let mut b = Booted::new("procs2", &m, |_| {});
    b.poll();
    assert_eq!(b.v0(), 2);
}

#[test]
fn virt_to_phys_translates_kseg0_and_kseg1() {
    for (va, pa) in [
        (0x8810_0000u32, 0x0810_0000u32),
        (0xBFBD_9830, 0x1FBD_9830),
        (0x0040_0000, u32::MAX),
    ] {
        let m = call_module(field!(virt_to_phys), &[Arg::Imm(va)], "");
        let mut b = Booted::new("v2p", &m, |_| {});
        b.poll();
        assert_eq!(b.v0(), pa, "{va:#x}");
    }
}

#[test]
fn cache_ops_are_counted_and_watchdog_kick_works() {
    let m = call_module(field!(cache_wback), &[Arg::Sym("buf"), Arg::Imm(100)], "");
    let mut b = Booted::new("wback", &m, |_| {});
    b.poll();
    b.poll();
    let s = b.rig.kernel_stats();
    assert_eq!(s.calls_to(AbiFn::CacheWback), 2);
    assert_eq!(s.cache_wback_bytes, 200);
    let m = call_module(field!(cache_inval), &[Arg::Sym("buf"), Arg::Imm(64)], "");
    let mut b = Booted::new("inval", &m, |_| {});
    b.poll();
    assert_eq!(b.rig.kernel_stats().cache_inval_bytes, 64);
    let m = call_module(field!(watchdog_kick), &[], "");
    let mut b = Booted::new("kick", &m, |_| {});
    b.poll();
    assert_eq!(b.rig.kernel_stats().calls_to(AbiFn::WatchdogKick), 1);
}

#[test]
fn console_write_rejects_a_bad_pointer() {
    let m = call_module(
        field!(console_write),
        &[Arg::Imm(0x0040_0000), Arg::Imm(4)],
        "",
    );
    let mut b = Booted::new("badptr", &m, |_| {});
    b.poll();
    assert_eq!(b.v0() as i32, indy::abi::status::E_INVAL);
    assert_eq!(b.rig.kernel_stats().bad_pointers, 1);
}

#[test]
fn table_data_pointers_and_status_block() {
    let m = call_module(field!(clock_ms), &[], "");
    let mut b = Booted::new("status", &m, |o| {
        o.env.push("eaddr=08:00:69:aa:bb:cc".into())
    });
    b.poll();
    let abi = {
        let d = b.sec(".data");
        b.word(d)
    };
    assert_eq!(b.word(abi), indy::abi::ABI_VERSION);
    assert_eq!(b.word(abi + 4), indy::abi::ABI_TABLE_SIZE);
    let heap = b.word(abi + field!(heap_base) as u32);
    let heap_size = b.word(abi + field!(heap_size) as u32);
    assert_eq!(heap, 0x8880_0000);
    assert_eq!(heap_size, (64 << 20) - 0x80_0000);
    let st = b.word(abi + field!(machine_status) as u32);
    let raw = b.read(st, 40);
    let ip: std::net::Ipv4Addr = iris::config::DEFAULT_ENV[1].1.parse().unwrap();
    assert_eq!(&raw[0..4], &ip.octets());
    assert_eq!(&raw[4..10], &[8, 0, 0x69, 0xaa, 0xbb, 0xcc]);
    assert_eq!(
        u32::from_be_bytes(raw[12..16].try_into().unwrap()),
        64 << 20
    );
    let unix = u32::from_be_bytes(raw[20..24].try_into().unwrap());
    assert!(unix > 1_700_000_000, "{unix}");
    assert_eq!(&raw[24..29], b"7.0.0");
    // The ring pointer/head the table names are the kernel's ring.
    let ring = b.word(abi + field!(serial_ring) as u32);
    let head_ptr = b.word(abi + field!(serial_head) as u32);
    let head = b.word(head_ptr);
    let (rig_head, content) = b.rig.serial_ring();
    assert_eq!(head, rig_head);
    let first = b.read(ring, 12);
    assert_eq!(&first[..], &content[..12]);
}

#[test]
fn console_input_reaches_the_z85c30_receiver() {
    // poll: console_input("q!", 2), then read RR0 and the data register of channel B.
    let mut p = Asm::default();
    p.prologue()
        .la(A0, "key")
        .op(addiu(A1, ZERO, 2))
        .call_abi(field!(console_input))
        .ops(&[
            lui(T0, 0xBFBE),
            0x9109_0000 | (0x9833u32.wrapping_sub(0x10000) & 0xFFFF),
        ]) // lbu t1, -0x67cd(t0)
        .ops(&[
            0x910A_0000 | (0x9837u32.wrapping_sub(0x10000) & 0xFFFF),
            NOP,
        ]) // lbu t2, -0x67c9(t0)
        .sw_sym(T1, "ret_v0", T0)
        .sw_sym(T2, "ret_v1", T0)
        .op(mov(V0, ZERO))
        .epilogue();
    let mut m = hello_module("ready\n", p);
    m.data.push(("ret_v0".into(), vec![0; 4]));
    m.data.push(("ret_v1".into(), vec![0; 4]));
    m.rodata.push(("key".into(), b"q!".to_vec()));
    let mut b = Booted::new("input", &m, |_| {});
    b.poll();
    assert_eq!(b.v0() & 0x05, 0x05, "RR0: RX available and TX empty");
    assert_eq!(b.v1(), u32::from(b'q'));
    // The host side can queue input too.
    b.rig.console_input(b"z");
    b.poll();
    assert_eq!(b.v1(), u32::from(b'!'));
}

#[test]
fn poweroff_ends_the_run() {
    let m = call_module(field!(poweroff), &[], "");
    let mut b = Booted::new("poweroff", &m, |_| {});
    assert_eq!(b.rig.run_for(5_000).unwrap(), RunEnd::PoweredOff);
    assert!(b.rig.is_powered_off());
    assert!(b.rig.console_text().ends_with("kernel: power off\n"));
    // The data after the call was never written: poweroff does not return.
    assert_eq!(b.v0(), 0xEEEE_EEEE);
}

#[test]
fn reset_reloads_and_reinits() {
    let m = call_module(field!(reset), &[], "");
    let mut b = Booted::new("reset", &m, |_| {});
    b.poll();
    let c = b.rig.counters();
    assert_eq!((c.resets, c.watchdog_resets), (1, 0));
    let console = b.rig.console_text();
    assert!(
        console.contains("kernel: reset requested by the module: resetting the machine\n"),
        "{console}"
    );
    assert_eq!(console.matches("verified\n").count(), 2);
    assert_eq!(console.matches("ready\n").count(), 2);
    // The image was reloaded: the data words are back to their initial value.
    assert_eq!(b.v0(), 0xEEEE_EEEE);
}

#[test]
fn background_rig_stops_on_request() {
    let image = hello_module("background hello\n", idle_poll()).build();
    let handle = Rig::spawn(synthetic_options("spawn", &image)).unwrap();
    assert!(handle.wait_for_console("background hello", Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(50));
    assert!(handle.counters().polls > 0);
    let console = handle.console();
    assert_eq!(handle.stop().unwrap(), RunEnd::Predicate);
    assert!(console.text().ends_with("kernel: module exited\n"));
}

#[test]
fn background_rig_reports_boot_failure() {
    let image = hello_module("x\n", idle_poll()).build();
    let opts = synthetic_options("spawn-bad", &image);
    std::fs::write(opts.root.as_ref().unwrap().join("m.o"), b"changed").unwrap();
    let e = Rig::spawn(opts).err().unwrap();
    assert!(e.to_string().contains("sha256 mismatch"), "{e}");
}

#[test]
fn irq_list_fills_entries_and_counts_the_timer() {
    let m = call_module(field!(irq_list), &[Arg::Sym("buf"), Arg::Imm(64)], "");
    let mut b = Booted::new("irqs", &m, |_| {});
    b.rig.advance_clock(2_000);
    b.poll();
    let n = b.v0() as usize;
    assert_eq!(n, 12);
    let raw = b.buf(32 * n);
    let word = |i: usize, off: usize| {
        u32::from_be_bytes(raw[32 * i + off..32 * i + off + 4].try_into().unwrap())
    };
    let name = |i: usize| {
        String::from_utf8_lossy(&raw[32 * i..32 * i + 16])
            .trim_end_matches('\0')
            .to_string()
    };
    let find = |n: &str| (0..12).find(|&i| name(i) == n).unwrap();
    let timer = find("timer");
    assert_eq!((word(timer, 16), word(timer, 20)), (0, 7), "CPU line IP7");
    assert!(
        word(timer, 28) >= 200,
        "100 Hz for 2 s: {}",
        word(timer, 28)
    );
    let enet = find("enet");
    assert_eq!((word(enet, 16), word(enet, 20)), (0x1FBD_9883, 3));
    assert_eq!(word(enet, 24) & 1, 1, "enabled");
    // max = 3 fills three.
    let m = call_module(field!(irq_list), &[Arg::Sym("buf"), Arg::Imm(3)], "");
    let mut b = Booted::new("irqs3", &m, |_| {});
    b.poll();
    assert_eq!(b.v0(), 3);
}

#[test]
fn bus_probe_answers_for_ram_and_devices_only() {
    use indy::abi::status::{E_INVAL, E_NODEV, OK};
    for (phys, width, want, why) in [
        (0x0800_1000u32, 4u32, OK, "RAM"),
        (0x0004_0000, 4, OK, "the low alias"),
        (0x1FB9_5018, 4, OK, "HPC3 Ethernet model"),
        (0x1FBE_0030, 1, OK, "DS1386 (register file)"),
        (0x1FC0_0000, 4, OK, "PROM (register file)"),
        (0x0C00_0000, 4, E_NODEV, "past 64 MiB of RAM"),
        (0x1F40_0000, 4, E_NODEV, "an empty GIO slot"),
        (0x1FB9_5019, 4, E_INVAL, "unaligned"),
        (0x1FB9_5018, 3, E_INVAL, "bad width"),
    ] {
        let m = call_module(field!(bus_probe), &[Arg::Imm(phys), Arg::Imm(width)], "");
        let mut b = Booted::new("probe", &m, |_| {});
        b.poll();
        assert_eq!(b.v0() as i32, want, "{why}: {phys:#x}/{width}");
    }
}

#[test]
fn an_abi_10_table_is_shorter_and_says_version_10() {
    let m = call_module(field!(clock_ms), &[], "");
    let mut opts = synthetic_options("abi10", &m.build());
    opts.quiet = true;
    let mut rig = Rig::new(opts).unwrap();
    rig.offer_abi(10);
    rig.boot().unwrap();
    let mut b = Booted { rig };
    b.poll();
    let abi = {
        let d = b.sec(".data");
        b.word(d)
    };
    assert_eq!((b.word(abi), b.word(abi + 4)), (10, 84));
    // Nothing of the ABI 11 entries is left where they would be.
    assert_eq!(b.word(abi + field!(irq_list) as u32), 0);
}
