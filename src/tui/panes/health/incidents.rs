//! The Health pane's incidents (`i` from the board): every failure group
//! of the window as an incident, open first, with who acknowledged it; `a`
//! acknowledges the selected one with a note, stored with the operator's
//! login name so every console on the same store shows it. `v` shows the
//! resolved ones too. Reads and the acknowledgement run in the worker
//! ([`Effect::LoadIncidents`], [`Effect::AckIncident`]).

use tui_input::Input;

use crate::history::incidents::{Incident, IncidentState};
use crate::tui::action::{Effect, Failure};
use crate::tui::app::Outcome;
use crate::tui::widgets::table::TableState;

/// The incidents list and its acknowledgement prompt.
#[derive(Debug, Default)]
pub struct Incidents {
    rows: Vec<Incident>,
    pub(crate) table: TableState,
    /// Resolved incidents listed too.
    pub all: bool,
    /// The note being typed for the selected incident.
    pub note: Option<Input>,
    pub loaded: bool,
    seq: u64,
}

impl Incidents {
    pub fn rows(&self) -> &[Incident] {
        &self.rows
    }

    pub fn selected(&self) -> Option<&Incident> {
        self.rows.get(self.table.position())
    }

    /// Incidents nobody acknowledged yet and not resolved.
    pub fn open_count(&self) -> usize {
        self.rows
            .iter()
            .filter(|incident| incident.state == IncidentState::Open)
            .count()
    }

    /// Rows as if just loaded (fixtures for tests and snapshots).
    pub fn set_rows(&mut self, rows: Vec<Incident>) {
        self.loaded = true;
        self.table
            .replace(&mut self.rows, rows, |row| row.id.clone());
    }

    /// Asks for the list.
    pub(super) fn reload(&mut self, since_ms: i64, out: &mut Outcome) {
        self.seq += 1;
        out.effects.push(Effect::LoadIncidents {
            seq: self.seq,
            since_ms,
            all: self.all,
        });
    }

    /// The list read with `seq` (a stale one is dropped).
    pub(super) fn loaded(
        &mut self,
        seq: u64,
        result: Result<Vec<Incident>, Failure>,
    ) -> Option<String> {
        if seq != self.seq {
            return None;
        }
        match result {
            Ok(rows) => {
                self.set_rows(rows);
                None
            }
            Err(failure) => Some(failure.message),
        }
    }

    /// `a`: the note prompt for the selected incident.
    pub(super) fn start_ack(&mut self) -> bool {
        if self.selected().is_none() {
            return false;
        }
        self.note = Some(Input::default());
        true
    }

    /// `enter` in the prompt: the acknowledgement to store.
    pub(super) fn submit_ack(&mut self, out: &mut Outcome) {
        let (Some(note), Some(incident)) = (self.note.take(), self.selected()) else {
            return;
        };
        let note = note.value().trim().to_owned();
        out.effects.push(Effect::AckIncident {
            id: incident.id.clone(),
            note: (!note.is_empty()).then_some(note),
        });
    }
}
