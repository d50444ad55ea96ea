//! Why the machine booted, end to end on the real image: one rig taken through each cause in
//! turn (power-on, a requested reset, the watchdog after a hang, a module trap the kernel
//! panics on, a previous boot damaged across the reset, one call slot torn), checking each time `status.boot`, the
//! status page, the previous boot's console (its last line is the kernel's reset line, and the
//! line written before it is there) and the flight record (which names the call in flight at a
//! watchdog or a trap). A deploy the kernel refuses is told the same way, the last good image
//! running. A kernel before ABI 13 boots the same image, which says it cannot tell.

mod support;

use std::thread;
use std::time::Duration;

use iris::Survivor;
use iris::image::sha256_hex;
use serde_json::{Value, json};
use support::guest::{Guest, boot_guest_with};
use support::image::ProductImage;
use support::mcp::tool_ok;
use support::reset::{
    Deploys, call_in_flight, mark, previous_console, resource_text, status_after, status_page,
};

const WATCHDOG_MS: u64 = 1_500;

/// Checks what the new boot says about the last: the cause, the console's last lines and the
/// flight record's state.
fn check_boot(g: &Guest, st: &Value, cause: &str, marker: &str, kernel_line: &str) {
    let boot = &st["boot"];
    assert_eq!(boot["cause"], cause, "{st}");
    assert_eq!(boot["console"], "ok", "{st}");
    assert_eq!(boot["flight"]["state"], "ok", "{st}");
    assert_eq!(boot["flight"]["build"], st["build_id"], "{st}");
    assert_eq!(boot["previous_sha256"], st["image"]["sha256"], "{st}");
    let console = previous_console(g.mcp);
    assert!(console.contains(marker), "{console}");
    let last = console.lines().last().unwrap_or("");
    assert!(
        last.contains(kernel_line),
        "last line {last:?} of\n{console}"
    );
    assert!(!console.contains(support::guest::TOKEN));
    let page = status_page(g.http);
    assert!(
        page.contains("<td>boot</td>") && page.contains(cause),
        "{page}"
    );
    let text = resource_text(g.mcp, "irix7://status");
    assert!(text.contains(&format!("boot        {cause}")), "{text}");
}

#[test]
fn each_cause_is_told_with_the_previous_console_and_the_flight_record() {
    let Some(g) = boot_guest_with(
        &[],
        |o| {
            o.watchdog_ms = WATCHDOG_MS;
            o.reboot_on_panic = true;
        },
        |_| {},
    ) else {
        return;
    };
    // Power-on: nothing survived.
    let st = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(st["boot"]["cause"], "power-on", "{st}");
    assert_eq!(st["boot"]["boots"], 1);
    assert_eq!(st["boot"]["console"], "absent");
    assert_eq!(st["boot"]["flight"]["state"], "absent");
    let r = support::mcp::call_tool(g.mcp, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(g.rig.console_text().contains("boot: power-on"));

    // A requested reset: who asked is in the flight record.
    let marker = mark(g.mcp, "before reset 1");
    tool_ok(g.mcp, "system.reset", json!({"delay_ms": 100}));
    let st = status_after(&g, 1);
    check_boot(
        &g,
        &st,
        "requested",
        &marker,
        "reset requested by the module",
    );
    assert_eq!(st["boot"]["requested_by"], "system.reset", "{st}");
    assert_eq!(st["boot"]["boots"], 2);
    assert!(st["boot"].get("deploy").is_none(), "{st}");
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(flight.contains("reset by    system.reset"), "{flight}");

    // The watchdog after a hang, with a call in flight: the record names it.
    let marker = mark(g.mcp, "before reset 2");
    let waiting = call_in_flight(g.mcp);
    thread::sleep(Duration::from_millis(1_200)); // a periodic write after the call started
    g.rig.hang_next_call();
    let st = status_after(&g, 2);
    check_boot(&g, &st, "watchdog", &marker, "MC watchdog expired");
    assert_eq!(
        st["boot"]["flight"]["calls"],
        json!(["serial.read"]),
        "{st}"
    );
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(
        flight.contains("  serial.read from ") && flight.contains("(2026-07-28), started at"),
        "{flight}"
    );
    assert_eq!(g.rig.counters().watchdog_resets, 1);
    drop(waiting);

    // A module trap: the kernel panics, says why, and the record names the call in flight.
    let marker = mark(g.mcp, "before reset 3");
    let waiting = call_in_flight(g.mcp);
    thread::sleep(Duration::from_millis(300));
    g.rig.trap_next_call();
    let st = status_after(&g, 3);
    check_boot(&g, &st, "panic", &marker, "module trapped");
    assert!(
        st["boot"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("module trapped")),
        "{st}"
    );
    assert_eq!(
        st["boot"]["flight"]["calls"],
        json!(["serial.read"]),
        "{st}"
    );
    drop(waiting);

    // Damage across the reset: reported, never read, and the machine serves normally.
    g.rig.corrupt_at_next_reset(Survivor::Ring);
    g.rig.corrupt_at_next_reset(Survivor::Flight);
    tool_ok(g.mcp, "system.reset", json!({"delay_ms": 100}));
    let st = status_after(&g, 4);
    assert_eq!(st["boot"]["cause"], "requested", "{st}");
    assert_eq!(st["boot"]["console"], "corrupt", "{st}");
    assert_eq!(st["boot"]["flight"]["state"], "corrupt", "{st}");
    assert!(st["boot"].get("requested_by").is_none(), "{st}");
    let r = support::mcp::call_tool(g.mcp, "serial.read", json!({"boot": "previous"}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(support::mcp::first_text(&r).starts_with("E_IO"), "{r}");
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(flight.starts_with("flight record corrupt"), "{flight}");
    assert_eq!(
        tool_ok(g.mcp, "echo", json!({"text": "still here"}))["text"],
        "still here"
    );

    // One call slot damaged across a panic: counted as torn, not read, and the rest of the
    // record (the header) still believed.
    let waiting = call_in_flight(g.mcp);
    thread::sleep(Duration::from_millis(300));
    g.rig.corrupt_at_next_reset(Survivor::FlightSlot);
    g.rig.trap_next_call();
    let st = status_after(&g, 5);
    assert_eq!(st["boot"]["cause"], "panic", "{st}");
    let flight = &st["boot"]["flight"];
    assert_eq!(flight["state"], "ok", "{st}");
    assert_eq!(flight["build"], st["build_id"], "{st}");
    assert_eq!(
        (&flight["torn"], &flight["calls"]),
        (&json!(1), &json!([])),
        "{st}"
    );
    let text = resource_text(g.mcp, "irix7://flight/previous");
    assert!(text.contains("torn        1 call slot(s)"), "{text}");
    assert!(!text.contains("serial.read from"), "{text}");
    drop(waiting);
    g.rig.stop().unwrap();
}

#[test]
fn a_refused_image_is_told_and_the_last_good_one_runs() {
    let Some(product) = ProductImage::find_or_skip() else {
        return;
    };
    let deploys = Deploys::new("boot-cause-refused");
    let sha = product.sha256();
    let good = deploys.image("good.o", &product.bytes);
    deploys.name(&good, &sha);
    let Some(g) = boot_guest_with(&[], |o| deploys.apply(o), |_| {}) else {
        return;
    };
    let before = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(before["image"]["sha256"], sha.as_str(), "{before}");

    // The next boot's image: one byte changed, named with a digest it does not have.
    let mut bytes = product.bytes.clone();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    let bad = deploys.image("bad.o", &bytes);
    let wanted = sha256_hex(b"the image the configuration promised");
    deploys.name(&bad, &wanted);
    let marker = mark(g.mcp, "before the refused deploy");
    tool_ok(g.mcp, "system.reset", json!({"delay_ms": 100}));
    let st = status_after(&g, 1);

    check_boot(&g, &st, "refused", &marker, "reset requested by the module");
    assert_eq!(st["build_id"], before["build_id"], "{st}");
    assert_eq!(st["image"]["sha256"], sha.as_str(), "{st}");
    assert_eq!(st["image"]["deploy"], "sha256 mismatch", "{st}");
    assert_eq!(st["image"]["refused_sha256"], wanted.as_str(), "{st}");
    assert_eq!(st["boot"]["boots"], 2, "{st}");
    assert!(st["boot"].get("requested_by").is_none(), "{st}");
    // The record is the previous boot's: its build, and who asked for the reset.
    let flight = resource_text(g.mcp, "irix7://flight/previous");
    assert!(flight.contains("reset by    system.reset"), "{flight}");
    let page = status_page(g.http);
    assert!(page.contains(&wanted[..12]), "{page}");
    assert!(g.rig.console_text().contains(&format!(
        "deploy of {wanted} refused: sha256 mismatch; running last good {sha}"
    )));
    g.rig.stop().unwrap();
}

#[test]
fn a_kernel_before_abi_13_boots_the_module_which_cannot_tell_why() {
    let Some(g) = boot_guest_with(&[], |_| {}, |r| r.offer_abi(12)) else {
        return;
    };
    let st = tool_ok(g.mcp, "status", json!({}));
    assert_eq!(st["abi"], 12, "{st}");
    assert_eq!(st["boot"]["cause"], "unknown", "{st}");
    assert_eq!(st["boot"]["flight"]["state"], "absent", "{st}");
    assert!(st["image"]["sha256"].is_string(), "{st}");
    g.rig.stop().unwrap();
}
