//! Copying to the operator's clipboard with OSC 52, which works over SSH:
//! the escape sequence travels to the local terminal, which sets its
//! clipboard. Nothing is written anywhere else.

use std::io::{self, Write};

/// Where a copy goes.
pub trait Clipboard: Send {
    fn copy(&mut self, text: &str) -> io::Result<()>;
}

/// Writes OSC 52 sequences to a terminal.
pub struct Osc52<W: Write + Send>(pub W);

impl Osc52<io::Stdout> {
    pub fn stdout() -> Osc52<io::Stdout> {
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
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Standard base64 with padding (RFC 4648 §4), as OSC 52 expects.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes()), expected);
        }
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn a_copy_writes_one_osc_52_sequence() {
        let mut clipboard = Osc52(Vec::new());
        clipboard.copy("whsec_abc").unwrap();
        assert_eq!(clipboard.0, b"\x1b]52;c;d2hzZWNfYWJj\x07");
    }
}
