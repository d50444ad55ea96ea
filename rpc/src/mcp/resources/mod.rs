//! What a client may read: the resource and template catalog, `resources/read` answered whole
//! ([`read`]) or streamed item by item ([`stream`]). Imports `tools`, `guard` and `wire`.

pub(crate) mod catalog;
pub(crate) mod read;
pub(crate) mod stream;
