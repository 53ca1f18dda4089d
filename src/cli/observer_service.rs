//! How to run the observer once `observer setup` has subscribed it: the
//! `earshot listen` command line for a shell, and the systemd unit for a
//! service. Text only, from one place, so what the command prints and
//! what docs/observer.md shows cannot drift apart (a test compares them).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The unit's file name under /etc/systemd/system.
pub(crate) const UNIT_NAME: &str = "earshot-observer.service";

/// The service account the unit runs as.
pub(super) const SERVICE_USER: &str = "earshot";

/// The credential name the secret file is loaded under (`%d/NAME`).
pub(super) const CREDENTIAL: &str = "webhook-secret";

/// What both texts are made of.
#[derive(Clone, Debug)]
pub(crate) struct Service<'a> {
    /// The subscription's receiver URL (named in the unit's description).
    pub(crate) url: &'a str,
    /// Where `listen` binds.
    pub(crate) listen: SocketAddr,
    /// The secret file, absolute.
    pub(crate) secret_file: &'a Path,
    /// `--store PATH` for the shell command; `None` is `--store` alone
    /// (the default store).
    pub(crate) store: Option<&'a Path>,
    /// The earshot binary the unit starts, absolute.
    pub(crate) executable: &'a Path,
}

impl Service<'_> {
    /// `earshot listen …` as a shell runs it: every path quoted as needed,
    /// `--store` last (alone, it takes no value).
    pub(crate) fn listen_command(&self) -> String {
        let mut words = vec![
            "earshot".to_owned(),
            "listen".to_owned(),
            "--listen".to_owned(),
            shell_word(&self.listen.to_string()),
            "--secret-file".to_owned(),
            shell_word(&self.secret_file.to_string_lossy()),
            "--store".to_owned(),
        ];
        if let Some(store) = self.store {
            words.push(shell_word(&store.to_string_lossy()));
        }
        words.join(" ")
    }

    /// The systemd unit: a dedicated user, the secret as a credential,
    /// the store in the state directory, and the hardening that leaves
    /// `listen` only its socket and that directory.
    pub(crate) fn systemd_unit(&self) -> String {
        let executable = exec_word(&self.executable.to_string_lossy());
        let listen = self.listen;
        let secret_file = unit_value(&self.secret_file.to_string_lossy());
        let description = unit_value(self.url);
        let capabilities = capabilities(listen.port());
        format!(
            "# /etc/systemd/system/{UNIT_NAME}\n\
             # Create the user once: useradd --system --home-dir /var/lib/earshot --shell /usr/sbin/nologin {SERVICE_USER}\n\
             # Then: systemctl daemon-reload && systemctl enable --now {UNIT_NAME}\n\
             [Unit]\n\
             Description=earshot observer: the webhook receiver for {description}\n\
             Wants=network-online.target\n\
             After=network-online.target\n\
             \n\
             [Service]\n\
             Type=simple\n\
             User={SERVICE_USER}\n\
             Group={SERVICE_USER}\n\
             # systemd copies the secret file into a directory only this service reads (%d).\n\
             LoadCredential={CREDENTIAL}:{secret_file}\n\
             # The store is /var/lib/earshot/earshot.db; earshot keeps it 0600.\n\
             StateDirectory=earshot\n\
             StateDirectoryMode=0700\n\
             ExecStart={executable} listen --listen {listen} --secret-file %d/{CREDENTIAL} --store %S/earshot/earshot.db\n\
             # With --tls-cert/--tls-key, SIGHUP reloads them; without TLS it stops listen\n\
             # (exit 129) and Restart= starts it again.\n\
             ExecReload=/bin/kill -HUP $MAINPID\n\
             Restart=on-failure\n\
             RestartSec=2s\n\
             # listen exits 143 when systemctl stop sends SIGTERM: a clean stop.\n\
             SuccessExitStatus=143\n\
             {HARDENING_HEAD}\
             ReadWritePaths=%S/earshot\n\
             {HARDENING_TAIL}\
             {capabilities}\
             \n\
             [Install]\n\
             WantedBy=multi-user.target\n"
        )
    }
}

/// The hardening every observer unit has, before the paths it may write.
pub(super) const HARDENING_HEAD: &str = "UMask=0077\nNoNewPrivileges=yes\nProtectSystem=strict\n";

/// The hardening every observer unit has, after the paths it may write.
pub(super) const HARDENING_TAIL: &str = "ProtectHome=yes\n\
     PrivateTmp=yes\n\
     PrivateDevices=yes\n\
     PrivateMounts=yes\n\
     ProtectProc=invisible\n\
     ProcSubset=pid\n\
     RemoveIPC=yes\n\
     ProtectKernelTunables=yes\n\
     ProtectKernelModules=yes\n\
     ProtectKernelLogs=yes\n\
     ProtectControlGroups=yes\n\
     ProtectClock=yes\n\
     ProtectHostname=yes\n\
     RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX\n\
     RestrictNamespaces=yes\n\
     RestrictRealtime=yes\n\
     RestrictSUIDSGID=yes\n\
     LockPersonality=yes\n\
     MemoryDenyWriteExecute=yes\n\
     SystemCallArchitectures=native\n\
     SystemCallFilter=@system-service\n\
     SystemCallFilter=~@privileged @resources\n\
     SystemCallErrorNumber=EPERM\n";

/// The capability lines for a unit binding `port`: a user namespace
/// (`PrivateUsers=`) would void the one a port below 1024 needs.
pub(super) fn capabilities(port: u16) -> &'static str {
    if port < 1024 {
        "# A port below 1024 needs this one capability, and no other.\n\
         AmbientCapabilities=CAP_NET_BIND_SERVICE\n\
         CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"
    } else {
        "CapabilityBoundingSet=\n\
         PrivateUsers=yes\n"
    }
}

/// The path of the running earshot, for the unit's `ExecStart=`
/// (`/usr/local/bin/earshot` when it cannot be had).
pub(crate) fn current_executable() -> PathBuf {
    std::env::current_exe()
        .ok()
        .filter(|path| path.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/usr/local/bin/earshot"))
}

/// `word` as one POSIX shell word: as is when it holds only characters no
/// shell treats specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./:@%+=,".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A value in a unit file: `%` doubled, so systemd expands no specifier
/// in it.
pub(super) fn unit_value(value: &str) -> String {
    value.replace('%', "%%")
}

/// One word of `ExecStart=`: specifiers and variables escaped, and in
/// double quotes when it holds a space, a quote or a backslash.
pub(super) fn exec_word(word: &str) -> String {
    let escaped = unit_value(word).replace('$', "$$");
    if escaped
        .chars()
        .any(|c| c.is_whitespace() || "\"'\\;".contains(c))
    {
        format!("\"{}\"", escaped.replace('\\', r"\\").replace('"', "\\\""))
    } else {
        escaped
    }
}

/// The example docs/observer.md shows: what `observer setup
/// https://hooks.example.com/earshot --secret-file
/// /etc/earshot/observer.secret` prints for a binary in /usr/local/bin.
#[cfg(test)]
pub(crate) fn documented_example() -> Service<'static> {
    Service {
        url: "https://hooks.example.com/earshot",
        listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
        secret_file: Path::new("/etc/earshot/observer.secret"),
        store: None,
        executable: Path::new("/usr/local/bin/earshot"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_command_quotes_only_what_a_shell_would_split() {
        let service = Service {
            store: Some(Path::new("/srv/it's here/earshot.db")),
            secret_file: Path::new("/etc/earshot/observer.secret"),
            ..documented_example()
        };
        assert_eq!(
            service.listen_command(),
            "earshot listen --listen 127.0.0.1:8080 --secret-file /etc/earshot/observer.secret \
             --store '/srv/it'\\''s here/earshot.db'"
        );
        assert_eq!(
            documented_example().listen_command(),
            "earshot listen --listen 127.0.0.1:8080 --secret-file /etc/earshot/observer.secret \
             --store"
        );
        assert_eq!(shell_word(""), "''");
        let on_v6 = Service {
            listen: "[::1]:9000".parse().unwrap(),
            ..documented_example()
        };
        assert!(
            on_v6.listen_command().contains(" --listen '[::1]:9000' "),
            "brackets are a glob"
        );
        assert_eq!(shell_word("a$b"), "'a$b'");
    }

    #[test]
    fn unit_values_escape_specifiers_and_exec_words_quote_spaces() {
        assert_eq!(unit_value("/x/100%/s"), "/x/100%%/s");
        assert_eq!(
            exec_word("/opt/earshot/bin/earshot"),
            "/opt/earshot/bin/earshot"
        );
        assert_eq!(exec_word("/home/a b/$x%"), "\"/home/a b/$$x%%\"");
        let unit = Service {
            secret_file: Path::new("/etc/50%/secret"),
            ..documented_example()
        }
        .systemd_unit();
        assert!(
            unit.contains("LoadCredential=webhook-secret:/etc/50%%/secret\n"),
            "{unit}"
        );
    }

    #[test]
    fn a_privileged_port_gets_the_one_capability_it_needs() {
        let low = Service {
            listen: SocketAddr::from(([0, 0, 0, 0], 443)),
            ..documented_example()
        }
        .systemd_unit();
        assert!(low.contains("AmbientCapabilities=CAP_NET_BIND_SERVICE\n"));
        assert!(low.contains("CapabilityBoundingSet=CAP_NET_BIND_SERVICE\n"));
        assert!(
            !low.contains("PrivateUsers"),
            "a user namespace voids the capability"
        );
        let high = documented_example().systemd_unit();
        assert!(!high.contains("AmbientCapabilities"));
        assert!(high.contains("CapabilityBoundingSet=\n"));
        assert!(high.contains("PrivateUsers=yes\n"));
    }

    /// docs/observer.md shows exactly what the command prints for its
    /// example: the listen command and the unit, character for character.
    #[test]
    fn the_guide_shows_what_the_command_prints() {
        let guide = include_str!("../../docs/observer.md");
        let example = documented_example();
        let unit = format!("```ini\n{}```\n", example.systemd_unit());
        assert!(
            guide.contains(&unit),
            "docs/observer.md must hold this unit verbatim:\n{unit}"
        );
        let command = format!("{}\n", example.listen_command());
        assert!(
            guide.contains(&command),
            "docs/observer.md must hold this command verbatim:\n{command}"
        );
    }
}
