//! The three-line signature checklist (header, clock, secret) that
//! `earshot verify` prints and the Signatures pane draws: one wording,
//! built here from a [`Diagnosis`], so the two front ends cannot drift.
//! Pure: the callers pass `now`, the tolerance and the secrets' masks.

use super::{Diagnosis, Severity, parse_header};

/// One checklist line: passed (`Some(true)`), failed, or not checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub passed: Option<bool>,
    pub text: String,
}

impl Check {
    /// The mark in front of the line: ✓ passed, ✗ failed, · not checked.
    pub fn mark(&self) -> &'static str {
        match self.passed {
            Some(true) => "✓",
            Some(false) => "✗",
            None => "·",
        }
    }
}

impl Severity {
    /// The mark in front of a finding: ✗ problem, ! warning, ✓ fine.
    pub fn mark(self) -> &'static str {
        match self {
            Self::Problem => "✗",
            Self::Warning => "!",
            Self::Ok => "✓",
        }
    }

    /// The stable name in JSON output.
    pub fn code(self) -> &'static str {
        match self {
            Self::Problem => "problem",
            Self::Warning => "warning",
            Self::Ok => "ok",
        }
    }
}

/// A secret the check tried, in the order given (current first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TriedSecret<'a> {
    pub label: &'a str,
    /// The secret as it may be shown ([`crate::redact::mask`]).
    pub masked: String,
}

/// What the checklist is built from besides the diagnosis.
#[derive(Clone, Copy, Debug)]
pub struct ChecklistInput<'a> {
    /// The `X-SVC-Signature` value as received.
    pub header: &'a str,
    pub body_len: usize,
    pub tried: &'a [TriedSecret<'a>],
    /// The receiver's clock, Unix seconds.
    pub now: i64,
    pub tolerance_secs: u64,
}

/// "signed 12 s ago", "signed 3 s in the future", "signed this second".
pub fn age(skew_secs: i64) -> String {
    let magnitude = crate::duration_text::of_secs(skew_secs.unsigned_abs());
    match skew_secs {
        0 => "signed this second".to_owned(),
        s if s > 0 => format!("signed {magnitude} ago"),
        _ => format!("signed {magnitude} in the future"),
    }
}

/// Three lines, one per check: header, clock, secret.
pub fn checklist(input: &ChecklistInput<'_>, diagnosis: &Diagnosis) -> Vec<Check> {
    let ChecklistInput {
        header,
        body_len,
        tried,
        now,
        tolerance_secs,
    } = *input;
    let clock = format!(
        "timestamp within {} of now ({now})",
        crate::duration_text::of_secs(tolerance_secs)
    );
    let secret = "signature matches a secret you gave";
    let check = |passed: Option<bool>, text: String| Check { passed, text };
    let parsed = match parse_header(header.trim()) {
        Ok(parsed) => parsed,
        Err(error) => {
            return vec![
                check(Some(false), format!("header well-formed: {error}")),
                check(None, format!("{clock}: not checked")),
                check(None, format!("{secret}: not checked")),
            ];
        }
    };
    let skew = now.saturating_sub(parsed.timestamp);
    let count = parsed.signatures.len();
    let matched = diagnosis
        .verdict
        .matched()
        .and_then(|label| tried.iter().position(|t| t.label == label));
    let secret_check = match (matched, tried) {
        (_, []) => check(Some(false), format!("{secret}: no secret given")),
        (Some(i), _) => {
            let TriedSecret { label, masked } = &tried[i];
            let draining = if i > 0 {
                "; a rotation is draining"
            } else {
                ""
            };
            check(
                Some(true),
                format!("{secret}: the {label} one ({masked}{draining})"),
            )
        }
        (None, _) => {
            let labels: Vec<&str> = tried.iter().map(|t| t.label).collect();
            check(
                Some(false),
                format!("{secret}: none does (tried {})", labels.join(", ")),
            )
        }
    };
    vec![
        check(
            Some(true),
            format!(
                "header well-formed: t={}, {count} v1 value{}; body {body_len} bytes",
                parsed.timestamp,
                if count == 1 { "" } else { "s" }
            ),
        ),
        check(
            Some(skew.unsigned_abs() <= tolerance_secs),
            format!("{clock}: {}", age(skew)),
        ),
        secret_check,
    ]
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{SECRET, T, current_and_previous};
    use super::super::{diagnose, sign};
    use super::*;

    fn tried() -> Vec<TriedSecret<'static>> {
        ["current", "previous"]
            .into_iter()
            .map(|label| TriedSecret {
                label,
                masked: format!("{label}-mask"),
            })
            .collect()
    }

    fn lines(header: &str, now: i64) -> Vec<Check> {
        let tried = tried();
        let candidates = current_and_previous();
        let diagnosis = diagnose(header, b"{}", &candidates, now, 300, None);
        let input = ChecklistInput {
            header,
            body_len: 2,
            tried: &tried,
            now,
            tolerance_secs: 300,
        };
        checklist(&input, &diagnosis)
    }

    #[test]
    fn a_valid_header_passes_all_three_in_one_wording() {
        let header = sign(SECRET, T, b"{}");
        let checks = lines(&header, T);
        assert!(checks.iter().all(|c| c.passed == Some(true)), "{checks:?}");
        assert!(checks[0].text.ends_with("1 v1 value; body 2 bytes"));
        assert!(checks[1].text.ends_with(": signed this second"));
        assert!(checks[2].text.ends_with("the current one (current-mask)"));
    }

    #[test]
    fn a_malformed_header_leaves_the_rest_unchecked() {
        let checks = lines("nonsense", T);
        let passed: Vec<_> = checks.iter().map(|c| c.passed).collect();
        assert_eq!(passed, [Some(false), None, None]);
        assert_eq!(checks[1].mark(), "·");
    }

    #[test]
    fn age_reads_both_ways() {
        assert_eq!(age(0), "signed this second");
        assert_eq!(age(5), "signed 5 s ago");
        assert_eq!(age(-3), "signed 3 s in the future");
    }
}
