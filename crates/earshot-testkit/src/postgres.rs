//! A throwaway PostgreSQL cluster for the tests that need a real server
//! ([`PgCluster`]): `initdb` into a temp directory, `postgres` started on a
//! free loopback port with its Unix socket in that directory, stopped and
//! removed when dropped (a panicking test included). Run as root (CI), the
//! server runs as `nobody`, since PostgreSQL refuses root; the directory is
//! handed to that user. Nothing else on the machine is used or needed: no
//! service, no port but the one picked.
//!
//! The server binaries come from `EARSHOT_PG_BINDIR`, else `pg_config
//! --bindir`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian's
//! `postgresql` package; `tests/run.sh` installs it where missing).

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `initdb` and the server's start may take.
const START_WITHIN: Duration = Duration::from_secs(60);
/// How long the server may take to stop before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(10);
/// The superuser the cluster is made with.
pub const PG_USER: &str = "earshot";
/// The most of the server's log an error quotes.
const LOG_TAIL: u64 = 4096;

/// The cluster could not be made or started: what failed, with the
/// server's own words where it said any.
#[derive(Debug)]
pub struct PgClusterError(String);

impl std::fmt::Display for PgClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PgClusterError {}

fn failed(what: impl Into<String>) -> PgClusterError {
    PgClusterError(what.into())
}

/// A running throwaway cluster. Its superuser [`PG_USER`] logs in with
/// [`PgCluster::password`] over TCP (SCRAM), without one over the socket.
pub struct PgCluster {
    dir: ClusterDir,
    server: Option<Child>,
    port: u16,
    password: String,
}

impl std::fmt::Debug for PgCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCluster")
            .field("dir", &self.dir.path())
            .field("kept", &matches!(self.dir, ClusterDir::Kept(_)))
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl PgCluster {
    /// Makes and starts a cluster; blocks until it accepts connections
    /// (a few seconds). Call it from the test's own thread: the server is
    /// told to quit when the thread that started it ends.
    pub fn start() -> Result<PgCluster, PgClusterError> {
        PgCluster::start_with(None)
    }

    /// A cluster that also speaks TLS with this certificate chain and key
    /// (PEM), for the tests of TLS to the database.
    pub fn start_with_tls(cert_pem: &str, key_pem: &str) -> Result<PgCluster, PgClusterError> {
        PgCluster::start_with(Some((cert_pem, key_pem)))
    }

    /// A cluster kept in `dir` (a benchmark's store, reused from run to
    /// run): made there the first time, started on the same data after;
    /// stopped with a fast shutdown (a checkpoint, nothing lost) and left
    /// in place when dropped. The server must not be running already.
    pub fn start_kept(dir: &Path) -> Result<PgCluster, PgClusterError> {
        std::fs::create_dir_all(dir)
            .map_err(|error| failed(format!("cannot make {}: {error}", dir.display())))?;
        let dir = ClusterDir::Kept(dir.to_owned());
        if dir.path().join("data").join("PG_VERSION").is_file() {
            let password = std::fs::read_to_string(dir.path().join("pwfile"))
                .map_err(|error| failed(format!("cannot read the kept password: {error}")))?;
            let owner = ServerUser::for_this_process();
            return PgCluster::run(dir, password.trim().to_owned(), &owner);
        }
        PgCluster::make(dir, None)
    }

    fn start_with(tls: Option<(&str, &str)>) -> Result<PgCluster, PgClusterError> {
        let dir = tempfile::Builder::new()
            .prefix("earshot-pg-")
            .tempdir()
            .map_err(|error| failed(format!("cannot make the cluster's directory: {error}")))?;
        PgCluster::make(ClusterDir::Temp(dir), tls)
    }

    /// `initdb` into `dir`, then the server started.
    fn make(dir: ClusterDir, tls: Option<(&str, &str)>) -> Result<PgCluster, PgClusterError> {
        let bindir = server_bindir()?;
        let owner = ServerUser::for_this_process();
        owner.take(dir.path())?;
        let password = format!("pw-{:016x}", fastrand::u64(..));
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, &password)
            .map_err(|error| failed(format!("cannot write the password file: {error}")))?;
        owner.take(&pwfile)?;
        let data = dir.path().join("data");
        let mut initdb = owner.command(&bindir.join("initdb"));
        initdb
            .arg("--pgdata")
            .arg(&data)
            .args(["--username", PG_USER, "--encoding", "UTF8", "--no-locale"])
            .args(["--auth-local", "trust", "--auth-host", "scram-sha-256"])
            .arg("--pwfile")
            .arg(&pwfile)
            .arg("--no-sync");
        run_bounded(initdb, "initdb", dir.path())?;
        if let Some((cert, key)) = tls {
            // The server reads its key only when its owner alone can.
            for (name, pem) in [("server.crt", cert), ("server.key", key)] {
                let path = data.join(name);
                std::fs::write(&path, pem)
                    .map_err(|error| failed(format!("cannot write {name}: {error}")))?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .map_err(|error| failed(format!("cannot narrow {name}: {error}")))?;
                owner.take(&path)?;
            }
            let conf = data.join("postgresql.conf");
            let mut text = std::fs::read_to_string(&conf)
                .map_err(|error| failed(format!("cannot read postgresql.conf: {error}")))?;
            text.push_str(
                "\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
            );
            std::fs::write(&conf, text)
                .map_err(|error| failed(format!("cannot write postgresql.conf: {error}")))?;
        }
        PgCluster::run(dir, password, &owner)
    }

    /// Starts the server on the data in `dir`.
    fn run(
        dir: ClusterDir,
        password: String,
        owner: &ServerUser,
    ) -> Result<PgCluster, PgClusterError> {
        let bindir = server_bindir()?;
        let mut cluster = PgCluster {
            dir,
            server: None,
            port: 0,
            password,
        };
        let mut last_error = None;
        // A port picked free can be taken before the server binds it.
        for _ in 0..3 {
            cluster.port = free_port()?;
            match cluster.start_server(owner, &bindir) {
                Ok(()) => return Ok(cluster),
                Err(error) => {
                    cluster.stop();
                    last_error = Some(error);
                }
            }
        }
        Err(last_error.unwrap_or_else(|| failed("the server did not start")))
    }

    fn start_server(&mut self, owner: &ServerUser, bindir: &Path) -> Result<(), PgClusterError> {
        let log_path = self.server_log();
        let log = std::fs::File::create(&log_path)
            .map_err(|error| failed(format!("cannot create the server log: {error}")))?;
        let log_err = log
            .try_clone()
            .map_err(|error| failed(format!("cannot share the server log: {error}")))?;
        let mut postgres = owner.command(&bindir.join("postgres"));
        postgres
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-c")
            .arg(format!("port={}", self.port))
            .args(["-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!(
                "unix_socket_directories={}",
                self.dir.path().display()
            ))
            // Throwaway data: no waiting for the disk.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "shared_buffers=16MB"])
            .args(["-c", "max_connections=60"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let server = postgres
            .spawn()
            .map_err(|error| failed(format!("cannot run postgres: {error}")))?;
        self.server = Some(server);
        let pid_file = self.dir.path().join("data").join("postmaster.pid");
        let deadline = Instant::now() + START_WITHIN;
        loop {
            // The status on the pid file's eighth line is `ready` once the
            // server accepts connections.
            // A kept cluster's directory may hold an old server's file:
            // its first line is the pid of the server that wrote it.
            let pid = self.server.as_ref().map(|server| server.id().to_string());
            let ready = std::fs::read_to_string(&pid_file)
                .map(|text| {
                    text.lines().next().map(str::trim) == pid.as_deref()
                        && text.lines().nth(7).map(str::trim) == Some("ready")
                })
                .unwrap_or(false);
            if ready {
                return Ok(());
            }
            if let Some(server) = self.server.as_mut()
                && let Ok(Some(status)) = server.try_wait()
            {
                return Err(failed(format!(
                    "postgres exited ({status}) before it was ready: {}",
                    tail(&log_path)
                )));
            }
            if Instant::now() > deadline {
                return Err(failed(format!(
                    "postgres was not ready within {START_WITHIN:?}: {}",
                    tail(&log_path)
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The loopback TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The superuser's password (for TCP connections).
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The password as earshot's commands would take it from the
    /// environment (`PGPASSWORD`), for a store opened in the test.
    pub fn password_sources(&self) -> earshot_core::store::postgres::PasswordSources {
        earshot_core::store::postgres::PasswordSources {
            env_password: Some(earshot_core::redact::SecretString::new(self.password())),
            ..Default::default()
        }
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log (what it writes to stderr).
    pub fn server_log(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// `postgres://earshot@127.0.0.1:PORT/DATABASE`, no password in it.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://{PG_USER}@127.0.0.1:{}/{database}", self.port)
    }

    /// Makes a database (over the socket, with `psql` from the same
    /// binaries): each test can have one of its own in a shared cluster.
    pub fn create_database(&self, name: &str) -> Result<(), PgClusterError> {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))
            .map(drop)
    }

    /// Runs `sql` with `psql` over the socket as the superuser; its
    /// unaligned output (for tests that look at the database from outside
    /// earshot's client).
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, PgClusterError> {
        let bindir = server_bindir()?;
        let mut psql = Command::new(bindir.join("psql"));
        psql.args(["--no-psqlrc", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .arg("-h")
            .arg(self.dir.path())
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-U", PG_USER, "-d", database, "-c", sql]);
        let output = run_bounded(psql, "psql", self.dir.path())?;
        Ok(output.trim_end().to_owned())
    }

    /// Stops the server as `pg_ctl stop` does (a fast shutdown: sessions
    /// are ended, nothing committed is lost), keeping its data and port
    /// for [`PgCluster::restart`]: what a test of a database gone away
    /// runs. Blocks until it has stopped.
    pub fn stop_server(&mut self) {
        self.stop_with(libc::SIGINT);
    }

    /// Starts the server stopped by [`PgCluster::stop_server`] again, on
    /// the same data and port; blocks until it accepts connections.
    pub fn restart(&mut self) -> Result<(), PgClusterError> {
        if self.server.is_some() {
            return Ok(());
        }
        let bindir = server_bindir()?;
        self.start_server(&ServerUser::for_this_process(), &bindir)
    }

    fn stop(&mut self) {
        // SIGQUIT: an immediate shutdown, nothing to keep; SIGINT, a
        // fast one, for a kept cluster.
        let signal = match self.dir {
            ClusterDir::Temp(_) => libc::SIGQUIT,
            ClusterDir::Kept(_) => libc::SIGINT,
        };
        self.stop_with(signal);
    }

    fn stop_with(&mut self, signal: libc::c_int) {
        let Some(mut server) = self.server.take() else {
            return;
        };
        if let Ok(pid) = libc::pid_t::try_from(server.id()) {
            // SAFETY: kill only sends a signal to our own child's pid,
            // which is not reaped yet, so it cannot name another process.
            unsafe {
                libc::kill(pid, signal);
            }
        }
        let deadline = Instant::now() + STOP_WITHIN;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = server.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = server.kill();
        let _ = server.wait();
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Where a cluster lives: a directory removed when it is dropped, or one
/// kept for the next run.
enum ClusterDir {
    Temp(tempfile::TempDir),
    Kept(PathBuf),
}

impl ClusterDir {
    fn path(&self) -> &Path {
        match self {
            ClusterDir::Temp(dir) => dir.path(),
            ClusterDir::Kept(dir) => dir,
        }
    }
}

/// Who runs the server: this process's user, or `nobody` for root.
struct ServerUser {
    /// `(uid, gid)` to switch to, for root.
    switch_to: Option<(u32, u32)>,
}

impl ServerUser {
    fn for_this_process() -> ServerUser {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        ServerUser {
            switch_to: root.then_some((NOBODY, NOBODY)),
        }
    }

    /// Hands `path` to the server's user (nothing to do unless root).
    fn take(&self, path: &Path) -> Result<(), PgClusterError> {
        let Some((uid, gid)) = self.switch_to else {
            return Ok(());
        };
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).map_err(|error| {
            failed(format!(
                "cannot hand {} to uid {uid}: {error}",
                path.display()
            ))
        })
    }

    /// `program` run as the server's user, told to quit (SIGQUIT, an
    /// immediate shutdown) if the thread that started it ends, so a test
    /// process killed outright leaves no server behind.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new("setpriv");
        command.args(["--pdeathsig", "QUIT"]);
        if let Some((uid, gid)) = self.switch_to {
            command
                .arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups");
        }
        command.arg("--").arg(program);
        // The server's locale and time zone are its own, not the caller's.
        command.env("LC_ALL", "C").env("TZ", "UTC");
        command
    }
}

/// `nobody`'s uid and gid on Debian.
const NOBODY: u32 = 65_534;

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, PgClusterError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|error| failed(format!("cannot find a free port: {error}")))
}

/// Runs `command` to its end within [`START_WITHIN`]; its stdout, or an
/// error with its stderr. Its output goes to files in `dir`, so a command
/// that says much cannot block on a full pipe.
fn run_bounded(mut command: Command, name: &str, dir: &Path) -> Result<String, PgClusterError> {
    let out_path = dir.join(format!("{name}-{:08x}.out", fastrand::u32(..)));
    let err_path = out_path.with_extension("err");
    let open = |path: &Path| {
        std::fs::File::create(path)
            .map_err(|error| failed(format!("cannot capture {name}'s output: {error}")))
    };
    command
        .stdin(Stdio::null())
        .stdout(open(&out_path)?)
        .stderr(open(&err_path)?);
    let mut child = command
        .spawn()
        .map_err(|error| failed(format!("cannot run {name}: {error}")))?;
    let deadline = Instant::now() + START_WITHIN;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!(
                    "{name} did not finish within {START_WITHIN:?}"
                )));
            }
            Err(error) => return Err(failed(format!("cannot wait for {name}: {error}"))),
        }
    };
    let output = bounded_read(&out_path);
    let errors = tail(&err_path);
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    if status.success() {
        Ok(output)
    } else {
        Err(failed(format!("{name} failed ({status}): {errors}")))
    }
}

/// At most 1 MiB of a file, as text.
fn bounded_read(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = file.take(1 << 20).read_to_string(&mut text);
    }
    text
}

/// The last few KiB of a log, for an error.
fn tail(path: &Path) -> String {
    use std::io::{Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let length = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(LOG_TAIL)));
    let mut text = String::new();
    let _ = file.take(LOG_TAIL).read_to_string(&mut text);
    text.trim().to_owned()
}

/// Where the server binaries are: `EARSHOT_PG_BINDIR`, else `pg_config
/// --bindir`, else the newest `/usr/lib/postgresql/<version>/bin`.
pub fn server_bindir() -> Result<PathBuf, PgClusterError> {
    let has_server = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(dir) = std::env::var_os("EARSHOT_PG_BINDIR").map(PathBuf::from) {
        return if has_server(&dir) {
            Ok(dir)
        } else {
            Err(failed(format!(
                "EARSHOT_PG_BINDIR={} has no initdb and postgres",
                dir.display()
            )))
        };
    }
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()))
        .filter(|dir| has_server(dir));
    if let Some(dir) = from_pg_config {
        return Ok(dir);
    }
    let newest = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            has_server(&bin).then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version);
    newest.map(|(_, dir)| dir).ok_or_else(|| {
        failed(
            "no PostgreSQL server binaries (initdb, postgres): install Debian's `postgresql` \
             package (tests/run.sh does) or set EARSHOT_PG_BINDIR",
        )
    })
}
