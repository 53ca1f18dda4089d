//! The common ways of hashing the wrong bytes or with the wrong key
//! ([`Mistake`]) and the [`Variant`] digest each one computes for a body.

use std::borrow::Cow;
use std::fmt;

use super::json_forms::JsonForms;
use super::{digest, hmac_parts};

/// A way of getting the signed bytes or the key wrong. [`diagnose`](super::diagnose()) tries
/// each, in this order (most common first), on both sides: "the header was
/// computed over the body after this change" and "the receiver's digest is
/// what this mistake produces".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mistake {
    /// JSON re-serialised without whitespace, original key order.
    BodyCompacted,
    /// JSON re-serialised with a 2-space indent, original key order.
    BodyPrettyPrinted,
    /// JSON re-serialised compact with object keys sorted.
    BodyKeysSorted,
    /// JSON re-serialised with a 2-space indent and keys sorted.
    BodyKeysSortedPretty,
    /// JSON re-serialised with `", "` and `": "` separators (Python's
    /// `json.dumps` default), original key order.
    BodySpacedSeparators,
    /// As [`Mistake::BodySpacedSeparators`] with keys sorted.
    BodySpacedSeparatorsKeysSorted,
    /// HMAC over the body alone, without `"<t>."`.
    PrefixOmitted,
    /// A `\n` appended to the body.
    TrailingNewlineAdded,
    /// Trailing `\r`/`\n` removed from the body.
    TrailingNewlineStripped,
    /// `\r\n` turned into `\n`.
    CrlfToLf,
    /// Lone `\n` turned into `\r\n`.
    LfToCrlf,
    /// The secret used with a `\n` appended (read from a file untrimmed).
    SecretTrailingNewline,
    /// The secret used with surrounding whitespace removed.
    SecretTrimmed,
}

impl Mistake {
    /// Every mistake, most common first; the order findings are reported in.
    pub const ALL: [Mistake; 13] = [
        Mistake::BodyCompacted,
        Mistake::BodyPrettyPrinted,
        Mistake::BodyKeysSorted,
        Mistake::BodyKeysSortedPretty,
        Mistake::BodySpacedSeparators,
        Mistake::BodySpacedSeparatorsKeysSorted,
        Mistake::PrefixOmitted,
        Mistake::TrailingNewlineAdded,
        Mistake::TrailingNewlineStripped,
        Mistake::CrlfToLf,
        Mistake::LfToCrlf,
        Mistake::SecretTrailingNewline,
        Mistake::SecretTrimmed,
    ];

    /// A stable machine-readable name.
    pub fn code(self) -> &'static str {
        match self {
            Self::BodyCompacted => "body_compacted",
            Self::BodyPrettyPrinted => "body_pretty_printed",
            Self::BodyKeysSorted => "body_keys_sorted",
            Self::BodyKeysSortedPretty => "body_keys_sorted_pretty",
            Self::BodySpacedSeparators => "body_spaced_separators",
            Self::BodySpacedSeparatorsKeysSorted => "body_spaced_separators_keys_sorted",
            Self::PrefixOmitted => "prefix_omitted",
            Self::TrailingNewlineAdded => "trailing_newline_added",
            Self::TrailingNewlineStripped => "trailing_newline_stripped",
            Self::CrlfToLf => "crlf_to_lf",
            Self::LfToCrlf => "lf_to_crlf",
            Self::SecretTrailingNewline => "secret_trailing_newline",
            Self::SecretTrimmed => "secret_trimmed",
        }
    }

    /// What the change does, as a phrase: "the body re-serialised …".
    pub fn describe(self) -> &'static str {
        match self {
            Self::BodyCompacted => {
                "the body re-serialised compact (whitespace removed, key order kept)"
            }
            Self::BodyPrettyPrinted => "the body pretty-printed (2-space indent, key order kept)",
            Self::BodyKeysSorted => "the body re-serialised compact with its keys sorted",
            Self::BodyKeysSortedPretty => "the body pretty-printed with its keys sorted",
            Self::BodySpacedSeparators => {
                "the body re-serialised with `, ` and `: ` separators (Python json.dumps default)"
            }
            Self::BodySpacedSeparatorsKeysSorted => {
                "the body re-serialised with `, ` and `: ` separators and sorted keys"
            }
            Self::PrefixOmitted => "the body alone, without the `<t>.` prefix",
            Self::TrailingNewlineAdded => "the body with a trailing newline added",
            Self::TrailingNewlineStripped => "the body with its trailing newline stripped",
            Self::CrlfToLf => "the body with CRLF line endings turned into LF",
            Self::LfToCrlf => "the body with LF line endings turned into CRLF",
            Self::SecretTrailingNewline => "the secret with a trailing newline",
            Self::SecretTrimmed => "the secret with its surrounding whitespace removed",
        }
    }

    pub(super) fn sender_advice(self) -> &'static str {
        match self {
            Self::BodyCompacted => {
                "the compact original was signed and the body you have was pretty-printed or \
                 re-formatted after signing; verify the raw request bytes exactly as received"
            }
            Self::BodyPrettyPrinted
            | Self::BodyKeysSorted
            | Self::BodyKeysSortedPretty
            | Self::BodySpacedSeparators
            | Self::BodySpacedSeparatorsKeysSorted => {
                "the body you have was re-serialised after signing; verify the raw request bytes \
                 exactly as received, before any JSON parsing"
            }
            Self::PrefixOmitted => {
                "whoever produced this header signed it wrongly (the platform signs `<t>.` \
                 followed by the body); to build a test header use `earshot sign`"
            }
            Self::TrailingNewlineAdded => {
                "your copy of the body lost a trailing newline (an editor, `$(…)` or a trim); \
                 capture the body byte for byte"
            }
            Self::TrailingNewlineStripped => {
                "your copy of the body has a trailing newline the signed body did not have \
                 (editors and `echo` add one); save it with `printf '%s'` or from the raw capture"
            }
            Self::CrlfToLf => {
                "your copy of the body has CRLF line endings where the signed body had LF \
                 (a Windows editor, git autocrlf or copy-paste)"
            }
            Self::LfToCrlf => {
                "your copy of the body has LF line endings where the signed body had CRLF \
                 (a text-mode read or git autocrlf)"
            }
            Self::SecretTrailingNewline => {
                "the signer's secret ends with a newline (read from a file untrimmed); \
                 platform secrets contain no whitespace, so fix the signer's secret"
            }
            Self::SecretTrimmed => {
                "the secret you gave has surrounding whitespace that the signer's does not; \
                 remove it"
            }
        }
    }

    pub(super) fn receiver_advice(self) -> &'static str {
        match self {
            Self::BodyCompacted
            | Self::BodyPrettyPrinted
            | Self::BodyKeysSorted
            | Self::BodyKeysSortedPretty
            | Self::BodySpacedSeparators
            | Self::BodySpacedSeparatorsKeysSorted => {
                "the receiver parses the JSON and hashes its own re-serialisation; it must hash \
                 the raw request bytes before any parsing"
            }
            Self::PrefixOmitted => {
                "the receiver must hash `<t>.` (the t from the header and a dot) followed by the \
                 raw body"
            }
            Self::TrailingNewlineAdded => {
                "the receiver appends a newline before hashing; hash the raw bytes unchanged"
            }
            Self::TrailingNewlineStripped => {
                "the receiver strips the trailing newline (strip/trim) before hashing; hash the \
                 raw bytes unchanged"
            }
            Self::CrlfToLf | Self::LfToCrlf => {
                "the receiver converts line endings (a text-mode read); read the body as bytes"
            }
            Self::SecretTrailingNewline => {
                "the receiver's secret ends with a newline (read from a file or env var \
                 untrimmed); strip it"
            }
            Self::SecretTrimmed => {
                "the receiver uses the secret without the whitespace around the one you gave; \
                 check which one the subscription has"
            }
        }
    }

    fn is_body_reserialisation(self) -> bool {
        matches!(
            self,
            Self::BodyCompacted
                | Self::BodyPrettyPrinted
                | Self::BodyKeysSorted
                | Self::BodyKeysSortedPretty
                | Self::BodySpacedSeparators
                | Self::BodySpacedSeparatorsKeysSorted
        )
    }
}

impl fmt::Display for Mistake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum SecretTweak {
    AsGiven,
    AppendNewline,
    Trim,
}

/// One way of computing a wrong digest: the bytes hashed after the prefix,
/// whether the prefix is included, and what happens to the secret. Also the
/// other mistakes that lead to exactly the same computation.
pub(super) struct Variant<'b> {
    pub(super) mistake: Mistake,
    pub(super) same_as: Vec<Mistake>,
    with_prefix: bool,
    body: Cow<'b, [u8]>,
    secret: SecretTweak,
}

impl Variant<'_> {
    fn same_computation(&self, with_prefix: bool, body: &[u8], secret: SecretTweak) -> bool {
        self.with_prefix == with_prefix && self.secret == secret && *self.body == *body
    }

    /// The digest this mistake produces with `secret`, or `None` when the
    /// mistake changes nothing for this secret.
    pub(super) fn digest(&self, secret: &[u8], timestamp: i64) -> Option<[u8; 32]> {
        let key: Cow<[u8]> = match self.secret {
            SecretTweak::AsGiven => Cow::Borrowed(secret),
            SecretTweak::AppendNewline => {
                let mut key = secret.to_vec();
                key.push(b'\n');
                Cow::Owned(key)
            }
            SecretTweak::Trim => {
                let trimmed = secret.trim_ascii();
                if trimmed.len() == secret.len() {
                    return None;
                }
                Cow::Borrowed(trimmed)
            }
        };
        if self.with_prefix {
            Some(digest(&key, timestamp, &self.body))
        } else {
            Some(hmac_parts(&key, &[&self.body]))
        }
    }
}

/// Every mistake that changes the computation for this body, each with the
/// later mistakes that would compute exactly the same thing.
pub(super) fn variants(body: &[u8]) -> Vec<Variant<'_>> {
    let json = JsonForms::of(body);
    let mut out: Vec<Variant> = Vec::new();
    for mistake in Mistake::ALL {
        let (with_prefix, changed, secret): (bool, Option<Cow<[u8]>>, SecretTweak) = match mistake {
            Mistake::PrefixOmitted => (false, Some(Cow::Borrowed(body)), SecretTweak::AsGiven),
            Mistake::SecretTrailingNewline => {
                (true, Some(Cow::Borrowed(body)), SecretTweak::AppendNewline)
            }
            Mistake::SecretTrimmed => (true, Some(Cow::Borrowed(body)), SecretTweak::Trim),
            m if m.is_body_reserialisation() => (
                true,
                json.as_ref().map(|j| Cow::Owned(j.render(m))),
                SecretTweak::AsGiven,
            ),
            Mistake::TrailingNewlineAdded => {
                let mut changed = body.to_vec();
                changed.push(b'\n');
                (true, Some(Cow::Owned(changed)), SecretTweak::AsGiven)
            }
            Mistake::TrailingNewlineStripped => {
                let end = body
                    .iter()
                    .rposition(|&b| b != b'\n' && b != b'\r')
                    .map_or(0, |i| i + 1);
                (
                    true,
                    Some(Cow::Borrowed(&body[..end])),
                    SecretTweak::AsGiven,
                )
            }
            Mistake::CrlfToLf => (
                true,
                Some(Cow::Owned(crlf_to_lf(body))),
                SecretTweak::AsGiven,
            ),
            Mistake::LfToCrlf => (
                true,
                Some(Cow::Owned(lf_to_crlf(body))),
                SecretTweak::AsGiven,
            ),
            _ => (true, None, SecretTweak::AsGiven),
        };
        let Some(changed) = changed else { continue };
        if with_prefix && secret == SecretTweak::AsGiven && *changed == *body {
            continue; // the mistake changes nothing for this body
        }
        if let Some(earlier) = out
            .iter_mut()
            .find(|v| v.same_computation(with_prefix, &changed, secret))
        {
            earlier.same_as.push(mistake);
            continue;
        }
        out.push(Variant {
            mistake,
            same_as: Vec::new(),
            with_prefix,
            body: changed,
            secret,
        });
    }
    out
}

fn crlf_to_lf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        if body[i] == b'\r' && body.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(body[i]);
        i += 1;
    }
    out
}

fn lf_to_crlf(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 16);
    for (i, &b) in body.iter().enumerate() {
        if b == b'\n' && (i == 0 || body[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ending_conversions_touch_only_line_endings() {
        assert_eq!(crlf_to_lf(b"a\r\nb\rc\n\r\n"), b"a\nb\rc\n\n");
        assert_eq!(lf_to_crlf(b"\na\r\nb\n"), b"\r\na\r\nb\r\n");
    }
}
