//! The `:` command line: one list ([`commands`]) that parsing, the hint
//! after a mistake and the help overlay all read, so they cannot disagree.
//! Pane names come from [`PaneId`] (`:3`, `:deliveries`, `:dlv`, …); the
//! rest take an argument where it helps an operator jump: the panes'
//! `:NAME ID` commands (`:sub ID`, `:session ID`, `:event ID`, `:job ID`,
//! each declared by its pane as `Pane::JUMP`) and `:ctx NAME`. `tab`
//! completes a command's name from the same list ([`complete`]), and a
//! profile's name after `:ctx`.

use crate::tui::kernel::Jump;
use crate::tui::keymap::{CommandInfo, Key, keys};
use crate::tui::panes::PaneId;

/// What a typed line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Typed {
    Nothing,
    Quit,
    QuitNow,
    Help,
    Refresh,
    GoTo(PaneId),
    /// `pane`, at `id` (its `:NAME ID`): a subscription filtered to and
    /// opened, a session's attempts loaded, the events filtered to an
    /// event, a job watched.
    Jump {
        pane: PaneId,
        id: String,
    },
    /// Switch to this profile; `None`: the picker.
    Context(Option<String>),
}

/// One command of the line: its spellings, its argument, what it does.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LineCommand {
    /// As help shows it: `:sub ID`.
    pub(crate) usage: &'static str,
    pub(crate) names: &'static [&'static str],
    pub(crate) argument: Option<&'static str>,
    pub(crate) description: &'static str,
    runs: Runs,
}

/// What a line command makes of its argument.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// The console's own command.
    Console(fn(Option<&str>) -> Option<Typed>),
    /// A pane's `:NAME ID`: the pane, at that id.
    Jump(PaneId),
}

impl LineCommand {
    fn parse(&self, argument: Option<&str>) -> Option<Typed> {
        match self.runs {
            Runs::Console(parse) => parse(argument),
            Runs::Jump(pane) => argument.map(|id| jump(pane, id)),
        }
    }

    fn of_pane(pane: PaneId, jump: Jump) -> LineCommand {
        LineCommand {
            usage: jump.usage,
            names: jump.names,
            argument: Some("ID"),
            description: jump.description,
            runs: Runs::Jump(pane),
        }
    }
}

/// Every command but the pane names, in help order: the console's first,
/// then the panes' `:NAME ID` (by their `help_order`), then `:ctx`.
pub(crate) fn commands() -> Vec<LineCommand> {
    let mut jumps: Vec<(PaneId, Jump)> = PaneId::ALL
        .into_iter()
        .filter_map(|pane| Some((pane, pane.jump()?)))
        .collect();
    jumps.sort_by_key(|(_, jump)| jump.help_order);
    let jumps = jumps
        .into_iter()
        .map(|(pane, jump)| LineCommand::of_pane(pane, jump));
    let [quit, quit_now, help, refresh, context] = CONSOLE;
    [quit, quit_now, help, refresh]
        .into_iter()
        .chain(jumps)
        .chain([context])
        .collect()
}

/// The console's own commands.
const CONSOLE: [LineCommand; 5] = [
    LineCommand {
        usage: ":q",
        names: &["q", "quit", "qa"],
        argument: None,
        description: "quit (asks when a form would be lost)",
        runs: Runs::Console(|argument| argument.is_none().then_some(Typed::Quit)),
    },
    LineCommand {
        usage: ":q!",
        names: &["q!", "quit!"],
        argument: None,
        description: "quit without asking",
        runs: Runs::Console(|argument| argument.is_none().then_some(Typed::QuitNow)),
    },
    LineCommand {
        usage: ":help",
        names: &["help", "?"],
        argument: None,
        description: "every key of the pane on screen",
        runs: Runs::Console(|argument| argument.is_none().then_some(Typed::Help)),
    },
    LineCommand {
        usage: ":r",
        names: &["r", "refresh"],
        argument: None,
        description: "read the pane on screen again",
        runs: Runs::Console(|argument| argument.is_none().then_some(Typed::Refresh)),
    },
    LineCommand {
        usage: ":ctx [NAME]",
        names: &["ctx", "context"],
        argument: Some("NAME"),
        description: "switch account: pick a profile of the config, or this one",
        runs: Runs::Console(|argument| Some(Typed::Context(argument.map(str::to_owned)))),
    },
];

fn jump(pane: PaneId, id: &str) -> Typed {
    Typed::Jump {
        pane,
        id: id.to_owned(),
    }
}

/// The help overlay's section of the line's commands, from the same list
/// (`command` is what each entry runs if picked: `:` opens the line).
pub(crate) fn help_entries<C: Copy>(command: C) -> Vec<CommandInfo<C>> {
    commands()
        .iter()
        .map(|line| CommandInfo::new(line.usage, line.description, keys![Key::char(':')], command))
        .collect()
}

/// What `typed` asks for, or the hint to show when nothing matches.
pub(crate) fn parse(typed: &str) -> Result<Typed, String> {
    let typed = typed.trim().trim_start_matches(':').trim();
    if typed.is_empty() {
        return Ok(Typed::Nothing);
    }
    let (name, argument) = match typed.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, Some(rest.trim()).filter(|rest| !rest.is_empty())),
        None => (typed, None),
    };
    // A name alone that names a pane goes there (`:subs`, `:job`).
    if argument.is_none()
        && let Some(pane) = PaneId::from_name(name)
    {
        return Ok(Typed::GoTo(pane));
    }
    let name_lower = name.to_ascii_lowercase();
    for command in commands() {
        if command.names.contains(&name_lower.as_str()) {
            return command
                .parse(argument)
                .ok_or_else(|| match command.argument {
                    Some(what) => format!(":{name} needs {what}: e.g. :{name} db318dee"),
                    None => format!(":{name} takes no argument"),
                });
        }
    }
    Err(format!("unknown command :{typed}: {}", hint()))
}

/// What `tab` made of the line: the line (longer when something was
/// completed) and, when several names still fit, those names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Completion {
    pub(crate) line: String,
    pub(crate) choices: Vec<String>,
}

/// Completes the command name being typed (from [`commands`] and the
/// pane names), or the profile name after `:ctx` (from `profiles`): to
/// the whole name when one fits, else as far as every fitting name agrees.
pub(crate) fn complete(typed: &str, profiles: &[String]) -> Completion {
    let unchanged = || Completion {
        line: typed.to_owned(),
        choices: Vec::new(),
    };
    let commands = commands();
    let line = typed.trim_start().trim_start_matches(':');
    let (name, rest) = match line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, Some(rest.trim_start())),
        None => (line, None),
    };
    let (prefix, candidates): (String, Vec<String>) = match rest {
        None => {
            let mut names: Vec<String> = commands
                .iter()
                .flat_map(|command| command.names.iter())
                .map(|name| (*name).to_owned())
                .chain(
                    PaneId::ALL
                        .iter()
                        .map(|pane| pane.title().to_ascii_lowercase()),
                )
                .collect();
            names.dedup();
            (String::new(), names)
        }
        Some(argument) if !argument.contains(char::is_whitespace) => {
            let takes_profile = commands
                .iter()
                .find(|command| command.names.contains(&name.to_ascii_lowercase().as_str()))
                .is_some_and(|command| {
                    matches!(command.parse(Some(argument)), Some(Typed::Context(_)))
                });
            if !takes_profile {
                return unchanged();
            }
            (format!("{name} "), profiles.to_vec())
        }
        Some(_) => return unchanged(),
    };
    let word = rest.unwrap_or(name);
    let mut fitting: Vec<String> = candidates
        .into_iter()
        .filter(|candidate| candidate.starts_with(word))
        .collect();
    fitting.sort();
    fitting.dedup();
    match fitting.as_slice() {
        [] => unchanged(),
        [only] => {
            // A command that takes an argument gets the space before it.
            let space = rest.is_none()
                && commands.iter().any(|command| {
                    command.argument.is_some() && command.names.contains(&only.as_str())
                })
                && PaneId::from_name(only).is_none();
            Completion {
                line: format!("{prefix}{only}{}", if space { " " } else { "" }),
                choices: Vec::new(),
            }
        }
        [first, others @ ..] => {
            let agreed = others.iter().fold(first.as_str(), |agreed, other| {
                let same = agreed
                    .char_indices()
                    .zip(other.chars())
                    .find(|((_, a), b)| a != b)
                    .map_or(agreed.len().min(other.len()), |((at, _), _)| at);
                &agreed[..same]
            });
            let line = if agreed.len() > word.len() {
                format!("{prefix}{agreed}")
            } else {
                typed.to_owned()
            };
            Completion {
                line,
                choices: fitting,
            }
        }
    }
}

/// The commands and panes the line takes, in one line (from the lists).
pub(crate) fn hint() -> String {
    let panes = PaneId::ALL.len();
    let commands: Vec<&str> = commands().iter().map(|command| command.usage).collect();
    format!(
        "try {}, or a pane: :1…:{panes}, {}",
        commands.join(", "),
        PaneId::ALL
            .iter()
            .map(|pane| format!(":{}", pane.title().to_ascii_lowercase()))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_in_the_list_parses_and_the_hint_names_it() {
        let hint = hint();
        for command in commands() {
            assert!(hint.contains(&format!(":{}", command.names[0])), "{hint}");
            for name in command.names {
                let line = match command.argument {
                    Some(_) => format!(":{name} abc123"),
                    None => format!(":{name}"),
                };
                assert!(parse(&line).is_ok(), "{line}");
            }
        }
        for pane in PaneId::ALL {
            let name = pane.title().to_ascii_lowercase();
            assert!(hint.contains(&format!(":{name}")), "{hint}");
            assert_eq!(parse(&format!(":{name}")), Ok(Typed::GoTo(pane)));
        }
        assert!(
            hint.contains(&format!(":1…:{}", PaneId::ALL.len())),
            "{hint}"
        );
    }

    #[test]
    fn help_lists_what_the_line_accepts() {
        let entries = help_entries(());
        assert_eq!(entries.len(), commands().len());
        for entry in entries {
            let name = entry.keys.trim_start_matches(':');
            let line = name.replace("ID", "abc123");
            assert!(
                parse(&line).is_ok(),
                "help names {} the line refuses",
                entry.keys
            );
        }
    }

    #[test]
    fn tab_completes_command_names_then_profile_names() {
        let profiles = [
            "prod".to_owned(),
            "prod-eu".to_owned(),
            "staging".to_owned(),
        ];
        let line = |typed: &str| complete(typed, &profiles).line;
        assert_eq!(line("ct"), "ctx ");
        assert_eq!(line(":ctx st"), "ctx staging");
        assert_eq!(line("ctx "), "ctx ");
        // As far as every fitting name agrees, then the choices.
        let both = complete("ctx p", &profiles);
        assert_eq!(both.line, "ctx prod");
        assert_eq!(both.choices, ["prod", "prod-eu"]);
        assert_eq!(complete("ctx ", &profiles).choices.len(), 3);
        assert_eq!(line("ctx nope"), "ctx nope");
        // A pane name needs no argument, so no space.
        assert_eq!(line("delive"), "deliveries");
        assert_eq!(line("sess"), "session ");
        // Only :ctx takes a profile.
        assert_eq!(line("sub st"), "sub st");
        let completed = line("ctx sta");
        assert_eq!(
            parse(&completed),
            Ok(Typed::Context(Some("staging".into())))
        );
        assert_eq!(parse(":ctx"), Ok(Typed::Context(None)));
    }

    #[test]
    fn arguments_go_where_they_belong() {
        assert_eq!(
            parse(":sub db318dee"),
            Ok(jump(PaneId::Subscriptions, "db318dee"))
        );
        assert_eq!(
            parse("session  call_4f2a "),
            Ok(jump(PaneId::Deliveries, "call_4f2a"))
        );
        assert_eq!(parse(":event 9c1e"), Ok(jump(PaneId::Events, "9c1e")));
        assert_eq!(parse(":job j1"), Ok(jump(PaneId::Jobs, "j1")));
        assert_eq!(parse(":q"), Ok(Typed::Quit));
        assert_eq!(parse(""), Ok(Typed::Nothing));
        assert!(parse(":session").is_err_and(|why| why.contains("needs ID")));
        assert_eq!(parse(":subs"), Ok(Typed::GoTo(PaneId::Subscriptions)));
        assert!(parse(":q now").is_err());
        assert!(parse(":nope").is_err_and(|why| why.contains(":sub ID")));
    }
}
