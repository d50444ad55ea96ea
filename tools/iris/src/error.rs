//! Everything that stops the rig, each with a one-line message.

use std::fmt;

use crate::config::ConfigError;
use crate::image::ImageError;
use crate::loader::LoadError;

/// How the guest CPU stopped where it should not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestCrash {
    /// The module entry point being run ("irix7_mcp_init", …).
    pub call: &'static str,
    /// What happened, e.g. "read from unmapped memory", "trap (teq), intno 22".
    pub what: String,
    /// Program counter of the faulting instruction (0 when Unicorn did not report it).
    pub pc: u32,
    /// Start of the last translated block, a fallback location when `pc` is 0.
    pub block: u32,
    pub bad_addr: Option<u32>,
    /// True when `bad_addr` is physical (memory faults), false when virtual (address errors).
    pub bad_is_physical: bool,
    pub ra: u32,
    pub sp: u32,
    /// The module symbol `pc` (or `block`) falls in, as `name+0xoff`.
    pub symbol: Option<String>,
}

impl fmt::Display for GuestCrash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "guest crash in {}: {}", self.call, self.what)?;
        if self.pc != 0 {
            write!(f, " at pc {:#010x}", self.pc)?;
        } else {
            write!(f, " at pc unknown (in block {:#010x})", self.block)?;
        }
        if let Some(s) = &self.symbol {
            write!(f, " <{s}>")?;
        }
        if let Some(a) = self.bad_addr {
            let kind = if self.bad_is_physical {
                "physical "
            } else {
                ""
            };
            write!(f, ", bad {kind}address {a:#010x}")?;
        }
        write!(f, " (ra {:#010x}, sp {:#010x})", self.ra, self.sp)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RigError {
    Config(String),
    Image(ImageError),
    Load(LoadError),
    Crash(GuestCrash),
    /// A guest call ran past the instruction budget with the watchdog off.
    Hang {
        call: &'static str,
        insns: u64,
        pc: u32,
        symbol: Option<String>,
    },
    /// `irix7_mcp_init` returned non-zero.
    InitFailed(i32),
    /// `irix7_mcp_poll` returned a negative (fatal) status.
    PollFailed(i32),
    /// Resets kept coming during init.
    ResetLoop(u32),
    /// Unicorn refused an operation of the rig itself (not a guest fault).
    Emulator(String),
    /// The rig was used out of order (e.g. a call before boot).
    State(String),
}

impl fmt::Display for RigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RigError::Config(m) => write!(f, "config: {m}"),
            RigError::Image(e) => write!(f, "image: {e}"),
            RigError::Load(e) => write!(f, "loader: {e}"),
            RigError::Crash(c) => write!(f, "{c}"),
            RigError::Hang {
                call,
                insns,
                pc,
                symbol,
            } => {
                write!(
                    f,
                    "guest hang in {call}: {insns} instructions without returning, pc {pc:#010x}"
                )?;
                if let Some(s) = symbol {
                    write!(f, " <{s}>")?;
                }
                Ok(())
            }
            RigError::InitFailed(s) => write!(f, "irix7_mcp_init returned {s}"),
            RigError::PollFailed(s) => write!(f, "irix7_mcp_poll returned fatal status {s}"),
            RigError::ResetLoop(n) => write!(f, "machine reset {n} times in a row during init"),
            RigError::Emulator(m) => write!(f, "emulator: {m}"),
            RigError::State(m) => write!(f, "rig: {m}"),
        }
    }
}

impl std::error::Error for RigError {}

impl From<ConfigError> for RigError {
    fn from(e: ConfigError) -> RigError {
        RigError::Config(e.0)
    }
}

impl From<ImageError> for RigError {
    fn from(e: ImageError) -> RigError {
        RigError::Image(e)
    }
}

impl From<LoadError> for RigError {
    fn from(e: LoadError) -> RigError {
        RigError::Load(e)
    }
}

impl RigError {
    /// Process exit status for the CLI: 1 boot/config/image problems, 2 guest crash or hang,
    /// 3 the module reported failure, 4 the rig itself failed.
    pub fn exit_code(&self) -> i32 {
        match self {
            RigError::Config(_) | RigError::Image(_) | RigError::Load(_) => 1,
            RigError::Crash(_) | RigError::Hang { .. } => 2,
            RigError::InitFailed(_) | RigError::PollFailed(_) | RigError::ResetLoop(_) => 3,
            RigError::Emulator(_) | RigError::State(_) => 4,
        }
    }
}
