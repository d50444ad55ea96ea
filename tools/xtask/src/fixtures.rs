//! Transitional: the module's host tests still include this file by path; they are moving to
//! the `irix7-fixtures` dev-dependency, and then this file goes.

pub use irix7_fixtures::*;
