//! The `:` command line: one list ([`COMMANDS`]) that parsing, the hint
//! after a mistake and the help overlay all read, so they cannot disagree.
//! Pane names come from [`PaneId`] (`:3`, `:deliveries`, `:dlv`, …); the
//! rest take an argument where it helps an operator jump: `:sub ID`,
//! `:session ID`, `:event ID`, `:job ID`.

use super::keymap::{CommandInfo, Key, keys};
use super::panes::PaneId;

/// What a typed line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Typed {
    Nothing,
    Quit,
    QuitNow,
    Help,
    Refresh,
    GoTo(PaneId),
    /// Subscriptions, filtered to this id (or prefix), its detail open.
    Subscription(String),
    /// Deliveries, this session or call loaded.
    Session(String),
    /// Events, filtered to this event id.
    Event(String),
    /// Jobs, this transcript job watched.
    Job(String),
}

/// One command of the line: its spellings, its argument, what it does.
#[derive(Clone, Copy, Debug)]
pub struct LineCommand {
    /// As help shows it: `:sub ID`.
    pub usage: &'static str,
    pub names: &'static [&'static str],
    pub argument: Option<&'static str>,
    pub description: &'static str,
    parse: fn(Option<&str>) -> Option<Typed>,
}

/// Every command but the pane names, in help order.
pub const COMMANDS: [LineCommand; 8] = [
    LineCommand {
        usage: ":q",
        names: &["q", "quit", "qa"],
        argument: None,
        description: "quit (asks when a form would be lost)",
        parse: |argument| argument.is_none().then_some(Typed::Quit),
    },
    LineCommand {
        usage: ":q!",
        names: &["q!", "quit!"],
        argument: None,
        description: "quit without asking",
        parse: |argument| argument.is_none().then_some(Typed::QuitNow),
    },
    LineCommand {
        usage: ":help",
        names: &["help", "?"],
        argument: None,
        description: "every key of the pane on screen",
        parse: |argument| argument.is_none().then_some(Typed::Help),
    },
    LineCommand {
        usage: ":r",
        names: &["r", "refresh"],
        argument: None,
        description: "read the pane on screen again",
        parse: |argument| argument.is_none().then_some(Typed::Refresh),
    },
    LineCommand {
        usage: ":sub ID",
        names: &["sub", "subs"],
        argument: Some("ID"),
        description: "a subscription by id or prefix, its detail open",
        parse: |argument| argument.map(|id| Typed::Subscription(id.to_owned())),
    },
    LineCommand {
        usage: ":session ID",
        names: &["session", "call", "ses"],
        argument: Some("ID"),
        description: "a session's or call's delivery attempts",
        parse: |argument| argument.map(|id| Typed::Session(id.to_owned())),
    },
    LineCommand {
        usage: ":event ID",
        names: &["event", "evt"],
        argument: Some("ID"),
        description: "an event (the Events list filtered to it)",
        parse: |argument| argument.map(|id| Typed::Event(id.to_owned())),
    },
    LineCommand {
        usage: ":job ID",
        names: &["job"],
        argument: Some("ID"),
        description: "a transcript job (a watched job's 8-character id works)",
        parse: |argument| argument.map(|id| Typed::Job(id.to_owned())),
    },
];

/// The help overlay's section of the line's commands, from the same list
/// (`command` is what each entry runs if picked: `:` opens the line).
pub fn help_entries<C: Copy>(command: C) -> Vec<CommandInfo<C>> {
    COMMANDS
        .iter()
        .map(|line| CommandInfo::new(line.usage, line.description, keys![Key::char(':')], command))
        .collect()
}

/// What `typed` asks for, or the hint to show when nothing matches.
pub fn parse(typed: &str) -> Result<Typed, String> {
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
    for command in &COMMANDS {
        if command.names.contains(&name_lower.as_str()) {
            return (command.parse)(argument).ok_or_else(|| match command.argument {
                Some(what) => format!(":{name} needs {what}: e.g. :{name} db318dee"),
                None => format!(":{name} takes no argument"),
            });
        }
    }
    Err(format!("unknown command :{typed}: {}", hint()))
}

/// The commands and panes the line takes, in one line (from the lists).
pub fn hint() -> String {
    let panes = PaneId::ALL.len();
    let commands: Vec<&str> = COMMANDS.iter().map(|command| command.usage).collect();
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
        for command in &COMMANDS {
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
        assert_eq!(entries.len(), COMMANDS.len());
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
    fn arguments_go_where_they_belong() {
        assert_eq!(
            parse(":sub db318dee"),
            Ok(Typed::Subscription("db318dee".into()))
        );
        assert_eq!(
            parse("session  call_4f2a "),
            Ok(Typed::Session("call_4f2a".into()))
        );
        assert_eq!(parse(":event 9c1e"), Ok(Typed::Event("9c1e".into())));
        assert_eq!(parse(":job j1"), Ok(Typed::Job("j1".into())));
        assert_eq!(parse(":q"), Ok(Typed::Quit));
        assert_eq!(parse(""), Ok(Typed::Nothing));
        assert!(parse(":session").is_err_and(|why| why.contains("needs ID")));
        assert_eq!(parse(":subs"), Ok(Typed::GoTo(PaneId::Subscriptions)));
        assert!(parse(":q now").is_err());
        assert!(parse(":nope").is_err_and(|why| why.contains(":sub ID")));
    }
}
