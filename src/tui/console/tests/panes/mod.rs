//! Each pane driven through the whole console: its keys, its updates and
//! what it shows, one file per pane (kept here, above the panes, so no
//! module under `tui/panes/` names the console).

pub(crate) mod deliveries;
pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod inbox;
pub(crate) mod incidents_order;
pub(crate) mod jobs;
pub(crate) mod probe;
pub(crate) mod signatures;
pub(crate) mod subscriptions;
