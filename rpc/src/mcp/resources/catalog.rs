//! Resources and resource templates: tables of readable URIs, listed in registration order.

use crate::mcp::guard::authority::Door;
use crate::mcp::wire::tool::{Content, ContentSource, StreamKind, ToolError};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use serde_json::{Map, Value};

/// One item of a `resources/read` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceContents {
    Text {
        uri: String,
        mime_type: Option<String>,
        text: String,
    },
    /// Raw bytes; base64-encoded into `blob` on the wire.
    Blob {
        uri: String,
        mime_type: Option<String>,
        data: Vec<u8>,
    },
}

impl ResourceContents {
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        let (uri, mime) = match self {
            ResourceContents::Text { uri, mime_type, .. }
            | ResourceContents::Blob { uri, mime_type, .. } => (uri, mime_type),
        };
        m.insert("uri".into(), Value::from(uri.as_str()));
        if let Some(mt) = mime {
            m.insert("mimeType".into(), Value::from(mt.as_str()));
        }
        match self {
            ResourceContents::Text { text, .. } => {
                m.insert("text".into(), Value::from(text.as_str()));
            }
            ResourceContents::Blob { data, .. } => {
                m.insert(
                    "blob".into(),
                    Value::from(crate::mcp::wire::base64::base64(data)),
                );
            }
        }
        Value::Object(m)
    }
}

/// What the streamed member holds until the body is written: the JSON of the result is
/// rendered once with it, then split there, so the members around it come out exactly as a
/// complete answer would have them. NULs never occur in a URI or MIME type.
pub(crate) const STREAM_MARK: &str = "\u{0}irix7-streamed\u{0}";

/// Opens a streamed resource (see [`StreamDef`]): its one item as a
/// [`Content::Stream`] of kind [`StreamKind::ResourceBlob`] or [`StreamKind::ResourceText`].
pub type OpenFn<C> = fn(&mut C, &str) -> Result<Content<C>, ToolError>;

/// A streamed item taken apart: its JSON with [`STREAM_MARK`] in place of its data, whether
/// the data is text, and where the data comes from.
pub(crate) struct Streamed<C> {
    pub(crate) item: Value,
    pub(crate) text: bool,
    pub(crate) source: Box<dyn ContentSource<C>>,
}

impl<C> Streamed<C> {
    /// `None` for content that is not a streamed resource item.
    pub(crate) fn of(content: Content<C>) -> Option<Self> {
        let Content::Stream(kind, source) = content else {
            return None;
        };
        let (uri, mime_type, text) = match kind {
            StreamKind::ResourceBlob { uri, mime_type } => (uri, mime_type, false),
            StreamKind::ResourceText { uri, mime_type } => (uri, mime_type, true),
            _ => return None,
        };
        let mut m = Map::new();
        m.insert("uri".into(), Value::from(uri));
        m.insert("mimeType".into(), Value::from(mime_type));
        let key = if text { "text" } else { "blob" };
        m.insert(key.into(), Value::from(STREAM_MARK));
        Some(Streamed {
            item: Value::Object(m),
            text,
            source,
        })
    }
}

/// A fixed resource whose read is answered as a stream: the same URI's [`ResourceDef`] is its
/// listing, this its reader, used in place of the def's `read`.
pub struct StreamDef<C> {
    pub uri: &'static str,
    pub open: OpenFn<C>,
}

copy_for_any_context!(StreamDef);

/// A family of resources whose reads are answered as streams: the same template's
/// [`TemplateDef`] is its listing, this its reader (which gets the whole URI, as `OpenFn`).
pub struct TemplateStreamDef<C> {
    pub uri_template: &'static str,
    pub open: OpenFn<C>,
}

copy_for_any_context!(TemplateStreamDef);

/// Reads a fixed resource. A `NOT_FOUND` error becomes the protocol's not-found error.
pub type ReadFn<C> = fn(&mut C, &str) -> Result<Vec<ResourceContents>, ToolError>;

/// Reads a templated resource; `vars` are the template's variables as matched in the URI.
pub type TemplateReadFn<C> =
    fn(&mut C, &str, &[(&str, &str)]) -> Result<Vec<ResourceContents>, ToolError>;

/// A fixed resource (`irix7://status`).
pub struct ResourceDef<C> {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    pub mime_type: Option<&'static str>,
    pub read: ReadFn<C>,
}

copy_for_any_context!(ResourceDef);

/// A family of resources named by an RFC 6570 template (`test://template/{id}/data`): a
/// simple variable matches one or more characters other than `/`; a reserved one (`{+path}`,
/// level 2) matches one or more of any, up to the template's next literal.
pub struct TemplateDef<C> {
    pub uri_template: &'static str,
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    pub mime_type: Option<&'static str>,
    pub read: TemplateReadFn<C>,
}

copy_for_any_context!(TemplateDef);

fn describe(
    m: &mut Map<String, Value>,
    name: &str,
    title: Option<&str>,
    description: &str,
    mime: Option<&str>,
) {
    m.insert("name".into(), Value::from(name));
    if let Some(t) = title {
        m.insert("title".into(), Value::from(t));
    }
    m.insert("description".into(), Value::from(description));
    if let Some(mt) = mime {
        m.insert("mimeType".into(), Value::from(mt));
    }
}

impl<C> ResourceDef<C> {
    pub(crate) fn listing(&self) -> Value {
        let mut m = Map::new();
        m.insert("uri".into(), Value::from(self.uri));
        describe(
            &mut m,
            self.name,
            self.title,
            self.description,
            self.mime_type,
        );
        Value::Object(m)
    }
}

impl<C> TemplateDef<C> {
    pub(crate) fn listing(&self) -> Value {
        let mut m = Map::new();
        m.insert("uriTemplate".into(), Value::from(self.uri_template));
        describe(
            &mut m,
            self.name,
            self.title,
            self.description,
            self.mime_type,
        );
        Value::Object(m)
    }

    /// The template's variables if `uri` matches it.
    pub(crate) fn matches<'u>(&self, uri: &'u str) -> Option<Vec<(&'static str, &'u str)>> {
        match_template(self.uri_template, uri)
    }
}

/// Matches a level-1 template against a URI.
pub(crate) fn match_template<'u>(
    template: &'static str,
    uri: &'u str,
) -> Option<Vec<(&'static str, &'u str)>> {
    let mut vars = Vec::new();
    let mut t = template;
    let mut u = uri;
    loop {
        match t.find('{') {
            None => return (t == u).then_some(vars),
            Some(open) => {
                let literal = t.get(..open)?;
                u = u.strip_prefix(literal)?;
                let close = t.get(open..)?.find('}')? + open;
                let name = t.get(open + 1..close)?;
                t = t.get(close + 1..)?;
                // A simple variable runs to the next '/' (or the end); a reserved one to the
                // template's next literal (or the end). The rest must match.
                let (name, end) = match name.strip_prefix('+') {
                    Some(name) => {
                        let next = t.get(..t.find('{').unwrap_or(t.len()))?;
                        let end = if next.is_empty() {
                            u.len()
                        } else {
                            u.find(next)?
                        };
                        (name, end)
                    }
                    None => (name, u.find('/').unwrap_or(u.len())),
                };
                let value = u.get(..end)?;
                if value.is_empty() {
                    return None;
                }
                vars.push((name, value));
                u = u.get(end..)?;
            }
        }
    }
}

/// The server's resources and templates.
pub struct ResourceCatalog<C> {
    pub(crate) resources: Vec<ResourceDef<C>>,
    pub(crate) templates: Vec<TemplateDef<C>>,
    pub(crate) streams: Vec<StreamDef<C>>,
    pub(crate) template_streams: Vec<TemplateStreamDef<C>>,
}

impl<C> Clone for ResourceCatalog<C> {
    fn clone(&self) -> Self {
        ResourceCatalog {
            resources: self.resources.clone(),
            templates: self.templates.clone(),
            streams: self.streams.clone(),
            template_streams: self.template_streams.clone(),
        }
    }
}

impl<C> Default for ResourceCatalog<C> {
    fn default() -> Self {
        ResourceCatalog {
            resources: Vec::new(),
            templates: Vec::new(),
            streams: Vec::new(),
            template_streams: Vec::new(),
        }
    }
}

impl<C> ResourceCatalog<C> {
    /// Adds fixed resources (a later duplicate URI is ignored: the first one wins).
    pub fn register(&mut self, table: &[ResourceDef<C>]) {
        for def in table {
            if !self.resources.iter().any(|r| r.uri == def.uri) {
                self.resources.push(*def);
            }
        }
    }

    /// Adds templates.
    pub fn register_templates(&mut self, table: &[TemplateDef<C>]) {
        self.templates.extend_from_slice(table);
    }

    /// Adds streamed readers (a later duplicate URI is ignored: the first one wins).
    pub fn register_streams(&mut self, table: &[StreamDef<C>]) {
        for def in table {
            if !self.streams.iter().any(|r| r.uri == def.uri) {
                self.streams.push(*def);
            }
        }
    }

    /// Adds streamed readers of templates.
    pub fn register_template_streams(&mut self, table: &[TemplateStreamDef<C>]) {
        self.template_streams.extend_from_slice(table);
    }

    /// The streamed reader of `uri`, if it has one: a fixed resource's, else the first
    /// matching template's.
    pub(crate) fn stream_for(&self, uri: &str) -> Option<OpenFn<C>> {
        if let Some(s) = self.streams.iter().find(|s| s.uri == uri) {
            return Some(s.open);
        }
        if self.resources.iter().any(|r| r.uri == uri) {
            return None;
        }
        self.template_streams
            .iter()
            .find(|t| match_template(t.uri_template, uri).is_some())
            .map(|t| t.open)
    }

    /// The door a read of `uri` goes through: the fixed resource of that URI, else the first
    /// template it matches (a URI nothing serves has none).
    pub(crate) fn door_of(&self, uri: &str) -> Option<Door> {
        let fixed = (self.resources.iter().map(|r| r.uri))
            .chain(self.streams.iter().map(|s| s.uri))
            .find(|u| *u == uri);
        if let Some(u) = fixed {
            return Some(Door::Resource(u));
        }
        (self.templates.iter().map(|t| t.uri_template))
            .chain(self.template_streams.iter().map(|t| t.uri_template))
            .find(|t| match_template(t, uri).is_some())
            .map(Door::Template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_matching() {
        let t = "test://template/{id}/data";
        assert_eq!(
            match_template(t, "test://template/123/data"),
            Some(alloc::vec![("id", "123")])
        );
        assert_eq!(match_template(t, "test://template//data"), None);
        assert_eq!(match_template(t, "test://template/1/2/data"), None);
        assert_eq!(match_template(t, "test://template/1/datax"), None);
        assert_eq!(
            match_template("a://{x}", "a://y"),
            Some(alloc::vec![("x", "y")])
        );
        assert_eq!(match_template("a://b", "a://b"), Some(alloc::vec![]));
    }

    #[test]
    fn reserved_variables_match_across_slashes() {
        let t = "irix7://fs/{+path}";
        assert_eq!(
            match_template(t, "irix7://fs/etc/motd"),
            Some(alloc::vec![("path", "etc/motd")])
        );
        assert_eq!(match_template(t, "irix7://fs/"), None);
        assert_eq!(match_template(t, "irix7://proc"), None);
        let t = "x://{+dir}/end/{id}";
        assert_eq!(
            match_template(t, "x://a/b/end/7"),
            Some(alloc::vec![("dir", "a/b"), ("id", "7")])
        );
        assert_eq!(match_template(t, "x://a/b/7"), None);
    }

    fn open_a(_: &mut (), _: &str) -> Result<Content<()>, ToolError> {
        Ok(Content::text("a"))
    }

    fn open_b(_: &mut (), _: &str) -> Result<Content<()>, ToolError> {
        Ok(Content::text("b"))
    }

    #[test]
    fn a_streamed_reader_is_found_by_its_uri_and_the_first_one_wins() {
        let mut c = ResourceCatalog::<()>::default();
        c.register_streams(&[
            StreamDef {
                uri: "irix7://screen",
                open: open_a,
            },
            StreamDef {
                uri: "irix7://screen",
                open: open_b,
            },
        ]);
        let open = c.stream_for("irix7://screen").unwrap();
        let Ok(Content::Text(text)) = open(&mut (), "irix7://screen") else {
            panic!("opened");
        };
        assert_eq!(text, "a");
        assert!(c.stream_for("irix7://status").is_none());
    }
}
