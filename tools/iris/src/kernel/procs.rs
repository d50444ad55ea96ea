//! The process list the kernel reports through `proc_list`. The rig runs no processes but the
//! module, so this is a plausible IRIX 7 table whose CPU times follow the machine's counters.

/// (pid, state, name). States: 0 running, 1 ready, 2 sleeping.
const PROCS: &[(u32, u32, &str)] = &[
    (0, 1, "kernel"),
    (1, 2, "init"),
    (2, 2, "syslogd"),
    (3, 2, "getty"),
    (4, 2, "sh"),
    (5, 0, "mcpd"),
];

pub struct Proc {
    pub pid: u32,
    pub state: u32,
    pub cpu_ms: u32,
    pub name: &'static str,
}

/// The list at `uptime_ms`, with `module_ms` the time spent in the module (mcpd).
pub fn list(uptime_ms: u64, module_ms: u64) -> Vec<Proc> {
    PROCS
        .iter()
        .map(|&(pid, state, name)| {
            let cpu_ms = match pid {
                0 => uptime_ms / 50,
                5 => module_ms,
                1 => 12,
                _ => 3 + u64::from(pid),
            };
            Proc {
                pid,
                state,
                cpu_ms: cpu_ms.min(u64::from(u32::MAX)) as u32,
                name,
            }
        })
        .collect()
}
