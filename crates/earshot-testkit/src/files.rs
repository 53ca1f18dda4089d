//! Files tests hand to earshot: audio and a config with two profiles.

/// `seconds` of 8 kHz mono 16-bit silence, with `comment` as `ICMT`.
pub fn wav(seconds: f64, comment: Option<&str>) -> Vec<u8> {
    let rate = 8000u32;
    let samples = (f64::from(rate) * seconds) as usize;
    earshot_core::wav::encode_pcm16(rate, 1, &vec![0u8; samples * 2], comment)
}

/// A config file in `dir` with two profiles, `one` (the default) and
/// `other`, each an origin with its own key file (0600) and store.
pub fn two_profile_config(
    dir: &std::path::Path,
    (one_url, one_key): (&str, &str),
    (other_url, other_key): (&str, &str),
) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    for (name, key) in [("one.key", one_key), ("other.key", other_key)] {
        let path = dir.join(name);
        std::fs::write(&path, key).expect("key file written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .expect("key file 0600");
    }
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "default_profile = \"one\"\n\
             [profiles.one]\nurl = \"{one_url}\"\napi_key_file = \"one.key\"\nstore = \"one.db\"\n\
             [profiles.other]\nurl = \"{other_url}\"\napi_key_file = \"other.key\"\nstore = \"other.db\"\n",
        ),
    )
    .expect("config written");
    config
}

/// `[0,0,…,0]`, `len` bytes (odd): a large body every JSON parser takes
/// apart element by element (the hostile tests' and harness's flood).
pub fn zeros_array(len: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(len);
    body.push(b'[');
    while body.len() + 2 < len {
        body.extend_from_slice(b"0,");
    }
    body.extend_from_slice(b"0]");
    body
}
