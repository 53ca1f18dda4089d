//! The Health pane's incidents (`i` from the board): every failure group
//! of the window as an incident, open first, with who acknowledged it; `a`
//! acknowledges the selected one with a note, stored with the operator's
//! login name so every console on the same store shows it. `v` shows the
//! resolved ones too; `/` filters and `S` sorts the list as every table.
//! Reads and the acknowledgement run in the worker
//! ([`HealthEffect::LoadIncidents`], [`HealthEffect::AckIncident`]).

use ratatui::crossterm::event::KeyEvent;
use tui_input::Input;

use super::Outcome;
use super::tables::INCIDENTS;
use super::tasks::HealthEffect;
use crate::tui::kernel::Failure;
use crate::tui::load::Load;
use crate::tui::widgets::table_view::{TableCommand, TableView};
use earshot_core::history::incidents::{Incident, IncidentState};

/// The incidents list and its acknowledgement prompt.
#[derive(Debug)]
pub(crate) struct Incidents {
    /// The incidents of the window, as last read.
    list: Load<Vec<Incident>>,
    pub(crate) table: TableView<Incident>,
    /// Resolved incidents listed too.
    pub(crate) all: bool,
    /// The note being typed for the selected incident.
    pub(crate) note: Option<Input>,
}

impl Default for Incidents {
    fn default() -> Self {
        Incidents {
            list: Load::new(),
            table: TableView::new(&INCIDENTS),
            all: false,
            note: None,
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

    /// Why the last read failed, until one succeeds.
    pub(crate) fn error(&self) -> Option<&str> {
        self.list.error()
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

    /// The list read with `seq` (a stale one is dropped); why it could not
    /// be read, for the pane to show.
    pub(super) fn on_loaded(
        &mut self,
        seq: u64,
        result: Result<Vec<Incident>, Failure>,
    ) -> Option<String> {
        let table = &mut self.table;
        match self
            .list
            .finish_with(seq, result, |rows, fresh| table.replace(rows, fresh))
        {
            Some(Err(failure)) => Some(failure.message),
            Some(Ok(())) | None => None,
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
        out.effects.push(HealthEffect::AckIncident {
            id: incident.id.clone(),
            note: (!note.is_empty()).then_some(note),
        });
    }
}
