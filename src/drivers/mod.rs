//! Hardware drivers: the only code in the module that touches device registers. One driver per
//! folder; each is written against a narrow bus trait so the same code runs on the Indy and, in
//! host tests, against the iris rig's device models.

pub mod newport;
pub mod seeq;
