//! Fresh subscription secrets: [`generate_secret`] and the unpadded URL-safe
//! base64 they are written in.

/// A fresh subscription secret: `whsec_` followed by the URL-safe base64
/// (no padding) of 32 bytes from the OS CSPRNG — 256 bits of entropy,
/// 49 printable ASCII characters, no whitespace.
pub fn generate_secret() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    let mut secret = String::from("whsec_");
    base64url_into(&bytes, &mut secret);
    Ok(secret)
}

fn base64url_into(bytes: &[u8], out: &mut String) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            let index = (n >> (18 - 6 * i)) & 0x3f;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc_4648_vectors() {
        for (input, expected) in [
            (&b""[..], ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foobar", "Zm9vYmFy"),
            (&[0xfb, 0xff, 0xbf], "-_-_"),
        ] {
            let mut out = String::new();
            base64url_into(input, &mut out);
            assert_eq!(out, expected);
        }
    }

    #[test]
    fn generated_secrets_follow_the_subscription_rules_and_differ() {
        let a = generate_secret().unwrap();
        let b = generate_secret().unwrap();
        assert_ne!(a, b);
        for s in [&a, &b] {
            assert!((32..=256).contains(&s.len()), "{}", s.len());
            assert!(s.bytes().all(|c| (0x21..=0x7e).contains(&c)));
            // 43 base64 symbols carry 258 bits, of which the 256 random ones.
            assert_eq!(s.len(), "whsec_".len() + 43);
        }
    }
}
