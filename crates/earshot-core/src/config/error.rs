//! [`ConfigError`], everything that can go wrong with the config, and the
//! helpers that locate an error in the file: line, column, dotted field name.

use std::path::PathBuf;

use super::{ENV_API_KEY, ENV_CONFIG, ENV_PROFILE};

/// Everything that can go wrong finding, reading or applying the config.
/// Each message names the file (and line) and says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no config file at {}\n  \
         create one with `earshot config init` (a commented template to edit), \
         or point --config / {ENV_CONFIG} at one;\n  \
         or skip the file with --url URL --api-key KEY (e.g. a running emulator);\n  \
         to try earshot with no account, run `earshot demo`",
        path.display()
    )]
    NoConfigFile { path: PathBuf },

    /// A file refused before reading: not a regular file, or too large.
    #[error(transparent)]
    File(#[from] crate::bounded_file::FileError),

    #[error("cannot read config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "invalid config file {}, line {line}, column {column}{}: {message}{}",
        path.display(),
        field.as_deref().map(|f| format!(", field `{f}`")).unwrap_or_default(),
        excerpt_suffix(*line, excerpt)
    )]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        /// Dotted key of the offending field, e.g. `profiles.prod.endpoints.agents`.
        field: Option<String>,
        message: String,
        /// The offending line of the file, for context.
        excerpt: String,
    },

    #[error(
        "profile `{name}` (chosen by {chosen_by}) is not in {}; {}",
        path.display(),
        list_profiles(available)
    )]
    ProfileNotFound {
        name: String,
        chosen_by: String,
        path: PathBuf,
        available: Vec<String>,
    },

    #[error(
        "no profile selected in {}: set `default_profile`, or pass --profile / {ENV_PROFILE}; {}",
        path.display(),
        list_profiles(available)
    )]
    NoProfileSelected {
        path: PathBuf,
        available: Vec<String>,
    },

    #[error(
        "profile `{profile}` reads its API key from the environment variable {var}, which is {}; \
         set it, or pass --api-key / {ENV_API_KEY}",
        if *empty { "empty" } else { "not set" }
    )]
    KeyEnvUnset {
        profile: String,
        var: String,
        empty: bool,
    },

    #[error("cannot read the API key file {} of profile `{profile}`: {source}", path.display())]
    KeyFileUnreadable {
        profile: String,
        path: PathBuf,
        source: std::io::Error,
    },

    #[error(
        "{} holds an API key but is readable by group or others (mode {mode:04o}); \
         run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    KeyFileTooOpen { path: PathBuf, mode: u32 },

    #[error("the API key from {source_desc} is empty")]
    EmptyKey { source_desc: String },

    #[error(
        "no API key{}: pass --api-key / {ENV_API_KEY}{}",
        profile.as_deref().map(|p| format!(" for profile `{p}`")).unwrap_or_default(),
        profile.as_deref().map(|p| format!(
            ", or give [profiles.{p}] one of api_key_env, api_key_file or api_key in {}",
            config_file.display()
        )).unwrap_or_default()
    )]
    NoApiKey {
        profile: Option<String>,
        config_file: PathBuf,
    },

    #[error(
        "cannot find a home directory for the default config path; pass --config FILE or set {ENV_CONFIG}"
    )]
    NoHomeDir,

    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn excerpt_suffix(line: usize, excerpt: &str) -> String {
    if excerpt.trim().is_empty() {
        String::new()
    } else {
        format!("\n  {line:>4} | {excerpt}")
    }
}

fn list_profiles(available: &[String]) -> String {
    if available.is_empty() {
        "it defines no profiles".to_owned()
    } else {
        let names: Vec<String> = available.iter().map(|n| format!("`{n}`")).collect();
        format!("profiles there: {}", names.join(", "))
    }
}

// ---------------------------------------------------------------------------
// Positions in the source text.

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The text of 1-based line `line`.
pub(super) fn line_text(text: &str, line: usize) -> &str {
    text.split('\n')
        .nth(line.saturating_sub(1))
        .unwrap_or("")
        .trim_end_matches('\r')
}

/// The dotted key at byte `offset`: the enclosing `[table]` header plus the
/// key on that line, e.g. `profiles.prod.endpoints.agents`. A best effort for
/// toml's own errors, which carry a span but no key path.
pub(super) fn field_at(text: &str, offset: usize) -> Option<String> {
    let (line, _) = line_col(text, offset);
    let lines: Vec<&str> = text.split('\n').collect();
    let here = lines.get(line - 1)?.trim();
    if here.starts_with('[') {
        return header_name(here);
    }
    let table = lines[..line - 1]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find(|l| l.starts_with('['))
        .and_then(header_name);
    let key = here
        .split_once('=')
        .map(|(k, _)| k.trim().replace(['"', '\''], ""))
        .filter(|k| !k.is_empty() && !k.starts_with('#'));
    match (table, key) {
        (Some(table), Some(key)) => Some(format!("{table}.{key}")),
        (None, Some(key)) => Some(key),
        (Some(table), None) => Some(table),
        (None, None) => None,
    }
}

fn header_name(line: &str) -> Option<String> {
    let inner = line.trim_start_matches('[');
    let end = inner.find(']')?;
    let name: String = inner[..end]
        .split('.')
        .map(|part| part.trim().trim_matches(['"', '\'']))
        .collect::<Vec<_>>()
        .join(".");
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters_from_one() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        // 'é' is two bytes but one column.
        assert_eq!(line_col(text, 9), (2, 3));
        assert_eq!(line_col(text, 999), (3, 1));
    }

    #[test]
    fn line_col_never_splits_a_character() {
        let text = "é";
        assert_eq!(line_col(text, 1), (1, 1));
    }

    #[test]
    fn field_at_joins_the_table_header_and_the_key() {
        let text = "x = 1\n[profiles.\"prod\"]\n# c\n  tokn = \"v\"\n";
        let offset = text.find("tokn").unwrap_or(0);
        assert_eq!(
            field_at(text, offset).as_deref(),
            Some("profiles.prod.tokn")
        );
        assert_eq!(field_at(text, 0).as_deref(), Some("x"));
        let header = text.find("[profiles").unwrap_or(0);
        assert_eq!(field_at(text, header).as_deref(), Some("profiles.prod"));
    }
}
