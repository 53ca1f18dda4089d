//! The Health pane's incidents (`i` from the board): every failure group
//! of the window as an incident, open first, with who acknowledged it; `a`
//! acknowledges the selected one with a note, stored with the operator's
//! login name so every console on the same store shows it. `v` shows the
//! resolved ones too; `/` filters and `S` sorts the list as every table.
//! Reads and the acknowledgement run in the worker
//! ([`Effect::LoadIncidents`], [`Effect::AckIncident`]).

use ratatui::crossterm::event::KeyEvent;
use tui_input::Input;

use super::tables::INCIDENTS;
use crate::tui::action::{Effect, Failure};
use crate::tui::app::Outcome;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::history::incidents::{Incident, IncidentState};

/// The incidents list and its acknowledgement prompt.
#[derive(Debug)]
pub struct Incidents {
    rows: Vec<Incident>,
    pub(crate) table: TableView<Incident>,
    /// Resolved incidents listed too.
    pub all: bool,
    /// The note being typed for the selected incident.
    pub note: Option<Input>,
    pub loaded: bool,
    seq: u64,
}

impl Default for Incidents {
    fn default() -> Self {
        Incidents {
            rows: Vec::new(),
            table: TableView::new(&INCIDENTS),
            all: false,
            note: None,
            loaded: false,
            seq: 0,
        }
    }
}

impl Incidents {
    pub fn rows(&self) -> &[Incident] {
        &self.rows
    }

    pub fn selected(&self) -> Option<&Incident> {
        self.table.selected(&self.rows)
    }

    /// `/`, `S` or the filter prompt's keys.
    pub(super) fn run_table(&mut self, command: TableCommand) {
        self.table.run(command, &self.rows);
    }

    /// A key for the filter prompt.
    pub(super) fn type_key(&mut self, key: &KeyEvent) {
        self.table.type_key(key, &self.rows);
    }

    pub(super) fn paste(&mut self, pasted: &str) {
        self.table.paste(pasted, &self.rows);
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
        self.table.replace(&mut self.rows, rows);
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
