//! Where the password of a PostgreSQL store comes from, never the command
//! line or the URL: the file named by `EARSHOT_STORE_PASSWORD_FILE`, else
//! `PGPASSWORD`, else the first matching line of the password file
//! (`PGPASSFILE`, else `~/.pgpass`, libpq's format, ignored when group or
//! others can read it, as libpq does). None at all is fine for a server
//! that asks for none (trust, peer or certificate logins).

use std::path::{Path, PathBuf};

use super::target::PgTarget;
use crate::bounded_file::{self, FileError, Limit};
use crate::redact::SecretString;

/// A `.pgpass` file: a few lines per server.
const PGPASS_FILE: Limit = Limit {
    what: "PostgreSQL password file",
    max: 64 * 1024,
};

/// Where a password may be found; [`PasswordSources::from_env`] for a
/// command, explicit values for a test.
#[derive(Clone, Debug, Default)]
pub struct PasswordSources {
    /// `EARSHOT_STORE_PASSWORD_FILE`: a file holding the password alone.
    pub password_file: Option<PathBuf>,
    /// `PGPASSWORD`.
    pub env_password: Option<SecretString>,
    /// `PGPASSFILE`, else `~/.pgpass`.
    pub pgpass: Option<PathBuf>,
}

/// A password source named but unusable (a file missing or too large):
/// said, not skipped, so a typo does not turn into a failed login.
#[derive(Debug, thiserror::Error)]
pub enum PasswordError {
    #[error("EARSHOT_STORE_PASSWORD_FILE: {0}")]
    File(FileError),
    #[error("the password file {} is empty", .0.display())]
    Empty(PathBuf),
}

impl PasswordSources {
    /// The sources this process's environment names.
    pub fn from_env() -> PasswordSources {
        let pgpass = std::env::var_os("PGPASSFILE")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pgpass")));
        PasswordSources {
            password_file: std::env::var_os("EARSHOT_STORE_PASSWORD_FILE").map(PathBuf::from),
            env_password: std::env::var("PGPASSWORD").ok().map(SecretString::new),
            pgpass,
        }
    }

    /// The password for `target`, from the first source that has one.
    pub fn find(&self, target: &PgTarget) -> Result<Option<SecretString>, PasswordError> {
        if let Some(path) = &self.password_file {
            let text = bounded_file::read_to_string(path, bounded_file::SECRET_FILE)
                .map_err(PasswordError::File)?;
            let password = text.trim_end_matches(['\r', '\n']);
            if password.is_empty() {
                return Err(PasswordError::Empty(path.clone()));
            }
            return Ok(Some(SecretString::new(password)));
        }
        if let Some(password) = &self.env_password {
            return Ok(Some(password.clone()));
        }
        Ok(self
            .pgpass
            .as_deref()
            .and_then(|path| from_pgpass(path, target)))
    }
}

/// The password of the first line of the `.pgpass` at `path` that matches
/// `target`; none when the file is missing, unreadable or open to others.
fn from_pgpass(path: &Path, target: &PgTarget) -> Option<SecretString> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            "the PostgreSQL password file is ignored: group or others can read it (chmod 0600)"
        );
        return None;
    }
    let text = bounded_file::read_to_string(path, PGPASS_FILE).ok()?;
    let port = target.port.to_string();
    let wanted = [
        target.host.as_str(),
        port.as_str(),
        target.database.as_str(),
        target.user.as_str(),
    ];
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(fields)
        .find(|fields| {
            fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, want)| field == "*" || field == want)
        })
        .map(|mut fields| SecretString::new(std::mem::take(&mut fields[4])))
}

/// A `.pgpass` line's five fields (`\:` and `\\` unescaped); `None` for a
/// line with fewer.
fn fields(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next()
                    && let Some(field) = fields.last_mut()
                {
                    field.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn target() -> PgTarget {
        PgTarget::parse("postgres://obs@db.internal:6543/earshot").unwrap()
    }

    fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn the_first_matching_pgpass_line_wins_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let pgpass = write(
            dir.path(),
            "pgpass",
            "# a comment\n\
             db.internal:6543:other:obs:not-this\n\
             db.internal:*:earshot:obs:pa\\:ss\\\\word\n\
             *:*:*:*:too-late\n",
            0o600,
        );
        let sources = PasswordSources {
            pgpass: Some(pgpass),
            ..PasswordSources::default()
        };
        let found = sources.find(&target()).unwrap().unwrap();
        assert_eq!(found.expose(), "pa:ss\\word");
    }

    #[test]
    fn a_pgpass_others_can_read_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let pgpass = write(dir.path(), "pgpass", "*:*:*:*:open\n", 0o644);
        let sources = PasswordSources {
            pgpass: Some(pgpass),
            ..PasswordSources::default()
        };
        assert!(sources.find(&target()).unwrap().is_none());
    }

    #[test]
    fn the_password_file_beats_the_environment_and_a_bad_one_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "password", "from-file\n", 0o600);
        let mut sources = PasswordSources {
            password_file: Some(file),
            env_password: Some(SecretString::new("from-env")),
            pgpass: None,
        };
        assert_eq!(
            sources.find(&target()).unwrap().unwrap().expose(),
            "from-file"
        );
        sources.password_file = None;
        assert_eq!(
            sources.find(&target()).unwrap().unwrap().expose(),
            "from-env"
        );
        sources.password_file = Some(dir.path().join("missing"));
        let error = sources.find(&target()).unwrap_err().to_string();
        assert!(error.contains("EARSHOT_STORE_PASSWORD_FILE"), "{error}");
        let empty = write(dir.path(), "empty", "\n", 0o600);
        sources.password_file = Some(empty);
        assert!(matches!(
            sources.find(&target()),
            Err(PasswordError::Empty(_))
        ));
    }
}
