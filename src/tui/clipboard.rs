//! Copying to the operator's clipboard with OSC 52, which works over SSH:
//! the escape sequence travels to the local terminal, which sets its
//! clipboard. Nothing is written anywhere else.

use std::io::{self, Write};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Where a copy goes.
pub(crate) trait Clipboard: Send {
    fn copy(&mut self, text: &str) -> io::Result<()>;
}

/// Writes OSC 52 sequences to a terminal.
pub(crate) struct Osc52<W: Write + Send>(pub W);

impl Osc52<io::Stdout> {
    pub(crate) fn stdout() -> Osc52<io::Stdout> {
        Osc52(io::stdout())
    }
}

impl<W: Write + Send> Clipboard for Osc52<W> {
    fn copy(&mut self, text: &str) -> io::Result<()> {
        self.0.write_all(osc52(text).as_bytes())?;
        self.0.flush()
    }
}

/// `ESC ] 52 ; c ; <base64> BEL`: set the clipboard to `text`.
pub(crate) fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", STANDARD.encode(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_writes_one_osc_52_sequence() {
        let mut clipboard = Osc52(Vec::new());
        clipboard.copy("whsec_abc").unwrap();
        assert_eq!(clipboard.0, b"\x1b]52;c;d2hzZWNfYWJj\x07");
    }
}
