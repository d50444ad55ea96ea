//! The door of `/mcp`: the Origin and Host checks, the bearer token and its rate of failures,
//! the authority a request's token and a gateway's narrowing leave it, and the audit of failed
//! logins. The rest of `McpServer` is its façade (`server.rs`) and routing (`dispatch.rs`).

use crate::http::{Admission, Headers, Peer, RANK_TOP, Response};
use crate::jsonrpc::{self, RpcError};
use crate::mcp::guard::audit::{AuditRecord, AuthFailure};
use crate::mcp::guard::authority::{
    self, Authority, Door, Holder, NARROWING_HEADER, Owner, Policy, Privilege, Token,
};
use crate::mcp::guard::request::Head;
use crate::mcp::guard::security::{bearer_ok, host_ok, origin_ok};
use crate::mcp::server::{McpServer, auth_failure};
use crate::mcp::wire::reply;
use alloc::rc::Rc;

impl<C: 'static> McpServer<C> {
    /// The Origin and bearer-token checks of `/mcp`, for other paths that need the same
    /// guard (`/screen.bmp`), and whether the token may use `door`: `Err` is the 403 or the
    /// 401 (with `WWW-Authenticate`) to send.
    pub fn authorize(
        &self,
        headers: &Headers,
        peer: Peer,
        door: Door,
    ) -> Result<Authority, Response> {
        let head = Head::of(headers);
        self.check_origin(&head)?;
        let authority = self.authority_of(&head, peer, None)?;
        match authority.check_door(door) {
            Ok(()) => Ok(authority),
            Err(denied) => {
                let err = RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    alloc::format!("Forbidden: {}", denied.0),
                );
                Err(reply::error(403, None, &err))
            }
        }
    }

    pub(super) fn authorize_head(&self, head: &Head<'_>) -> Result<(), Response> {
        self.check_origin(head)?;
        self.check_token(head).map(|_| ())
    }

    /// The token a request's bearer names, as an index into `tokens`: every secret is
    /// compared (in constant time), so the time taken does not say which one matched.
    ///
    /// The index is what [`Admission::Authenticated`] carries: 0 the administrator, then
    /// `config.tokens` in order.
    fn token_of(&self, head: &Head<'_>) -> Option<u8> {
        let bearer = head.authorization();
        let mut found = None;
        if let Some(secret) = &self.config.token
            && bearer_ok(secret, bearer)
        {
            found = Some(0);
        }
        for (i, t) in (1u8..).zip(&self.tokens) {
            if bearer_ok(&t.secret, bearer) {
                found.get_or_insert(i);
            }
        }
        found
    }

    /// Whether the request bears the token numbered `index` (compared in constant time).
    fn bears(&self, head: &Head<'_>, index: u8) -> bool {
        let secret = match index.checked_sub(1) {
            None => self.config.token.as_deref(),
            Some(i) => self.tokens.get(usize::from(i)).map(|t| &*t.secret),
        };
        secret.is_some_and(|s| bearer_ok(s, head.authorization()))
    }

    /// How a request with these headers, admitted with token `index`, ranks for a port's
    /// slots ([`crate::http::Handler::rank`]): the privilege its token's role and a gateway's
    /// narrowing reach ([`authority::rank`], as its [`crate::mcp::guard::authority::Owner`]),
    /// administering at the top. A narrowing that does not parse ranks lowest (the request
    /// is refused anyway).
    pub fn rank(&self, headers: &Headers, index: u8) -> u8 {
        let Some((token, rank)) = self.token_at(index) else {
            return 0;
        };
        let rank = match Head::of(headers).narrowing().map(Policy::parse) {
            None => rank,
            Some(Ok(n)) => authority::rank(self.config.capabilities, token, Some(&n)),
            Some(Err(_)) => return 0,
        };
        match rank {
            Privilege::Administer => RANK_TOP,
            lesser => lesser as u8,
        }
    }

    /// The token numbered `index` as [`Self::token_of`] numbers them, and its rank without a
    /// narrowing.
    fn token_at(&self, index: u8) -> Option<(&Rc<Token>, Privilege)> {
        let token = match index.checked_sub(1) {
            None => &self.admin,
            Some(i) => self.tokens.get(usize::from(i))?,
        };
        Some((token, *self.ranks.get(usize::from(index))?))
    }

    /// The bearer-token check: the token named (the administrator's when `/mcp` is open
    /// and no other is given), or the 401 (with `WWW-Authenticate`) to send.
    fn check_token(&self, head: &Head<'_>) -> Result<u8, Response> {
        let found = self.token_of(head);
        if found.is_none() && self.config.token.is_none() {
            return Ok(0);
        }
        let Some(token) = found else {
            let mut r = reply::error(
                401,
                None,
                &RpcError::new(jsonrpc::INVALID_REQUEST, "Unauthorized"),
            );
            r.headers.push("WWW-Authenticate", "Bearer");
            return Err(r);
        };
        Ok(token)
    }

    /// What a request with this head from `peer` may do: its token's role, the policy, and the
    /// narrowing a gateway sent (`Irix7-Policy`; a value that does not parse is refused, so
    /// a typo never widens what the gateway meant to allow).
    /// `admitted` is the token `admit` matched, when it ran: not compared again.
    pub(super) fn authority_of(
        &self,
        head: &Head<'_>,
        peer: Peer,
        admitted: Option<u8>,
    ) -> Result<Authority, Response> {
        let index = match admitted {
            Some(i) => i,
            None => self.check_token(head)?,
        };
        let Some((token, rank)) = self.token_at(index) else {
            let err = RpcError::new(jsonrpc::INVALID_REQUEST, "Unauthorized");
            return Err(reply::error(401, None, &err));
        };
        let narrowing = match head.narrowing() {
            None => None,
            Some(v) => match Policy::parse(v) {
                Ok(p) => Some(Rc::new(p)),
                Err(e) => {
                    let msg = alloc::format!("{NARROWING_HEADER} refused: {e}");
                    let err = RpcError::new(jsonrpc::INVALID_REQUEST, msg);
                    return Err(reply::error(400, None, &err));
                }
            },
        };
        let table = self.config.capabilities;
        // Without `mcp.token` the administrator is whoever comes: each address its own.
        let holder = match (index, &self.config.token) {
            (0, None) => Holder::Address(peer.addr),
            _ => Holder::Token(index),
        };
        let rank = match &narrowing {
            None => rank,
            Some(n) => authority::rank(table, token, Some(n)),
        };
        let owner = Owner { holder, rank };
        let policy = self.policy.clone();
        Ok(Authority::new(
            table,
            policy,
            token.clone(),
            narrowing,
            owner,
        ))
    }

    /// The browser guards: an `Origin` must be allowed; without one, `Host` must name the
    /// machine (see `security::host_ok`). Both refusals are 403 with a body saying which.
    fn check_origin(&self, head: &Head<'_>) -> Result<(), Response> {
        let refused = match head.origin() {
            Some(origin) if !origin_ok(origin, self.config.own_ip, &self.config.extra_origins) => {
                Some("Forbidden: Origin not allowed")
            }
            Some(_) => None,
            None if !host_ok(head.host(), self.config.own_ip, &self.config.hosts) => Some(
                "Forbidden: Host not allowed (use the machine's IP address, localhost, \
                 or a name listed in mcp.hosts)",
            ),
            None => None,
        };
        match refused {
            Some(why) => Err(reply::error(
                403,
                None,
                &RpcError::new(jsonrpc::INVALID_REQUEST, why),
            )),
            None => Ok(()),
        }
    }

    /// The machine's own IPv4 address, as the network stack has it now (DHCP may give or
    /// change it after boot): Origins and Hosts naming it are allowed.
    pub fn set_own_ip(&mut self, ip: Option<[u8; 4]>) {
        self.config.own_ip = ip;
    }

    /// Whether `/mcp` needs a bearer token.
    pub fn token_required(&self) -> bool {
        self.config.token.is_some()
    }

    /// Judges a request to `/mcp` (or a path guarded like it) from its head, before its body
    /// is read: the Origin and token checks of [`McpServer::authorize`], with failed token
    /// checks limited per client address: past the limit the answer is 401 with
    /// `Retry-After`, without the token being looked at (so guessing gains nothing, and clients
    /// still see the error they know how to report). A request bearing the token its
    /// connection already `proven` is not throttled: guessers on the same address (a NAT, a
    /// tunnel) cannot lock it out; any other request on that connection is, so a proven
    /// connection is no door for guessing the other tokens. Without a token configured
    /// nothing is checked, so nothing is authenticated.
    pub fn admit(
        &mut self,
        headers: &Headers,
        peer: Peer,
        proven: Option<u8>,
        now_ms: u64,
    ) -> Result<Admission, Response> {
        let limits = self.config.limits;
        let head = Head::of(headers);
        self.check_origin(&head)?;
        if self.config.token.is_none() {
            return Ok(Admission::Anonymous);
        }
        if let Some(token) = proven
            && self.bears(&head, token)
        {
            return Ok(Admission::Authenticated(token));
        }
        if self
            .auth_failures
            .exhausted(peer.addr, now_ms, limits.auth_failures_per_second)
        {
            self.audit_auth(peer, now_ms, AuthFailure::Throttled);
            let mut r = reply::error(
                401,
                None,
                &RpcError::new(
                    jsonrpc::INVALID_REQUEST,
                    "Unauthorized: too many failed attempts from this address; retry later",
                ),
            );
            r.headers.push("WWW-Authenticate", "Bearer");
            r.headers.push("Retry-After", "1");
            return Err(r);
        }
        // The Origin passed above: only the token is left to check.
        let verdict = self.check_token(&head);
        if let Err(r) = &verdict
            && r.status == 401
        {
            // One client: the address's failures are not shared out.
            self.auth_failures.admit(
                peer.addr,
                0,
                now_ms,
                limits.auth_failures_per_second,
                limits.max_clients,
            );
            self.audit_auth(peer, now_ms, auth_failure(headers));
        }
        verdict.map(Admission::Authenticated)
    }

    /// Counts a failed authentication for the audit trail (summarised when its window
    /// closes: see `login_failures`).
    pub(super) fn audit_auth(&mut self, peer: Peer, now_ms: u64, why: AuthFailure) {
        let closed = self.login_failures.count(peer.addr, why, now_ms);
        self.audit_all(&closed);
    }

    /// Hands the summaries of failed logins and refused calls whose window has closed to the
    /// audit sink: called from the module's poll loop, so a window is written soon after it
    /// ends even when no request comes.
    pub fn poll_audit(&mut self, now_ms: u64) {
        if self.login_failures.due(now_ms) {
            let closed = self.login_failures.close_due(now_ms);
            self.audit_all(&closed);
        }
        if self.refusals.due(now_ms) {
            let closed = self.refusals.close_due(now_ms);
            self.audit_all(&closed);
        }
    }

    pub(super) fn audit_all(&self, records: &[AuditRecord]) {
        if let Some(sink) = &self.config.audit {
            records.iter().for_each(|r| sink(r));
        }
    }
}
