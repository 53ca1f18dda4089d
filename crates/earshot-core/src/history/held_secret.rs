//! What a receiver's answers to signed duplicates ([`receiver_probe::ask`])
//! say about the secret it holds, for a delivery it refused with 401: the
//! verdict, in words that name the answers and the records they come from.
//! Pure: the caller passes the answers, what earshot knows of the
//! subscription, `now` and the clock to show times with.
//!
//! [`receiver_probe::ask`]: super::receiver_probe::ask

use serde::Serialize;

use super::receiver_probe::{ProbeAnswer, WRONG};
use crate::store::changes::Change;

/// The label of a send signed with the secret the operator gave.
pub const GIVEN: &str = "the secret you gave";
/// The label of a send signed with the second secret the operator gave.
pub const SECOND: &str = "the second secret you gave";

/// What the answers show (serialized as its [`Held::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Refuses every secret given, and a wrong one.
    Different,
    /// Accepts the (first) secret given, refuses a wrong one.
    Given,
    /// Accepts the second secret given only, refuses a wrong one.
    Second,
    /// Accepts both secrets given, refuses a wrong one.
    Both,
    /// Accepts a wrong signature too: it checks no signature.
    Anything,
    /// No answer: connection refused, a timeout.
    Down,
    /// Answers 5xx.
    Failing,
    /// Answers that are neither an acceptance (2xx) nor a refusal (401).
    Unclear,
}

impl Held {
    pub fn code(self) -> &'static str {
        match self {
            Held::Different => "holds_a_different_secret",
            Held::Given => "holds_the_secret_given",
            Held::Second => "holds_the_second_secret_given",
            Held::Both => "holds_both_secrets_given",
            Held::Anything => "checks_no_signature",
            Held::Down => "down",
            Held::Failing => "answers_5xx",
            Held::Unclear => "unclear",
        }
    }

    /// The receiver accepts a secret the operator gave, and refuses a
    /// wrong one.
    pub fn accepts_given(self) -> bool {
        matches!(self, Held::Given | Held::Second | Held::Both)
    }
}

impl Serialize for Held {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

fn accepted(answer: &ProbeAnswer) -> bool {
    answer
        .http_status
        .is_some_and(|code| (200..300).contains(&code))
}

/// Reads `answers` (the secrets given, in order, then a wrong one).
pub fn classify(answers: &[ProbeAnswer]) -> Held {
    if answers.iter().any(|answer| answer.http_status.is_none()) {
        return Held::Down;
    }
    if answers
        .iter()
        .any(|answer| answer.http_status.is_some_and(|code| code >= 500))
    {
        return Held::Failing;
    }
    let Some((wrong, given)) = answers.split_last() else {
        return Held::Unclear;
    };
    let clear = |answer: &ProbeAnswer| accepted(answer) || answer.refused();
    if given.is_empty() || !clear(wrong) || !given.iter().all(clear) {
        return Held::Unclear;
    }
    if accepted(wrong) {
        return if given.iter().all(accepted) {
            Held::Anything
        } else {
            Held::Unclear
        };
    }
    match (accepted(&given[0]), given.get(1).map(accepted)) {
        (true, Some(true)) => Held::Both,
        (true, _) => Held::Given,
        (false, Some(true)) => Held::Second,
        (false, _) => Held::Different,
    }
}

/// What earshot knows of the subscription besides the answers.
#[derive(Clone, Debug, PartialEq)]
pub struct Known {
    /// Its short id, for the next steps.
    pub short_id: String,
    /// `secret_version` of its record.
    pub secret_version: Option<u32>,
    /// Where that record comes from: "the platform's record, read now",
    /// "the record the sweep listed 3 min ago".
    pub record_from: String,
    /// The newest rotation earshot recorded for it.
    pub rotation: Option<Change>,
}

/// The verdict: what was learned, and what to do next.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub held: Held,
    pub text: String,
    pub next: Option<String>,
}

/// "HTTP 401 (signed with the secret you gave), HTTP 401 (signed with a
/// wrong secret)".
pub fn answers_text(answers: &[ProbeAnswer]) -> String {
    answers
        .iter()
        .map(answer_words)
        .collect::<Vec<_>>()
        .join(", ")
}

/// "HTTP 401 (signed with the secret you gave)".
fn answer_words(answer: &ProbeAnswer) -> String {
    format!(
        "{} (signed with {})",
        answer.answer_text(),
        answer.signed_with
    )
}

/// "secret version 3 per the record the sweep listed 2 min ago; rotated
/// 14:05:09 UTC by bob, 1 h 2 min ago, per the change log".
fn platform_words(known: &Known, now_ms: i64, clock: fn(i64) -> String) -> String {
    let version = match known.secret_version {
        Some(version) => format!("secret version {version} per {}", known.record_from),
        None => "secret version unknown: no record of the subscription".to_owned(),
    };
    let rotation = match &known.rotation {
        Some(change) => format!(
            "rotated {} UTC by {}, {} ago, per the change log",
            clock(change.at_ms),
            change.operator,
            crate::duration_text::of_secs(
                u64::try_from((now_ms - change.at_ms) / 1000).unwrap_or(0)
            )
        ),
        None => "no rotation by earshot on record".to_owned(),
    };
    format!("{version}; {rotation}")
}

/// The verdict for `answers`, `known` the subscription, at `now_ms`.
pub fn verdict(
    answers: &[ProbeAnswer],
    known: &Known,
    now_ms: i64,
    clock: fn(i64) -> String,
) -> Verdict {
    let held = classify(answers);
    let short = &known.short_id;
    let platform = || platform_words(known, now_ms, clock);
    let redeliver = format!("then `earshot redeliver {short}` re-sends what it missed");
    let first_other = |held_ok: fn(&ProbeAnswer) -> bool| {
        answers
            .iter()
            .find(|answer| held_ok(answer))
            .map(answer_words)
            .unwrap_or_else(|| answers_text(answers))
    };
    let (text, next) = match held {
        Held::Different => {
            let secrets = if answers.len() > 2 {
                "either secret you gave"
            } else {
                GIVEN
            };
            (
                format!(
                    "the receiver refuses these bytes signed with {secrets} (and refuses a \
                     wrong one): it holds a different secret"
                ),
                Some(format!(
                    "find the secret the receiver holds, or give it the subscription's; {redeliver}"
                )),
            )
        }
        Held::Given | Held::Second | Held::Both => {
            let which = match held {
                Held::Given => format!("{GIVEN} is the one it holds"),
                Held::Second => {
                    format!("{SECOND} is the one it holds, not the first (which it refuses)")
                }
                _ => "it holds both secrets you gave".to_owned(),
            };
            (
                format!(
                    "it accepts them: {which}; the platform signs with another ({})",
                    platform()
                ),
                Some(format!(
                    "make the two agree: give the receiver the subscription's secret, or rotate \
                     the subscription to the one it holds (`earshot subs rotate {short} \
                     --secret-file F`); {redeliver}"
                )),
            )
        }
        Held::Anything => (
            format!(
                "it accepts anything: it does not check signatures ({WRONG} got {})",
                answers
                    .last()
                    .map(ProbeAnswer::answer_text)
                    .unwrap_or_default()
            ),
            Some(
                "the platform's 401 did not come from a signature check it makes now (it \
                 changed since, or another check refused it): make it verify signatures \
                 (`earshot check-receiver` tests it)"
                    .to_owned(),
            ),
        ),
        Held::Down => (
            format!(
                "it is down: {}",
                first_other(|answer| answer.http_status.is_none())
            ),
            Some("bring the receiver up, then check again".to_owned()),
        ),
        Held::Failing => (
            format!(
                "it answers 5xx: {}",
                first_other(|answer| answer.http_status.is_some_and(|code| code >= 500))
            ),
            Some("fix the receiver's error (its log says why), then check again".to_owned()),
        ),
        Held::Unclear => (
            format!(
                "its answers neither accept (2xx) nor refuse (401) in a way that names a \
                 secret: {}",
                answers_text(answers)
            ),
            Some("check the subscription's URL and what the receiver answers there".to_owned()),
        ),
    };
    Verdict { held, text, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(signed_with: &'static str, status: Option<u16>) -> ProbeAnswer {
        ProbeAnswer {
            signed_with,
            http_status: status,
            error: status.is_none().then(|| "connection refused".to_owned()),
        }
    }

    fn known(rotation: Option<Change>) -> Known {
        Known {
            short_id: "9f2c1a7e".into(),
            secret_version: Some(3),
            record_from: "the platform's record, read now".into(),
            rotation,
        }
    }

    fn clock(ms: i64) -> String {
        format!("clock({ms})")
    }

    #[test]
    fn answers_name_what_the_receiver_holds() {
        let cases: [(&[Option<u16>], Held); 9] = [
            (&[Some(401), Some(401)], Held::Different),
            (&[Some(200), Some(401)], Held::Given),
            (&[Some(200), Some(200)], Held::Anything),
            (&[Some(401), Some(200), Some(401)], Held::Second),
            (&[Some(204), Some(200), Some(401)], Held::Both),
            (&[Some(401), Some(401), Some(401)], Held::Different),
            (&[None, None], Held::Down),
            (&[Some(503), Some(401)], Held::Failing),
            (&[Some(404), Some(401)], Held::Unclear),
        ];
        for (statuses, expected) in cases {
            let labels = [GIVEN, SECOND];
            let mut answers: Vec<ProbeAnswer> = statuses[..statuses.len() - 1]
                .iter()
                .zip(labels)
                .map(|(status, label)| answer(label, *status))
                .collect();
            answers.push(answer(WRONG, statuses[statuses.len() - 1]));
            assert_eq!(classify(&answers), expected, "{statuses:?}");
        }
        // A wrong signature accepted while the given one is refused says
        // nothing about a secret.
        let odd = [answer(GIVEN, Some(401)), answer(WRONG, Some(200))];
        assert_eq!(classify(&odd), Held::Unclear);
    }

    #[test]
    fn the_verdict_names_the_version_and_the_rotation_or_their_absence() {
        let answers = [answer(GIVEN, Some(200)), answer(WRONG, Some(401))];
        let rotation = Change {
            at_ms: 1_000,
            operator: "bob".into(),
            subscription_id: Some("9f2c1a7e-x".into()),
            action: "rotate".into(),
            detail: "secret version 3".into(),
        };
        let with = verdict(&answers, &known(Some(rotation)), 121_000, clock);
        assert!(with.held.accepts_given());
        assert!(
            with.text
                .contains("the secret you gave is the one it holds")
                && with
                    .text
                    .contains("secret version 3 per the platform's record")
                && with
                    .text
                    .contains("rotated clock(1000) UTC by bob, 2 min ago"),
            "{}",
            with.text
        );
        let without = verdict(&answers, &known(None), 121_000, clock);
        assert!(
            without.text.contains("no rotation by earshot on record"),
            "{}",
            without.text
        );
        let down = verdict(
            &[answer(GIVEN, None), answer(WRONG, None)],
            &known(None),
            0,
            clock,
        );
        assert_eq!(down.held, Held::Down);
        assert!(
            down.text.contains("it is down: connection refused"),
            "{}",
            down.text
        );
        let failing = verdict(
            &[answer(GIVEN, Some(502)), answer(WRONG, Some(401))],
            &known(None),
            0,
            clock,
        );
        assert!(
            failing.text.contains("it answers 5xx: HTTP 502"),
            "{}",
            failing.text
        );
    }
}
