//! The tool registry: tool families' tables, checked and pre-rendered once at registration,
//! listed in registration order (stable across requests).

use crate::http::coding::Packed;
use crate::json::{ValueRef, read_value, write_value};
use crate::mcp::guard::authority::{Authority, Cap, Door, PRIVILEGE_META, Policy, Table};
use crate::mcp::tools::call::emit::CHECK_RESULTS;
use crate::mcp::tools::schema::{self, Schema};
use crate::mcp::wire::error_code::ErrorCode;
use crate::mcp::wire::tool::ToolDef;
use alloc::format;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;
use serde_json::{Map, Value};

/// A table row that could not be registered.
#[derive(Debug, PartialEq, Eq)]
pub struct RegistryError {
    pub name: String,
    pub reason: String,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.reason)
    }
}

pub(crate) struct ToolEntry<C> {
    pub(crate) def: ToolDef<C>,
    pub(crate) input: Rc<Schema>,
    /// Shared, not cloned, with each call that checks a result against it; held only where
    /// results are checked ([`CHECK_RESULTS`]: the product image compiles it at registration,
    /// to refuse a bad table, and keeps nothing).
    pub(crate) output: Option<Rc<Schema>>,
    /// Where the tool as `tools/list` shows it sits in [`ToolRegistry::listings`] (empty when
    /// the policy hides it).
    pub(crate) listing: Range<usize>,
    /// The capability a call exercises (its row in the capability table).
    pub(crate) cap: Cap,
    /// The further door its arguments open, if any (see [`crate::mcp::guard::authority::Opener`]).
    pub(crate) opens: Option<fn(ValueRef<'_>) -> Option<Door>>,
}

// By hand: a derive would ask `C: Clone`, which the context never needs to be.
impl<C> Clone for ToolEntry<C> {
    fn clone(&self) -> Self {
        ToolEntry {
            def: self.def,
            input: self.input.clone(),
            output: self.output.clone(),
            listing: self.listing.clone(),
            cap: self.cap,
            opens: self.opens,
        }
    }
}

/// Tool names kept for a later milestone. A call to any name under `prefix` answers the
/// `isError` result `E_NOSYS: <name> is <why>`, so an agent learns the feature is planned
/// rather than misspelt; none is listed in `tools/list`, because listing tools that cannot
/// work would mislead agents into calling them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    /// E.g. `debug.`: every name starting with it is reserved, planned or not.
    pub prefix: &'static str,
    /// The names planned so far, for the catalogue.
    pub names: &'static [&'static str],
    /// Completes the error message, e.g. `reserved for the GDB stub milestone`.
    pub why: &'static str,
}

/// All tools the server has, which of them the policy offers, and the names it keeps back.
pub struct ToolRegistry<C> {
    entries: Vec<ToolEntry<C>>,
    /// The listing of every tool the policy offers, serialised once (at registration, or when
    /// the policy is set) and joined with commas in registration order: a page of
    /// `tools/list` is one slice of it, shared with the answer (sent from here, never copied,
    /// cloned or re-serialised per request).
    listings: Rc<Vec<u8>>,
    /// Each page's listings deflated once ([`Self::pack`]), by where the page is in
    /// `listings`: a `tools/list` answer sent coded carries these blocks as they are.
    packed: Vec<(Range<usize>, Packed)>,
    /// Indices into `entries` of the tools the policy offers, in registration order: what
    /// `tools/list` pages through.
    listed: Vec<usize>,
    policy: Policy,
    /// Where each tool's capability comes from.
    table: Table,
    reserved: Vec<Reserved>,
}

impl<C> Clone for ToolRegistry<C> {
    fn clone(&self) -> Self {
        ToolRegistry {
            entries: self.entries.clone(),
            listings: self.listings.clone(),
            packed: self.packed.clone(),
            listed: self.listed.clone(),
            policy: self.policy.clone(),
            table: self.table,
            reserved: self.reserved.clone(),
        }
    }
}

impl<C> Default for ToolRegistry<C> {
    fn default() -> Self {
        ToolRegistry {
            entries: Vec::new(),
            listings: Rc::default(),
            packed: Vec::new(),
            listed: Vec::new(),
            policy: Policy::default(),
            table: Table::default(),
            reserved: Vec::new(),
        }
    }
}

fn valid_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl<C> ToolRegistry<C> {
    /// Sets the capability table tools are judged by; tools registered later must have a
    /// row in it (when it has rows).
    pub fn set_table(&mut self, table: Table) {
        self.table = table;
    }

    /// Adds a family's table. All rows are checked first; on error nothing is added.
    pub fn register(&mut self, table: &[ToolDef<C>]) -> Result<(), RegistryError> {
        let mut fresh = Vec::with_capacity(table.len());
        for def in table {
            let err = |reason: String| RegistryError {
                name: String::from(def.name),
                reason,
            };
            if !valid_name(def.name) {
                return Err(err(String::from("name must be 1-128 of [A-Za-z0-9_.-]")));
            }
            let dup_old = self.entries.iter().any(|e| e.def.name == def.name);
            let dup_new = fresh
                .iter()
                .any(|(e, _, _): &(ToolEntry<C>, _, _)| e.def.name == def.name);
            if dup_old || dup_new {
                return Err(err(String::from("registered twice")));
            }
            if let Some(r) = self.reserved_for(def.name) {
                return Err(err(format!("names under {} are reserved", r.prefix)));
            }
            let cap = self
                .table
                .judge(Door::Tool(def.name), Some(def.annotations))
                .ok_or_else(|| err(String::from("has no row in the capability table")))?;
            for (i, code) in def.errors.iter().enumerate() {
                if def.errors[..i].contains(code) {
                    return Err(err(format!("declares E_{code} twice")));
                }
                if ErrorCode::GENERIC.contains(code) && *code != ErrorCode::Busy {
                    return Err(err(format!(
                        "declares E_{code}, which every tool may answer"
                    )));
                }
                if *code == ErrorCode::InvalidParams {
                    return Err(err(format!(
                        "declares {code}, a JSON-RPC error, not a result"
                    )));
                }
            }
            let (input, input_json) =
                compile(def.input_schema).map_err(|e| err(format!("inputSchema{e}")))?;
            let (output, output_json) = match def.output_schema {
                None => (None, None),
                Some(text) => {
                    let (s, v) = compile(text).map_err(|e| err(format!("outputSchema{e}")))?;
                    (CHECK_RESULTS.then_some(s), Some(v))
                }
            };
            let entry = ToolEntry {
                def: *def,
                input,
                output,
                listing: 0..0,
                cap,
                opens: self.table.opener(def.name).map(|o| o.door),
            };
            fresh.push((entry, input_json, output_json));
        }
        for (entry, input, output) in fresh {
            self.entries.push(entry);
            self.list(self.entries.len() - 1, input, output);
        }
        Ok(())
    }

    /// Appends entry `i`'s listing, with its schemas as parsed JSON, when the policy offers it.
    fn list(&mut self, i: usize, input: Value, output: Option<Value>) {
        let Some(entry) = self.entries.get_mut(i) else {
            return;
        };
        if !self.policy.allows(entry.cap) {
            entry.listing = 0..0;
            return;
        }
        self.packed = Vec::new();
        // Written in place; listings an answer still shares are left to it.
        if Rc::get_mut(&mut self.listings).is_none() {
            self.listings = Rc::new(self.listings.to_vec());
        }
        let Some(listings) = Rc::get_mut(&mut self.listings) else {
            return;
        };
        if !listings.is_empty() {
            listings.push(b',');
        }
        let start = listings.len();
        write_value(listings, &listing(&entry.def, entry.cap, input, output));
        entry.listing = start..listings.len();
        self.listed.push(i);
    }

    /// Sets the policy and renders the listing of what it offers, once: `tools/list` then
    /// costs the same whatever the policy.
    pub fn set_policy(&mut self, policy: Policy) {
        self.policy = policy;
        self.listings = Rc::default();
        self.packed = Vec::new();
        self.listed = Vec::new();
        for i in 0..self.entries.len() {
            // The schemas are parsed again from their text (registration checked it): the
            // registry keeps only their compiled form.
            let Some(def) = self.entries.get(i).map(|e| e.def) else {
                continue;
            };
            let parse = |text| read_value(text).unwrap_or(Value::Null);
            self.list(i, parse(def.input_schema), def.output_schema.map(parse));
        }
        if let Some(listings) = Rc::get_mut(&mut self.listings) {
            listings.shrink_to_fit();
        }
    }

    /// Deflates the listings of each page of `page_size` tools once, at `level`, so that a
    /// policy-wide `tools/list` can go out coded without compressing anything; what a
    /// registration or a new policy renders afterwards is sent identity until packed again.
    pub fn pack(&mut self, page_size: usize, level: u8) {
        // Every tool is registered: what the registry holds stays as long as the server, and
        // none of it is room a doubling left behind (the listings' had been up to half of it).
        // Trimmed here once rather than after each family, whose next registration would
        // grow it again.
        self.entries.shrink_to_fit();
        self.listed.shrink_to_fit();
        if let Some(listings) = Rc::get_mut(&mut self.listings) {
            listings.shrink_to_fit();
        }
        self.packed = Vec::new();
        for page in self.listed.chunks(page_size.max(1)) {
            let range = self.page_range(page);
            let packed = self
                .listings
                .get(range.clone())
                .filter(|bytes| !bytes.is_empty())
                .and_then(|bytes| Packed::new(bytes, level));
            if let Some(packed) = packed {
                self.packed.push((range, packed));
            }
        }
        self.packed.shrink_to_fit();
    }

    /// The packed form of the listings at `range` of [`Self::shared_listings`], if packed.
    pub(crate) fn packed(&self, range: &Range<usize>) -> Option<&Packed> {
        self.packed
            .iter()
            .find(|(r, _)| r == range)
            .map(|(_, packed)| packed)
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The tools `authority` may call, in listing order (a subset of [`Self::listed`]).
    pub(crate) fn listed_for(&self, authority: &Authority) -> Vec<usize> {
        self.listed
            .iter()
            .copied()
            .filter(|&i| self.entries.get(i).is_some_and(|e| authority.allows(e.cap)))
            .collect()
    }

    /// How many registered tools the policy offers.
    pub fn offered(&self) -> usize {
        self.listed.len()
    }

    /// Reserves a prefix; refused when the prefix is not a valid name start or a registered
    /// tool is under it.
    pub fn reserve(&mut self, r: Reserved) -> Result<(), RegistryError> {
        let err = |reason: &str| RegistryError {
            name: String::from(r.prefix),
            reason: String::from(reason),
        };
        if !valid_name(r.prefix) {
            return Err(err("prefix must be 1-128 of [A-Za-z0-9_.-]"));
        }
        if let Some(e) = self
            .entries
            .iter()
            .find(|e| e.def.name.starts_with(r.prefix))
        {
            return Err(RegistryError {
                name: String::from(e.def.name),
                reason: format!("registered under the reserved prefix {}", r.prefix),
            });
        }
        if r.names.iter().any(|n| !n.starts_with(r.prefix)) {
            return Err(err("a planned name is not under the prefix"));
        }
        self.reserved.push(r);
        Ok(())
    }

    /// The reservation that covers `name`, if any.
    pub fn reserved_for(&self, name: &str) -> Option<&Reserved> {
        self.reserved.iter().find(|r| name.starts_with(r.prefix))
    }

    /// The reservations, in the order made.
    pub fn reserved(&self) -> &[Reserved] {
        &self.reserved
    }

    /// The registered tables' rows, in registration order (what `tools/list` lists).
    pub fn defs(&self) -> impl Iterator<Item = &ToolDef<C>> {
        self.entries.iter().map(|e| &e.def)
    }

    pub(crate) fn entry(&self, index: usize) -> Option<&ToolEntry<C>> {
        self.entries.get(index)
    }

    /// The tool `name` and its index (for [`Self::entry`]).
    pub(crate) fn find(&self, name: &str) -> Option<(usize, &ToolEntry<C>)> {
        self.entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.def.name == name)
    }

    /// Indices of the tools the policy offers, in registration order.
    pub(crate) fn listed(&self) -> &[usize] {
        &self.listed
    }

    /// The listings of `page` (consecutive items of [`Self::listed`]) as the comma-separated
    /// JSON that goes between `[` and `]`.
    #[cfg(test)]
    pub(crate) fn listings(&self, page: &[usize]) -> &[u8] {
        self.listings.get(self.page_range(page)).unwrap_or(&[])
    }

    /// Where the listings of `page` are in [`Self::shared_listings`].
    pub(crate) fn page_range(&self, page: &[usize]) -> Range<usize> {
        let range = |i: Option<&usize>| Some(self.entries.get(*i?)?.listing.clone());
        match (range(page.first()), range(page.last())) {
            (Some(a), Some(b)) if a.start <= b.end => a.start..b.end,
            _ => 0..0,
        }
    }

    /// The listings of `page` (any items of [`Self::listed`], in order) copied out as the
    /// comma-separated JSON that goes between `[` and `]`.
    pub(crate) fn copied_listings(&self, page: &[usize]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in page.iter().filter_map(|&i| self.entries.get(i)) {
            let Some(bytes) = self.listings.get(e.listing.clone()) else {
                continue;
            };
            if !out.is_empty() {
                out.push(b',');
            }
            out.extend_from_slice(bytes);
        }
        out
    }

    /// Every listing, for an answer to share.
    pub(crate) fn shared_listings(&self) -> &Rc<Vec<u8>> {
        &self.listings
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Parses a schema's text, checks its shape and compiles it; the parsed JSON is returned for
/// the listing. The error completes `inputSchema`/`outputSchema`.
fn compile(text: &str) -> Result<(Rc<Schema>, Value), String> {
    let v = read_value(text).ok_or_else(|| String::from(" is not JSON"))?;
    schema::check_schema(&v).map_err(|e| format!(": {e}"))?;
    Ok((Rc::new(Schema::compile(&v)), v))
}

/// The tool as `tools/list` shows it.
/// Its privilege goes in `_meta`, so that a gateway can hold an agent to a role without knowing
/// the machine's table; its capability too, when that is not the tool's own name (every tool of
/// the Indy's table is its own capability: the name would be 26 repeats in every listing).
fn listing<C>(def: &ToolDef<C>, cap: Cap, input: Value, output: Option<Value>) -> Value {
    let mut t = Map::new();
    t.insert("name".into(), Value::from(def.name));
    if let Some(title) = def.title {
        t.insert("title".into(), Value::from(title));
    }
    t.insert("description".into(), Value::from(def.description));
    t.insert("inputSchema".into(), input);
    if let Some(o) = output {
        t.insert("outputSchema".into(), o);
    }
    let a = def.annotations;
    let mut ann = Map::new();
    if let Some(title) = def.title {
        ann.insert("title".into(), Value::from(title));
    }
    ann.insert("readOnlyHint".into(), Value::from(a.read_only));
    ann.insert("destructiveHint".into(), Value::from(a.destructive));
    ann.insert("idempotentHint".into(), Value::from(a.idempotent));
    ann.insert("openWorldHint".into(), Value::from(a.open_world));
    t.insert("annotations".into(), Value::Object(ann));
    let mut meta = Map::new();
    if cap.name != def.name {
        meta.insert("irix7/capability".into(), Value::from(cap.name));
    }
    meta.insert(PRIVILEGE_META.into(), Value::from(cap.privilege.as_str()));
    t.insert("_meta".into(), Value::Object(meta));
    Value::Object(t)
}
