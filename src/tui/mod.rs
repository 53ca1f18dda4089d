//! The console: a ratatui front end over the same client as the command
//! line (DESIGN.md §7), built as The Elm Architecture, in three floors,
//! each importing only the floors below it:
//!
//! 1. [`console`]: the app (its state and its one `update`), its actions
//!    and effects, its commands and `:` line, `:ctx`, the frame, the event
//!    loop and the worker. Private to its folder: nothing below can name
//!    it.
//! 2. [`panes`]: the panes, one folder each, and their one list
//!    (`panes::registry!`, [`panes::PaneId`]).
//! 3. [`kernel`]: what a pane needs: the [`kernel::Pane`] trait, what a
//!    pane takes and returns (the config it reads, its outcome, the typed
//!    handover to another pane, its background work and where that work
//!    reports), and the store access the panes' tasks share. Beside it,
//!    drawing and keys: [`widgets`], [`theme`], [`keymap`], [`load`].
//!
//! Below all of them, the terminal's plumbing: [`input`] (its events, on
//! a thread), [`terminal`] (raw mode, restore on exit / panic / signal),
//! [`screen`] (frames in few bytes), [`frame_pace`], [`clipboard`]
//! (OSC 52), [`logging`].

pub(crate) mod clipboard;
mod console;
pub(crate) mod frame_pace;
pub(crate) mod input;
pub(crate) mod kernel;
pub(crate) mod keymap;
pub(crate) mod load;
pub(crate) mod logging;
pub(crate) mod panes;
pub(crate) mod screen;
pub(crate) mod terminal;
pub(crate) mod theme;
pub(crate) mod widgets;

pub use console::bench;
pub(crate) use console::{ConsoleOptions, known_sessions, policy_for, run_console};
