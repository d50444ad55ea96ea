//! The tasks extension: calls that become tasks, run from `poll_tasks`, and are polled,
//! answered, cancelled, bounded and expired.

use super::*;

const EXT: &str = "io.modelcontextprotocol/tasks";

fn caps() -> Value {
    json!({"extensions": {EXT: {}}})
}

/// Asks for a `confirm` answer first, then answers with it.
fn ask(_: &mut Ctx, call: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
    match call.input_responses.and_then(|r| r.get("confirm")) {
        Some(a) => Ok(Started::Done(ToolOutput::text(format!(
            "answered {}",
            a["content"]
        )))),
        None => Ok(Started::InputRequired(InputRequired {
            input_requests: json!({
                "confirm": {"method": "elicitation/create", "params": {"message": "sure?"}},
                "other": {"method": "elicitation/create", "params": {"message": "and?"}},
            }),
            request_state: None,
        })),
    }
}

const ASK: &[ToolDef<Ctx>] = &[ToolDef {
    name: "ask",
    title: None,
    description: "Asks before answering",
    input_schema: r#"{"type":"object"}"#,
    output_schema: None,
    annotations: Annotations::READ_ONLY,
    requires: &[],
    errors: &[],
    start: ask,
}];

fn tasks_server(config: Config) -> McpServer<Ctx> {
    let mut s = server_with(config);
    s.register_tools(ASK).unwrap();
    let t = |name, support| TaskTool { name, support };
    s.add_task_tools(&[
        t("slow", TaskSupport::Optional),
        t("big", TaskSupport::Optional),
        t("echo", TaskSupport::Optional),
        t("fail", TaskSupport::Required),
        t("ask", TaskSupport::InputInTask),
    ]);
    s
}

/// A request from a client that declares the extension.
fn call(s: &mut McpServer<Ctx>, method: &str, params: Value, now: u64) -> (u16, Value) {
    let mut r = McpRequest::modern(method, params)
        .capabilities(caps())
        .send(s, now);
    let v = body_json(&mut r, now);
    (r.status, v)
}

fn start(s: &mut McpServer<Ctx>, tool: &str, args: Value, now: u64) -> String {
    let (_, v) = call(
        s,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        now,
    );
    assert_eq!(v["result"]["resultType"], "task", "{v}");
    v["result"]["taskId"].as_str().unwrap().to_string()
}

fn get(s: &mut McpServer<Ctx>, id: &str, now: u64) -> Value {
    call(s, "tasks/get", json!({"taskId": id}), now).1
}

fn run_out(s: &mut McpServer<Ctx>, mut now: u64) -> u64 {
    for _ in 0..200 {
        s.poll_tasks(now);
        now += 10;
    }
    now
}

#[test]
fn a_long_call_becomes_a_task_that_completes_with_its_result_inlined() {
    let mut s = tasks_server(config());
    let (_, d) = call(&mut s, "server/discover", json!({}), T0);
    assert_eq!(d["result"]["capabilities"]["extensions"], json!({EXT: {}}));
    assert!(d["result"]["capabilities"].get("tasks").is_none());
    let (_, v) = call(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 3}}),
        T0,
    );
    let r = &v["result"];
    for k in ["taskId", "createdAt", "lastUpdatedAt"] {
        assert!(r[k].is_string(), "{k}: {r}");
    }
    assert_eq!(r["status"], "working");
    assert_eq!(r["createdAt"], "1970-01-01T00:16:40.000Z");
    assert!(r["ttlMs"].as_u64().unwrap() > 0 && r["pollIntervalMs"].as_u64().unwrap() > 0);
    for k in [
        "task",
        "result",
        "error",
        "ttl",
        "pollInterval",
        "requestState",
    ] {
        assert!(r.get(k).is_none(), "{k}: {r}");
    }
    let id = r["taskId"].as_str().unwrap().to_string();
    let w = get(&mut s, &id, T0);
    assert_eq!(w["result"]["status"], "working");
    assert_eq!(w["result"]["resultType"], "complete");
    assert!(w["result"].get("result").is_none());
    let now = run_out(&mut s, T0);
    let g = get(&mut s, &id, now);
    let g = &g["result"];
    assert_eq!(g["status"], "completed", "{g}");
    assert_eq!(g["taskId"], id.as_str());
    assert_eq!(g["result"]["content"][0]["text"], "slow done");
    assert!(
        g["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );
    // A call that answers at once stays a plain result.
    let (_, e) = call(
        &mut s,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
        now,
    );
    assert_eq!(e["result"]["resultType"], "complete");
    assert!(e["result"].get("taskId").is_none());
}

#[test]
fn without_the_extension_calls_run_plainly_and_task_methods_are_refused() {
    let mut s = tasks_server(config());
    let (_, v) = modern_json(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 1}}),
        T0,
    );
    assert_eq!(v["result"]["content"][0]["text"], "slow done");
    let (status, v) = modern_json(&mut s, "tools/call", json!({"name": "fail"}), T0);
    assert_eq!((status, v["error"]["code"].as_i64()), (400, Some(-32021)));
    assert!(v["error"]["data"]["requiredCapabilities"]["extensions"][EXT].is_object());
    for m in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let (_, v) = modern_json(&mut s, m, json!({"taskId": "x", "inputResponses": {}}), T0);
        assert_eq!(v["error"]["code"], -32021, "{m}: {v}");
    }
    // Removed and unknown.
    for m in ["tasks/result", "tasks/list"] {
        let (_, v) = call(&mut s, m, json!({"taskId": "x"}), T0);
        assert_eq!(v["error"]["code"], -32601, "{m}: {v}");
    }
    let (_, v) = call(&mut s, "tasks/get", json!({"taskId": "nope"}), T0);
    assert_eq!(v["error"]["code"], -32602);
    // The legacy era has no tasks: no extension advertised.
    let (_, init) = initialize(&mut s, "2025-11-25", T0);
    assert!(init["result"]["capabilities"].get("extensions").is_none());
}

#[test]
fn a_cancelled_task_stops_its_work_and_settles_cancelled() {
    let mut s = tasks_server(config());
    let id = start(&mut s, "slow", json!({"steps": 1000}), T0);
    s.poll_tasks(T0);
    let (_, ack) = call(&mut s, "tasks/cancel", json!({"taskId": id}), T0);
    assert_eq!(ack["result"]["resultType"], "complete");
    for k in ["taskId", "status", "result", "error", "inputRequests"] {
        assert!(ack["result"].get(k).is_none(), "{k}");
    }
    assert_eq!(s.context().borrow().cancelled, 1);
    let steps = s.context().borrow().steps;
    run_out(&mut s, T0);
    assert_eq!(s.context().borrow().steps, steps, "no step after cancel");
    assert_eq!(get(&mut s, &id, T0)["result"]["status"], "cancelled");
    // Idempotent on a terminal task.
    let (_, again) = call(&mut s, "tasks/cancel", json!({"taskId": id}), T0);
    assert_eq!(again["result"]["resultType"], "complete");
    assert_eq!(s.context().borrow().cancelled, 1);
}

#[test]
fn tasks_are_bounded_per_owner_and_in_all() {
    let mut c = config();
    c.limits.tasks_per_owner = 2;
    c.limits.concurrent_calls = 10;
    let mut s = tasks_server(c);
    let a = start(&mut s, "slow", json!({"steps": 1000}), T0);
    start(&mut s, "slow", json!({"steps": 1000}), T0);
    let (_, v) = call(
        &mut s,
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 1000}}),
        T0,
    );
    assert_eq!(v["result"]["isError"], true);
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("E_BUSY: tasks of this token"), "{text}");
    // A cancelled task no longer counts.
    call(&mut s, "tasks/cancel", json!({"taskId": a}), T0);
    start(&mut s, "slow", json!({"steps": 1000}), T0);
}

#[test]
fn tasks_expire_after_their_ttl_and_free_everything() {
    let mut c = config();
    c.limits.task_ttl_ms = 5_000;
    let pool = c.task_budget.clone();
    let mut s = tasks_server(c);
    let done = start(&mut s, "big", json!({"len": 3000}), T0);
    let running = start(&mut s, "slow", json!({"steps": 1000}), T0);
    run_out(&mut s, T0);
    assert_eq!(
        get(&mut s, &done, T0 + 4_000)["result"]["status"],
        "completed"
    );
    assert!(pool.usage().used > 3000);
    s.poll_tasks(T0 + 5_000);
    assert_eq!(s.tasks.len(), 0);
    assert_eq!(pool.usage().used, 0);
    assert_eq!(
        s.context().borrow().cancelled,
        1,
        "the running one was stopped"
    );
    let (_, v) = call(&mut s, "tasks/get", json!({"taskId": running}), T0 + 5_000);
    assert_eq!(v["error"]["code"], -32602);
}

#[test]
fn ended_records_are_bounded_oldest_first() {
    let mut c = config();
    c.limits.task_records = 3;
    let mut s = tasks_server(c);
    let ids: Vec<String> = (0..5u64)
        .map(|i| {
            let id = start(&mut s, "slow", json!({"steps": 0}), T0 + i);
            run_out(&mut s, T0 + i);
            id
        })
        .collect();
    s.poll_tasks(T0 + 10);
    assert_eq!(s.tasks.len(), 3);
    let (_, v) = call(&mut s, "tasks/get", json!({"taskId": ids[0]}), T0 + 10);
    assert_eq!(v["error"]["code"], -32602, "{ids:?} {v}");
    assert_eq!(
        get(&mut s, &ids[4], T0 + 10)["result"]["status"],
        "completed"
    );
}

#[test]
fn a_result_past_the_bound_fails_the_task_with_a_clear_error() {
    let mut c = config();
    c.limits.task_result_bytes = 8 * 1024;
    let pool = c.task_budget.clone();
    let mut s = tasks_server(c);
    let id = start(&mut s, "big", json!({"len": 100_000}), T0);
    run_out(&mut s, T0);
    let g = get(&mut s, &id, T0);
    let g = &g["result"];
    assert_eq!(g["status"], "failed", "{g}");
    assert!(g.get("result").is_none());
    assert_eq!(g["error"]["code"], -32603);
    assert!(
        g["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("E_TOO_LARGE:")
    );
    assert!(pool.usage().used < 1024, "{:?}", pool.usage());
}

#[test]
fn input_asked_on_the_task_is_answered_by_update_key_by_key() {
    let mut s = tasks_server(config());
    let (_, v) = call(&mut s, "tools/call", json!({"name": "ask"}), T0);
    assert_eq!(v["result"]["status"], "input_required");
    let id = v["result"]["taskId"].as_str().unwrap().to_string();
    let g = get(&mut s, &id, T0);
    let keys: Vec<&String> = g["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["confirm", "other"]);
    let update = |s: &mut McpServer<Ctx>, r: Value| {
        call(
            s,
            "tasks/update",
            json!({"taskId": id, "inputResponses": r}),
            T0,
        )
        .1
    };
    let ack = update(
        &mut s,
        json!({"confirm": {"action": "accept", "content": {"ok": true}}, "stray": {}}),
    );
    assert_eq!(
        ack["result"],
        json!({"resultType": "complete", "_meta": ack["result"]["_meta"]})
    );
    let g = get(&mut s, &id, T0);
    assert_eq!(g["result"]["status"], "input_required");
    assert_eq!(g["result"]["inputRequests"].as_object().unwrap().len(), 1);
    assert!(g["result"]["inputRequests"].get("other").is_some());
    update(
        &mut s,
        json!({"other": {"action": "accept", "content": {}}}),
    );
    run_out(&mut s, T0);
    let g = get(&mut s, &id, T0);
    assert_eq!(g["result"]["status"], "completed", "{g}");
    assert_eq!(
        g["result"]["result"]["content"][0]["text"],
        "answered {\"ok\":true}"
    );
    let (_, bad) = call(
        &mut s,
        "tasks/update",
        json!({"taskId": id, "inputResponses": 3}),
        T0,
    );
    assert_eq!(bad["error"]["code"], -32602);
}

#[test]
fn mcp_name_must_match_the_task_it_names() {
    let mut s = tasks_server(config());
    let id = start(&mut s, "slow", json!({"steps": 1000}), T0);
    let send = |s: &mut McpServer<Ctx>, name: &str| {
        let mut r = McpRequest::modern("tasks/get", json!({"taskId": id}))
            .capabilities(caps())
            .header("Mcp-Name", name)
            .send(s, T0);
        body_json(&mut r, T0)
    };
    assert_eq!(send(&mut s, &id)["result"]["taskId"], id.as_str());
    assert_eq!(send(&mut s, "other")["error"]["code"], -32020);
}

#[test]
fn a_protocol_fault_fails_the_task_with_the_error_inlined() {
    struct Fault;
    impl ToolRun<Ctx> for Fault {
        fn step(&mut self, _: &mut Ctx, _: &mut StepIo<'_>) -> Step<Ctx> {
            Step::Aborted(ToolError::new(ErrorCode::Internal, "it broke"))
        }
    }
    fn fault(_: &mut Ctx, _: &ToolCall<'_>) -> Result<Started<Ctx>, ToolError> {
        Ok(Started::Run(Box::new(Fault)))
    }
    let mut s = tasks_server(config());
    s.register_tools(&[ToolDef {
        name: "fault",
        start: fault,
        ..ASK[0]
    }])
    .unwrap();
    s.add_task_tools(&[TaskTool {
        name: "fault",
        support: TaskSupport::Optional,
    }]);
    let id = start(&mut s, "fault", json!({}), T0);
    run_out(&mut s, T0);
    let g = get(&mut s, &id, T0);
    assert_eq!(g["result"]["status"], "failed");
    assert_eq!(g["result"]["error"]["code"], -32603);
    assert_eq!(g["result"]["error"]["message"], "E_INTERNAL: it broke");
    // Called plainly, the same fault is a JSON-RPC error.
    let (_, v) = modern_json(&mut s, "tools/call", json!({"name": "fault"}), T0);
    assert_eq!(v["error"]["code"], -32603);
}

#[test]
fn a_task_answers_only_the_token_that_started_it() {
    let mut config = config();
    config.token = Some("admin-secret-long-enough".into());
    config.tokens = crate::mcp::guard::authority::parse_tokens(
        "watcher:observe:watcher-secret-long-enough",
        |_| Ok(()),
    )
    .unwrap();
    let mut s = tasks_server(config);
    let as_ = |s: &mut McpServer<Ctx>, secret: &str, method: &str, params: Value, now| {
        let mut r = McpRequest::modern(method, params)
            .capabilities(caps())
            .header("Authorization", &format!("Bearer {secret}"))
            .send(s, now);
        body_json(&mut r, now)
    };
    let admin = "admin-secret-long-enough";
    let watcher = "watcher-secret-long-enough";
    let started = as_(
        &mut s,
        admin,
        "tools/call",
        json!({"name": "slow", "arguments": {}}),
        0,
    );
    let id = started["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    // The watcher may call tools/call and tasks/*, but the admin's task is no task to it.
    for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
        let v = as_(
            &mut s,
            watcher,
            method,
            json!({"taskId": id, "inputResponses": {}}),
            1,
        );
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains("no task"), "{method}: {v}");
    }
    let v = as_(&mut s, admin, "tasks/get", json!({"taskId": id}), 2);
    assert_eq!(
        v["result"]["status"], "working",
        "the watcher's cancel did not reach it: {v}"
    );
}
