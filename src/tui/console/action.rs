//! The console's messages: every [`Action`] `update` understands, and every
//! [`Effect`] (request for background work) it can answer with.
//!
//! Actions come from three places: the terminal (keys, paste, resize), the
//! clock (a tick, only while something counts down), and background tasks
//! (results of platform calls). Results carry a `Failure` (the kernel's)
//! rather than an `ApiError`: a message already worded for an operator,
//! with its time.
//! Secrets never travel in an `Action`; the one that must reach the
//! platform travels in an `Effect`, whose `Debug` masks it.

use std::time::Instant;

use ratatui::crossterm::event::Event;

#[cfg(test)]
use super::command::Command;
use crate::tui::kernel::{ConsoleEffect, Failure, Handover, Pane};
use crate::tui::panes::registry;

/// [`Action`], with a variant per pane (its results) from the registry.
macro_rules! action_enum {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// A message to `App::update`.
        #[derive(Clone, Debug)]
        pub(crate) enum Action {
            /// A key, a paste, a resize.
            Input(Event),
            /// A command run without its key (the keys and the `:` prompt
            /// run theirs inside `App::update`).
            #[cfg(test)]
            Run(Command),
            /// The clock, while something on screen counts down.
            Tick(Instant),
            $(
                #[doc = concat!("What background work reports to the ", stringify!($id), " pane.")]
                $name(<$ty as Pane>::Result),
            )*
            /// A pane hands something to another pane.
            Handover(Handover),
            /// Background work failed outside any pane (e.g. the clipboard).
            Failed(Failure),
        }
    };
}
registry!(action_enum);

/// [`Effect`], with a variant per pane (its own background work, which
/// its folder declares and runs) from the registry.
macro_rules! effect_enum {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        /// Background work `update` asks for; the worker runs each in a task.
        #[derive(Clone, Debug)]
        pub(crate) enum Effect {
            $(
                #[doc = concat!("The ", stringify!($id), " pane's own work (its `Pane::Effect`).")]
                #[allow(dead_code, reason = "a pane with no effects of its own has a variant none can build")]
                $name(<$ty as Pane>::Effect),
            )*
            /// Work the console's worker runs for a pane.
            Console(ConsoleEffect),
            /// Switch the console to this profile of the config file (`:ctx`):
            /// the event loop opens it and, once it could, calls `App::switched`.
            SwitchProfile {
                name: String,
            },
        }
    };
}
registry!(effect_enum);
