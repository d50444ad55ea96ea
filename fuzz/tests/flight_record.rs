//! The flight record's seeds (`fuzz/seeds/flight_record/`) are records of the current layout
//! that reach the states they were written for, so the fuzzer starts from a record the parser
//! believes, a torn slot and a panic, not only from bytes it refuses.

use irix7_mcp::services::flight::record::{FlightError, parse};
use std::path::Path;

fn seed(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("seeds/flight_record")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_seeds_reach_their_states() {
    let one = parse(&seed("one_call")).unwrap();
    let tools: Vec<&str> = one.calls.iter().map(|c| &*c.tool).collect();
    assert_eq!(
        (tools, one.torn, &*one.reset_by),
        (vec!["serial.read"], 0, "system.reset")
    );
    let panic = parse(&seed("panic")).unwrap();
    let tools: Vec<&str> = panic.calls.iter().map(|c| &*c.tool).collect();
    assert_eq!(tools, ["echo", "fs.stat"]);
    assert_eq!(panic.panic, "attempt to add with overflow at src/x.rs:1:1");
    let torn = parse(&seed("torn_slot")).unwrap();
    assert_eq!((torn.calls.len(), torn.torn), (0, 2));
    assert_eq!(parse(&seed("zero")), Err(FlightError::Absent));
}
