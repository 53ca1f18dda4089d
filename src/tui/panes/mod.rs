//! The five panes (all but Probe are built): which exist ([`PaneId`]), their tab order and names, and
//! the honest placeholder drawn for a pane this build doesn't have yet.
//!
//! Each pane owns its state, its commands (see `keymap.rs`), its `update`
//! and its view; `app.rs` routes to the pane on screen.

pub mod deliveries;
pub mod jobs;
pub mod signatures;
pub mod subscriptions;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::theme::{Role, Theme};
use super::widgets::input::cycle;

/// A pane, in tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaneId {
    Subscriptions,
    Deliveries,
    Jobs,
    Signatures,
    Probe,
}

impl PaneId {
    pub const ALL: [PaneId; 5] = [
        PaneId::Subscriptions,
        PaneId::Deliveries,
        PaneId::Jobs,
        PaneId::Signatures,
        PaneId::Probe,
    ];

    pub fn title(self) -> &'static str {
        match self {
            PaneId::Subscriptions => "Subscriptions",
            PaneId::Deliveries => "Deliveries",
            PaneId::Jobs => "Jobs",
            PaneId::Signatures => "Signatures",
            PaneId::Probe => "Probe",
        }
    }

    /// The title when the tab bar is short of room.
    pub fn short_title(self) -> &'static str {
        match self {
            PaneId::Subscriptions => "Subs",
            PaneId::Signatures => "Sigs",
            other => other.title(),
        }
    }

    pub fn index(self) -> usize {
        PaneId::ALL
            .iter()
            .position(|pane| *pane == self)
            .unwrap_or(0)
    }

    pub fn next(self) -> PaneId {
        cycle(&PaneId::ALL, self, true)
    }

    pub fn prev(self) -> PaneId {
        cycle(&PaneId::ALL, self, false)
    }

    /// A pane by `:` name: its number, its title, or a short form
    /// (`subs`, `dlv`, `sigs`, …), case-insensitive.
    pub fn from_name(name: &str) -> Option<PaneId> {
        let name = name.trim().to_ascii_lowercase();
        let pane = match name.as_str() {
            "1" | "subs" | "sub" | "subscriptions" => PaneId::Subscriptions,
            "2" | "deliveries" | "dlv" | "del" => PaneId::Deliveries,
            "3" | "jobs" | "job" => PaneId::Jobs,
            "4" | "signatures" | "sigs" | "sig" => PaneId::Signatures,
            "5" | "probe" => PaneId::Probe,
            _ => return None,
        };
        Some(pane)
    }

    /// The command-line equivalent of a pane this build doesn't draw.
    fn cli_equivalent(self) -> &'static str {
        match self {
            PaneId::Subscriptions => "earshot subs list",
            PaneId::Deliveries => "earshot deliveries SESSION_ID",
            PaneId::Jobs => "earshot jobs watch",
            PaneId::Signatures => "earshot verify",
            PaneId::Probe => "earshot probe FILE",
        }
    }
}

/// The body of a pane that is not in this build: what to use instead.
pub fn draw_placeholder(frame: &mut Frame<'_>, area: Rect, pane: PaneId, theme: &Theme) {
    let lines = vec![
        Line::default(),
        Line::from(vec![
            Span::styled(format!("  {}", pane.title()), theme.style(Role::Accent)),
            Span::styled(": not in this build yet — see ", theme.style(Role::Fg)),
            Span::styled(
                format!("`{}`", pane.cli_equivalent()),
                theme.style(Role::Accent),
            ),
        ]),
    ];
    frame.render_widget(
        Paragraph::new(lines)
            .style(theme.base())
            .wrap(Wrap { trim: false }),
        area,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_cycle_in_tab_order_both_ways() {
        assert_eq!(PaneId::Probe.next(), PaneId::Subscriptions);
        assert_eq!(PaneId::Subscriptions.prev(), PaneId::Probe);
        assert_eq!(PaneId::Jobs.next(), PaneId::Signatures);
    }

    #[test]
    fn panes_are_found_by_number_title_and_short_name() {
        assert_eq!(PaneId::from_name("subs"), Some(PaneId::Subscriptions));
        assert_eq!(PaneId::from_name("2"), Some(PaneId::Deliveries));
        assert_eq!(PaneId::from_name("Signatures"), Some(PaneId::Signatures));
        assert_eq!(PaneId::from_name("nope"), None);
    }
}
