//! Signature checks computed apart from earshot's own signer, and the
//! record fields tests read.

use serde_json::Value;

use crate::Captured;

/// Lowercase hex HMAC-SHA256 of the concatenation of `parts`: the
/// receivers' own computation, right or wrong.
pub fn hmac_hex(secret: &[u8], parts: &[&[u8]]) -> String {
    use hmac::{Hmac, KeyInit, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `t` and the first `v1` of an `X-SVC-Signature` value, parsed by hand.
pub fn signature_parts(header: &str) -> Option<(i64, String)> {
    let mut timestamp = None;
    let mut digest = None;
    for part in header.split(',') {
        let (key, value) = part.split_once('=')?;
        match key {
            "t" => timestamp = value.parse::<i64>().ok(),
            "v1" if digest.is_none() => digest = Some(value.to_owned()),
            _ => {}
        }
    }
    Some((timestamp?, digest?))
}

/// Whether a captured delivery verifies with `secret` now (300 s), using
/// the crate's own verifier.
pub fn verifies_with(request: &Captured, secret: &str) -> bool {
    earshot_core::signature::verify(
        request.header("x-svc-signature"),
        &request.body,
        &[earshot_core::signature::Candidate {
            label: "candidate",
            secret: secret.as_bytes(),
        }],
        chrono::Utc::now().timestamp(),
        earshot_core::signature::DEFAULT_TOLERANCE_SECS,
    )
    .is_valid()
}

/// A record's timestamp field, parsed (panics when absent or malformed).
pub fn timestamp_of(record: &Value, field: &str) -> chrono::DateTime<chrono::FixedOffset> {
    let text = record[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is a string in {record}"));
    chrono::DateTime::parse_from_rfc3339(text).unwrap_or_else(|error| panic!("{field}: {error}"))
}
