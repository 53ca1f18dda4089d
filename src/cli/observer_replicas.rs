//! What `observer setup --replicas N --store postgres://…` prints: N
//! systemd units, each an `earshot listen` replica on a port of its own
//! filing into the one PostgreSQL store, and the load balancer's backend
//! (HAProxy) that spreads the platform's deliveries over them, each
//! checked on its `/healthz`. Text only. The store's password is never in
//! it: each unit loads the password file as a credential and names it in
//! `EARSHOT_STORE_PASSWORD_FILE` (the URL itself refuses a password).

use std::net::SocketAddr;
use std::path::Path;

use super::observer_service::{
    CREDENTIAL, HARDENING_HEAD, HARDENING_TAIL, SERVICE_USER, capabilities, exec_word, unit_value,
};

/// The most replicas setup prints units for.
pub(crate) const MOST: u16 = 32;

/// How far above its webhook port a replica serves `/healthz` and
/// `/metrics` (never on the webhook port).
pub(crate) const METRICS_OFFSET: u16 = 1000;

/// The credential name the store's password file is loaded under.
const PASSWORD_CREDENTIAL: &str = "store-password";

/// What the units and the backend are made of.
#[derive(Clone, Debug)]
pub(crate) struct Replicas<'a> {
    /// The subscription's receiver URL, shown without credentials.
    pub(crate) url: &'a str,
    /// The first replica's address; replica `i` (from 0) binds its port + i.
    pub(crate) first: SocketAddr,
    pub(crate) count: u16,
    /// The webhook secret file, absolute.
    pub(crate) secret_file: &'a Path,
    /// `postgres://USER@HOST:PORT/DB` (never with a password).
    pub(crate) store_url: &'a str,
    /// The file holding the store's password alone (read by systemd).
    pub(crate) password_file: &'a Path,
    pub(crate) executable: &'a Path,
}

/// One replica's unit.
#[derive(Clone, Debug, serde::Serialize)]
pub(crate) struct Unit {
    /// `earshot-observer-K.service` (K from 1).
    pub(crate) name: String,
    pub(crate) listen: SocketAddr,
    pub(crate) metrics: SocketAddr,
    pub(crate) text: String,
}

impl Replicas<'_> {
    /// Why these replicas cannot be printed, if they cannot: a count out
    /// of 1..=[`MOST`], or ports past 65535.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.count == 0 || self.count > MOST {
            return Err(format!("--replicas takes 1 to {MOST}"));
        }
        let last = u32::from(self.first.port()) + u32::from(self.count - 1);
        if last + u32::from(METRICS_OFFSET) > u32::from(u16::MAX) {
            return Err(format!(
                "replicas on ports {} to {last} would serve /healthz on {} and up, past 65535: \
                 choose a lower --listen port",
                self.first.port(),
                u32::from(self.first.port()) + u32::from(METRICS_OFFSET)
            ));
        }
        Ok(())
    }

    /// Replica `index`'s webhook and metrics addresses (after [`check`](Self::check)).
    fn addresses(&self, index: u16) -> (SocketAddr, SocketAddr) {
        let port = self.first.port().saturating_add(index);
        (
            SocketAddr::new(self.first.ip(), port),
            SocketAddr::new(self.first.ip(), port.saturating_add(METRICS_OFFSET)),
        )
    }

    /// The N units, in order.
    pub(crate) fn units(&self) -> Vec<Unit> {
        (0..self.count).map(|index| self.unit(index)).collect()
    }

    fn unit(&self, index: u16) -> Unit {
        let (listen, metrics) = self.addresses(index);
        let name = format!("earshot-observer-{}.service", index + 1);
        let executable = exec_word(&self.executable.to_string_lossy());
        let secret_file = unit_value(&self.secret_file.to_string_lossy());
        let password_file = unit_value(&self.password_file.to_string_lossy());
        let store = exec_word(self.store_url);
        let description = unit_value(self.url);
        let replica = index + 1;
        let count = self.count;
        let text = format!(
            "# /etc/systemd/system/{name}\n\
             # Create the user once: useradd --system --home-dir /var/lib/earshot --shell /usr/sbin/nologin {SERVICE_USER}\n\
             # Then: systemctl daemon-reload && systemctl enable --now {name}\n\
             [Unit]\n\
             Description=earshot observer replica {replica} of {count}: the webhook receiver for {description}\n\
             Wants=network-online.target\n\
             After=network-online.target\n\
             \n\
             [Service]\n\
             Type=simple\n\
             User={SERVICE_USER}\n\
             Group={SERVICE_USER}\n\
             # systemd copies both files into a directory only this service reads (%d).\n\
             LoadCredential={CREDENTIAL}:{secret_file}\n\
             LoadCredential={PASSWORD_CREDENTIAL}:{password_file}\n\
             # The store's password, from its file: never on the command line.\n\
             Environment=EARSHOT_STORE_PASSWORD_FILE=%d/{PASSWORD_CREDENTIAL}\n\
             ExecStart={executable} listen --listen {listen} --secret-file %d/{CREDENTIAL} --store {store} --metrics-listen {metrics}\n\
             Restart=on-failure\n\
             RestartSec=2s\n\
             # listen exits 143 when systemctl stop sends SIGTERM: a clean stop.\n\
             SuccessExitStatus=143\n\
             {HARDENING_HEAD}\
             {HARDENING_TAIL}\
             {capabilities}\
             \n\
             [Install]\n\
             WantedBy=multi-user.target\n",
            capabilities = capabilities(listen.port()),
        );
        Unit {
            name,
            listen,
            metrics,
            text,
        }
    }

    /// The load balancer's backend: HAProxy, round robin, each replica
    /// checked on its `/healthz`, which takes out one that is down or hung
    /// or cannot write the database (its probe, `observer::pg_probe`).
    pub(crate) fn load_balancer(&self) -> String {
        let mut text = format!(
            "# HAProxy: the backend of the frontend that terminates TLS for {url}\n\
             # (its `default_backend earshot_observers`); each replica checked on /healthz.\n\
             backend earshot_observers\n\
             \x20   balance roundrobin\n\
             \x20   option httpchk GET /healthz\n\
             \x20   http-check expect status 200\n",
            url = self.url
        );
        for index in 0..self.count {
            let (listen, metrics) = self.addresses(index);
            text.push_str(&format!(
                "    server replica{} {listen} check port {} inter 2s fall 2 rise 2\n",
                index + 1,
                metrics.port()
            ));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(count: u16, port: u16) -> Replicas<'static> {
        Replicas {
            url: "https://hooks.example.com/earshot",
            first: SocketAddr::from(([127, 0, 0, 1], port)),
            count,
            secret_file: Path::new("/etc/earshot/observer.secret"),
            store_url: "postgres://earshot@db.example.com:5432/earshot",
            password_file: Path::new("/etc/earshot/store-password"),
            executable: Path::new("/usr/local/bin/earshot"),
        }
    }

    #[test]
    fn each_replica_has_its_own_ports_and_the_backend_checks_each() {
        let replicas = example(3, 8080);
        let lb = replicas.load_balancer();
        let units = replicas.units();
        let ports: Vec<(u16, u16)> = units
            .iter()
            .map(|unit| (unit.listen.port(), unit.metrics.port()))
            .collect();
        assert_eq!(ports, [(8080, 9080), (8081, 9081), (8082, 9082)]);
        assert!(units[2].text.contains(
            "ExecStart=/usr/local/bin/earshot listen --listen 127.0.0.1:8082 --secret-file \
             %d/webhook-secret --store postgres://earshot@db.example.com:5432/earshot \
             --metrics-listen 127.0.0.1:9082\n"
        ));
        assert!(
            lb.contains("server replica3 127.0.0.1:8082 check port 9082"),
            "{lb}"
        );
        assert_eq!(lb.matches(" check port ").count(), 3);
    }

    #[test]
    fn counts_and_ports_out_of_range_are_refused() {
        assert!(example(0, 8080).check().is_err());
        assert!(example(MOST + 1, 8080).check().is_err());
        assert!(example(MOST, 8080).check().is_ok());
        assert!(
            example(2, 64_535).check().is_err(),
            "its /healthz past 65535"
        );
    }
}
