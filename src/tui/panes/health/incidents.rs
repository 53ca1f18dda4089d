//! The Health pane's incidents (`i` from the board): every failure group
//! of the window as an incident, open first, with who acknowledged it; `a`
//! acknowledges the selected one with a note, stored with the operator's
//! login name so every console on the same store shows it. `v` shows the
//! resolved ones too; `/` filters and `S` sorts the list as every table.
//! Reads and the acknowledgement run in the worker
//! ([`HealthEffect::LoadIncidents`], [`HealthEffect::AckIncident`]).
//!
//! The list holds still while the operator works in it ([`HOLD_MS`], as
//! htop holds its sort after a key): a refresh updates each row where it
//! is, puts incidents new since the last read on top and drops the ones
//! gone, so a quick `↓ a` acts on the row the operator saw. The store's
//! order (latest activity first) comes back when no key was pressed in
//! the view for [`HOLD_MS`], with `o`, and with `v`. `a` acknowledges the
//! incident under the cursor when it was pressed, whatever a refresh
//! does while the note is typed.

use std::collections::{HashMap, HashSet};

use ratatui::crossterm::event::KeyEvent;
use tui_input::Input;

use super::Outcome;
use super::tables::INCIDENTS;
use super::tasks::HealthEffect;
use crate::tui::kernel::Failure;
use crate::tui::load::Load;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::history::incidents::{Incident, IncidentState};

/// How long after the operator's last key in the view the list keeps the
/// order shown: four refreshes (every 5 s while on screen).
pub(crate) const HOLD_MS: i64 = 20_000;

/// An acknowledgement being written: the note typed so far and the
/// incident it acknowledges (the one under the cursor when `a` was
/// pressed, whatever the list does meanwhile).
#[derive(Debug)]
struct AckPrompt {
    note: Input,
    incident: String,
}

/// The incidents list and its acknowledgement prompt.
#[derive(Debug)]
pub(crate) struct Incidents {
    /// The incidents of the window, as last read.
    list: Load<Vec<Incident>>,
    pub(crate) table: TableView<Incident>,
    /// Resolved incidents listed too.
    pub(crate) all: bool,
    /// The acknowledgement being written (`a` to `enter` or `esc`).
    ack: Option<AckPrompt>,
    /// Until when (Unix ms) a refresh keeps the order shown: the
    /// operator's last key in the view plus [`HOLD_MS`].
    held_until_ms: Option<i64>,
    /// The next read takes the store's order (`o`, `v`).
    reorder: bool,
}

impl Default for Incidents {
    fn default() -> Self {
        Incidents {
            list: Load::new(),
            table: TableView::new(&INCIDENTS),
            all: false,
            ack: None,
            held_until_ms: None,
            reorder: false,
        }
    }
}

impl Incidents {
    pub(crate) fn rows(&self) -> &[Incident] {
        self.list.value()
    }

    /// The list has been read at least once.
    pub(crate) fn loaded(&self) -> bool {
        self.list.loaded()
    }

    pub(crate) fn selected(&self) -> Option<&Incident> {
        self.table.selected(self.list.value())
    }

    /// `/`, `S` or the filter prompt's keys.
    pub(super) fn run_table(&mut self, command: TableCommand) {
        self.table.run(command, self.list.value());
    }

    /// A key for the filter prompt.
    pub(super) fn type_key(&mut self, key: &KeyEvent) {
        self.table.type_key(key, self.list.value());
    }

    pub(super) fn paste(&mut self, pasted: &str) {
        self.table.paste(pasted, self.list.value());
    }

    /// Incidents nobody acknowledged yet and not resolved.
    pub(crate) fn open_count(&self) -> usize {
        self.rows()
            .iter()
            .filter(|incident| incident.state == IncidentState::Open)
            .count()
    }

    /// Asks for the list.
    pub(super) fn reload(&mut self, since_ms: i64, out: &mut Outcome) {
        out.effects.push(HealthEffect::LoadIncidents {
            seq: self.list.start(),
            since_ms,
            all: self.all,
        });
    }

    /// The operator pressed a key in the view at `now_ms`: the order shown
    /// holds for [`HOLD_MS`] from now.
    pub(super) fn touch(&mut self, now_ms: i64) {
        self.held_until_ms = Some(now_ms.saturating_add(HOLD_MS));
    }

    /// Whether a refresh at `now_ms` keeps the order shown.
    pub(crate) fn held(&self, now_ms: i64) -> bool {
        self.held_until_ms.is_some_and(|until| now_ms < until)
    }

    /// `o` (and `v`): the next read takes the store's order.
    pub(super) fn reorder(&mut self, since_ms: i64, out: &mut Outcome) {
        self.reorder = true;
        self.reload(since_ms, out);
    }

    /// The list read with `seq` at `now_ms` (a stale one is dropped): in
    /// the order shown while it holds, else in the store's; why it could
    /// not be read, for the pane to show.
    pub(super) fn on_loaded(
        &mut self,
        seq: u64,
        result: Result<Vec<Incident>, Failure>,
        now_ms: i64,
    ) -> Option<String> {
        let hold = !self.reorder && self.list.loaded() && self.held(now_ms);
        let table = &mut self.table;
        let answered = self.list.finish_with(seq, result, |rows, fresh| {
            let fresh = if hold { in_order_shown(rows, fresh) } else { fresh };
            table.replace(rows, fresh)
        });
        if answered.is_some() {
            self.reorder = false;
        }
        match answered {
            Some(Err(failure)) => Some(failure.message),
            Some(Ok(())) | None => None,
        }
    }

    /// `a`: the note prompt for the selected incident.
    pub(super) fn start_ack(&mut self) -> bool {
        let Some(incident) = self.selected() else {
            return false;
        };
        self.ack = Some(AckPrompt {
            note: Input::default(),
            incident: incident.id.clone(),
        });
        true
    }

    /// The incident the note being typed acknowledges.
    pub(crate) fn acknowledging(&self) -> Option<&str> {
        self.ack.as_ref().map(|ack| ack.incident.as_str())
    }

    /// The note being typed, while the prompt is open.
    pub(crate) fn note(&self) -> Option<&Input> {
        self.ack.as_ref().map(|ack| &ack.note)
    }

    /// [`Incidents::note`], to type into.
    pub(crate) fn note_mut(&mut self) -> Option<&mut Input> {
        self.ack.as_mut().map(|ack| &mut ack.note)
    }

    /// `esc` in the prompt.
    pub(super) fn cancel_ack(&mut self) {
        self.ack = None;
    }

    /// `enter` in the prompt: the acknowledgement to store, of the
    /// incident `a` was pressed on.
    pub(super) fn submit_ack(&mut self, out: &mut Outcome) {
        let Some(AckPrompt { note, incident: id }) = self.ack.take() else {
            return;
        };
        let note = note.value().trim().to_owned();
        out.effects.push(HealthEffect::AckIncident {
            id,
            note: (!note.is_empty()).then_some(note),
        });
    }
}

/// `fresh` in the order of `shown`: the incidents not shown yet first, in
/// their own order (the store's: latest activity first), then the ones
/// shown, each where it was, with what was read now; the ones gone left
/// out.
fn in_order_shown(shown: &[Incident], fresh: Vec<Incident>) -> Vec<Incident> {
    let was_shown: HashSet<&str> = shown.iter().map(|incident| incident.id.as_str()).collect();
    let (mut ordered, known): (Vec<Incident>, Vec<Incident>) = fresh
        .into_iter()
        .partition(|incident| !was_shown.contains(incident.id.as_str()));
    let mut known: HashMap<String, Incident> = known
        .into_iter()
        .map(|incident| (incident.id.clone(), incident))
        .collect();
    ordered.extend(shown.iter().filter_map(|incident| known.remove(&incident.id)));
    ordered
}
