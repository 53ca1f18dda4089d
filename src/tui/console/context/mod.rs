//! Switching accounts from the console (`:ctx`, as in k9s): the config
//! file's profiles, the picker (`:ctx` alone), the question asked before
//! typed input or running work would be lost, and what a switch changes
//! in the [`App`].
//!
//! A switch takes two steps. `update` asks for it
//! ([`Effect::SwitchProfile`]); the event loop opens the profile
//! ([`ProfileSource::open`]: config file, key, client, store, theme — I/O,
//! so never in `update`) and, once it could, gives the worker the new
//! client, store and channel and calls [`App::switched`], which replaces
//! every pane with an empty one and starts the first loads again. A
//! profile that cannot be opened changes nothing ([`App::switch_failed`]).
//!
//! Late answers: every action a worker sends is [`Stamped`] with the
//! generation of the account it worked for (its [`ActionTx`]), and
//! [`App::update_stamped`] drops one of an older generation. An answer of
//! account A that arrives after the switch (a load in flight, a change
//! left to finish, the old job watcher's last report, a feed of the
//! account the console started on) never shows under account B, whatever
//! its sequence number says.

mod profiles;
#[cfg(test)]
mod tests;
pub(crate) mod view;

use ratatui::crossterm::event::KeyCode;
use tokio::sync::mpsc::UnboundedSender;
use tui_input::Input;

pub(crate) use profiles::{ConfigProfiles, ProfileSource};
pub(crate) use profiles::{load_theme, store_path};

use super::action::{Action, Effect};
use super::app::{App, Outcome, Overlay, Status};
use super::command::Command;
use super::command_line::{self, Completion};
use crate::tui::kernel::Failure;
use crate::tui::keymap::{CommandInfo, DOWN, ENTER, Key, UP, keys};
use crate::tui::panes::PaneId;
use crate::tui::panes::deliveries::tasks::DeliveriesEffect;
use earshot_core::api::validate::UrlPolicy;
use earshot_core::config::ProfileSummary;

/// The profiles the console knows and which one it runs on.
#[derive(Clone, Debug, Default)]
pub(crate) struct Contexts {
    /// The config file's profiles, by name (read when the console starts).
    pub(crate) profiles: Vec<ProfileSummary>,
    /// The profile in use; `None` on `--url` alone (or in the demo).
    pub(crate) current: Option<String>,
    /// Switches so far: what a worker of an older generation sends is
    /// dropped.
    pub(crate) generation: u64,
    /// `--read-only`: read-only on every profile of the run.
    pub(crate) forced_read_only: bool,
}

/// What the console runs on after a switch, as the status bar and the
/// read-only filter need it.
#[derive(Clone, Debug)]
pub(crate) struct Account {
    pub(crate) profile: String,
    pub(crate) region: String,
    /// The profile's `read_only`.
    pub(crate) read_only: bool,
    /// Which receiver URLs the create form accepts.
    pub(crate) url_policy: UrlPolicy,
}

/// An action and the generation of the account whose worker sent it.
#[derive(Debug)]
pub(crate) struct Stamped {
    pub(crate) generation: u64,
    pub(crate) action: Action,
}

/// Where a worker sends its results: the event loop's channel, each
/// action stamped with the worker's account generation; or, for a worker
/// tested on its own, a plain channel of actions.
#[derive(Clone, Debug)]
pub(crate) struct ActionTx {
    generation: u64,
    channel: Channel,
}

#[derive(Clone, Debug)]
enum Channel {
    Plain(UnboundedSender<Action>),
    Stamped(UnboundedSender<Stamped>),
}

impl ActionTx {
    /// Sends on `tx`, stamped with `generation`.
    pub(crate) fn stamped(generation: u64, tx: UnboundedSender<Stamped>) -> ActionTx {
        ActionTx {
            generation,
            channel: Channel::Stamped(tx),
        }
    }

    /// Sends `action`; an error when the console is gone (the action is
    /// dropped: nobody is left to show it).
    pub(crate) fn send(&self, action: Action) -> Result<(), ConsoleGone> {
        match &self.channel {
            Channel::Plain(tx) => tx.send(action).map_err(|_| ConsoleGone),
            Channel::Stamped(tx) => tx
                .send(Stamped {
                    generation: self.generation,
                    action,
                })
                .map_err(|_| ConsoleGone),
        }
    }
}

/// The console stopped reading results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConsoleGone;

impl From<UnboundedSender<Action>> for ActionTx {
    fn from(tx: UnboundedSender<Action>) -> ActionTx {
        ActionTx {
            generation: 0,
            channel: Channel::Plain(tx),
        }
    }
}

/// The picker's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CtxCommand {
    Up,
    Down,
    /// Switch to the profile selected.
    Choose,
}

/// The keys of the picker `:ctx` opens.
pub(crate) fn picker_commands() -> Vec<CommandInfo<Command>> {
    vec![
        CommandInfo::new("enter", "switch", ENTER, Command::Ctx(CtxCommand::Choose)).quick(),
        CommandInfo::new("↑↓ / j k", "move", UP, Command::Ctx(CtxCommand::Up)).quick(),
        CommandInfo::new("", "", DOWN, Command::Ctx(CtxCommand::Down)).hidden(),
        CommandInfo::new(
            "esc",
            "close",
            keys![Key::plain(KeyCode::Esc), Key::char('q')],
            Command::Close,
        )
        .quick(),
    ]
}

impl App {
    /// The config file's profiles `:ctx` offers, and the one in use.
    pub(crate) fn set_profiles(&mut self, profiles: Vec<ProfileSummary>, current: Option<String>) {
        self.ctx.profiles = profiles;
        self.ctx.current = current;
        self.dirty = true;
    }

    /// An action a worker (or a feed) sent for account `generation`:
    /// dropped when the console has switched accounts since.
    pub(crate) fn update_stamped(&mut self, stamped: Stamped) -> Vec<Effect> {
        if stamped.generation != self.ctx.generation {
            tracing::debug!(
                from = stamped.generation,
                now = self.ctx.generation,
                "dropped an answer for the account before the switch"
            );
            return Vec::new();
        }
        self.update(stamped.action)
    }

    /// Why a mutating key is gone, for the status bar.
    pub(crate) fn read_only_reason(&self) -> String {
        if self.ctx.forced_read_only {
            "the console was started with --read-only".into()
        } else {
            format!(
                "profile {} is read-only (read_only = true in the config)",
                self.config.profile_label
            )
        }
    }

    /// `:ctx` alone: the picker, on the profile in use.
    pub(crate) fn open_profiles(&mut self) -> Vec<Effect> {
        if let Some(why) = self.cannot_switch() {
            self.notice(why);
            return Vec::new();
        }
        let selected = self
            .ctx
            .current
            .as_ref()
            .and_then(|current| self.ctx.profiles.iter().position(|p| &p.name == current))
            .unwrap_or(0);
        self.overlay = Some(Overlay::Profiles { selected });
        Vec::new()
    }

    /// Why `:ctx` cannot switch at all, if it cannot.
    fn cannot_switch(&self) -> Option<String> {
        if self.config.demo {
            return Some(
                "the demo runs on its one built-in account (demo); quit it and run \
                 `earshot --profile NAME` to open a profile of your config file"
                    .into(),
            );
        }
        if self.ctx.profiles.is_empty() {
            return Some(
                "no profile to switch to: the config file has none (`earshot config init` \
                 writes one to edit)"
                    .into(),
            );
        }
        None
    }

    /// `:ctx NAME` (or the picker's choice): switch, asking first when
    /// typed input or running work would be lost.
    pub(crate) fn request_switch(&mut self, name: &str) -> Vec<Effect> {
        if let Some(why) = self.cannot_switch() {
            self.notice(why);
            return Vec::new();
        }
        if !self.ctx.profiles.iter().any(|profile| profile.name == name) {
            self.notice(format!(
                "no profile {name:?}: the config file has {} (tab completes a name after :ctx)",
                self.profile_names().join(", ")
            ));
            return Vec::new();
        }
        if self.ctx.current.as_deref() == Some(name) {
            self.overlay = None;
            self.set_toast(format!("already on profile {name}"));
            return Vec::new();
        }
        let losing = self.would_lose();
        if !losing.is_empty() {
            self.overlay = Some(Overlay::ConfirmSwitch {
                to: name.to_owned(),
                losing,
            });
            return Vec::new();
        }
        self.switch_now(name.to_owned())
    }

    /// Asks the event loop for the switch (nothing changes until it could
    /// open the profile).
    pub(crate) fn switch_now(&mut self, name: String) -> Vec<Effect> {
        self.overlay = None;
        self.set_toast(format!("opening profile {name}…"));
        vec![Effect::SwitchProfile { name }]
    }

    /// The picker's keys.
    pub(crate) fn on_picker(&mut self, command: CtxCommand) -> Vec<Effect> {
        let Some(Overlay::Profiles { selected }) = &mut self.overlay else {
            return Vec::new();
        };
        let last = self.ctx.profiles.len().saturating_sub(1);
        match command {
            CtxCommand::Up => *selected = selected.saturating_sub(1),
            CtxCommand::Down => *selected = (*selected + 1).min(last),
            CtxCommand::Choose => {
                let chosen = self.ctx.profiles.get(*selected).map(|p| p.name.clone());
                self.overlay = None;
                if let Some(name) = chosen {
                    return self.request_switch(&name);
                }
            }
        }
        Vec::new()
    }

    /// What a switch would throw away or stop, worded for the question
    /// (empty: nothing, switch at once): each pane's, in tab order.
    pub(crate) fn would_lose(&self) -> Vec<String> {
        PaneId::ALL
            .into_iter()
            .flat_map(|id| self.pane_ref(id).would_lose())
            .collect()
    }

    /// The event loop opened the profile and moved the worker to it: every
    /// pane starts empty (nothing of the previous account stays on
    /// screen), the status bar names the profile, and the first loads
    /// start again. `notice`: something about the switch to say (a theme
    /// that could not be loaded, a store shared with the previous profile).
    pub(crate) fn switched(&mut self, account: Account, notice: Option<String>) -> Vec<Effect> {
        self.ctx.generation += 1;
        self.ctx.current = Some(account.profile.clone());
        self.config.read_only = self.ctx.forced_read_only || account.read_only;
        self.config.url_policy = account.url_policy;
        self.config.region = account.region;
        self.config.profile_label = account.profile;
        self.config.time_scale = 1.0;
        self.recreate_panes();
        self.overlay = None;
        self.status = Status::new();
        if let Some(notice) = notice {
            self.notice(notice);
        }
        let read_only = if self.config.read_only {
            " (read-only)"
        } else {
            ""
        };
        self.set_toast(format!(
            "switched to profile {}{read_only}",
            self.config.profile_label
        ));
        tracing::info!(profile = %self.config.profile_label, generation = self.ctx.generation, "switched profile");
        let mut effects = self.init();
        // The Deliveries prompt offers the sessions of this account's store.
        effects.push(Effect::Deliveries(DeliveriesEffect::LoadKnownSessions));
        // The pane on screen shows, as if just opened.
        let mut out = Outcome::default();
        self.pane_mut(self.pane).on_shown(&mut out);
        effects.extend(out.effects);
        self.dirty = true;
        effects
    }

    /// The profile could not be opened: nothing changed.
    pub(crate) fn switch_failed(&mut self, name: &str, why: &str) {
        let still = self.ctx.current.as_deref().map_or_else(
            || "where it was".to_owned(),
            |current| format!("on profile {current}"),
        );
        self.status.notice(Failure::new(format!(
            "cannot switch to profile {name}: {why}; the console stays {still}"
        )));
        self.toast = None;
        self.dirty = true;
    }

    /// Profile names, for messages and completion.
    pub(crate) fn profile_names(&self) -> Vec<&str> {
        self.ctx
            .profiles
            .iter()
            .map(|profile| profile.name.as_str())
            .collect()
    }

    /// `tab` at the `:` prompt: completes a command name, or a profile
    /// name after `:ctx`; several candidates are listed in the toast.
    pub(crate) fn complete_command_line(&mut self) -> Vec<Effect> {
        let Some(Overlay::CommandLine(input)) = &self.overlay else {
            return Vec::new();
        };
        let profiles: Vec<String> = self
            .profile_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let Completion { line, choices } = command_line::complete(input.value(), &profiles);
        if line != input.value() {
            self.overlay = Some(Overlay::CommandLine(Input::new(line)));
        }
        if choices.len() > 1 {
            self.set_toast(choices.join("  "));
        }
        Vec::new()
    }
}
