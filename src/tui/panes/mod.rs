//! The panes: the one list of them ([`registry!`]) and their ids
//! ([`PaneId`]: tab order, titles, `:` names, `:NAME ID`). What every
//! pane answers, and what it takes and returns, is the kernel's
//! (`tui::kernel`: [`Pane`]); a pane imports the kernel and the drawing
//! and key modules beside it, never the console above.
//!
//! Each pane lives in its own folder and owns its state, its commands (in
//! its own type), its update, its view and its background work (its
//! `tasks.rs`). The console holds one of each (the registry makes the
//! `Panes` field, the `Command`, `Action` and `Effect` variants and the
//! dispatch; the worker runs each pane's effects alike; the `:` line
//! lists each pane's `:NAME ID`); so adding a pane is its folder and its
//! line in [`panes!`] here (which declares its module too).

use super::kernel::{Jump, Pane};
use super::widgets::input::cycle;

/// Declares every pane's module and the [`registry!`] listing them: the
/// one place a pane is registered, one line each, in tab order.
macro_rules! panes {
    ($($id:ident: $field:ident: $module:ident::$pane:ident => $name:ident,)*) => {
        $(pub(crate) mod $module;)*

        /// Every pane, in tab order: its [`PaneId`], the field holding it,
        /// its type, and the name of its `Command`, `Action` and `Effect`
        /// variants. `registry!(callback)` hands the list to a macro that
        /// builds from it ([`PaneId`] here; `Command`, `Action` and
        /// `Effect` in the console, its panes and their dispatch, the
        /// running of pane effects in the worker).
        macro_rules! registry {
            ($then:ident) => {
                $then! {
                    $($id: $field: $crate::tui::panes::$module::$pane => $name,)*
                }
            };
        }
    };
}

panes! {
    Health: health: health::HealthPane => Health,
    Subscriptions: subs: subscriptions::SubscriptionsPane => Subs,
    Deliveries: deliveries: deliveries::DeliveriesPane => Deliveries,
    Jobs: jobs: jobs::JobsPane => Jobs,
    Signatures: sigs: signatures::SignaturesPane => Sigs,
    Probe: probe: probe::ProbePane => Probe,
    Inbox: inbox: inbox::InboxPane => Inbox,
    Events: events: events::EventsPane => Events,
    Pulse: pulse: pulse::PulsePane => Pulse,
}
#[allow(
    clippy::single_component_path_imports,
    reason = "the console names the macro by its path, `panes::registry`"
)]
pub(crate) use registry;

/// [`PaneId`], from the registry: a variant per pane, in tab order.
macro_rules! pane_ids {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// A pane, in tab order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub(crate) enum PaneId {
            $($id,)*
        }

        impl PaneId {
            /// Every pane, in tab order.
            pub(crate) const ALL: [PaneId; [$(PaneId::$id),*].len()] = [$(PaneId::$id),*];

            pub(crate) fn title(self) -> &'static str {
                match self {
                    $(PaneId::$id => <$ty as Pane>::TITLE,)*
                }
            }

            /// The title when the tab bar is short of room.
            pub(crate) fn short_title(self) -> &'static str {
                match self {
                    $(PaneId::$id => <$ty as Pane>::SHORT_TITLE,)*
                }
            }

            /// Its `:NAME ID` command, if it has one.
            pub(crate) fn jump(self) -> Option<Jump> {
                match self {
                    $(PaneId::$id => <$ty as Pane>::JUMP,)*
                }
            }

            /// Its names at the `:` prompt, besides its number.
            fn names(self) -> &'static [&'static str] {
                match self {
                    $(PaneId::$id => <$ty as Pane>::NAMES,)*
                }
            }
        }
    };
}
registry!(pane_ids);

impl PaneId {
    pub(crate) fn next(self) -> PaneId {
        cycle(&PaneId::ALL, self, true)
    }

    pub(crate) fn prev(self) -> PaneId {
        cycle(&PaneId::ALL, self, false)
    }

    /// A pane by `:` name: its number, its title, or a short form
    /// (`subs`, `dlv`, `sigs`, …), case-insensitive.
    pub(crate) fn from_name(name: &str) -> Option<PaneId> {
        let name = name.trim().to_ascii_lowercase();
        PaneId::ALL
            .into_iter()
            .enumerate()
            .find(|(index, pane)| {
                (index + 1).to_string() == name || pane.names().contains(&name.as_str())
            })
            .map(|(_, pane)| pane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_cycle_in_tab_order_both_ways() {
        assert_eq!(PaneId::Probe.next(), PaneId::Inbox);
        assert_eq!(PaneId::Inbox.next(), PaneId::Events);
        let (first, last) = (PaneId::ALL[0], PaneId::ALL[PaneId::ALL.len() - 1]);
        assert_eq!(first, PaneId::Health);
        assert_eq!(last.next(), first, "the last wraps to the first");
        assert_eq!(first.prev(), last);
        assert_eq!(PaneId::Health.next(), PaneId::Subscriptions);
        assert_eq!(PaneId::Jobs.next(), PaneId::Signatures);
    }

    #[test]
    fn panes_are_found_by_number_title_and_short_name() {
        assert_eq!(PaneId::from_name("subs"), Some(PaneId::Subscriptions));
        assert_eq!(PaneId::from_name("1"), Some(PaneId::Health));
        assert_eq!(PaneId::from_name("3"), Some(PaneId::Deliveries));
        assert_eq!(PaneId::from_name("Signatures"), Some(PaneId::Signatures));
        assert_eq!(PaneId::from_name("7"), Some(PaneId::Inbox));
        assert_eq!(PaneId::from_name("listen"), Some(PaneId::Inbox));
        assert_eq!(PaneId::from_name("8"), Some(PaneId::Events));
        assert_eq!(PaneId::from_name("events"), Some(PaneId::Events));
        assert_eq!(PaneId::from_name("nope"), None);
    }
}
