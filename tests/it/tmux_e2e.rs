//! End to end in a real terminal: the real `earshot demo` binary runs in a
//! private tmux server (120×40); the test types keys with `send-keys` and
//! reads the screen with `capture-pane`, as an operator would. It walks
//! every pane, filters the Health board and a subscription's failing
//! sessions with `/` and sorts them with `S`, creates / pauses / resumes /
//! deletes a subscription through the form and dialogs, opens a failed
//! delivery's detail, quits, and checks the terminal was restored (main
//! screen, cursor visible).
//!
//! Another test starts the console on a config file with two profiles
//! (two emulators) and switches between them with `:ctx`.
//!
//! Needs `tmux` (CI installs it); without it the test fails and says so.
//! Every step waits for text on the screen (polling every 100 ms, with a
//! generous timeout) instead of sleeping: the demo runs live traffic.

use std::path::Path;
use std::time::Duration;

use earshot_core::api::types::agents::EventKind;

use crate::common::tmux::{STEP_TIMEOUT, Tmux, shell_quote};

/// The first frame waits for the emulator and its traffic to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// The screen without the tab bar (whose text names every pane).
fn body(screen: &str) -> String {
    screen.lines().skip(1).collect::<Vec<_>>().join("\n")
}

/// The pane's title line (just under the tab bar).
fn title(screen: &str) -> &str {
    screen.lines().nth(1).unwrap_or_default()
}

/// `row I/N` in a title line.
fn row_position(screen: &str) -> Option<(usize, usize)> {
    let rest = title(screen).split("row ").nth(1)?;
    let (index, rest) = rest.split_once('/')?;
    let total: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((index.parse().ok()?, total.parse().ok()?))
}

/// Subscriptions table rows: an 8-hex-digit short id, then a URL.
fn subscription_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|line| {
            let mut words = line.split_whitespace();
            let id = words.next().unwrap_or_default();
            let url = words.next().unwrap_or_default();
            id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()) && url.starts_with("http")
        })
        .collect()
}

/// The STATE column of the row whose URL is `url`.
fn state_of(screen: &str, url: &str) -> Option<String> {
    let row = subscription_rows(screen)
        .into_iter()
        .find(|row| row.split_whitespace().nth(1) == Some(url))?;
    ["enabled", "paused"]
        .into_iter()
        .find(|state| row.split_whitespace().any(|word| word == *state))
        .map(str::to_owned)
}

/// A detail line `label   value`, e.g. `status          failed`.
fn detail_value<'a>(screen: &'a str, label: &str) -> Option<&'a str> {
    screen.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(label)?;
        rest.starts_with("  ").then(|| rest.trim())
    })
}

/// Starts `earshot demo` in the session; the shell then prints its exit
/// status (`EXIT:n`) and stays a minute so the test can read it.
fn start_demo(tmux: &mut Tmux) {
    let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
    tmux.start(&format!(
        "sh -c '{} demo; echo \"EXIT:$?\"; sleep 60'",
        binary.replace('\'', r"'\''")
    ));
}

#[test]
fn the_demo_console_works_end_to_end_in_a_real_terminal() {
    let mut tmux = Tmux::new();
    start_demo(&mut tmux);

    // The console opens on the Health board; the demo's Inbox is the
    // observer, so the sweep soon finds the re-serialising receiver failing.
    tmux.wait_for(
        "the DEMO marker and a failing subscription on the Health board",
        START_TIMEOUT,
        |screen| {
            let first = screen.lines().next().unwrap_or_default();
            (first.contains("DEMO")
                && title(screen).trim_start().starts_with("Health")
                && title(screen).contains("failing")
                && screen.contains("401 invalid signature"))
            .then_some(())
        },
    );
    tmux.press("2", "the subscription rows", |s| {
        title(s).trim_start().starts_with("Subscriptions") && !subscription_rows(s).is_empty()
    });

    walk_every_pane(&tmux);
    failing_sessions_filtered_and_sorted(&tmux);
    subscription_lifecycle(&tmux);
    failed_delivery_detail(&tmux);
    events_follow_then_detail(&tmux);
    rotation_waits_for_the_check(&tmux);
    quit_and_restore(&tmux);
}

/// The heading of the failing-sessions list (under the pane's title).
fn heading(screen: &str) -> &str {
    screen.lines().nth(2).unwrap_or_default()
}

/// `filter: TEXT · n of m` in a title or heading: (n, m).
fn filtered_counts(line: &str, filter: &str) -> Option<(usize, usize)> {
    let rest = line.split(&format!("filter: {filter} · ")).nth(1)?;
    let mut words = rest.split_whitespace();
    let shown = words.next()?.parse().ok()?;
    (words.next()? == "of").then_some(())?;
    let total: String = words
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((shown, total.parse().ok()?))
}

/// The failing-sessions rows: (session, MISSED), the session first.
fn session_rows(screen: &str) -> Vec<(String, i64)> {
    screen
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let session = words.next()?;
            if !(session.starts_with("ses_") || session.starts_with("call_")) {
                return None;
            }
            let missed = words.nth(1)?.parse().ok()?;
            Some((session.to_owned(), missed))
        })
        .collect()
}

/// `/status:failing` narrows the Health board to the
/// failing subscription; its failing sessions open, and `/status:failed`
/// keeps the sessions with an event still missed (the heading says how
/// many of how many); `S` sorts by the first column and the header marks
/// it; `esc` clears each filter, then goes back. Ends on Subscriptions.
fn failing_sessions_filtered_and_sorted(tmux: &Tmux) {
    tmux.press("1", "the Health board", |s| shows_pane(s, "Health"));
    tmux.key("/");
    tmux.type_text("status:failing");
    tmux.press("Enter", "the board filtered to the failing", |s| {
        filtered_counts(title(s), "status:failing").is_some_and(|(shown, _)| shown >= 1)
            && s.contains("401 invalid signature")
    });
    tmux.press("g", "the first failing row", |s| {
        filtered_counts(title(s), "status:failing").is_some()
    });
    tmux.press("Enter", "its failing sessions", |s| {
        heading(s).contains("failing sessions of") && !session_rows(s).is_empty()
    });
    tmux.key("/");
    tmux.type_text("status:failed");
    tmux.key("Enter");
    // The list is read again every few seconds; the sweep files a missed
    // event once its retries are over: wait for one.
    let ((shown, total), screen) = tmux.wait_for(
        "the sessions still failing, filtered",
        STEP_TIMEOUT * 3,
        |s| {
            let counts = filtered_counts(heading(s), "status:failed")?;
            let rows = session_rows(s);
            (counts.0 >= 1 && !rows.is_empty()).then_some(counts)
        },
    );
    assert!(shown <= total, "{screen}");
    let rows = session_rows(&screen);
    assert!(
        rows.iter().all(|(_, missed)| *missed > 0),
        "every session shown has an event missed:\n{screen}"
    );
    // `/` again holds the filter; one more term (free text: the start of
    // a session id, short enough for the heading) narrows it to that
    // session.
    let (one, _) = &rows[0];
    let start: String = one.chars().take(12).collect();
    tmux.key("/");
    tmux.type_text(&format!(" {start}"));
    let both = format!("status:failed {start}");
    tmux.press("Enter", "one session left", |s| {
        filtered_counts(heading(s), &both).is_some_and(|(shown, _)| shown == 1)
            && session_rows(s).iter().map(|(id, _)| id).eq([one])
    });
    tmux.press("S", "sorted by session, the header marked", |s| {
        s.contains("SESSION / CALL ▲")
    });
    tmux.press("Escape", "the sessions' filter cleared", |s| {
        heading(s).contains("failing sessions of") && !heading(s).contains("filter:")
    });
    tmux.press("Escape", "back on the filtered board", |s| {
        shows_pane(s, "Health") && filtered_counts(title(s), "status:failing").is_some()
    });
    tmux.press("Escape", "the board's filter cleared", |s| {
        shows_pane(s, "Health") && !title(s).contains("filter:")
    });
    tmux.press("2", "the subscription rows", |s| {
        title(s).trim_start().starts_with("Subscriptions") && !subscription_rows(s).is_empty()
    });
}

/// The rotate dialog walks prepare → check, and with a receiver
/// that refuses the new secret (the demo's Inbox holds only its own) it
/// never offers apply: the short id typed and enter pressed again leave it
/// at the check; only `S` goes on, to apply (in red) and then watch.
fn rotation_waits_for_the_check(tmux: &Tmux) {
    let screen = tmux.press("2", "the subscription rows", |s| {
        title(s).trim_start().starts_with("Subscriptions") && !subscription_rows(s).is_empty()
    });
    let inbox = subscription_rows(&screen)
        .into_iter()
        .find(|row| {
            row.split_whitespace()
                .nth(1)
                .is_some_and(|url| url.ends_with("/inbox"))
        })
        .and_then(|row| row.split_whitespace().next())
        .unwrap_or_else(|| panic!("the Inbox's subscription:\n{screen}"))
        .to_owned();
    tmux.press(":", "the command line", |s| {
        s.lines().any(|l| l.starts_with(":"))
    });
    tmux.type_text(&format!("sub {inbox}"));
    tmux.press("Enter", "its detail", |s| {
        s.contains(&format!("subscription {inbox}"))
    });
    tmux.press("Escape", "the table, its row alone", |s| {
        subscription_rows(s).len() == 1
    });
    tmux.press("R", "step 1: prepare", |s| s.contains("step 1 of 4"));
    tmux.press("Enter", "step 2 with the new secret shown", |s| {
        s.contains("step 2 of 4") && s.contains("New secret: whsec_")
    });
    tmux.wait_for(
        "the receiver refusing the new secret",
        STEP_TIMEOUT * 3,
        |s| {
            // The sweep may need a moment to file a delivered event to probe
            // with: check again until it answers.
            if !s.contains("refused: the receiver does not accept") {
                tmux.key("Enter");
                std::thread::sleep(std::time::Duration::from_millis(500));
                return None;
            }
            Some(())
        },
    );
    tmux.type_text(&inbox);
    tmux.key("Enter");
    // Enter ran the check again: it refuses again, and apply is not offered.
    tmux.wait_for("still at the check, refused again", STEP_TIMEOUT, |s| {
        (s.contains("step 2 of 4")
            && s.contains("refused: the receiver does not accept")
            && !s.contains("checking the receiver"))
        .then_some(())
    });
    // Skipping is possible, never silent: apply says so in red, then the
    // PATCH and the watch (the last step of the run: the Inbox will refuse
    // what follows, as a receiver without the new secret does).
    tmux.press("S", "step 3: apply, the check skipped", |s| {
        s.contains("step 3 of 4") && s.contains("THE CHECK DID NOT PASS")
    });
    tmux.type_text(&inbox);
    tmux.press("Enter", "step 4: watching", |s| {
        s.contains("step 4 of 4") && s.contains("Rotated to secret version 2")
    });
    tmux.press("Escape", "the dialog closed", |s| {
        !s.contains("Rotate secret")
    });
}

/// The Events list follows the newest event at the top; one row
/// down it pauses, and as traffic flows the selection stays on its event
/// (the title counts what arrived above): `enter` opens the same event
/// before and after rows arrived, not the one now on its row number, with
/// its attempts per subscription.
fn events_follow_then_detail(tmux: &Tmux) {
    tmux.press("8", "the Events list following the newest", |s| {
        title(s).trim_start().starts_with("Events")
            && title(s).contains("following the newest")
            && s.lines()
                .filter(|line| line.contains(" ses_") || line.contains(" call_"))
                .count()
                >= 2
    });
    tmux.press("j", "the list paused", |s| title(s).contains("PAUSED"));
    // The event under the cursor, by opening it.
    let screen = tmux.press("Enter", "an event's detail", |s| {
        s.contains("per subscription") && opened_session(s).is_some()
    });
    let aimed = opened_session(&screen).unwrap_or_default();
    let screen = tmux.press("Escape", "back on the list, paused", |s| {
        title(s).contains("PAUSED")
    });
    let before = new_above(&screen);
    // Traffic flows: rows arrive above the paused row.
    tmux.wait_for("new events above the paused row", STEP_TIMEOUT * 3, |s| {
        (new_above(s) > before).then_some(())
    });
    tmux.press("Enter", "the same event, with its attempts", |s| {
        opened_session(s).as_deref() == Some(aimed.as_str())
            && s.contains("per subscription")
            && s.contains("body (")
    });
    tmux.press("Escape", "back on the list", |s| {
        title(s).contains("PAUSED")
    });
}

/// The session of the event open in the Events pane.
fn opened_session(screen: &str) -> Option<String> {
    screen.lines().nth(2).and_then(|line| {
        let rest = line.split("  session ").nth(1)?;
        rest.split_whitespace().next().map(str::to_owned)
    })
}

/// `PAUSED, n new above` in the Events title (0 without it).
fn new_above(screen: &str) -> usize {
    title(screen)
        .split("PAUSED, ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or(0)
}

/// The real binary started on a config file with two profiles,
/// each an emulator of its own (with its own key and store), switches
/// with `:ctx` (the profile name completed by `tab`): the status bar
/// names the new profile and the Subscriptions table lists only the
/// second platform's subscriptions; `:ctx` alone lists both profiles
/// with the one in use marked.
#[test]
fn ctx_switches_the_console_between_two_configured_platforms() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let one = runtime.block_on(crate::common::start());
    let other = runtime.block_on(crate::common::start());
    let (_receiver_one, on_one) = runtime.block_on(one.healthy_subscriber(&[EventKind::CallEnded]));
    let (_receiver_other, on_other) =
        runtime.block_on(other.healthy_subscriber(&[EventKind::SessionStarted]));
    let (a, b) = (on_one.id[..8].to_owned(), on_other.id[..8].to_owned());

    let dir = tempfile::tempdir().unwrap();
    let key = crate::common::API_KEY;
    let config =
        crate::common::two_profile_config(dir.path(), (&one.base, key), (&other.base, key));

    let mut tmux = Tmux::new();
    tmux.start_console(&config);
    tmux.wait_for("the console on profile one", START_TIMEOUT, |screen| {
        status_bar(screen).contains("profile one").then_some(())
    });
    tmux.press("2", "the first platform's subscription", |s| {
        title(s).trim_start().starts_with("Subscriptions") && row_ids(s) == [a.as_str()]
    });

    tmux.press(":", "the command line", |s| {
        s.lines().any(|l| l.starts_with(":"))
    });
    tmux.type_text("ctx oth");
    tmux.press("Tab", "the profile name completed", |s| {
        s.lines().any(|l| l.starts_with(":ctx other"))
    });
    tmux.press(
        "Enter",
        "the second platform's rows under profile other",
        |s| status_bar(s).contains("profile other") && row_ids(s) == [b.as_str()],
    );
    assert!(
        !tmux.screen().contains(&a),
        "the first platform's row after the switch:\n{}",
        tmux.screen()
    );

    tmux.key(":");
    tmux.type_text("ctx");
    tmux.press("Enter", "the profiles, the one in use marked", |s| {
        s.contains("Switch profile") && s.contains("● other") && s.contains("  one ")
    });
    tmux.press("Escape", "the picker closed", |s| {
        !s.contains("Switch profile") && row_ids(s) == [b.as_str()]
    });
    quit_and_restore(&tmux);
    assert!(
        dir.path().join("other.db").is_file(),
        "profile other's store"
    );
}

/// The bottom line: the status bar.
fn status_bar(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
}

/// The short ids of the Subscriptions table's rows.
fn row_ids(screen: &str) -> Vec<&str> {
    subscription_rows(screen)
        .into_iter()
        .filter_map(|row| row.split_whitespace().next())
        .collect()
}

/// 5,000 characters typed at once (a paste in a terminal
/// without bracketed paste) all reach the form field without another key
/// being pressed, and `esc` right after them is handled.
#[test]
fn a_five_thousand_character_paste_arrives_whole_in_a_real_terminal() {
    let mut tmux = Tmux::new();
    start_demo(&mut tmux);
    tmux.wait_for("the console", START_TIMEOUT, |screen| {
        screen
            .lines()
            .next()
            .unwrap_or_default()
            .contains("DEMO")
            .then_some(())
    });
    tmux.press("2", "subscription rows", |s| {
        title(s).trim_start().starts_with("Subscriptions") && !subscription_rows(s).is_empty()
    });
    tmux.press("n", "the new-subscription form", |s| {
        s.contains("New subscription")
    });
    let text = format!("{}ZEND", "0123456789".repeat(500));
    assert_eq!(text.len(), 5_004);
    tmux.type_text(&text);
    // The field scrolls to its cursor: the end shows once every character
    // before it arrived.
    tmux.wait_text("789ZEND");
    tmux.press("Escape", "the discard question", |s| {
        s.contains("discard this form?")
    });
    tmux.press("y", "the form gone", |s| !s.contains("New subscription"));
    quit_and_restore(&tmux);
}

/// The panes the tab bar lists, as (number key, name).
fn tabs(screen: &str) -> Vec<(String, String)> {
    let bar = screen.lines().next().unwrap_or_default();
    bar.split('│')
        .filter_map(|tab| {
            let mut words = tab.split_whitespace();
            let key = words.next()?;
            let name = words.next()?;
            let numbered = key.len() == 1 && key.chars().all(|c| c.is_ascii_digit());
            numbered.then(|| (key.to_owned(), name.to_owned()))
        })
        .collect()
}

/// Whether the pane on screen is `name`: the first line under the tab bar
/// starts with it, and a pane known here shows its distinctive text.
fn shows_pane(screen: &str, name: &str) -> bool {
    let heading = screen
        .lines()
        .skip(1)
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let distinctive = match name {
        "Subscriptions" => "ID       URL",
        "Deliveries" => "ATTEMPT  SUB",
        "Jobs" => "JOB      STATUS",
        "Signatures" => "X-SVC-Signature",
        "Health" => "WHY (LARGEST GROUP)",
        _ => name,
    };
    heading.starts_with(name) && body(screen).contains(distinctive)
}

/// Number keys, tab and shift-tab each reach the pane they should: every
/// pane the tab bar lists, which must include the eight built ones.
fn walk_every_pane(tmux: &Tmux) {
    let panes = tabs(&tmux.screen());
    let names: Vec<&str> = panes.iter().map(|(_, name)| name.as_str()).collect();
    for built in [
        "Health",
        "Subscriptions",
        "Deliveries",
        "Jobs",
        "Signatures",
        "Probe",
        "Inbox",
        "Events",
    ] {
        assert!(
            names.contains(&built),
            "{built} is not in the tab bar {names:?}"
        );
    }
    let reach = |key: &str, name: &str| {
        tmux.press(key, &format!("the {name} pane"), |s| shows_pane(s, name));
    };
    for (key, name) in &panes {
        reach(key, name);
    }
    reach("1", "Health");
    for (_, name) in panes.iter().skip(1) {
        reach("Tab", name);
    }
    reach("Tab", "Health");
    reach("BTab", &panes[panes.len() - 1].1);
    reach("2", "Subscriptions");
}

/// Create through the form, then pause, resume and delete (typing the
/// short id), reading the row's state from the table each time.
fn subscription_lifecycle(tmux: &Tmux) {
    let token = format!("e2e-{}-{}", std::process::id(), unique_suffix());
    let url = format!("http://127.0.0.1:9/{token}");

    tmux.press("n", "the new-subscription form", |s| {
        s.contains("New subscription")
    });
    tmux.type_text(&url);
    tmux.wait_text(&url);
    tmux.press("Tab", "focus on the first event", |s| s.contains("›Events"));
    tmux.press("Space", "the first event ticked", |s| {
        s.contains("[x] session.started")
    });
    let screen = tmux.press("Enter", "the created subscription's secret", |s| {
        s.contains("shown once") && s.contains("was created")
    });
    let short_id = screen
        .lines()
        .find_map(|line| {
            let rest = line.split("Subscription ").nth(1)?;
            rest.split_whitespace().next().map(str::to_owned)
        })
        .unwrap();
    assert_eq!(short_id.len(), 8, "short id {short_id:?} in:\n{screen}");
    tmux.press("Escape", "the secret dialog closed", |s| {
        !s.contains("shown once")
    });
    tmux.wait_until("the new row, enabled", |s| {
        state_of(s, &url).as_deref() == Some("enabled")
    });

    tmux.key("/");
    tmux.type_text(&token);
    tmux.press("Enter", "the table filtered to the new row", |s| {
        title(s).contains(&format!("filter: {token}"))
            && subscription_rows(s).len() == 1
            && state_of(s, &url).is_some()
    });
    tmux.press("p", "the row paused", |s| {
        state_of(s, &url).as_deref() == Some("paused")
    });
    tmux.press("p", "the row enabled again", |s| {
        state_of(s, &url).as_deref() == Some("enabled")
    });
    tmux.press("D", "the delete dialog", |s| {
        s.contains("Delete subscription") && s.contains(&format!("type {short_id} to confirm"))
    });
    tmux.type_text(&short_id);
    tmux.press("Enter", "the row gone", |s| {
        s.contains(&format!("deleted {short_id}")) && state_of(s, &url).is_none()
    });
    tmux.press("Escape", "the filter cleared, other rows back", |s| {
        !title(s).contains("filter:") && !subscription_rows(s).is_empty()
    });
}

/// Opens attempt details from the top of the loaded conversation and steps
/// through them until a failed one, whose detail explains the failure.
fn failed_delivery_detail(tmux: &Tmux) {
    tmux.press("3", "a conversation's attempts", |s| {
        title(s).trim_start().starts_with("Deliveries") && row_position(s).is_some()
    });
    tmux.press("g", "the first attempt selected", |s| {
        row_position(s).is_some_and(|(index, _)| index == 1)
    });
    tmux.key("Enter");
    loop {
        let (((index, total), status), _) =
            tmux.wait_for("an attempt's detail", STEP_TIMEOUT, |s| {
                Some((row_position(s)?, detail_value(s, "status")?.to_owned()))
            });
        if status == "failed" {
            break;
        }
        assert!(
            index < total,
            "no failed attempt in the conversation the demo opened:\n{}",
            tmux.screen()
        );
        tmux.press("j", "the next attempt", |s| {
            row_position(s) == Some((index + 1, total))
        });
    }
    tmux.wait_until(
        "a failed attempt's error, whether it retries, and likely causes",
        |s| {
            let error = detail_value(s, "error").unwrap_or("—");
            detail_value(s, "status") == Some("failed")
                && !error.is_empty()
                && error != "—"
                && detail_value(s, "retry?").is_some()
                && s.contains("likely causes")
        },
    );
    tmux.press("Escape", "back to the attempts table", |s| {
        s.contains("ATTEMPT") && detail_value(s, "status").is_none()
    });
}

/// `q` ends the process with 0 and leaves the terminal as it found it.
fn quit_and_restore(tmux: &Tmux) {
    tmux.key("q");
    let screen = tmux.wait_text("EXIT:0");
    assert!(
        !screen.contains("1 Subscriptions │"),
        "the console's screen is gone after quitting:\n{screen}"
    );
    assert_eq!(
        tmux.format("#{alternate_on}"),
        "0",
        "back on the main screen"
    );
    assert_eq!(tmux.format("#{cursor_flag}"), "1", "cursor visible again");
}

fn unique_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_nanos() % 1_000_000_000)
        .unwrap_or_default()
}

/// `earshot demo --theme light` starts (a global flag
/// after the subcommand); at 80×24 a Health row still shows its receiver's
/// port; `:sub ID` opens that subscription; `enter` on a job shows its
/// record.
#[test]
fn a_light_demo_at_80x24_shows_ports_and_opens_by_id() {
    let mut tmux = Tmux::new();
    let binary = shell_quote(Path::new(env!("CARGO_BIN_EXE_earshot")));
    tmux.start_sized(
        &format!(
            "sh -c '{} demo --theme light; echo \"EXIT:$?\"; sleep 60'",
            binary.replace('\'', r"'\''")
        ),
        (80, 24),
    );
    let port = |line: &str| {
        line.split(':').skip(1).any(|after| {
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            (4..=5).contains(&digits)
        })
    };
    tmux.wait_for("Health rows showing ports", START_TIMEOUT, |screen| {
        let rows: Vec<&str> = screen
            .lines()
            .skip_while(|line| !line.starts_with("SUB"))
            .skip(1)
            .take_while(|line| !line.trim().is_empty())
            .collect();
        (screen.lines().next().unwrap_or_default().contains("DEMO")
            && !rows.is_empty()
            && rows.iter().all(|row| port(row)))
        .then_some(())
    });

    // At 80 columns the URL column keeps the host and port, not the scheme.
    let first_id = |s: &str| {
        s.lines().skip(3).find_map(|line| {
            let id = line.split_whitespace().next()?;
            (id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit())).then(|| id.to_owned())
        })
    };
    let screen = tmux.press("2", "subscription rows", |s| {
        title(s).trim_start().starts_with("Subscriptions") && first_id(s).is_some()
    });
    let id = first_id(&screen).expect("a subscription id");
    tmux.press("1", "the Health board", |s| {
        title(s).trim_start().starts_with("Health")
    });
    tmux.key(":");
    tmux.type_text(&format!("sub {id}"));
    tmux.press("Enter", "that subscription's detail", |s| {
        title(s).trim_start().starts_with("Subscriptions")
            && s.contains(&id)
            && detail_value(s, "secret version").is_some()
    });

    tmux.press("4", "job rows", |s| {
        title(s).trim_start().starts_with("Jobs") && s.contains("JOB")
    });
    tmux.press("Enter", "the job's record", |s| {
        detail_value(s, "polls it cost").is_some() && detail_value(s, "job").is_some()
    });
    tmux.press("Escape", "back to the table", |s| s.contains("JOB "));
    tmux.key("q");
    tmux.wait_text("EXIT:0");
}
