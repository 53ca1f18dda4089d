//! When two receiver URLs name the same receiver: the one comparison
//! behind "one subscription per URL" (`observer setup` finds the
//! subscription already at its URL instead of making a second one).
//!
//! Two URLs are the same receiver when they differ only in what never
//! reaches the receiver or what every server reads alike: the fragment, an
//! empty query (`…/obs?`), the host's case and trailing dot, a default
//! port, percent-encoded unreserved characters (`/%6Fbs` is `/obs`),
//! repeated slashes (`//obs`) and a trailing slash (`/obs/`).

use url::{Host, Url};

/// The text two URLs of one receiver share.
pub fn identity(url: &Url) -> String {
    let host = match url.host() {
        Some(Host::Domain(name)) => name.trim_end_matches('.').to_ascii_lowercase(),
        Some(Host::Ipv4(ip)) => ip.to_string(),
        Some(Host::Ipv6(ip)) => format!("[{ip}]"),
        None => String::new(),
    };
    let port = url
        .port()
        .filter(|port| Some(*port) != default_port(url.scheme()))
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    let path = path_identity(url.path());
    let query = url
        .query()
        .filter(|query| !query.is_empty())
        .map(|query| format!("?{}", decode_unreserved(query)))
        .unwrap_or_default();
    format!("{}://{host}{port}{path}{query}", url.scheme())
}

/// Whether `a` and `b` name the same receiver.
pub fn same_receiver(a: &Url, b: &Url) -> bool {
    identity(a) == identity(b)
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "https" => Some(443),
        "http" => Some(80),
        _ => None,
    }
}

/// The path with unreserved characters decoded, repeated slashes made one
/// and the trailing slash dropped (`/` stays `/`).
fn path_identity(path: &str) -> String {
    let decoded = decode_unreserved(path);
    let mut out = String::with_capacity(decoded.len());
    for segment in decoded.split('/').filter(|segment| !segment.is_empty()) {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// `%XX` of an unreserved character (RFC 3986: letters, digits, `-._~`)
/// as the character; every other escape kept, its hex upper-cased.
fn decode_unreserved(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut index = 0;
    while index < bytes.len() {
        let escaped = (bytes[index] == b'%')
            .then(|| text.get(index + 1..index + 3))
            .flatten()
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) => {
                out.push(char::from(byte));
                index += 3;
            }
            Some(byte) => {
                out.push_str(&format!("%{byte:02X}"));
                index += 3;
            }
            None => {
                let c = text[index..].chars().next().unwrap_or_default();
                out.push(c);
                index += c.len_utf8().max(1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> Url {
        Url::parse(raw).expect(raw)
    }

    /// The spellings the hardening run created a second subscription with.
    #[test]
    fn spellings_of_one_receiver_are_one() {
        let base = parsed("https://hooks.example.com/obs");
        for raw in [
            "https://hooks.example.com/obs#",
            "https://hooks.example.com/obs#part",
            "https://hooks.example.com/obs?",
            "https://hooks.example.com./obs",
            "https://HOOKS.example.com/obs",
            "https://hooks.example.com/%6Fbs",
            "https://hooks.example.com/%6fbs",
            "https://hooks.example.com//obs",
            "https://hooks.example.com/obs/",
            "https://hooks.example.com:443/obs",
        ] {
            assert!(same_receiver(&base, &parsed(raw)), "{raw}");
        }
    }

    #[test]
    fn different_receivers_stay_different() {
        let base = parsed("https://hooks.example.com/obs");
        for raw in [
            "https://hooks.example.com/obs2",
            "https://hooks.example.com/OBS",
            "https://hooks.example.com/obs?x=1",
            "https://hooks.example.com:8443/obs",
            "http://hooks.example.com/obs",
            "https://other.example.com/obs",
            "https://hooks.example.com/o%2Fbs",
        ] {
            assert!(!same_receiver(&base, &parsed(raw)), "{raw}");
        }
        assert_eq!(
            identity(&parsed("https://hooks.example.com/a%2fb")),
            "https://hooks.example.com/a%2Fb"
        );
    }
}
