//! The shell behind `shell.exec`: one command line, split into words ([`words`]), run by a
//! builtin ([`builtins`]). A builtin answers at once or hands back a [`Job`] that the tool
//! steps across polls (`sleep`, `cat`, `ls`), so a long command never blocks the module and
//! can be cancelled. Output goes to a capped [`output::Output`].

pub mod builtins;
pub mod jobs;
pub mod output;
pub mod words;

use crate::services::context::Services;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use output::Output;
use words::WordsError;

/// What one step of a job did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStep {
    /// More to do on a later step.
    Pending,
    /// Finished with this exit status.
    Done(i32),
}

/// A command that runs across polls. Each step does a bounded amount of work.
pub trait Job {
    fn step(&mut self, ctx: &mut Services, out: &mut Output, now_ms: u64) -> JobStep;
    /// How far along the job is: (done, total), in the job's own unit.
    fn progress(&self) -> Option<(f64, f64)>;
}

/// How a builtin ended, or that it goes on.
pub enum Exit {
    Status(i32),
    Job(Box<dyn Job>),
}

/// A line the shell cannot run (a tool error, unlike a failing command's exit status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShellError {
    Words(WordsError),
    Empty,
    Unknown(String),
}

impl core::fmt::Display for ShellError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ShellError::Words(e) => write!(f, "{e}"),
            ShellError::Empty => write!(f, "empty command; try `help`"),
            ShellError::Unknown(name) => {
                write!(f, "unknown command `{name}`; builtins: ")?;
                for (i, b) in builtins::BUILTINS.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{}", b.name)?;
                }
                write!(f, " (`help` describes them)")
            }
        }
    }
}

/// The builtin `line` runs, if it names one: what the capability table judges before the
/// command starts (the same split as [`run`]).
pub fn builtin_of(line: &str) -> Option<&'static str> {
    let words = words::split(line).ok()?;
    builtins::find(words.first()?).map(|b| b.name)
}

/// Splits `line` and starts its builtin.
pub fn run(
    ctx: &mut Services,
    line: &str,
    out: &mut Output,
    now_ms: u64,
) -> Result<Exit, ShellError> {
    let words: Vec<String> = words::split(line).map_err(ShellError::Words)?;
    let Some((name, args)) = words.split_first() else {
        return Err(ShellError::Empty);
    };
    let builtin = builtins::find(name).ok_or_else(|| ShellError::Unknown(name.clone()))?;
    Ok((builtin.run)(ctx, args, out, now_ms))
}
