use crate::tools::testing::fake;
use crate::tools::testing::harness::{call, server_with};
use serde_json::json;

#[test]
fn lists_the_kernel_processes_by_pid() {
    let (ctx, state) = fake::ctx_and_state();
    state.procs.borrow_mut().push(fake::proc(3, 7, 9, "getty"));
    state
        .procs
        .borrow_mut()
        .push(fake::proc(2, 4, 0, "a-name-of-twenty-ch"));
    let mut s = server_with(ctx);
    let r = call(&mut s, "proc.list", json!({}));
    let st = &r["structuredContent"];
    assert_eq!(st["count"], 5);
    let pids: std::vec::Vec<u64> = st["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["pid"].as_u64().unwrap())
        .collect();
    assert_eq!(pids, [0, 1, 2, 3, 5]);
    assert_eq!(
        st["processes"][4],
        json!({"pid": 5, "name": "mcpd", "state": "running", "cpu_ms": 1500})
    );
    assert_eq!(st["processes"][2]["state"], "zombie");
    assert_eq!(st["processes"][2]["name"], "a-name-of-twenty-ch");
    assert_eq!(st["processes"][3]["state"], "unknown");
}

#[test]
fn the_list_is_written_as_its_value_was() {
    use crate::hil::platform::c_str;
    use crate::services::proc::{processes, state_name};
    use crate::tools::reach::MachineFacts;
    let (ctx, state) = fake::ctx_and_state();
    state
        .procs
        .borrow_mut()
        .push(fake::proc(3, 7, 9, "q\"uote é"));
    // The result as a `Value` was built for it before the writer.
    let procs: std::vec::Vec<_> = processes(ctx.machine())
        .iter()
        .map(|p| {
            json!({"pid": p.pid, "name": c_str(&p.name), "state": state_name(p.state),
                "cpu_ms": p.cpu_ms})
        })
        .collect();
    let old = json!({"count": procs.len(), "processes": procs});
    let mut s = server_with(ctx);
    let r = call(&mut s, "proc.list", json!({}));
    let text = r["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, serde_json::to_string(&old).unwrap());
}

#[test]
fn the_list_is_bounded() {
    let (ctx, state) = fake::ctx_and_state();
    for pid in 10..400 {
        state
            .procs
            .borrow_mut()
            .push(fake::proc(pid, 2, 0, "worker"));
    }
    let mut s = server_with(ctx);
    let r = call(&mut s, "proc.list", json!({}));
    assert_eq!(
        r["structuredContent"]["count"],
        crate::services::proc::PROC_MAX
    );
}
