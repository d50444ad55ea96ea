//! The device tools on the rig with the real module image, over HTTP: `mem.*` on RAM,
//! `mmio.*` on HPC3 and unmodelled windows, `dev.list`, `irq.list` (and its E_NOSYS on an ABI 10
//! kernel), `dma.list` ring positions, `proc.list`.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::guest::{Guest, boot_guest_with};
use support::mcp::{call_tool, first_text, tool_ok};

/// Server limit: 20 requests per rolling second per client.
const PACE: Duration = Duration::from_millis(60);

/// Free RAM the rig's kernel never uses: past the hang loop, below the stack guard.
const FREE_RAM: u32 = 0x0800_8000;

/// Boots the product image, optionally on an ABI 10 table.
fn boot(abi_10: bool) -> Option<Guest> {
    boot_guest_with(
        &[],
        |_| {},
        move |r| {
            if abi_10 {
                r.offer_abi(10);
            }
        },
    )
}

/// A tool call paced under the server's rate limit; the result (with `isError` on failure).
fn call(g: &Guest, tool: &str, args: Value) -> Value {
    std::thread::sleep(PACE);
    call_tool(g.mcp, tool, args)
}

/// A paced tool call that must succeed; its structured result.
fn ok(g: &Guest, tool: &str, args: Value) -> Value {
    std::thread::sleep(PACE);
    tool_ok(g.mcp, tool, args)
}

fn error_code(r: &Value) -> String {
    assert_eq!(r["isError"], json!(true), "expected an error: {r}");
    first_text(r).split(':').next().unwrap_or("").to_string()
}

fn word_at(hex: &str, i: usize) -> u32 {
    u32::from_str_radix(&hex[i * 8..i * 8 + 8], 16).unwrap()
}

#[test]
fn memory_and_registers_through_the_tools() {
    let Some(g) = boot(false) else { return };

    // The ABI table the kernel wrote at RAM + 0x1000: its version and size.
    let t = ok(&g, "mem.read", json!({"addr": "0x08001000", "length": 8}));
    let hex = t["data"].as_str().unwrap();
    let want = (indy::abi::ABI_VERSION, indy::abi::ABI_TABLE_SIZE);
    assert_eq!((word_at(hex, 0), word_at(hex, 1)), want, "{t}");

    // A write into free RAM reads back, in both encodings.
    let w = ok(
        &g,
        "mem.write",
        json!({"addr": FREE_RAM, "data": "c0ffee00deadbeef"}),
    );
    assert_eq!(w["length"], 8);
    let r = ok(
        &g,
        "mem.read",
        json!({"addr": FREE_RAM, "length": 8, "encoding": "base64"}),
    );
    assert_eq!(r["data"], "wP/uAN6tvu8=");
    let r = ok(&g, "mem.read", json!({"addr": FREE_RAM + 2, "length": 3}));
    assert_eq!(r["data"], "ee00de");

    // What the Seeq driver programmed into the HPC3 Ethernet channel.
    let m = ok(&g, "mmio.read", json!({"addr": "0x1fb95018", "count": 2}));
    assert_eq!(m["device"], "hpc3-enet");
    assert_eq!(m["values"], json!([0x3E026, 0x161]), "DMA and PIO config");

    // A window only the register file answers: 0 at power-on, then what was written.
    let r = ok(&g, "mmio.read", json!({"addr": "0x1fbe0030"}));
    assert_eq!(r["values"], json!([0]));
    ok(
        &g,
        "mmio.write",
        json!({"addr": "0x1fbe0030", "value": 0x9900_0042u32}),
    );
    let r = ok(&g, "mmio.read", json!({"addr": "0x1fbe0033", "width": 1}));
    assert_eq!(
        (r["device"].clone(), r["values"].clone()),
        (json!("ds1386"), json!([0x42]))
    );

    // Error paths answer with their codes, and the guest keeps serving.
    let e = call(&g, "mmio.read", json!({"addr": "0x1fb95019"}));
    assert_eq!(error_code(&e), "E_ALIGN");
    let e = call(&g, "mmio.read", json!({"addr": "0x1fbd4020"}));
    assert_eq!(error_code(&e), "E_NODEV");
    assert!(first_text(&e).contains("seeq"), "{e}");
    let e = call(&g, "mem.read", json!({"addr": FREE_RAM, "length": 65537}));
    assert_eq!(error_code(&e), "E_TOO_LARGE");
    let e = call(&g, "mem.read", json!({"addr": "0x0c000000", "length": 4}));
    assert_eq!(error_code(&e), "E_RANGE", "past 64 MiB of RAM");
    // The rig's stack guard page is RAM the kernel left unmapped: refused, not a guest crash.
    for addr in ["0x0803f000", "0x0003f800"] {
        let e = call(&g, "mem.read", json!({"addr": addr, "length": 16}));
        assert_eq!(error_code(&e), "E_RANGE", "{addr}: {e}");
    }
    ok(&g, "status", json!({}));
}

#[test]
fn devices_interrupts_dma_and_processes() {
    let Some(g) = boot(false) else { return };

    let d = ok(&g, "dev.list", json!({}));
    let devs = d["devices"].as_array().unwrap();
    let dev = |n: &str| devs.iter().find(|x| x["name"] == n).unwrap().clone();
    assert_eq!(dev("seeq")["detail"], "driven by irix7-mcp");
    for n in [
        "seeq",
        "hpc3-enet",
        "mc",
        "z85c30",
        "int3",
        "ds1386",
        "prom",
    ] {
        assert_eq!(dev(n)["state"], "present", "{n}: {d}");
    }

    let irq_count = |g: &Guest| {
        let l = ok(g, "irq.list", json!({}));
        let src = l["sources"].as_array().unwrap().clone();
        let get = |n: &str| src.iter().find(|s| s["name"] == n).unwrap().clone();
        assert_eq!(get("enet")["reg"], 0x1FBD_9883u32);
        assert_eq!(get("enet")["enabled"], true);
        assert_eq!(get("timer")["cpu_line"], 7);
        assert_eq!(get("serial")["enabled"], false);
        get("enet")["count"].as_u64().unwrap()
    };
    let dma = |g: &Guest| ok(g, "dma.list", json!({}));

    let irq_before = irq_count(&g);
    let dma_before = dma(&g);
    for _ in 0..5 {
        ok(&g, "status", json!({}));
    }
    let irq_after = irq_count(&g);
    let dma_after = dma(&g);
    assert!(
        irq_after > irq_before,
        "Ethernet interrupts {irq_before} -> {irq_after}"
    );

    let rings = |d: &Value| {
        let r = &d["enet_rings"];
        (
            r["rx_next"].as_u64().unwrap(),
            r["tx_next"].as_u64().unwrap(),
        )
    };
    assert_ne!(rings(&dma_before), rings(&dma_after), "{dma_after}");
    let r = &dma_after["enet_rings"];
    assert_eq!(r["rx_size"], 16);
    // The HPC3's next RX descriptor lies in the driver's ring.
    let rx = &dma_after["channels"][0];
    assert_eq!(rx["name"], "enet-rx");
    let (base, n) = (r["rx_ring_phys"].as_u64().unwrap(), 16 * 16);
    let ndbp = rx["ndbp"].as_u64().unwrap();
    assert!(
        (base..base + n).contains(&ndbp),
        "{rx} vs ring at {base:#x}"
    );
    assert_eq!(dma_after["channels"].as_array().unwrap().len(), 12);

    let p = ok(&g, "proc.list", json!({}));
    assert_eq!(p["count"], 6);
    let procs = p["processes"].as_array().unwrap();
    assert_eq!(
        procs
            .iter()
            .map(|x| x["pid"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [0, 1, 2, 3, 4, 5]
    );
    assert_eq!(procs[5]["name"], "mcpd");
    assert_eq!(procs[5]["state"], "running");
    assert!(procs[5]["cpu_ms"].as_u64().is_some());
}

#[test]
fn on_an_abi_10_kernel_the_module_serves_and_irq_list_is_nosys() {
    let Some(g) = boot(true) else { return };
    let st = ok(&g, "status", json!({}));
    assert_eq!(st["abi"], 10, "{st}");
    let e = call(&g, "irq.list", json!({}));
    assert_eq!(error_code(&e), "E_NOSYS");
    let d = ok(&g, "dev.list", json!({}));
    assert!(
        d["devices"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["state"] == "unknown"),
        "no bus_probe on ABI 10: {d}"
    );
    let m = ok(&g, "mmio.read", json!({"addr": "0x1fb95018"}));
    assert_eq!(m["values"], json!([0x3E026]));
}
