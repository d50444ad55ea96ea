//! The guest profiler: attributes the exact guest instruction counts of the block hook to the
//! functions of the loaded image, with their callers, so a benchmark can say where a request's
//! instructions go. It is a second block hook, installed only while profiling, so the normal
//! path keeps its speed.
//!
//! Each block is charged to the function that contains it, under a shadow call stack kept as a
//! tree of call paths: a block at a function's first instruction is a call (unless the stack
//! pointer says it is a loop back to the start of the function already on top), a block in a
//! function further up the stack is a return. That gives self and inclusive counts, and which
//! callers a hot function's instructions come from (e.g. who calls `memcpy`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::rc::Rc;

use unicorn_engine::{RegisterMIPS, UcHookId};

use crate::cpu::{Uc, uc_err};
use crate::error::RigError;
use crate::kernel::abi::AbiFn;
use crate::loader::LoadedImage;
use crate::memmap::{self, ram_va};

/// Deeper call paths are charged to their ancestor at this depth (runaway recursion).
const MAX_DEPTH: u32 = 200;
/// Names longer than this are cut in the report.
const NAME_WIDTH: usize = 96;

/// One function's share of a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnCost {
    /// Demangled name without the hash, `abi:<name>` for a kernel ABI stub, or a bracketed
    /// pseudo-name for code outside the image.
    pub name: String,
    /// Instructions executed in the function itself.
    pub self_insns: u64,
    /// Instructions executed in the function and everything it called.
    pub incl_insns: u64,
    /// Times it was entered.
    pub calls: u64,
    /// Callers and the instructions (inclusive) spent in this function on their behalf,
    /// largest first.
    pub callers: Vec<(String, u64)>,
}

/// Guest instructions per function over some stretch of guest execution.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Every instruction counted.
    pub total: u64,
    /// Functions with any instruction, by self instructions (largest first).
    pub functions: Vec<FnCost>,
    /// Every call path that ran instructions of its own: who a function's instructions were
    /// for, which a layer breakdown needs when the function's name does not say.
    pub paths: Vec<PathCost>,
}

/// The instructions one call path ran itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathCost {
    /// The path's functions, innermost (the one that ran them) first, as indexes into
    /// [`Profile::functions`].
    pub stack: Vec<usize>,
    pub insns: u64,
}

impl Profile {
    /// The function called `name` (exact match on the demangled name).
    pub fn get(&self, name: &str) -> Option<&FnCost> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// A table of the `n` functions with the most self instructions, each with its top callers.
    pub fn report(&self, n: usize) -> String {
        let pct = |x: u64| 100.0 * x as f64 / self.total.max(1) as f64;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "  {:>10} {:>6} {:>10} {:>6} {:>7}  function (top {n} by self instructions of {})",
            "self", "%", "incl", "%", "calls", self.total
        );
        for f in self.functions.iter().take(n) {
            let _ = writeln!(
                s,
                "  {:>10} {:>5.1}% {:>10} {:>5.1}% {:>7}  {}",
                f.self_insns,
                pct(f.self_insns),
                f.incl_insns,
                pct(f.incl_insns),
                f.calls,
                cut(&f.name)
            );
            for (caller, insns) in f.callers.iter().take(3) {
                if f.callers.len() > 1 || pct(f.incl_insns) >= 1.0 {
                    let _ = writeln!(s, "  {:>43}  <- {} ({insns})", "", cut(caller));
                }
            }
        }
        s
    }
}

fn cut(name: &str) -> String {
    if name.chars().count() <= NAME_WIDTH {
        name.to_string()
    } else {
        let head: String = name.chars().take(NAME_WIDTH - 1).collect();
        head + "…"
    }
}

/// What the addresses of the guest are: the image's functions plus pseudo-functions.
struct Symbols {
    /// (start, size) of each image function, sorted by start; names in `names`.
    ranges: Vec<(u32, u32)>,
    /// Names by function index: image functions, then ABI stubs, then the pseudo-names.
    names: Vec<String>,
    stub_base: usize,
    outside: u32,
    sentinel: u32,
}

impl Symbols {
    fn new(image: &LoadedImage) -> Symbols {
        let mut ranges = Vec::with_capacity(image.functions.len());
        let mut names = Vec::with_capacity(image.functions.len() + AbiFn::ALL.len() + 1);
        for (addr, size, name) in &image.functions {
            ranges.push((*addr, *size));
            names.push(format!("{:#}", rustc_demangle::demangle(name)));
        }
        let stub_base = names.len();
        names.extend(AbiFn::ALL.iter().map(|f| format!("abi:{}", f.name())));
        let outside = names.len() as u32;
        names.push("[outside the image]".into());
        Symbols {
            ranges,
            names,
            stub_base,
            outside,
            sentinel: ram_va(memmap::RETURN_SENTINEL_OFF),
        }
    }

    /// (function index, whether `va` is its first instruction).
    fn lookup(&self, va: u32) -> (u32, bool) {
        if let Some(f) = AbiFn::from_stub(va) {
            let i = AbiFn::ALL.iter().position(|g| *g == f).unwrap_or(0);
            return ((self.stub_base + i) as u32, true);
        }
        let i = self.ranges.partition_point(|(a, _)| *a <= va);
        match i.checked_sub(1).map(|i| (i, self.ranges[i])) {
            Some((i, (start, size))) if va - start < size.max(4) => (i as u32, va == start),
            _ => (self.outside, false),
        }
    }
}

/// A call path: the function on top and the node of its caller.
struct Node {
    parent: u32,
    func: u32,
    depth: u32,
    /// Stack pointer when the function was entered (tells a loop to the start from a call).
    entry_sp: u32,
    insns: u64,
    calls: u64,
}

const ROOT: u32 = 0;

/// The hook's state: the call-path tree and where the guest is in it.
struct Collector {
    symbols: Symbols,
    nodes: Vec<Node>,
    children: HashMap<(u32, u32), u32>,
    cur: u32,
}

impl Collector {
    fn new(symbols: Symbols) -> Collector {
        let mut c = Collector {
            symbols,
            nodes: Vec::new(),
            children: HashMap::new(),
            cur: ROOT,
        };
        c.clear();
        c
    }

    fn clear(&mut self) {
        self.nodes.clear();
        self.children.clear();
        self.nodes.push(Node {
            parent: ROOT,
            func: u32::MAX,
            depth: 0,
            entry_sp: 0,
            insns: 0,
            calls: 0,
        });
        self.cur = ROOT;
    }

    fn child(&mut self, parent: u32, func: u32, sp: u32) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.children.entry((parent, func)).or_insert(next);
        if id == next {
            let depth = self.nodes[parent as usize].depth + 1;
            self.nodes.push(Node {
                parent,
                func,
                depth,
                entry_sp: sp,
                insns: 0,
                calls: 0,
            });
        }
        self.nodes[id as usize].entry_sp = sp;
        id
    }

    /// Charges `insns` instructions of the block at `va`; `sp` reads the stack pointer (only
    /// needed at a function's first instruction).
    fn block_at(&mut self, va: u32, insns: u64, sp: impl FnOnce() -> u32) {
        if va == self.symbols.sentinel {
            // The guest call returned to the kernel: the next one starts a fresh stack.
            self.nodes[ROOT as usize].insns += insns;
            self.cur = ROOT;
            return;
        }
        let (func, entry) = self.symbols.lookup(va);
        let top = &self.nodes[self.cur as usize];
        if entry {
            let sp = sp();
            let looped = top.func == func && top.entry_sp == sp;
            if !looped && top.depth < MAX_DEPTH {
                self.cur = self.child(self.cur, func, sp);
                self.nodes[self.cur as usize].calls += 1;
            } else if looped && top.depth == 1 {
                // The kernel calls an entry point again (the rig stops at the return sentinel
                // before a block there runs, so the stack was not unwound): a new call.
                self.nodes[self.cur as usize].calls += 1;
            }
        } else if top.func != func {
            // A return (or a jump) into a function further up the stack, else a fresh path.
            let mut n = self.cur;
            while n != ROOT && self.nodes[n as usize].func != func {
                n = self.nodes[n as usize].parent;
            }
            self.cur = if n == ROOT {
                self.child(ROOT, func, 0)
            } else {
                n
            };
        }
        self.nodes[self.cur as usize].insns += insns;
    }

    fn profile(&self) -> Profile {
        let nf = self.symbols.names.len();
        let mut self_insns = vec![0u64; nf];
        let mut incl = vec![0u64; nf];
        let mut calls = vec![0u64; nf];
        // Subtree totals, children after parents in `nodes`, so walk backwards.
        let mut subtree: Vec<u64> = self.nodes.iter().map(|n| n.insns).collect();
        for i in (1..self.nodes.len()).rev() {
            let p = self.nodes[i].parent as usize;
            if p != i {
                subtree[p] += subtree[i];
            }
        }
        let mut callers: HashMap<(u32, u32), u64> = HashMap::new();
        let mut seen = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            let f = n.func as usize;
            self_insns[f] += n.insns;
            calls[f] += n.calls;
            // Inclusive: once per function on the path, however often recursion repeats it.
            seen.clear();
            let mut a = i;
            while a != ROOT as usize {
                let g = self.nodes[a].func;
                if !seen.contains(&g) {
                    seen.push(g);
                    incl[g as usize] += n.insns;
                }
                a = self.nodes[a].parent as usize;
            }
            // Callers of f: count this node's subtree unless f is already above it on the path
            // (recursion), which would count the same instructions twice.
            let recursive = {
                let mut a = n.parent;
                let mut r = false;
                while a != ROOT {
                    r |= self.nodes[a as usize].func == n.func;
                    a = self.nodes[a as usize].parent;
                }
                r
            };
            if !recursive {
                let caller = self.nodes[n.parent as usize].func;
                *callers.entry((n.func, caller)).or_default() += subtree[i];
            }
        }
        let total = subtree.first().copied().unwrap_or(0);
        let name = |f: u32| match self.symbols.names.get(f as usize) {
            Some(n) => n.clone(),
            None => "[kernel]".into(),
        };
        let mut functions: Vec<FnCost> = (0..nf)
            .filter(|&f| incl[f] > 0 || calls[f] > 0)
            .map(|f| {
                let mut cs: Vec<(String, u64)> = callers
                    .iter()
                    .filter(|((callee, _), _)| *callee as usize == f)
                    .map(|((_, caller), v)| (name(*caller), *v))
                    .collect();
                cs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                FnCost {
                    name: name(f as u32),
                    self_insns: self_insns[f],
                    incl_insns: incl[f],
                    calls: calls[f],
                    callers: cs,
                }
            })
            .collect();
        functions.sort_by(|a, b| {
            b.self_insns
                .cmp(&a.self_insns)
                .then_with(|| b.incl_insns.cmp(&a.incl_insns))
                .then_with(|| a.name.cmp(&b.name))
        });
        let at: HashMap<&str, usize> = functions
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name.as_str(), i))
            .collect();
        let paths = self
            .nodes
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, n)| n.insns > 0)
            .map(|(i, n)| {
                let mut stack = Vec::new();
                let mut a = i;
                while a != ROOT as usize {
                    let f = self.nodes[a].func as usize;
                    let name = self.symbols.names.get(f).map_or("[kernel]", String::as_str);
                    stack.extend(at.get(name).copied());
                    a = self.nodes[a].parent as usize;
                }
                PathCost {
                    stack,
                    insns: n.insns,
                }
            })
            .collect();
        Profile {
            total,
            functions,
            paths,
        }
    }
}

/// An installed profiling hook. Dropping it without [`Profiler::remove`] leaves the hook in.
pub struct Profiler {
    hook: UcHookId,
    collector: Rc<RefCell<Collector>>,
}

impl Profiler {
    /// Installs the profiling block hook for `image`'s functions.
    pub fn install(uc: &mut Uc, image: &LoadedImage) -> Result<Profiler, String> {
        let collector = Rc::new(RefCell::new(Collector::new(Symbols::new(image))));
        let c = collector.clone();
        let hook = uc
            .add_block_hook(1, 0, move |uc, addr, size| {
                let sp = || uc.reg_read(RegisterMIPS::SP).unwrap_or(0) as u32;
                c.borrow_mut()
                    .block_at(addr as u32, u64::from(size / 4), sp);
            })
            .map_err(|e| uc_err("profile hook", e))?;
        // Blocks translated before the hook existed must call it too.
        uc.ctl_flush_tb().map_err(|e| uc_err("flush TB", e))?;
        Ok(Profiler { hook, collector })
    }

    /// The profile so far; counting starts again from zero (the call stack is kept).
    pub fn take(&self) -> Profile {
        let mut c = self.collector.borrow_mut();
        let p = c.profile();
        let cur_path = c.path_of_cur();
        c.clear();
        c.restore_path(&cur_path);
        p
    }

    /// Removes the hook; returns the profile since the last `take`.
    pub fn remove(self, uc: &mut Uc) -> Result<Profile, String> {
        let p = self.collector.borrow().profile();
        uc.remove_hook(self.hook)
            .map_err(|e| uc_err("remove profile hook", e))?;
        Ok(p)
    }
}

/// The rig's profiling slot: no hook until `start`, then one [`Profiler`] until `stop`.
#[derive(Default)]
pub(crate) struct ProfileHook(Option<Profiler>);

impl ProfileHook {
    /// Installs the hook for `image`, or restarts the counts when one is already in.
    pub(crate) fn start(
        &mut self,
        uc: &mut Uc,
        image: Option<&LoadedImage>,
    ) -> Result<(), RigError> {
        if let Some(p) = &self.0 {
            p.take();
            return Ok(());
        }
        let Some(image) = image else {
            return Err(RigError::State("profile_start before boot".into()));
        };
        self.0 = Some(Profiler::install(uc, image).map_err(RigError::Emulator)?);
        Ok(())
    }

    /// The profile since `start` or the last take, if profiling.
    pub(crate) fn take(&self) -> Option<Profile> {
        self.0.as_ref().map(Profiler::take)
    }

    /// Removes the hook, if any, returning the profile since the last take.
    pub(crate) fn stop(&mut self, uc: &mut Uc) -> Result<Option<Profile>, RigError> {
        match self.0.take() {
            Some(p) => p.remove(uc).map(Some).map_err(RigError::Emulator),
            None => Ok(None),
        }
    }
}

impl Collector {
    /// The functions from the root to the current node (with their entry stack pointers).
    fn path_of_cur(&self) -> Vec<(u32, u32)> {
        let mut path = Vec::new();
        let mut n = self.cur;
        while n != ROOT {
            let node = &self.nodes[n as usize];
            path.push((node.func, node.entry_sp));
            n = node.parent;
        }
        path.reverse();
        path
    }

    fn restore_path(&mut self, path: &[(u32, u32)]) {
        self.cur = ROOT;
        for &(f, sp) in path {
            self.cur = self.child(self.cur, f, sp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A collector over three made-up functions, fed blocks without a CPU.
    fn collector() -> Collector {
        let symbols = Symbols {
            ranges: vec![(0x1000, 0x100), (0x1100, 0x100), (0x1200, 0x100)],
            names: vec![
                "main".into(),
                "memcpy".into(),
                "parse".into(),
                "[outside the image]".into(),
            ],
            stub_base: 3,
            outside: 3,
            sentinel: 0x4F00,
        };
        Collector::new(symbols)
    }

    /// Feeds (address, instructions, stack pointer at entry) without Unicorn.
    fn feed(c: &mut Collector, blocks: &[(u32, u64, u32)]) {
        for &(va, n, sp) in blocks {
            c.block_at(va, n, || sp);
        }
    }

    #[test]
    fn self_inclusive_and_callers_follow_the_call_stack() {
        let mut c = collector();
        feed(
            &mut c,
            &[
                (0x1000, 10, 100), // main
                (0x1100, 5, 90),   // main -> memcpy
                (0x1110, 20, 90),  //   memcpy loop
                (0x1110, 20, 90),
                (0x1020, 3, 90), // back in main
                (0x1200, 7, 90), // main -> parse
                (0x1100, 4, 80), //   parse -> memcpy
                (0x1210, 2, 80), //   back in parse
                (0x1030, 1, 90), // main
                (0x4F00, 1, 0),  // returned to the kernel
            ],
        );
        let p = c.profile();
        assert_eq!(p.total, 73);
        let memcpy = p.get("memcpy").unwrap();
        assert_eq!(
            (memcpy.self_insns, memcpy.incl_insns, memcpy.calls),
            (49, 49, 2)
        );
        assert_eq!(
            memcpy.callers,
            vec![("main".to_string(), 45), ("parse".to_string(), 4)]
        );
        let parse = p.get("parse").unwrap();
        assert_eq!((parse.self_insns, parse.incl_insns), (9, 13));
        let main = p.get("main").unwrap();
        assert_eq!((main.self_insns, main.incl_insns, main.calls), (14, 72, 1));
        assert_eq!(p.functions[0].name, "memcpy");
        // Each path's own instructions, innermost function first.
        let named = |stack: &[usize]| -> Vec<&str> {
            stack
                .iter()
                .map(|&f| p.functions[f].name.as_str())
                .collect()
        };
        let mut paths: Vec<(Vec<&str>, u64)> =
            p.paths.iter().map(|c| (named(&c.stack), c.insns)).collect();
        paths.sort();
        assert_eq!(
            paths,
            vec![
                (vec!["main"], 14),
                (vec!["memcpy", "main"], 45),
                (vec!["memcpy", "parse", "main"], 4),
                (vec!["parse", "main"], 9),
            ]
        );
    }

    #[test]
    fn a_loop_to_the_first_instruction_is_not_a_call_but_recursion_is() {
        let mut c = collector();
        feed(
            &mut c,
            &[
                (0x1000, 1, 100),
                (0x1100, 2, 90), // memcpy entered
                (0x1100, 2, 90), // loops to its start: same sp
                (0x1100, 2, 90),
                (0x1020, 1, 90),
                (0x1200, 1, 90), // parse
                (0x1200, 1, 70), // parse recursing: sp moved
                (0x1210, 1, 70),
            ],
        );
        let p = c.profile();
        assert_eq!(p.get("memcpy").unwrap().calls, 1);
        let parse = p.get("parse").unwrap();
        assert_eq!((parse.calls, parse.self_insns, parse.incl_insns), (2, 3, 3));
        assert_eq!(parse.callers, vec![("main".to_string(), 3)]);
    }

    #[test]
    fn an_entry_point_called_again_counts_as_a_call() {
        let mut c = collector();
        // Two polls from the same kernel stack, without a block at the return sentinel.
        feed(
            &mut c,
            &[(0x1000, 3, 100), (0x1100, 2, 90), (0x1000, 3, 100)],
        );
        let p = c.profile();
        assert_eq!(p.get("main").unwrap().calls, 2);
        assert_eq!(p.get("memcpy").unwrap().calls, 1);
        assert_eq!(p.total, 8);
    }

    #[test]
    fn take_restarts_the_counts_but_keeps_the_stack() {
        let mut c = collector();
        feed(&mut c, &[(0x1000, 5, 100), (0x1200, 5, 90)]);
        let first = c.profile();
        assert_eq!(first.total, 10);
        let path = c.path_of_cur();
        c.clear();
        c.restore_path(&path);
        feed(&mut c, &[(0x1210, 3, 90), (0x1040, 2, 90)]);
        let p = c.profile();
        assert_eq!(p.total, 5);
        let parse = p.get("parse").unwrap();
        assert_eq!((parse.self_insns, parse.calls), (3, 0));
        assert_eq!(p.get("main").unwrap().incl_insns, 5);
        assert!(p.report(10).contains("parse"));
    }
}
