//! One connection's round on its socket: received bytes into the connection, its responses
//! out as far as the socket takes them, and the socket closed or reset once it is over.

use super::Slot;
use rpc::http::{Connection, Handler};
use smoltcp::socket::tcp;

/// Moves a slot's bytes: received ones into its connection (when `read`), its responses out;
/// then ends the connection if it is done. Whether anything happened.
pub(super) fn serve(
    slot: &mut Slot,
    sock: &mut tcp::Socket,
    handler: &mut dyn Handler,
    now_ms: u64,
    read: bool,
) -> bool {
    let Some(conn) = slot.conn.as_mut() else {
        return false;
    };
    let mut work = false;
    if read {
        work |= receive(conn, sock, handler, now_ms);
        if !slot.fin_seen && !sock.may_recv() && sock.recv_queue() == 0 {
            conn.peer_closed();
            slot.fin_seen = true;
            work = true;
        }
    }
    let (sent, full) = send(conn, sock, handler, now_ms);
    slot.blocked_until = if full {
        conn.blocked_until().unwrap_or(0)
    } else {
        0
    };
    work | sent | end_if_over(slot, sock, now_ms)
}

/// Received bytes into the connection; what it does not take stays in the socket. Whether
/// it took any.
fn receive(
    conn: &mut Connection,
    sock: &mut tcp::Socket,
    handler: &mut dyn Handler,
    now_ms: u64,
) -> bool {
    let mut work = false;
    while sock.can_recv() {
        let taken = sock.recv(|buf| {
            let n = conn.recv(buf, now_ms, handler);
            (n, n)
        });
        match taken {
            Ok(0) | Err(_) => break,
            Ok(_) => work = true,
        }
    }
    work
}

/// Responses out, as far as the socket's buffer takes them. Whether any byte went, and
/// whether output was left waiting for room in the socket.
fn send(
    conn: &mut Connection,
    sock: &mut tcp::Socket,
    handler: &mut dyn Handler,
    now_ms: u64,
) -> (bool, bool) {
    let mut work = false;
    loop {
        conn.poll(now_ms, handler);
        let out = conn.pending_output();
        if out.is_empty() {
            return (work, false);
        }
        if !sock.can_send() {
            return (work, true);
        }
        match sock.send_slice(out) {
            Ok(0) => return (work, false),
            Ok(n) => {
                conn.mark_sent(n, now_ms);
                work = true;
            }
            Err(_) => {
                conn.abort();
                return (work, false);
            }
        }
    }
}

/// Drops the slot's connection once it is finished (closing or resetting the socket), or
/// once the socket is gone under it. Whether it did.
fn end_if_over(slot: &mut Slot, sock: &mut tcp::Socket, now_ms: u64) -> bool {
    let Some(conn) = slot.conn.as_mut() else {
        return false;
    };
    if conn.is_finished() {
        // A connection given up on (a peer that stopped reading, a lingering close past
        // its bounds) is reset; any other ends with a FIN after its last byte.
        if conn.is_aborted() {
            sock.abort();
        } else {
            sock.close();
        }
        slot.conn = None;
        slot.state = sock.state();
        slot.since_ms = now_ms;
        true
    } else if !sock.is_active() {
        // Reset by the peer or timed out: stop whatever the connection was doing.
        conn.abort();
        slot.conn = None;
        true
    } else {
        false
    }
}
