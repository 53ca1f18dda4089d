//! The eight panes: which exist ([`PaneId`]), their tab order and names, and
//! what every pane answers ([`Pane`]) so keys reach the one on screen.
//!
//! Each pane owns its state, its commands (declared in its own type, see
//! [`PaneCommands`]), its `update` and its view; `app.rs` routes to the
//! pane on screen.

pub mod deliveries;
pub mod events;
pub mod health;
pub mod inbox;
pub mod jobs;
pub mod probe;
pub mod signatures;
pub mod subscriptions;

use ratatui::crossterm::event::KeyEvent;

use super::keymap::CommandInfo;
use super::widgets::input::cycle;

/// A pane's own commands, in its own type: `app.rs` wraps them into the
/// console's `Command`, so the key machinery (`keymap.rs`) knows no pane.
pub trait PaneCommands {
    type Command: Copy;
    /// The commands that exist now: keys match these, the footer shows
    /// the quick ones.
    fn commands(&self) -> Vec<CommandInfo<Self::Command>>;
}

/// What `app.rs` asks of the pane on screen, whichever it is.
pub trait Pane {
    /// The global keys (tab, 1–8, `q`, …) work: no text field holds them.
    fn allows_global(&self) -> bool;
    /// A text field has the keyboard: keys no command claims are typed.
    fn captures_text(&self) -> bool;
    /// A key no command claimed, for the field with the keyboard.
    fn type_key(&mut self, key: &KeyEvent);
    /// Pasted text, for the field with the keyboard.
    fn paste(&mut self, pasted: &str);
    /// Text the operator typed would be lost if the console quit now
    /// (`q` asks first).
    fn holds_typed_input(&self) -> bool {
        false
    }
}

/// A pane, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaneId {
    Health,
    Subscriptions,
    Deliveries,
    Jobs,
    Signatures,
    Probe,
    Inbox,
    Events,
}

impl PaneId {
    pub const ALL: [PaneId; 8] = [
        PaneId::Health,
        PaneId::Subscriptions,
        PaneId::Deliveries,
        PaneId::Jobs,
        PaneId::Signatures,
        PaneId::Probe,
        PaneId::Inbox,
        PaneId::Events,
    ];

    pub fn title(self) -> &'static str {
        match self {
            PaneId::Health => "Health",
            PaneId::Subscriptions => "Subscriptions",
            PaneId::Deliveries => "Deliveries",
            PaneId::Jobs => "Jobs",
            PaneId::Signatures => "Signatures",
            PaneId::Probe => "Probe",
            PaneId::Inbox => "Inbox",
            PaneId::Events => "Events",
        }
    }

    /// The title when the tab bar is short of room.
    pub(crate) fn short_title(self) -> &'static str {
        match self {
            PaneId::Subscriptions => "Subs",
            PaneId::Deliveries => "Dlv",
            PaneId::Signatures => "Sigs",
            PaneId::Events => "Evts",
            other => other.title(),
        }
    }

    pub fn next(self) -> PaneId {
        cycle(&PaneId::ALL, self, true)
    }

    pub(crate) fn prev(self) -> PaneId {
        cycle(&PaneId::ALL, self, false)
    }

    /// A pane by `:` name: its number, its title, or a short form
    /// (`subs`, `dlv`, `sigs`, …), case-insensitive.
    pub(crate) fn from_name(name: &str) -> Option<PaneId> {
        let name = name.trim().to_ascii_lowercase();
        let pane = match name.as_str() {
            "1" | "health" | "board" => PaneId::Health,
            "2" | "subs" | "sub" | "subscriptions" => PaneId::Subscriptions,
            "3" | "deliveries" | "dlv" | "del" => PaneId::Deliveries,
            "4" | "jobs" | "job" => PaneId::Jobs,
            "5" | "signatures" | "sigs" | "sig" => PaneId::Signatures,
            "6" | "probe" => PaneId::Probe,
            "7" | "inbox" | "listen" => PaneId::Inbox,
            "8" | "events" | "event" | "evt" => PaneId::Events,
            _ => return None,
        };
        Some(pane)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_cycle_in_tab_order_both_ways() {
        assert_eq!(PaneId::Probe.next(), PaneId::Inbox);
        assert_eq!(PaneId::Inbox.next(), PaneId::Events);
        assert_eq!(PaneId::Events.next(), PaneId::Health);
        assert_eq!(PaneId::Health.prev(), PaneId::Events);
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
