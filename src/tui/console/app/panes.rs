//! [`Panes`]: one field per pane, from the panes' registry, and what goes
//! to a pane by its id, its command or its result. The only code generated
//! for the app: the rest of [`App`](super::App) is written out.

use super::Outcome;
use super::any_pane::{AnyPane, Registered, own};
use crate::tui::console::action::{Action, Effect};
use crate::tui::console::command::Command;
use crate::tui::kernel::{ConsoleConfig, Pane};
use crate::tui::panes::{PaneId, registry};

/// Where [`Panes::on_result`] sent an action.
pub(crate) enum Routed {
    /// To its pane: `Some` the pane when its results answer platform calls
    /// (the status bar's connection follows them), `None` for local work.
    Answered(Option<PaneId>),
    /// No pane's result: the action, for the app (boxed: the largest
    /// action is a pane's result, far larger than a pane's id).
    Other(Box<Action>),
}

/// [`Panes`] and its dispatch, from the registry.
macro_rules! panes_state {
    ($($id:ident: $field:ident: $ty:ty => $name:ident,)*) => {
        $(
            impl Registered for $ty {
                fn wrap(effect: <$ty as Pane>::Effect) -> Effect {
                    Effect::$name(effect)
                }
            }
        )*

        /// Every pane, one field each.
        #[derive(Debug)]
        pub(crate) struct Panes {
            $(
                #[doc = concat!("The ", stringify!($id), " pane.")]
                pub(crate) $field: $ty,
            )*
        }

        impl Panes {
            /// Every pane empty, for the account `config` describes.
            pub(crate) fn new(config: &ConsoleConfig) -> Panes {
                Panes {
                    $($field: <$ty as Pane>::create(config),)*
                }
            }

            /// The pane `id`.
            pub(crate) fn get(&self, id: PaneId) -> &dyn AnyPane {
                match id {
                    $(PaneId::$id => &self.$field,)*
                }
            }

            pub(crate) fn get_mut(&mut self, id: PaneId) -> &mut dyn AnyPane {
                match id {
                    $(PaneId::$id => &mut self.$field,)*
                }
            }

            /// A pane's result, to that pane; the action back when it is no
            /// pane's result.
            pub(crate) fn on_result(&mut self, action: Action, out: &mut Outcome) -> Routed {
                match action {
                    $(
                        Action::$name(result) => {
                            own(&mut self.$field, out, |pane, own| pane.on_result(result, own));
                            Routed::Answered(<$ty as Pane>::CALLS_PLATFORM.then_some(PaneId::$id))
                        }
                    )*
                    other => Routed::Other(Box::new(other)),
                }
            }

            /// A pane's command, to that pane (wherever it is); the command
            /// back when it is the console's own.
            pub(crate) fn run(&mut self, command: Command, out: &mut Outcome) -> Result<(), Command> {
                match command {
                    $(
                        Command::$name(command) => {
                            own(&mut self.$field, out, |pane, own| pane.run(command, own));
                            Ok(())
                        }
                    )*
                    other => Err(other),
                }
            }
        }
    };
}
registry!(panes_state);
