//! Where a PostgreSQL store is: `postgres://USER@HOST[:PORT]/DATABASE`
//! with optional `?sslmode=` and `sslrootcert=`, read into a
//! [`PgTarget`]. A password in the URL is refused: the URL is shown in
//! errors, logs and `health`, and a command line is visible to every user
//! of the machine ([`super::password`] says where a password comes from).

use std::fmt;
use std::path::PathBuf;

/// Whether `text` names a PostgreSQL store rather than a SQLite file.
pub fn is_postgres_url(text: &str) -> bool {
    let scheme = text.split_once("://").map(|(scheme, _)| scheme);
    scheme.is_some_and(|scheme| {
        scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql")
    })
}

/// Whether the connection is encrypted. With TLS, the server's certificate
/// is always verified (against `sslrootcert` or the system's roots), for
/// every mode: unlike libpq, `require` does not accept any certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsMode {
    /// Plain TCP (`sslmode=disable`).
    Disable,
    /// TLS when the server offers it, else plain (`prefer`, the default).
    Prefer,
    /// TLS or no connection (`require`, `verify-ca`, `verify-full`).
    Require,
}

/// A PostgreSQL store's address, without a password.
#[derive(Clone, PartialEq, Eq)]
pub struct PgTarget {
    pub user: String,
    pub host: String,
    pub port: u16,
    pub database: String,
    pub tls: TlsMode,
    /// PEM file of the certificate authorities to trust instead of the
    /// system's.
    pub root_cert: Option<PathBuf>,
}

/// The URL's shape is wrong: what, and the form to give. Never quotes a
/// password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PgUrlError {
    #[error("the store URL is not a URL ({0}): give postgres://USER@HOST:PORT/DATABASE")]
    NotAUrl(String),
    #[error(
        "the store URL holds a password; it was not used: remove it from the URL and give it \
         in PGPASSWORD, ~/.pgpass (or PGPASSFILE) or a file named by \
         EARSHOT_STORE_PASSWORD_FILE"
    )]
    PasswordInUrl,
    #[error("the store URL {0} names no {1}: give postgres://USER@HOST:PORT/DATABASE")]
    Missing(String, &'static str),
    /// The value is not quoted: an option that is not earshot's may hold
    /// a secret.
    #[error("the store URL {url} has a {key} earshot does not know: {expected}")]
    Unknown {
        url: String,
        key: String,
        expected: &'static str,
    },
}

impl PgTarget {
    /// Reads `postgres://USER@HOST[:PORT]/DATABASE[?sslmode=…&sslrootcert=…]`
    /// (also `postgresql://`); the port is 5432 unless given.
    pub fn parse(text: &str) -> Result<PgTarget, PgUrlError> {
        let url = url::Url::parse(text).map_err(|error| PgUrlError::NotAUrl(error.to_string()))?;
        if url.password().is_some() {
            return Err(PgUrlError::PasswordInUrl);
        }
        if !is_postgres_url(text) {
            return Err(PgUrlError::NotAUrl(format!(
                "the scheme is {}, not postgres",
                url.scheme()
            )));
        }
        let shown = redacted(&url);
        let user = decoded(url.username());
        if user.is_empty() {
            return Err(PgUrlError::Missing(shown, "user"));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(address)) => address.to_string(),
            Some(host) => decoded(&host.to_string()),
            None => String::new(),
        };
        if host.is_empty() {
            return Err(PgUrlError::Missing(shown, "host"));
        }
        let database = decoded(url.path().trim_start_matches('/'));
        if database.is_empty() {
            return Err(PgUrlError::Missing(shown, "database"));
        }
        let mut target = PgTarget {
            user,
            host,
            port: url.port().unwrap_or(5432),
            database,
            tls: TlsMode::Prefer,
            root_cert: None,
        };
        for (key, value) in url.query_pairs() {
            let unknown = |expected| PgUrlError::Unknown {
                url: shown.clone(),
                key: key.to_string(),
                expected,
            };
            match &*key {
                "sslmode" => {
                    target.tls = match &*value {
                        "disable" => TlsMode::Disable,
                        "prefer" => TlsMode::Prefer,
                        "require" | "verify-ca" | "verify-full" => TlsMode::Require,
                        _ => {
                            return Err(unknown(
                                "sslmode is disable, prefer, require, verify-ca or verify-full",
                            ));
                        }
                    }
                }
                "sslrootcert" => target.root_cert = Some(PathBuf::from(&*value)),
                _ => return Err(unknown("the options are sslmode and sslrootcert")),
            }
        }
        Ok(target)
    }
}

/// `postgres://USER@HOST:PORT/DATABASE`: what errors and logs show.
impl fmt::Display for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "postgres://{}@{host}:{}/{}",
            self.user, self.port, self.database
        )
    }
}

impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgTarget({self})")
    }
}

/// `%XX` escapes decoded, anything malformed kept as it is.
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let escape = bytes
            .get(index + 1..index + 3)
            .filter(|_| bytes[index] == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escape {
            Some(byte) => {
                out.push(byte);
                index += 3;
            }
            None => {
                out.push(bytes[index]);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The URL without its query (which may name files) for an error.
fn redacted(url: &url::Url) -> String {
    let mut shown = url.clone();
    shown.set_query(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_form_is_read() {
        let target = PgTarget::parse("postgres://obs@db.internal:6543/earshot").unwrap();
        assert_eq!(target.user, "obs");
        assert_eq!(target.host, "db.internal");
        assert_eq!(target.port, 6543);
        assert_eq!(target.database, "earshot");
        assert_eq!(target.tls, TlsMode::Prefer);
        assert_eq!(
            target.to_string(),
            "postgres://obs@db.internal:6543/earshot"
        );
        let target =
            PgTarget::parse("postgresql://o%40x@[::1]/db?sslmode=verify-full&sslrootcert=/ca.pem")
                .unwrap();
        assert_eq!((target.user.as_str(), target.port), ("o@x", 5432));
        assert_eq!(target.host, "::1");
        assert_eq!(target.tls, TlsMode::Require);
        assert_eq!(target.root_cert, Some(PathBuf::from("/ca.pem")));
        assert_eq!(target.to_string(), "postgres://o@x@[::1]:5432/db");
    }

    #[test]
    fn a_password_in_the_url_is_refused_and_never_quoted() {
        let error = PgTarget::parse("postgres://obs:hunter2secret@db/earshot").unwrap_err();
        assert_eq!(error, PgUrlError::PasswordInUrl);
        assert!(!error.to_string().contains("hunter2secret"), "{error}");
        assert!(error.to_string().contains("PGPASSWORD"), "{error}");
    }

    #[test]
    fn what_is_missing_or_unknown_is_said() {
        let missing = |text: &str| PgTarget::parse(text).unwrap_err().to_string();
        assert!(missing("postgres://db:5432/earshot").contains("no user"));
        assert!(missing("postgres://obs@db:5432/").contains("no database"));
        assert!(missing("postgres://obs@db/x?sslmode=maybe").contains("sslmode is disable"));
        let unknown = missing("postgres://obs@db/x?password=hunter2secret");
        assert!(unknown.contains("the options are"), "{unknown}");
        assert!(!unknown.contains("hunter2secret"), "{unknown}");
        assert!(matches!(
            PgTarget::parse("not a url"),
            Err(PgUrlError::NotAUrl(_))
        ));
        assert!(matches!(
            PgTarget::parse("mysql://obs@db/x"),
            Err(PgUrlError::NotAUrl(_))
        ));
    }

    #[test]
    fn only_postgres_schemes_are_urls_of_a_store() {
        for url in ["postgres://a@b/c", "POSTGRESQL://a@b/c"] {
            assert!(is_postgres_url(url), "{url}");
        }
        for path in [
            "earshot.db",
            "/var/lib/earshot.db",
            "postgres",
            "./postgres:/x",
        ] {
            assert!(!is_postgres_url(path), "{path}");
        }
    }
}
