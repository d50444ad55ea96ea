//! Who a request's part of the server's shared pools is counted to: the token it bears, at
//! the rank its authority reaches (a gateway's narrowing of the administrator's token is an
//! owner of its own, below the administrator), or its address where `/mcp` asks for no token.
//! And which of the owner's clients it comes from, so that the owner's part is shared fairly
//! between them (see `irix7_kmem::share`).

use super::privilege::Privilege;
use irix7_kmem::share::Claim;

/// Who holds what: a token or, for the anonymous, an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A token, numbered as `admit` numbers them (0 the administrator).
    Token(u8),
    /// A client of `/mcp` when it takes no token.
    Address([u8; 4]),
}

/// A holder at a rank: what shares are counted per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub holder: Holder,
    pub rank: Privilege,
}

/// One of an owner's clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// A connection (2026-07-28 requests), by the peer's address and port.
    Connection([u8; 4], u16),
    /// A legacy session, by its serial number.
    Session(u64),
    /// The first request of any of the owner's connections: connections are told apart once
    /// they carried a request, so a client that opens a connection a request is one client
    /// of its owner in a rate window, not a new one each time (`Exchange::rate_client`).
    Fresh,
}

impl Client {
    /// A number no other client of the same owner has.
    pub fn id(self) -> u64 {
        match self {
            Client::Connection(a, port) => u64::from(u32::from_be_bytes(a)) << 16 | u64::from(port),
            Client::Session(serial) => 1 << 63 | serial,
            Client::Fresh => 1 << 62,
        }
    }
}

impl Owner {
    /// A number no other owner has (what a pool outside this crate keys owners by).
    pub fn key(self) -> u64 {
        let holder = match self.holder {
            Holder::Token(i) => u64::from(i),
            Holder::Address(a) => 1 << 40 | u64::from(u32::from_be_bytes(a)),
        };
        holder << 8 | self.rank as u64
    }

    /// The claim of one unit by `client` of this owner.
    pub fn claim(self, client: Client) -> Claim<Owner> {
        Claim {
            owner: self,
            rank: self.rank as u8,
            client: client.id(),
        }
    }
}

/// Who holds a call: its owner, and which of the owner's clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) owner: Owner,
    pub(crate) client: Client,
}

impl Key {
    /// What a tool call of this key holds in the machine's pools (`ToolCall::holder`).
    pub(crate) fn holder(&self) -> Claim<u64> {
        Claim {
            owner: self.owner.key(),
            rank: self.owner.rank as u8,
            client: self.client.id(),
        }
    }
}
