//! HTTP/1.1 server side, bytes in and bytes out: the incremental request parser
//! ([`parser`]), the response writer ([`response`]), the per-connection state machine
//! ([`connection`]), the 404/405 helpers for routers ([`route`]) and the `deflate` coding of
//! answers whose bulk is compressed ahead of time ([`coding`]).
//!
//! The module's poll loop keeps one [`Connection`] per TCP socket and drives it each round
//! (sketch for a smoltcp socket; `h` is the router implementing [`Handler`]):
//!
//! ```text
//! while socket.can_recv() {                       // the rx ring may wrap: loop
//!     let took = socket.recv(|buf| { let n = conn.recv(buf, now, h); (n, n) })?;
//!     if took == 0 { break }                      // conn is full: leave the rest in the socket
//! }
//! if was_established && !socket.may_recv() {     // FIN seen and rx ring drained
//!     conn.peer_closed()
//! }
//! conn.poll(now, h);
//! while socket.can_send() && !conn.pending_output().is_empty() {
//!     let n = socket.send_slice(conn.pending_output())?;
//!     if n == 0 { break }
//!     conn.mark_sent(n, now);
//!     conn.poll(now, h);                          // refill from streamed bodies
//! }
//! if conn.is_finished() { socket.close() }        // and drop conn (a reset: conn.abort())
//! ```

pub mod coding;
pub mod connection;
pub mod message;
pub mod parser;
pub mod response;
pub mod route;

pub use connection::{Config, Connection};
pub use message::*;
pub use parser::{Limits, ParseError};
