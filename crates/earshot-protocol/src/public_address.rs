//! Which IP addresses are publicly routable: the one classification behind
//! the URL rule (spec part 2 C: "publicly reachable … private and loopback
//! addresses are rejected"), the emulator's check of resolved names, and
//! the observer's choice of a listen address.
//!
//! An address that carries an IPv4 address inside it (IPv4-mapped,
//! IPv4-compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) is judged by the
//! IPv4 address it reaches, so `[64:ff9b::7f00:1]` is loopback. Ranges
//! that no public receiver can hold (documentation, benchmarking,
//! protocol assignments, Teredo tunnels whose end is hidden) are refused
//! as well.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not publicly routable, or `None` when it is.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => non_public_v4(ip),
        IpAddr::V6(ip) => match embedded_v4(ip) {
            Some(inner) => non_public_v4(inner),
            None => non_public_v6(ip),
        },
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("benchmarking")
    } else if matches!((a, b, c), (192, 0, 2) | (198, 51, 100) | (203, 0, 113)) {
        Some("documentation")
    } else if matches!((a, b, c), (192, 0, 0) | (192, 88, 99))
        || ip.is_multicast()
        || ip.is_broadcast()
        || a >= 240
    {
        Some("reserved")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address reaches through a translation or an
/// embedding that keeps it whole.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let segments = ip.segments();
    let last_32 = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if let Some(mapped) = ip.to_ipv4_mapped() {
        return Some(mapped);
    }
    match segments {
        // NAT64, the well-known prefix (RFC 6052).
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => Some(last_32(high, low)),
        // IPv4-compatible (deprecated), but not `::` and `::1`.
        [0, 0, 0, 0, 0, 0, high, low] if high != 0 => Some(last_32(high, low)),
        // 6to4: the IPv4 address follows the prefix.
        [0x2002, high, low, ..] => Some(last_32(high, low)),
        _ => None,
    }
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let segments = ip.segments();
    let first = segments[0];
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xffc0 == 0xfec0 {
        Some("site-local")
    } else if segments[..3] == [0x64, 0xff9b, 1] {
        Some("private (local-use NAT64)")
    } else if segments[..2] == [0x2001, 0xdb8] {
        Some("documentation")
    } else if segments[..3] == [0x2001, 2, 0] || segments[..2] == [0x2001, 0x10] {
        Some("benchmarking")
    } else if segments[..2] == [0x2001, 0] {
        Some("tunnel (Teredo)")
    } else if segments[..4] == [0x100, 0, 0, 0] {
        Some("reserved (discard)")
    } else if ip.is_multicast() {
        Some("reserved")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(text: &str) -> Option<&'static str> {
        non_public_reason(text.parse().expect(text))
    }

    /// Each range by the address the issue found accepted, and its
    /// neighbours on both sides.
    #[test]
    fn every_non_public_range_is_named() {
        for (address, expected) in [
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b::a00:1", "private"),
            ("64:ff9b:1::1", "private (local-use NAT64)"),
            ("::7f00:1", "loopback"),
            ("2002:7f00:1::", "loopback"),
            ("2002:c0a8:101::1", "private"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.254", "benchmarking"),
            ("192.0.2.7", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.7", "documentation"),
            ("192.0.0.8", "reserved"),
            ("192.88.99.1", "reserved"),
            ("2001:db8::1", "documentation"),
            ("2001:2::1", "benchmarking"),
            ("2001::1", "tunnel (Teredo)"),
            ("100::1", "reserved (discard)"),
            ("fec0::1", "site-local"),
            ("::ffff:169.254.1.1", "link-local"),
        ] {
            assert_eq!(reason(address), Some(expected), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass_in_every_spelling() {
        for address in [
            "198.17.255.255",
            "198.20.0.1",
            "192.0.3.1",
            "203.0.114.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2606:4700:4700::1111",
            "8.8.8.8",
        ] {
            assert_eq!(reason(address), None, "{address}");
        }
    }
}
