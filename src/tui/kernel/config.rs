//! [`ConsoleConfig`]: the facts the console is started with, as every pane
//! reads them when it is created (and again at an account switch).

use earshot_core::api::validate::UrlPolicy;

/// Facts the console is started with.
#[derive(Clone, Debug)]
pub(crate) struct ConsoleConfig {
    /// Running on the built-in emulator (`earshot demo`): shows DEMO.
    pub(crate) demo: bool,
    /// `--read-only`, or the profile's `read_only`: no command that
    /// changes the platform exists.
    pub(crate) read_only: bool,
    pub(crate) profile_label: String,
    pub(crate) region: String,
    /// Which receiver URLs the create form accepts.
    pub(crate) url_policy: UrlPolicy,
    /// The platform's clock, as a factor of real time (1: real time).
    pub(crate) time_scale: f64,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            demo: false,
            read_only: false,
            profile_label: "-".into(),
            region: earshot_core::api::Region::default().as_str().into(),
            url_policy: UrlPolicy::PublicHttps,
            time_scale: 1.0,
        }
    }
}
