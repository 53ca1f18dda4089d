//! Serde models of the platform's records, one file per spec area.
//!
//! Documented fields are typed; every record keeps unknown fields in
//! `extra`, because the spec says some records carry fields "not shown".

pub mod agents;
