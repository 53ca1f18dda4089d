//! Serde models of the platform's records, one file per spec area.
//!
//! Documented fields are typed; every record keeps unknown fields in
//! `extra`, because the spec says some records carry fields "not shown".

pub mod agents;
pub mod dictation;
pub mod prerecorded;

use serde::Serializer;

use crate::redact::SecretString;

/// Serialises a secret's real value: only for request bodies.
pub(crate) fn expose_secret<S: Serializer>(
    secret: &SecretString,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(secret.expose())
}

pub(crate) fn expose_optional_secret<S: Serializer>(
    secret: &Option<SecretString>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => serializer.serialize_str(secret.expose()),
        None => serializer.serialize_none(),
    }
}
