//! Secrets given to a command: one resolution for every secret flag.
//!
//! Each secret can come from its flag (`--secret S`: simple, but visible to
//! every user of the machine in `ps`), from a file (`--secret-file F`), or
//! from an environment variable (`EARSHOT_WEBHOOK_SECRET`). The flag wins,
//! then the file, then the variable; an empty variable counts as unset.
//! Files are read with a small bound, and must be regular files.

use std::path::{Path, PathBuf};

use earshot_core::redact::SecretString;

/// The current webhook signing secret.
pub(crate) const WEBHOOK_SECRET_ENV: &str = "EARSHOT_WEBHOOK_SECRET";
/// The webhook signing secret before the last rotation.
pub(crate) const PREVIOUS_WEBHOOK_SECRET_ENV: &str = "EARSHOT_PREVIOUS_WEBHOOK_SECRET";
/// The secret of the app `listen --forward-to` signs anew for.
pub(crate) const FORWARD_SECRET_ENV: &str = "EARSHOT_FORWARD_SECRET";
/// The pre-recorded auth header a receiver requires or checks, `NAME:VALUE`.
pub(crate) const AUTH_HEADER_ENV: &str = "EARSHOT_AUTH_HEADER";
/// The pre-recorded auth header a submitted job's webhook carries.
pub(crate) const WEBHOOK_AUTH_ENV: &str = "EARSHOT_WEBHOOK_AUTH";

/// Why a secret could not be had. Never quotes the secret.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SecretArgError {
    /// Not a regular file, too large, unreadable or not text: the shared
    /// bounded reader's words.
    #[error(transparent)]
    File(#[from] earshot_core::bounded_file::FileError),
    #[error("the secret file {path} is empty")]
    Empty { path: String },
    #[error("the environment variable {name} is not valid Unicode")]
    EnvNotUnicode { name: &'static str },
}

/// The secret a receiver under development checks, from `file` or
/// `EARSHOT_WEBHOOK_SECRET` (never argv), for what earshot signs and
/// sends it (`events resend`, `trigger`); the message for exit 2 when
/// neither gives one.
pub(crate) fn receivers(file: Option<&Path>) -> Result<SecretString, String> {
    match resolve(None, file, WEBHOOK_SECRET_ENV) {
        Ok(Some(secret)) => Ok(secret),
        Ok(None) => Err(format!(
            "give the secret the receiver checks with --secret-file FILE or {WEBHOOK_SECRET_ENV}"
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// The secret from `value` (the flag), else the file, else the variable
/// `env`; `None` when none of the three is given.
pub(crate) fn resolve(
    value: Option<&SecretString>,
    file: Option<&Path>,
    env: &'static str,
) -> Result<Option<SecretString>, SecretArgError> {
    if let Some(value) = value {
        return Ok(Some(value.clone()));
    }
    if let Some(path) = file {
        return read_secret_file(path).map(Some);
    }
    match std::env::var(env) {
        Ok(value) if value.is_empty() => Ok(None),
        Ok(value) => Ok(Some(SecretString::new(value))),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(SecretArgError::EnvNotUnicode { name: env }),
    }
}

/// The three secret flags of a command that checks deliveries against a
/// receiver (`listen`, `check-receiver`), each with its file form.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ReceiverSecretArgs {
    /// The subscription's signing secret (never printed in full). Prefer
    /// --secret-file or EARSHOT_WEBHOOK_SECRET: a value given here is
    /// visible to other users in `ps`.
    #[arg(long, value_name = "S", conflicts_with = "secret_file")]
    pub(crate) secret: Option<SecretString>,

    /// Read the signing secret from FILE (trailing newline ignored).
    #[arg(long, value_name = "FILE")]
    pub(crate) secret_file: Option<PathBuf>,

    /// The secret before the last rotation: deliveries still in flight were
    /// signed with it. Prefer --previous-secret-file or
    /// EARSHOT_PREVIOUS_WEBHOOK_SECRET.
    #[arg(long, value_name = "S", conflicts_with = "previous_secret_file")]
    pub(crate) previous_secret: Option<SecretString>,

    /// Read the previous secret from FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) previous_secret_file: Option<PathBuf>,

    /// The pre-recorded auth header, `NAME:VALUE`, as set with
    /// `webhook_auth_header_name`/`_value` (the value is never printed).
    /// Prefer --auth-header-file or EARSHOT_AUTH_HEADER: a value given here
    /// is visible to other users in `ps`.
    #[arg(long, value_name = "NAME:VALUE", conflicts_with = "auth_header_file")]
    pub(crate) auth_header: Option<SecretString>,

    /// Read the auth header, `NAME:VALUE`, from FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) auth_header_file: Option<PathBuf>,
}

/// [`ReceiverSecretArgs`] resolved: each from its flag, its file or the
/// environment.
#[derive(Debug, Default)]
pub(crate) struct ReceiverSecrets {
    pub(crate) current: Option<SecretString>,
    pub(crate) previous: Option<SecretString>,
    pub(crate) auth_header: Option<SecretString>,
}

impl ReceiverSecretArgs {
    /// Whether a previous secret was given by flag or file (not only by
    /// the environment).
    pub(crate) fn previous_given(&self) -> bool {
        self.previous_secret.is_some() || self.previous_secret_file.is_some()
    }

    /// Each secret from its flag, else its file, else its variable.
    pub(crate) fn resolve(&self) -> Result<ReceiverSecrets, SecretArgError> {
        Ok(ReceiverSecrets {
            current: resolve(
                self.secret.as_ref(),
                self.secret_file.as_deref(),
                WEBHOOK_SECRET_ENV,
            )?,
            previous: resolve(
                self.previous_secret.as_ref(),
                self.previous_secret_file.as_deref(),
                PREVIOUS_WEBHOOK_SECRET_ENV,
            )?,
            auth_header: resolve(
                self.auth_header.as_ref(),
                self.auth_header_file.as_deref(),
                AUTH_HEADER_ENV,
            )?,
        })
    }
}

/// The exit-2 message for a secret that was not given: the preferred
/// forms first.
pub(crate) fn missing(flag: &str, env: &str) -> String {
    format!(
        "give {flag}-file FILE or set {env} ({flag} VALUE also works, but other users see it in \
         `ps`)"
    )
}

/// A secret file's text without its trailing newline (`\n` or `\r\n`).
/// Refuses anything but a regular file of at most
/// [`earshot_core::bounded_file::SECRET_FILE`] bytes of UTF-8.
pub(crate) fn read_secret_file(path: &Path) -> Result<SecretString, SecretArgError> {
    let text =
        earshot_core::bounded_file::read_to_string(path, earshot_core::bounded_file::SECRET_FILE)?;
    let secret = text.strip_suffix('\n').unwrap_or(&text);
    let secret = secret.strip_suffix('\r').unwrap_or(secret);
    if secret.is_empty() {
        return Err(SecretArgError::Empty {
            path: path.display().to_string(),
        });
    }
    Ok(SecretString::new(secret))
}

#[cfg(test)]
mod tests {
    use super::*;
    use earshot_core::bounded_file::FileError;

    #[test]
    fn a_file_loses_its_trailing_newline_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, " two words \r\n").unwrap();
        assert_eq!(read_secret_file(&path).unwrap().expose(), " two words ");
        std::fs::write(&path, "plain").unwrap();
        assert_eq!(read_secret_file(&path).unwrap().expose(), "plain");
    }

    #[test]
    fn empty_large_binary_and_special_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretArgError::Empty { .. })
        ));
        std::fs::write(
            &path,
            vec![b'a'; earshot_core::bounded_file::SECRET_FILE.max as usize + 1],
        )
        .unwrap();
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretArgError::File(FileError::TooLarge { .. }))
        ));
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_secret_file(&path),
            Err(SecretArgError::File(FileError::Io { .. }))
        ));
        assert!(matches!(
            read_secret_file(dir.path()),
            Err(SecretArgError::File(FileError::NotRegular { .. }))
        ));
        let missing = read_secret_file(&dir.path().join("missing")).unwrap_err();
        assert!(missing.to_string().contains("missing"), "{missing}");
    }

    #[test]
    fn receiver_secrets_come_each_from_its_own_flag_or_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            Some(path)
        };
        let args = ReceiverSecretArgs {
            secret_file: write("current", "current-secret\n"),
            previous_secret: Some(SecretString::new("previous-secret")),
            previous_secret_file: write("previous", "ignored\n"),
            auth_header_file: write("auth", "x-auth:value\n"),
            ..ReceiverSecretArgs::default()
        };
        assert!(args.previous_given());
        let secrets = args.resolve().unwrap();
        assert_eq!(secrets.current.unwrap().expose(), "current-secret");
        assert_eq!(secrets.previous.unwrap().expose(), "previous-secret");
        assert_eq!(secrets.auth_header.unwrap().expose(), "x-auth:value");
        let empty = ReceiverSecretArgs {
            auth_header_file: write("empty", "\n"),
            ..ReceiverSecretArgs::default()
        };
        assert!(!empty.previous_given());
        assert!(matches!(empty.resolve(), Err(SecretArgError::Empty { .. })));
    }

    #[test]
    fn the_flag_wins_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "from-file\n").unwrap();
        let flag = SecretString::new("from-flag");
        let got = resolve(Some(&flag), Some(&path), "EARSHOT_TEST_UNSET_VARIABLE").unwrap();
        assert_eq!(got.unwrap().expose(), "from-flag");
        let got = resolve(None, Some(&path), "EARSHOT_TEST_UNSET_VARIABLE").unwrap();
        assert_eq!(got.unwrap().expose(), "from-file");
        assert!(
            resolve(None, None, "EARSHOT_TEST_UNSET_VARIABLE")
                .unwrap()
                .is_none()
        );
    }
}
