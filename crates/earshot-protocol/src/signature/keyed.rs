//! Secrets with their HMAC key schedule done once: [`KeyedSecret`] (one
//! secret's keyed HMAC state, cloned per message) and [`Verifier`] (the
//! candidates a receiver checks every delivery against).

use std::fmt;
use std::sync::Arc;

use hmac::{KeyInit, Mac};

use super::{Candidate, HmacSha256, Verdict, verify_with};

/// One secret with the HMAC key setup (the inner and outer padded-key
/// blocks) already hashed. [`KeyedSecret::digest`] clones that state, so a
/// message costs only its own blocks. `Debug` never shows the secret or the
/// state derived from it.
#[derive(Clone)]
pub struct KeyedSecret {
    mac: HmacSha256,
}

impl KeyedSecret {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            mac: <HmacSha256 as KeyInit>::new_from_slice(secret)
                .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length")),
        }
    }

    /// The raw 32-byte `v1` digest: HMAC-SHA256(secret, `"<t>."` + body).
    pub fn digest(&self, timestamp: i64, body: &[u8]) -> [u8; 32] {
        let mut prefix = TimestampPrefix::default();
        let mut mac = self.mac.clone();
        mac.update(prefix.text(timestamp));
        mac.update(body);
        mac.finalize().into_bytes().into()
    }
}

impl fmt::Debug for KeyedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyedSecret(…)")
    }
}

/// The candidate secrets of a receiver, keyed once when it starts; verifying
/// a delivery then parses the header without allocating and hashes only the
/// message. Same verdicts as [`super::verify`] with the same candidates.
#[derive(Clone)]
pub struct Verifier {
    /// Labels are shared with the verdicts, so a verdict does not allocate.
    keys: Vec<(Arc<str>, KeyedSecret)>,
}

impl Verifier {
    pub fn new(candidates: &[Candidate]) -> Self {
        Self {
            keys: candidates
                .iter()
                .map(|c| (Arc::from(c.label), KeyedSecret::new(c.secret)))
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks a delivery exactly as [`super::verify`] does.
    pub fn verify(&self, header: &str, body: &[u8], now: i64, tolerance_secs: u64) -> Verdict {
        verify_with(
            header,
            now,
            tolerance_secs,
            self.keys.len(),
            |i| Arc::clone(&self.keys[i].0),
            |i, timestamp| self.keys[i].1.digest(timestamp, body),
        )
    }
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(label, _)| label))
            .finish()
    }
}

/// `"<t>."` written on the stack: the signed message's prefix without a
/// heap allocation.
#[derive(Default)]
pub(super) struct TimestampPrefix {
    buf: [u8; 21], // "-9223372036854775808" is 20 bytes, plus the dot
}

impl TimestampPrefix {
    pub(super) fn text(&mut self, timestamp: i64) -> &[u8] {
        let mut end = self.buf.len();
        end -= 1;
        self.buf[end] = b'.';
        let mut magnitude = timestamp.unsigned_abs();
        loop {
            end -= 1;
            self.buf[end] = b'0' + (magnitude % 10) as u8;
            magnitude /= 10;
            if magnitude == 0 {
                break;
            }
        }
        if timestamp < 0 {
            end -= 1;
            self.buf[end] = b'-';
        }
        &self.buf[end..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::test_support::{OLD_SECRET, SECRET, T, current_and_previous};
    use crate::signature::{digest, sign, verify};

    #[test]
    fn the_prefix_is_the_decimal_timestamp_and_a_dot() {
        for t in [i64::MIN, -10, -1, 0, 7, 10, T, i64::MAX] {
            let mut prefix = TimestampPrefix::default();
            assert_eq!(prefix.text(t), format!("{t}.").as_bytes());
        }
    }

    #[test]
    fn a_keyed_secret_reused_gives_the_one_shot_digest_every_time() {
        let key = KeyedSecret::new(SECRET);
        for body in [&b""[..], b"x", &[7u8; 1000]] {
            assert_eq!(key.digest(T, body), digest(SECRET, T, body));
            assert_eq!(key.digest(-T, body), digest(SECRET, -T, body));
        }
    }

    #[test]
    fn the_verifier_agrees_with_verify() {
        let verifier = Verifier::new(&current_and_previous());
        let d = "0".repeat(64);
        for header in [
            sign(SECRET, T, b"{}"),
            sign(OLD_SECRET, T, b"{}"),
            sign(b"other", T, b"{}"),
            format!("X-SVC-Signature: t={T}, v0=zz ,v1={d}"),
            format!(
                "t={T},v1={d},v1={}",
                crate::signature::digest_hex(OLD_SECRET, T, b"{}")
            ),
            format!("t={T},,v1={d}"),
            format!("t=1,t=2,v1={d}"),
            format!("t={T}"),
            String::new(),
        ] {
            for now in [T, T + 301] {
                assert_eq!(
                    verifier.verify(&header, b"{}", now, 300),
                    verify(&header, b"{}", &current_and_previous(), now, 300),
                    "{header}"
                );
            }
        }
    }

    #[test]
    fn debug_shows_labels_only() {
        let shown = format!("{:?}", Verifier::new(&current_and_previous()));
        assert!(shown.contains("previous"), "{shown}");
        assert!(!shown.contains("whsec"), "{shown}");
        assert_eq!(format!("{:?}", KeyedSecret::new(SECRET)), "KeyedSecret(…)");
    }
}
