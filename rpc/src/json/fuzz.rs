//! The JSON reader's entry for the `fuzz/` crate (feature `fuzzing`): one value read as a
//! request's `params` are, rebuilt through the tape's accessors, and copied into a written
//! object whose record must read the same.

use super::object_writer::ObjectWriter;
use super::read::{Fault, Reader};
use super::tape::Tape;
use super::value_ref::rebuild;

/// One JSON value read from `text` as a request's `params` are, for the `fuzz/` crate's
/// comparison with serde_json: `Err` says why the text was refused (a [`Fault`] as a word),
/// `Ok(None)` that it is well-formed but no `Value` holds it.
pub fn fuzz_value(text: &str) -> Result<Option<serde_json::Value>, &'static str> {
    let mut r = Reader::new(text, None);
    let mut tape = Tape::default();
    let readable = r.tape(0, &mut tape).and_then(|ok| r.end().map(|()| ok));
    let readable = readable.map_err(|f| match f {
        Fault::Syntax => "syntax",
        Fault::Deep => "deep",
        Fault::Many => "many",
        Fault::OverBudget => "budget",
    })?;
    let Some(value) = readable.then(|| tape.read(text)).flatten() else {
        return Ok(None);
    };
    let v = rebuild(value);
    // The value copied into a written object reads the same from the writer's record.
    let mut written = ObjectWriter::new(0);
    written.key("v").value(value);
    let written = written.finish();
    match written.value().map(|w| w.get("v").and_then(rebuild)) {
        Some(copy) if copy != v => Err("the written object's record reads another value"),
        _ => Ok(v),
    }
}
