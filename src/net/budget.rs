//! The server's memory plan: how much of the heap the kernel gave each kind of input-driven
//! work may hold, decided once at init from the heap's size and what the module already uses.
//!
//! The heap is split into:
//! - a reserve (`heap / 16`, at least 64 KiB) for the small bounded allocations nobody charges
//!   (sessions, tables, headers); the rest is the *heap budget* the module means never to pass;
//! - what is in use once the module is up (caches, the tool catalogue, the NIC's rings);
//! - per connection, the socket's buffers and what the HTTP layer holds outside any pool
//!   (output and hold buffers, a request head, one complete answer, the room it keeps for the
//!   next request and answer), times the number of sockets (a listening socket holds its
//!   buffers too, and is one of them);
//! - shell output (an eighth of the heap, the shell's own budget) and one screen capture;
//! - the RAM overlay: `mcp.overlay_max`, at most a quarter of what is left (an operate token
//!   filling the overlay never takes what requests need);
//! - task results (the tasks extension): an eighth of what remains, at most what the most
//!   tasks held at once may keep (`rpc::mcp::Limits`);
//! - the rest: request bodies (two fifths) and parsed requests (three fifths).
//!
//! `irix7://mem` shows the plan and its use; the hostile-load suite checks that the heap peak
//! stays under the budget whatever clients send.

use crate::net::server::ServerConfig;
use crate::services::memory::{BudgetUse, Gauge};
use alloc::rc::Rc;
use irix7_kmem::budget::Pool;

/// One PNG capture (captures run one at a time), set aside on heaps big enough to capture at
/// all.
const CAPTURE: usize = crate::services::screen::capture::PNG_CAPTURE_BYTES;
/// The largest complete answer a connection holds (a `tools/list` page, a `mem.read`).
const ANSWER: usize = 32 * 1024;

/// The budgets the server charges.
pub struct ServerBudgets {
    pub heap_budget: usize,
    /// The RAM overlay's cap: `mcp.overlay_max`, or less where the heap is small.
    pub overlay: usize,
    /// Request bodies being received (`rpc::http`).
    pub requests: Rc<Pool>,
    /// Parsed JSON-RPC messages (`rpc::jsonrpc::parse_within`).
    pub parse: Rc<Pool>,
    /// Results of tool calls run as tasks (`rpc::mcp::McpServer::poll_tasks`).
    pub tasks: Rc<Pool>,
    /// Calls that may wait on the console at once (`serial.read` with `wait_ms`). A waiter
    /// holds a connection, whose buffers are in the per-connection share above, and under
    /// 1 KiB of its own (the needle, its table, the matcher); a look at the ring copies it
    /// for one step only. So the bound is the sockets, not bytes: half of what one client
    /// address may hold (and at most half the pool), so that waiters never take a client's
    /// last connections, even when they are that client's own.
    pub serial_waiters: usize,
    /// Legacy `GET /mcp` event streams open at once. Like a waiter, a stream holds a
    /// connection (its buffers are in the per-connection share) and little of its own: the
    /// session's event log (16 events of 16 bytes) and one rendered batch of them. So the
    /// bound is the sockets again: half of what one client address may hold and at most a
    /// quarter of the pool, so that streams left open by clients that never read cannot
    /// take the connections other clients' requests need.
    pub event_streams: usize,
}

impl ServerBudgets {
    /// The plan for a heap of `heap` bytes of which `idle` are in use with the server up
    /// (its sockets' buffers not included), serving with `server`, with an overlay of at most
    /// `overlay_max` bytes.
    pub fn plan(heap: usize, idle: usize, server: &ServerConfig, overlay_max: usize) -> Self {
        let l = PoolLimits::new(heap, idle, server, Share::Overlay(overlay_max));
        let connections = server.sockets();
        ServerBudgets {
            heap_budget: l.heap_budget,
            overlay: l.overlay,
            requests: Pool::new("requests", l.requests),
            parse: Pool::new("parse", l.parse),
            tasks: Pool::new("tasks", l.tasks),
            serial_waiters: (server.per_client / 2).clamp(1, (connections / 2).max(1)),
            event_streams: (server.per_client / 2).clamp(1, (connections / 4).max(1)),
        }
    }

    /// Sets the pools' limits to a plan made now that the module holds `idle` bytes: init plans
    /// before the tools register (the MCP server takes the pools) and again after, so that the
    /// registry's listings and schemas count as idle use like everything else.
    pub fn replan(&self, heap: usize, idle: usize, server: &ServerConfig) {
        let l = PoolLimits::new(heap, idle, server, Share::Planned(self.overlay));
        self.requests.set_limit(l.requests);
        self.parse.set_limit(l.parse);
        self.tasks.set_limit(l.tasks);
    }
}

/// The overlay's part of a plan: a quarter of what is left, at most the configured cap; or,
/// planning again, what the first plan gave it (the overlay's cap does not move).
enum Share {
    Overlay(usize),
    Planned(usize),
}

/// The byte limits of the plan (the module doc's arithmetic).
struct PoolLimits {
    heap_budget: usize,
    overlay: usize,
    requests: usize,
    parse: usize,
    tasks: usize,
}

impl PoolLimits {
    fn new(heap: usize, idle: usize, server: &ServerConfig, overlay: Share) -> Self {
        let reserve = (heap / 16).max(64 * 1024);
        let heap_budget = heap.saturating_sub(reserve);
        let http = &server.http;
        let per_connection = server.socket_bytes()
            + http.output_buffer
            + http.input_buffer
            + http.limits.header_section
            + rpc::http::connection::KEPT
            + ANSWER;
        let connections = server.sockets();
        let capture = if heap >= 4 << 20 { CAPTURE } else { 0 };
        let fixed = idle + connections * per_connection + heap / 8 + capture;
        let left = heap_budget.saturating_sub(fixed);
        let overlay = match overlay {
            Share::Overlay(max) => max.min(left / 4),
            Share::Planned(planned) => planned,
        };
        let all_free = left.saturating_sub(overlay);
        let limits = rpc::mcp::Limits::default();
        let tasks = (all_free / 8).min(limits.task_records * limits.task_result_bytes);
        let free = all_free - tasks;
        PoolLimits {
            heap_budget,
            overlay,
            requests: free / 5 * 2,
            parse: free / 5 * 3,
            tasks,
        }
    }
}

/// A pool seen by the status reports.
pub struct PoolGauge(pub Rc<Pool>);

impl Gauge for PoolGauge {
    fn usage(&self) -> BudgetUse {
        let u = self.0.usage();
        BudgetUse {
            name: u.name,
            limit: u.limit,
            used: u.used,
            peak: u.peak,
            refused: u.refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OVERLAY: usize = crate::services::fs::overlay::DEFAULT_OVERLAY_MAX;

    #[test]
    fn the_plan_fits_the_heap_it_is_made_for() {
        for heap in [1 << 20, 2 << 20, 8 << 20, 56 << 20] {
            let server = ServerConfig::for_heap(heap);
            let idle = 300 * 1024;
            let b = ServerBudgets::plan(heap, idle, &server, OVERLAY);
            let http = &server.http;
            let per_conn = server.socket_bytes()
                + http.output_buffer
                + http.input_buffer
                + http.limits.header_section
                + rpc::http::connection::KEPT
                + ANSWER;
            let conns = server.sockets();
            let total = idle
                + conns * per_conn
                + heap / 8
                + if heap >= 4 << 20 { CAPTURE } else { 0 }
                + b.overlay
                + b.requests.limit()
                + b.parse.limit()
                + b.tasks.limit();
            assert!(
                total <= b.heap_budget,
                "{heap}: {total} > {}",
                b.heap_budget
            );
            assert!(b.heap_budget < heap);
            // Waiters leave half of a client's sockets, and of the pool, to other work.
            assert!(b.serial_waiters >= 1, "{heap}");
            assert!(b.serial_waiters * 2 <= server.per_client.max(2), "{heap}");
            assert!(b.serial_waiters * 2 <= conns, "{heap}");
            // Event streams too, and leave three quarters of the pool.
            assert!(b.event_streams >= 1, "{heap}");
            assert!(b.event_streams * 2 <= server.per_client.max(2), "{heap}");
            assert!(b.event_streams * 4 <= conns.max(4), "{heap}");
            // The overlay is a share of what is left, never all of it.
            assert!(b.overlay <= OVERLAY, "{heap}");
            assert!(b.overlay < b.requests.limit() + b.parse.limit(), "{heap}");
            // Something is left for requests even on the ABI's 1 MiB.
            assert!(
                b.requests.limit() >= 16 * 1024,
                "{heap}: {}",
                b.requests.limit()
            );
        }
    }

    #[test]
    fn a_replan_gives_the_same_pools_the_new_plans_limits() {
        let heap = 8 << 20;
        let server = ServerConfig::for_heap(heap);
        let b = ServerBudgets::plan(heap, 100 * 1024, &server, OVERLAY);
        let held = b.requests.clone();
        let lease = held.take(1000).unwrap();
        b.replan(heap, 400 * 1024, &server);
        // The overlay keeps the cap the first plan gave it; the pools share the rest.
        let now = PoolLimits::new(heap, 400 * 1024, &server, Share::Planned(b.overlay));
        assert_eq!(held.limit(), now.requests);
        assert_eq!(b.parse.limit(), now.parse);
        assert_eq!(b.tasks.limit(), now.tasks);
        assert!(
            b.overlay < OVERLAY,
            "a quarter of what an 8 MiB heap leaves"
        );
        // 300 KiB more idle use leaves 300 KiB less to the pools; the charge made stays.
        assert!(
            held.limit()
                < ServerBudgets::plan(heap, 100 * 1024, &server, OVERLAY)
                    .requests
                    .limit()
        );
        assert_eq!(held.usage().used, 1000);
        drop(lease);
    }

    #[test]
    fn console_waiters_are_half_of_what_one_client_may_hold() {
        for (heap, waiters) in [(56 << 20, 4), (1 << 20, 1)] {
            let server = ServerConfig::for_heap(heap);
            let b = ServerBudgets::plan(heap, 0, &server, OVERLAY);
            assert_eq!(b.serial_waiters, waiters, "{heap}");
        }
    }

    #[test]
    fn event_streams_are_bounded_by_the_client_share_and_the_pool() {
        for (heap, streams) in [(56 << 20, 4), (1 << 20, 1)] {
            let server = ServerConfig::for_heap(heap);
            let b = ServerBudgets::plan(heap, 0, &server, OVERLAY);
            assert_eq!(b.event_streams, streams, "{heap}");
        }
    }
}
