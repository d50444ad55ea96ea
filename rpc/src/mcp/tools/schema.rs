//! A small JSON Schema validator for tool arguments and structured results: `type`,
//! `properties`, `required`, `additionalProperties`, `enum`, `const`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum`, `minLength`, `maxLength`, `items`, `minItems`,
//! `maxItems`, `allOf`, `anyOf`, `oneOf`. Other keywords are ignored (accepted), which is
//! what a validator that does not know them must do.
//!
//! A schema is compiled once, at registration, into a [`Schema`]: only the keywords that can
//! reject something, as a short list in the order they are checked. A tool's schema stays in
//! memory for the life of the module, and a parsed JSON tree (a map with owned keys per
//! object) is several times larger than this list.

use crate::json::{Kind, ValueRef};
use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::fmt;
use serde_json::{Number, Value};

/// Nesting limit for schema and value walks; deeper input is rejected, not recursed into.
const MAX_DEPTH: usize = 32;

/// A compiled schema.
pub struct Schema(Node);

enum Node {
    /// `true`, a schema that is not an object, or one nested past [`MAX_DEPTH`] (a value
    /// that deep is rejected before its schema is looked at).
    Any,
    /// `false`.
    Never,
    /// An object schema's rules, in checking order.
    Rules(Box<[Rule]>),
}

/// One keyword of an object schema, reduced to what it checks.
enum Rule {
    /// `type`: a set of [`TYPES`] bits; the label is the list as written, for a `type` array
    /// (a single name labels itself).
    Type(u8, Option<Box<str>>),
    Enum(Box<[Value]>),
    Const(Box<Value>),
    /// A numeric bound: its row of [`BOUNDS`] and the bound as written.
    Bound(&'static Bound, Number),
    /// `minLength`/`maxLength` (strings) or `minItems`/`maxItems` (arrays).
    Count(Counted, Limit, u64),
    Items(Schema),
    /// `required`: each name once, sorted for lookup, with its place in the list as written
    /// (the first missing in that order is the one reported). Only when a required name has
    /// no schema in `properties`; otherwise [`Rule::Object`] checks them in its pass.
    Required(Box<[(Box<str>, usize)]>),
    /// `properties` (sorted by name, for lookup) and `additionalProperties`; `required` has a
    /// bit for each required one (`None` past 64 properties: they are looked up instead).
    Object {
        props: Box<[Prop]>,
        additional: Option<Schema>,
        required: Option<u64>,
    },
    /// `x-mcp-header`: checks nothing, kept for [`Schema::headers`].
    Header(Box<str>),
    AllOf(Box<[Schema]>),
    AnyOf(Box<[Schema]>),
    OneOf(Box<[Schema]>),
}

/// A member `properties` names: its schema, and its place in `required` as written when it is
/// required. Knowing that here lets one pass over an object's members both check them and
/// find the required ones (a result's schema requires most of its members).
struct Prop {
    name: Box<str>,
    schema: Schema,
    required_at: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Counted {
    Characters,
    Items,
}

#[derive(Clone, Copy)]
enum Limit {
    Min,
    Max,
}

/// The type names `type` knows, indexed by [`kind`], as bits of [`Rule::Type`]; any other
/// name allows anything.
const TYPES: [&str; 7] = [
    "object", "array", "string", "boolean", "null", "number", "integer",
];
const INTEGER: u8 = 1 << 6;

/// A numeric bound's keyword, whether a value ordered so against the bound holds, and the
/// operator its message shows.
type Bound = (&'static str, fn(Ordering) -> bool, &'static str);
/// The numeric bounds, in checking order. Messages show each bound as the schema wrote it
/// (serde_json's own number formatting), so the module needs no float formatting of its own.
static BOUNDS: [Bound; 4] = [
    ("minimum", Ordering::is_ge, ">="),
    ("maximum", Ordering::is_le, "<="),
    ("exclusiveMinimum", Ordering::is_gt, ">"),
    ("exclusiveMaximum", Ordering::is_lt, "<"),
];

/// How `n` compares with `bound`: exactly when both are integers (every bound of the tools'
/// schemas, and their arguments: no soft-float on the R4400's every call, no rounding past
/// 2^53), else as floats (`None` for a NaN, which holds no bound).
fn compare(n: &Number, bound: &Number) -> Option<Ordering> {
    let int = |v: &Number| {
        v.as_i64()
            .map(i128::from)
            .or_else(|| v.as_u64().map(i128::from))
    };
    match (int(n), int(bound)) {
        (Some(n), Some(b)) => Some(n.cmp(&b)),
        _ => n.as_f64()?.partial_cmp(&bound.as_f64()?),
    }
}

impl Schema {
    /// Compiles a schema already parsed as JSON (and, for a tool's, checked by
    /// [`check_schema`]). Keywords holding values of the wrong JSON type are dropped, as the
    /// validator has always ignored them.
    pub fn compile(schema: &Value) -> Schema {
        Schema(compile(schema, 0))
    }

    /// Checks `value` (arguments read in place, or a result from its writer's record) against
    /// the schema. The error names the failing location (`$.a.b[2]`).
    pub fn validate(&self, value: ValueRef<'_>) -> Result<(), String> {
        self.check(Checked(value), &Path::Root, 0)
    }

    /// The top-level properties whose schema names an `x-mcp-header`, as (property, header),
    /// sorted by property name.
    pub(crate) fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let props: &[Prop] = match &self.0 {
            Node::Rules(rules) => rules
                .iter()
                .find_map(|r| match r {
                    Rule::Object { props, .. } => Some(&props[..]),
                    _ => None,
                })
                .unwrap_or(&[]),
            _ => &[],
        };
        props.iter().filter_map(|p| match &p.schema.0 {
            Node::Rules(rules) => rules.iter().find_map(|r| match r {
                Rule::Header(h) => Some((&*p.name, &**h)),
                _ => None,
            }),
            _ => None,
        })
    }

    fn check(&self, value: Checked<'_>, path: &Path<'_>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("{path}: nested too deeply"));
        }
        let rules = match &self.0 {
            Node::Any => return Ok(()),
            Node::Never => return Err(format!("{path}: not allowed")),
            Node::Rules(rules) => rules,
        };
        for rule in rules.iter() {
            check_rule(rule, value, path, depth)?;
        }
        Ok(())
    }
}

/// Where a checked value lies (`$.a.b[2]`): steps chained on the stack and written out only
/// into an error message, so a value that passes costs no text.
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("$"),
            Path::Key(up, key) => write!(f, "{up}.{key}"),
            Path::Index(up, i) => write!(f, "{up}[{i}]"),
        }
    }
}

/// Checks that a schema uses only shapes this validator understands where it matters
/// (keywords hold values of the right JSON type), so bad tables fail at registration.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    let Value::Object(s) = schema else {
        return Err(String::from("schema must be an object"));
    };
    if s.get("type").and_then(Value::as_str) != Some("object") {
        return Err(String::from("schema type must be \"object\""));
    }
    if let Some(p) = s.get("properties")
        && !p.is_object()
    {
        return Err(String::from("properties must be an object"));
    }
    if let Some(r) = s.get("required")
        && !r.as_array().is_some_and(|a| a.iter().all(Value::is_string))
    {
        return Err(String::from("required must be an array of strings"));
    }
    Ok(())
}

fn compile(schema: &Value, depth: usize) -> Node {
    let s = match schema {
        _ if depth > MAX_DEPTH => return Node::Any,
        Value::Bool(false) => return Node::Never,
        Value::Object(s) => s,
        _ => return Node::Any,
    };
    let sub = |v: &Value| Schema(compile(v, depth + 1));
    let list = |key: &str| match s.get(key) {
        Some(Value::Array(subs)) => Some(subs.iter().map(sub).collect::<Box<[_]>>()),
        _ => None,
    };
    let mut rules = Vec::new();
    if let Some(t) = s.get("type").and_then(compile_type) {
        rules.push(t);
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        rules.push(Rule::Enum(options.as_slice().into()));
    }
    if let Some(c) = s.get("const") {
        rules.push(Rule::Const(Box::new(c.clone())));
    }
    for row in BOUNDS.iter() {
        if let Some(Value::Number(bound)) = s.get(row.0) {
            rules.push(Rule::Bound(row, bound.clone()));
        }
    }
    let counts = [
        ("minLength", Counted::Characters, Limit::Min),
        ("maxLength", Counted::Characters, Limit::Max),
        ("minItems", Counted::Items, Limit::Min),
        ("maxItems", Counted::Items, Limit::Max),
    ];
    for (key, what, limit) in counts {
        if let Some(n) = s.get(key).and_then(Value::as_u64) {
            rules.push(Rule::Count(what, limit, n));
        }
    }
    if let Some(items) = s.get("items") {
        rules.push(Rule::Items(sub(items)));
    }
    let props = s.get("properties").and_then(Value::as_object);
    let mut required: Vec<(Box<str>, usize)> = match s.get("required") {
        Some(Value::Array(required)) => required
            .iter()
            .filter_map(Value::as_str)
            .enumerate()
            .map(|(at, name)| (Box::from(name), at))
            .collect(),
        _ => Vec::new(),
    };
    // Sorted by name then place, so the first of a name given twice is the one kept.
    required.sort_unstable();
    required.dedup_by(|later, first| later.0 == first.0);
    // Required names that all have a schema are checked in the pass over the members.
    let merged = props.is_some_and(|p| required.iter().all(|(n, _)| p.contains_key(&**n)));
    if !required.is_empty() && !merged {
        rules.push(Rule::Required(
            core::mem::take(&mut required).into_boxed_slice(),
        ));
    }
    let additional = match s.get("additionalProperties") {
        Some(Value::Bool(false)) => Some(Schema(Node::Never)),
        Some(a @ Value::Object(_)) => Some(sub(a)),
        _ => None,
    };
    if props.is_some() || additional.is_some() {
        // A map iterates in key order, so the list comes out sorted.
        let props: Box<[Prop]> = props
            .into_iter()
            .flatten()
            .map(|(k, v)| Prop {
                name: Box::from(k.as_str()),
                schema: sub(v),
                required_at: required
                    .binary_search_by(|(n, _)| (**n).cmp(k.as_str()))
                    .ok()
                    .and_then(|i| required.get(i))
                    .map(|(_, at)| *at),
            })
            .collect();
        let required = props
            .iter()
            .enumerate()
            .filter(|(_, p)| p.required_at.is_some())
            .try_fold(0u64, |m, (i, _)| Some(m | 1u64.checked_shl(i as u32)?));
        rules.push(Rule::Object {
            props,
            additional,
            required,
        });
    }
    if let Some(Value::String(h)) = s.get("x-mcp-header") {
        rules.push(Rule::Header(h.as_str().into()));
    }
    if let Some(all) = list("allOf") {
        rules.push(Rule::AllOf(all));
    }
    if let Some(any) = list("anyOf") {
        rules.push(Rule::AnyOf(any));
    }
    if let Some(one) = list("oneOf") {
        rules.push(Rule::OneOf(one));
    }
    Node::Rules(rules.into_boxed_slice())
}

/// The `type` rule, or none when it allows anything (a name it does not know, or not a name).
fn compile_type(t: &Value) -> Option<Rule> {
    let bit = |name: &str| TYPES.iter().position(|t| *t == name).map(|i| 1u8 << i);
    match t {
        Value::String(name) => Some(Rule::Type(bit(name)?, None)),
        Value::Array(names) => {
            let mut mask = 0;
            for name in names.iter().filter_map(Value::as_str) {
                mask |= bit(name)?;
            }
            Some(Rule::Type(mask, Some(format!("{t}").into())))
        }
        _ => None,
    }
}

fn type_matches(mask: u8, v: Checked<'_>) -> bool {
    mask & (1 << v.kind()) != 0 || mask & INTEGER != 0 && v.is_integer()
}

/// A value the validator checks, with the readings its rules need.
#[derive(Clone, Copy)]
struct Checked<'v>(ValueRef<'v>);

/// A verdict: the failing location and why.
type Check = Result<(), String>;

impl<'v> Checked<'v> {
    /// The index in [`TYPES`] of the value's type (never `integer`).
    fn kind(self) -> usize {
        match self.0.kind() {
            Kind::Object => 0,
            Kind::Array => 1,
            Kind::String => 2,
            Kind::Bool => 3,
            Kind::Null => 4,
            Kind::Number => 5,
        }
    }

    /// A number, as serde_json reads it.
    fn number(self) -> Option<Number> {
        self.0.as_number()
    }

    /// A string's value.
    fn text(self) -> Option<Cow<'v, str>> {
        self.0.as_str()
    }

    /// An array's items (none for another type).
    fn items(self) -> impl Iterator<Item = Checked<'v>> {
        self.0.items().map(Checked)
    }

    /// An object's members (none for another type); a key given twice is checked each time.
    fn members(self) -> impl Iterator<Item = (Cow<'v, str>, Checked<'v>)> {
        self.0
            .members()
            .map(|(k, v)| (k.decode().unwrap_or_default(), Checked(v)))
    }

    /// Equal to `v` as JSON values are (`1` is not `1.0`).
    fn equals(self, v: &Value) -> bool {
        match (self.0, v) {
            // Strings (most `enum`s) compared in place; anything else read as a value.
            (r, Value::String(s)) if r.kind() == Kind::String => r.str_is(s),
            (r, _) => r.to_value().as_ref() == Some(v),
        }
    }

    /// Whether a number is an integer as JSON Schema means it (`1.0` is one). Digits alone
    /// (most numbers, and every count a result writes) are one without being parsed.
    fn is_integer(self) -> bool {
        let text = self.0.raw().as_bytes();
        let digits = text.strip_prefix(b"-").unwrap_or(text);
        if self.0.kind() == Kind::Number
            && !digits.is_empty()
            && digits.iter().all(u8::is_ascii_digit)
        {
            return true;
        }
        self.number().is_some_and(|n| {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.abs() < 9.0e15 && (f as i64) as f64 == f)
        })
    }
}

fn check_rule(rule: &Rule, value: Checked<'_>, path: &Path<'_>, depth: usize) -> Check {
    match rule {
        Rule::Type(mask, label) if !type_matches(*mask, value) => {
            let single = || TYPES.get(mask.trailing_zeros() as usize).copied();
            let label = label.as_deref().or_else(single).unwrap_or_default();
            let got = TYPES.get(value.kind()).copied().unwrap_or_default();
            Err(format!("{path}: expected {label}, got {got}"))
        }
        Rule::Enum(options) if !options.iter().any(|o| value.equals(o)) => {
            Err(format!("{path}: not one of the allowed values"))
        }
        Rule::Const(c) if !value.equals(c) => Err(format!("{path}: must equal {c}")),
        Rule::Bound(row, bound) => {
            let Some(n) = value.number() else {
                return Ok(());
            };
            let (_, holds, op) = **row;
            match compare(&n, bound) {
                Some(order) if holds(order) => Ok(()),
                _ => Err(format!("{path}: must be {op} {bound}")),
            }
        }
        Rule::Count(Counted::Characters, limit, bound) => {
            let Some(text) = value.text() else {
                return Ok(());
            };
            // A character is one to four bytes: most texts are judged by their length alone,
            // without counting the characters of a long one.
            let (bytes, bound_at) = (text.len() as u64, *bound);
            let clear = match limit {
                Limit::Max => bytes <= bound_at,
                Limit::Min => bytes.div_ceil(4) >= bound_at,
            };
            if clear {
                return Ok(());
            }
            check_count(*limit, *bound, text.chars().count(), "characters", path)
        }
        Rule::Count(Counted::Items, limit, bound) if value.kind() == 1 => {
            check_count(*limit, *bound, value.items().count(), "items", path)
        }
        Rule::Items(item_schema) => {
            for (i, item) in value.items().enumerate() {
                item_schema.check(item, &Path::Index(path, i), depth + 1)?;
            }
            Ok(())
        }
        Rule::Required(required) if value.kind() == 0 => check_required(required, value, path),
        Rule::Object {
            props,
            additional,
            required,
        } => check_object(props, additional.as_ref(), *required, value, path, depth),
        Rule::AllOf(all) => {
            for sub in all.iter() {
                sub.check(value, path, depth + 1)?;
            }
            Ok(())
        }
        Rule::AnyOf(any)
            if !any
                .iter()
                .any(|sub| sub.check(value, path, depth + 1).is_ok()) =>
        {
            Err(format!("{path}: matches none of anyOf"))
        }
        Rule::OneOf(one) => {
            let n = one
                .iter()
                .filter(|sub| sub.check(value, path, depth + 1).is_ok())
                .count();
            if n != 1 {
                return Err(format!(
                    "{path}: must match exactly one of oneOf (matches {n})"
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_count(
    limit: Limit,
    bound: u64,
    n: usize,
    what: &str,
    path: &Path<'_>,
) -> Result<(), String> {
    let n = n as u64;
    match limit {
        Limit::Min if n < bound => Err(format!("{path}: needs at least {bound} {what}")),
        Limit::Max if n > bound => Err(format!("{path}: allows at most {bound} {what}")),
        _ => Ok(()),
    }
}

/// The required names looked for in one pass over the members (a bit for each of the first
/// 64 names found), not a pass per name: a result's schema requires most of its members.
fn check_required(required: &[(Box<str>, usize)], obj: Checked<'_>, path: &Path<'_>) -> Check {
    let missing = |name: &str| Err(format!("{path}: missing required property \"{name}\""));
    // One name (an argument schema's usual list) is cheaper looked up than found in a pass.
    if let [(name, _)] = required {
        return match obj.0.contains_key(name) {
            true => Ok(()),
            false => missing(name),
        };
    }
    let (mut found, mut after) = (0u64, 0);
    for (key, _) in obj.members() {
        if let Some(i) = find_sorted(required, &key, after, |r| &r.0) {
            found |= 1u64.checked_shl(i as u32).unwrap_or(0);
            after = i + 1;
        }
    }
    if found.count_ones() as usize == required.len() {
        return Ok(());
    }
    // Names past the 64th (no schema here has so many) are looked up one at a time.
    let absent =
        required
            .iter()
            .enumerate()
            .filter(|&(i, (name, _))| match 1u64.checked_shl(i as u32) {
                Some(bit) => found & bit == 0,
                None => !obj.0.contains_key(name),
            });
    match absent.min_by_key(|(_, (_, at))| *at) {
        Some((_, (name, _))) => missing(name),
        None => Ok(()),
    }
}

/// Where `key` is in `sorted` (by the name `name` gives). A written result's members come in
/// key order, so the next member is at `after` (the place after the last member's) or a few
/// places past it, where the optional members it lacks are skipped: those places are tried
/// first. Members out of order, or past [`WALK`] places, are looked up.
fn find_sorted<T>(sorted: &[T], key: &str, after: usize, name: fn(&T) -> &str) -> Option<usize> {
    for (i, t) in sorted.iter().enumerate().skip(after).take(WALK) {
        match name(t).cmp(key) {
            Ordering::Less => {}
            Ordering::Equal => return Some(i),
            Ordering::Greater if i == after => break,
            // Past where it would be: it is in no place.
            Ordering::Greater => return None,
        }
    }
    sorted.binary_search_by(|t| name(t).cmp(key)).ok()
}

/// Places [`find_sorted`] walks before it looks a name up: a bound on what a member costs
/// however its object's members are ordered.
const WALK: usize = 4;

/// The members against `properties` and `additionalProperties`, and the required properties
/// found in the same pass. A missing one is reported before a member that fails, as when
/// `required` was checked first.
fn check_object(
    props: &[Prop],
    additional: Option<&Schema>,
    required: Option<u64>,
    obj: Checked<'_>,
    path: &Path<'_>,
    depth: usize,
) -> Check {
    let (mut after, mut found, mut failed) = (0, 0u64, None);
    for (key, v) in obj.members() {
        let path = &Path::Key(path, &key);
        let named = find_sorted(props, &key, after, |p| &p.name);
        if let Some(i) = named {
            after = i + 1;
            found |= 1u64.checked_shl(i as u32).unwrap_or(0);
        }
        let verdict = match (named.and_then(|i| props.get(i)), additional) {
            (Some(p), _) => p.schema.check(v, path, depth + 1),
            (None, Some(Schema(Node::Never))) => Err(format!("{path}: unknown property")),
            (None, Some(sub)) => sub.check(v, path, depth + 1),
            (None, None) => Ok(()),
        };
        if let Err(why) = verdict {
            failed = Some(why);
            break;
        }
    }
    if obj.kind() != 0 {
        return failed.map_or(Ok(()), Err);
    }
    let all_found = required.is_some_and(|r| found & r == r);
    match (all_found, failed) {
        (true, None) => Ok(()),
        // The pass stopped at a member that failed: whether one is missing is looked up.
        (_, failed) => match first_missing(props, obj, failed.is_none().then_some(found)) {
            Some(name) => Err(format!("{path}: missing required property \"{name}\"")),
            None => failed.map_or(Ok(()), Err),
        },
    }
}

/// The required property missing from `obj` that comes first in `required` as written; `found`
/// has a bit for each of the first 64 properties seen, when a whole pass found them.
fn first_missing<'p>(props: &'p [Prop], obj: Checked<'_>, found: Option<u64>) -> Option<&'p str> {
    let present = |i: usize, p: &Prop| match (found, 1u64.checked_shl(i as u32)) {
        (Some(found), Some(bit)) => found & bit != 0,
        _ => obj.0.contains_key(&p.name),
    };
    props
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, p, p.required_at?)))
        .filter(|&(i, p, _)| !present(i, p))
        .min_by_key(|&(_, _, at)| at)
        .map(|(_, p, _)| &*p.name)
}

#[cfg(test)]
mod tests;
