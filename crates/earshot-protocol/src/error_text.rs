//! An error and its causes as text for an operator: every cause on one
//! line ([`chain`]), or only the innermost one ([`root_cause`]). HTTP
//! stacks wrap the cause an operator acts on ("connection refused",
//! "timed out") in messages of their own.

use std::error::Error;

/// An error and its causes on one line, separated by `: `.
pub fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text
}

/// The innermost cause ("Connection refused (os error 111)").
pub fn root_cause(error: &(dyn Error + 'static)) -> String {
    let mut cause = error;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_chain_names_every_cause_and_the_root_only_the_last() {
        let error = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(chain(&error), "outer: connection refused");
        assert_eq!(root_cause(&error), "connection refused");
    }
}
