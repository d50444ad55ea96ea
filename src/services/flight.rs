//! The flight recorder: a small record of what the module is doing (build, uptime, heap,
//! connections, the tool calls in flight), kept where the kernel preserves it across a warm
//! reset, so that after a watchdog or a panic the next boot can say what was running.
//! `record` is the bytes and their parser, `recorder` decides what goes in and when.

pub mod record;
pub mod recorder;

#[cfg(test)]
mod tests;
