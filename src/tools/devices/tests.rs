//! The device tools through the real MCP server, over the fake machine's registers and RAM.

use crate::tools::testing::fake;
use crate::tools::testing::harness::{call, server_with};
use indy::abi::{IRQ_ENABLED, IRQ_PENDING, IrqInfo};
use serde_json::{Value, json};

fn err_text(r: &Value) -> &str {
    assert_eq!(r["isError"], true, "expected an error: {r}");
    r["content"][0]["text"].as_str().unwrap()
}

fn irq(name: &str, reg: u32, bit: u32, flags: u32, count: u32) -> IrqInfo {
    let mut n = [0u8; 16];
    n[..name.len()].copy_from_slice(name.as_bytes());
    IrqInfo {
        name: n,
        reg,
        bit,
        flags,
        count,
    }
}

#[test]
fn mem_read_returns_ram_as_hex_or_base64() {
    let (ctx, state) = fake::ctx_and_state();
    for (i, b) in [0xDEu8, 0xAD, 0xBE, 0xEF].iter().enumerate() {
        state.ram.borrow_mut().insert(0x0800_1000 + i as u32, *b);
    }
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x08001000", "length": 5}),
    );
    let st = &r["structuredContent"];
    assert_eq!(st["data"], "deadbeef00");
    assert_eq!(st["addr"], 0x0800_1000);
    assert_eq!(st["encoding"], "hex");
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": 0x0800_1000u32, "length": 4, "encoding": "base64"}),
    );
    assert_eq!(r["structuredContent"]["data"], "3q2+7w==");
    // The alias of the first 512 KiB.
    let r = call(&mut s, "mem.read", json!({"addr": 0, "length": 16}));
    assert_eq!(r["structuredContent"]["length"], 16);
}

#[test]
fn mem_read_refuses_long_reads_and_addresses_outside_ram() {
    let mut s = server_with(fake::ctx());
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": 0x0800_0000u32, "length": 65537}),
    );
    assert!(err_text(&r).starts_with("E_TOO_LARGE:"), "{r}");
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": 0x0800_0000u32, "length": 65536}),
    );
    assert_eq!(
        r["structuredContent"]["data"].as_str().unwrap().len(),
        131072
    );
    // 64 MiB installed: the last byte is readable, one more is not.
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x0bffffff", "length": 2}),
    );
    assert!(err_text(&r).starts_with("E_RANGE:"), "{r}");
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x1fb94000", "length": 4}),
    );
    assert!(err_text(&r).starts_with("E_RANGE:"));
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x20000000", "length": 4}),
    );
    assert!(err_text(&r).contains("high RAM"), "{r}");
    let r = call(&mut s, "mem.read", json!({"addr": "0xzz", "length": 4}));
    assert!(err_text(&r).starts_with("E_INVAL:"));
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": 0x1_0000_0000u64, "length": 4}),
    );
    assert!(err_text(&r).starts_with("E_INVAL:"));
}

#[test]
fn mem_read_and_write_refuse_ram_the_kernel_left_unmapped() {
    let (ctx, state) = fake::ctx_and_state();
    // A guard page in the middle of RAM: a range that touches it is refused, whole.
    state.absent.borrow_mut().push((0x0803_F000, 0x1000));
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x0803e000", "length": 8192}),
    );
    assert!(err_text(&r).contains("0x803f000 does not answer"), "{r}");
    let r = call(
        &mut s,
        "mem.write",
        json!({"addr": "0x0803fffe", "data": "0102"}),
    );
    assert!(err_text(&r).starts_with("E_RANGE:"), "{r}");
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x0803e000", "length": 4096}),
    );
    assert_eq!(r["structuredContent"]["length"], 4096, "{r}");
}

#[test]
fn mem_write_then_read_round_trips() {
    let (ctx, state) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "mem.write",
        json!({"addr": "0x0a000000", "data": "0102fe"}),
    );
    assert_eq!(
        r["structuredContent"],
        json!({"addr": 0x0A00_0000u32, "length": 3})
    );
    assert_eq!(state.ram.borrow().get(&0x0A00_0002), Some(&0xFE));
    let r = call(
        &mut s,
        "mem.write",
        json!({"addr": "0x0a000003", "data": "BAU=", "encoding": "base64"}),
    );
    assert_eq!(r["structuredContent"]["length"], 2);
    let r = call(
        &mut s,
        "mem.read",
        json!({"addr": "0x0a000000", "length": 5}),
    );
    assert_eq!(r["structuredContent"]["data"], "0102fe0405");
}

#[test]
fn mem_write_refuses_bad_data_and_ranges() {
    let (ctx, state) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    for data in ["abc", "zz", ""] {
        let r = call(
            &mut s,
            "mem.write",
            json!({"addr": "0x0a000000", "data": data}),
        );
        assert!(err_text(&r).starts_with("E_INVAL:"), "{data}: {r}");
    }
    let big = "00".repeat(65537);
    let r = call(
        &mut s,
        "mem.write",
        json!({"addr": "0x0a000000", "data": big}),
    );
    assert!(err_text(&r).starts_with("E_TOO_LARGE:"));
    let r = call(
        &mut s,
        "mem.write",
        json!({"addr": "0x1fc00000", "data": "00"}),
    );
    assert!(err_text(&r).starts_with("E_RANGE:"));
    assert!(state.ram.borrow().is_empty(), "nothing was written");
}

#[test]
fn mmio_read_reads_registers_in_a_window() {
    let (ctx, state) = fake::ctx_and_state();
    state.regs.borrow_mut().insert(0x1FB9_5018, 0x3E026);
    state.regs.borrow_mut().insert(0x1FB9_501C, 0x161);
    state.regs.borrow_mut().insert(0x1FBD_9837, 0x41);
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1fb95018", "count": 2}),
    );
    assert_eq!(
        r["structuredContent"],
        json!({"device": "hpc3-enet", "addr": 0x1FB9_5018u32, "width": 4,
               "values": [0x3E026, 0x161]})
    );
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1fbd9837", "width": 1}),
    );
    assert_eq!(r["structuredContent"]["values"], json!([0x41]));
    assert_eq!(r["structuredContent"]["device"], "z85c30");
}

#[test]
fn mmio_refuses_unaligned_unknown_absent_and_wrong_width() {
    let (ctx, state) = fake::ctx_and_state();
    state.absent.borrow_mut().push((0x1F0F_0000, 0x2000));
    let mut s = server_with(ctx);
    let r = call(&mut s, "mmio.read", json!({"addr": "0x1fb95019"}));
    assert!(err_text(&r).starts_with("E_ALIGN:"), "{r}");
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1f0f0003", "width": 2}),
    );
    assert!(err_text(&r).starts_with("E_ALIGN:"));
    let r = call(&mut s, "mmio.read", json!({"addr": "0x1fbd4020"}));
    let t = err_text(&r);
    assert!(
        t.starts_with("E_NODEV:") && t.contains("nearest is seeq"),
        "{t}"
    );
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1fbd4018", "count": 3}),
    );
    assert!(
        err_text(&r).starts_with("E_NODEV:"),
        "runs out of the window"
    );
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1fa00004", "width": 1}),
    );
    assert!(
        err_text(&r).starts_with("E_INVAL:"),
        "the MC takes words only"
    );
    let r = call(&mut s, "mmio.read", json!({"addr": "0x1f0f1338"}));
    assert!(err_text(&r).contains("does not answer"), "{r}");
    let r = call(
        &mut s,
        "mmio.read",
        json!({"addr": "0x1fb80000", "count": 257}),
    );
    assert!(err_text(&r).starts_with("E_TOO_LARGE:"));
    let r = call(
        &mut s,
        "mmio.write",
        json!({"addr": "0x1fbd9837", "width": 1, "value": 256}),
    );
    assert!(err_text(&r).starts_with("E_INVAL:"));
    let r = call(
        &mut s,
        "mmio.write",
        json!({"addr": "0x08000000", "value": 1}),
    );
    assert!(err_text(&r).starts_with("E_NODEV:"), "RAM is not a device");
    assert!(state.regs.borrow().is_empty(), "nothing was written");
}

#[test]
fn mmio_write_writes_one_register() {
    let (ctx, state) = fake::ctx_and_state();
    let mut s = server_with(ctx);
    let r = call(
        &mut s,
        "mmio.write",
        json!({"addr": "0x1fbe0030", "width": 1, "value": 0x99}),
    );
    assert_eq!(r["structuredContent"]["device"], "ds1386");
    assert_eq!(state.regs.borrow().get(&0x1FBE_0030), Some(&0x99));
}

#[test]
fn an_abi_10_kernel_cannot_list_interrupts_or_probe() {
    let (ctx, state) = fake::ctx_and_state();
    *state.irqs.borrow_mut() = None;
    let mut s = server_with(ctx);
    let r = call(&mut s, "irq.list", json!({}));
    let t = err_text(&r);
    assert!(t.starts_with("E_NOSYS:") && t.contains("ABI 11"), "{t}");
    let r = call(&mut s, "dev.list", json!({}));
    let devs = r["structuredContent"]["devices"].as_array().unwrap();
    assert!(devs.iter().all(|d| d["state"] == "unknown"));
    // Register access still works without a probe.
    let r = call(&mut s, "mmio.read", json!({"addr": "0x1fa00004"}));
    assert_eq!(r["structuredContent"]["values"], json!([0]));
}

#[test]
fn irq_list_reports_the_kernel_sources() {
    let (ctx, state) = fake::ctx_and_state();
    *state.irqs.borrow_mut() = Some(std::vec![
        irq("enet", 0x1FBD_9883, 3, IRQ_ENABLED | IRQ_PENDING, 42),
        irq("timer", 0, 7, IRQ_ENABLED, 1234),
        irq("vretrace", 0x1FBD_9893, 0, 0, 0),
    ]);
    let mut s = server_with(ctx);
    let r = call(&mut s, "irq.list", json!({}));
    let src = &r["structuredContent"]["sources"];
    assert_eq!(
        src[0],
        json!({"name": "enet", "reg": 0x1FBD_9883u32, "bit": 3, "cpu_line": null,
               "enabled": true, "pending": true, "count": 42})
    );
    assert_eq!(src[1]["cpu_line"], 7);
    assert_eq!(src[1]["reg"], Value::Null);
    assert_eq!(src[2]["enabled"], false);
    assert_eq!(src.as_array().unwrap().len(), 3);
}

#[test]
fn dev_list_probes_each_window() {
    let (ctx, state) = fake::ctx_and_state();
    state.absent.borrow_mut().push((0x1F0F_0000, 0x2000));
    let mut s = server_with(ctx);
    let r = call(&mut s, "dev.list", json!({}));
    let devs = r["structuredContent"]["devices"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(devs.len(), indy::map::WINDOWS.len());
    let by = |n: &str| devs.iter().find(|d| d["name"] == n).unwrap().clone();
    assert_eq!(by("rex3")["state"], "absent");
    assert!(by("rex3").get("detail").is_none());
    assert_eq!(by("seeq")["state"], "present");
    assert_eq!(by("seeq")["detail"], "driven by irix7-mcp");
    assert_eq!(by("seeq")["base"], 0x1FBD_4000);
    assert_eq!(by("mc")["widths"], json!([4]));
    for w in indy::map::WINDOWS {
        let want: std::vec::Vec<u32> = [1, 2, 4].into_iter().filter(|&n| w.allows(n)).collect();
        assert_eq!(by(w.name)["widths"], json!(want), "{}", w.name);
    }

    // With graphics: the REX3 version from STATUS.
    let (ctx, state) = fake::ctx_and_state();
    state.regs.borrow_mut().insert(0x1F0F_1338, 0x13);
    let mut s = server_with(ctx);
    let r = call(&mut s, "dev.list", json!({}));
    let rex = &r["structuredContent"]["devices"][0];
    assert_eq!(rex["state"], "present");
    assert_eq!(rex["detail"], "REX3 version 3");
}

#[test]
fn dma_list_reads_channels_and_ring_positions() {
    let (mut ctx, state) = fake::ctx_and_state();
    state.regs.borrow_mut().insert(0x1FB9_4004, 0x0812_3450);
    state.regs.borrow_mut().insert(0x1FB9_5004, 0x200);
    state.regs.borrow_mut().insert(0x1FB8_2000 + 0x1000, 7);
    ctx.services_mut().net.rings.rx_next = 5;
    ctx.services_mut().net.rings.rx_size = 32;
    ctx.services_mut().net.rings.tx_in_flight = 2;
    let mut s = server_with(ctx);
    let r = call(&mut s, "dma.list", json!({}));
    let st = &r["structuredContent"];
    let ch = st["channels"].as_array().unwrap();
    assert_eq!(ch.len(), 12);
    assert_eq!(ch[0]["name"], "enet-rx");
    assert_eq!(ch[0]["ndbp"], 0x0812_3450);
    assert_eq!(ch[0]["ctrl"], 0x200);
    assert_eq!(ch[5]["name"], "pbus1");
    assert_eq!(ch[5]["ctrl"], 7);
    assert_eq!(st["enet_rings"]["rx_next"], 5);
    assert_eq!(st["enet_rings"]["rx_size"], 32);
    assert_eq!(st["enet_rings"]["tx_in_flight"], 2);
}
