use std::borrow::Cow;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::schema::contains_any_case;
use super::*;
use crate::tui::keymap::CommandInfo;
use earshot_core::query::FieldName;

/// A delivery-like row: a time, a status, a subscription, a count.
#[derive(Clone, Debug, PartialEq)]
struct Attempt {
    id: &'static str,
    status: &'static str,
    sub: &'static str,
    at_ms: Option<i64>,
    tries: i64,
}

const NOW: i64 = 1_800_000_000_000;
const MINUTE: i64 = 60_000;

static SCHEMA: Schema<Attempt> = Schema {
    columns: &[
        Column {
            header: "ID",
            text: Some(|row| Cow::Borrowed(row.id)),
            sort: |row| SortKey::text(row.id),
        },
        Column {
            header: "STATUS",
            text: Some(|row| Cow::Borrowed(row.status)),
            sort: |row| SortKey::text(row.status),
        },
        Column {
            header: "TRIES",
            text: Some(|row| Cow::Owned(row.tries.to_string())),
            sort: |row| SortKey::Number(row.tries),
        },
        Column {
            header: "AGE",
            text: None,
            sort: |row| SortKey::number(row.at_ms),
        },
    ],
    fields: &[
        Field {
            name: FieldName::new("status").or(&["state"]),
            kind: FieldKind::Choice {
                values: &["delivered", "failed", "pending"],
                read: |row| Cow::Borrowed(row.status),
            },
        },
        Field {
            name: FieldName::new("sub"),
            kind: FieldKind::Text(|row| Cow::Borrowed(row.sub)),
        },
        Field {
            name: FieldName::new("since"),
            kind: FieldKind::Since(|row| row.at_ms),
        },
    ],
    key: |row| Cow::Borrowed(row.id),
    filter_help: "filter: status:S sub:ID since:D, free text",
};

fn attempt(
    id: &'static str,
    status: &'static str,
    sub: &'static str,
    ago_min: Option<i64>,
    tries: i64,
) -> Attempt {
    Attempt {
        id,
        status,
        sub,
        at_ms: ago_min.map(|minutes| NOW - minutes * MINUTE),
        tries,
    }
}

fn rows() -> Vec<Attempt> {
    vec![
        attempt("a1", "delivered", "db318dee", Some(90), 1),
        attempt("b2", "failed", "DB318DEE", Some(20), 3),
        attempt("c3", "pending", "77aa", None, 2),
        attempt("d4", "failed", "77aa", Some(5), 3),
        attempt("e5", "Delivered", "77aa", Some(1), 1),
    ]
}

fn view(rows: &[Attempt]) -> TableView<Attempt> {
    let mut view = TableView::new(&SCHEMA).with_clock(|| NOW);
    view.refresh(rows, None);
    view
}

/// The ids shown, in order.
fn shown(view: &TableView<Attempt>, rows: &[Attempt]) -> Vec<&'static str> {
    (0..view.len())
        .filter_map(|position| view.row_at(rows, position))
        .map(|row| row.id)
        .collect()
}

fn selected(view: &TableView<Attempt>, rows: &[Attempt]) -> Option<&'static str> {
    view.selected(rows).map(|row| row.id)
}

#[test]
fn no_filter_and_no_sort_keep_no_order_at_all() {
    let rows = rows();
    let view = view(&rows);
    assert!(view.order.is_none(), "every row, as it comes: nothing kept");
    assert_eq!(shown(&view, &rows), ["a1", "b2", "c3", "d4", "e5"]);
    assert_eq!((view.len(), view.total), (5, 5));
}

#[test]
fn a_choice_field_keeps_its_word_in_any_case_and_refuses_others() {
    let rows = rows();
    let mut view = view(&rows);
    view.set_filter("status:FAILED", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["b2", "d4"]);
    view.set_filter("state:delivered", &rows).unwrap();
    assert_eq!(
        shown(&view, &rows),
        ["a1", "e5"],
        "an alias; the row's case does not matter"
    );
    let error = view.set_filter("status:lost", &rows).unwrap_err();
    assert_eq!(
        error,
        "`status:lost`: status is one of delivered, failed, pending"
    );
    assert_eq!(
        shown(&view, &rows),
        ["a1", "e5"],
        "a refused filter changes nothing"
    );
}

#[test]
fn a_text_field_keeps_rows_containing_it_in_any_case() {
    let rows = rows();
    let mut view = view(&rows);
    view.set_filter("sub:db318", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["a1", "b2"]);
    view.set_filter("sub:8DE", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["a1", "b2"]);
}

#[test]
fn since_keeps_rows_from_then_on_and_rows_without_a_time_go() {
    let rows = rows();
    let mut view = view(&rows);
    view.set_filter("since:30m", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["b2", "d4", "e5"]);
    view.set_filter("since:5m", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["d4", "e5"], "the boundary is kept");
    let at = chrono::DateTime::from_timestamp_millis(NOW - 60 * MINUTE)
        .unwrap()
        .to_rfc3339();
    view.set_filter(&format!("since:{at}"), &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["b2", "d4", "e5"]);
    let error = view.set_filter("since:yesterday", &rows).unwrap_err();
    assert!(
        error.starts_with("since: `yesterday`: give a duration"),
        "{error}"
    );
}

#[test]
fn free_words_match_any_shown_column_and_all_terms_must_hold() {
    let rows = rows();
    let mut view = view(&rows);
    view.set_filter("FAIL", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["b2", "d4"]);
    // `3` is in the TRIES column; the SUB field is no column.
    view.set_filter("3", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["b2", "c3", "d4"]);
    view.set_filter("3 sub:77aa status:failed", &rows).unwrap();
    assert_eq!(shown(&view, &rows), ["d4"]);
    view.set_filter("db318dee", &rows).unwrap();
    assert!(view.is_empty(), "the sub is a field, not a column");
    assert_eq!((view.len(), view.total), (0, 5));
}

#[test]
fn an_unknown_field_names_the_fields_this_table_has() {
    let rows = rows();
    let mut view = view(&rows);
    assert_eq!(
        view.set_filter("type:call.ended", &rows),
        Err("unknown field `type`: try status, sub, since".into())
    );
    assert_eq!(
        view.set_filter("sub:", &rows),
        Err("`sub:`: give a value after `sub:`".into())
    );
}

#[test]
fn s_sorts_up_then_down_then_moves_on_and_ends_in_the_rows_own_order() {
    let rows = rows();
    let mut view = view(&rows);
    let mut seen = Vec::new();
    for _ in 0..9 {
        view.cycle_sort(&rows);
        seen.push(view.sorted().map(|mark| (mark.column, mark.descending)));
    }
    assert_eq!(
        seen,
        [
            Some((0, false)),
            Some((0, true)),
            Some((1, false)),
            Some((1, true)),
            Some((2, false)),
            Some((2, true)),
            Some((3, false)),
            Some((3, true)),
            None,
        ]
    );
    assert!(view.order.is_none(), "back to the rows' own order");
}

#[test]
fn sorting_is_stable_in_both_directions_and_missing_values_go_last() {
    let rows = rows();
    let mut view = view(&rows);
    let tries = Some(SortMark {
        column: 2,
        descending: false,
    });
    view.set_sort(tries, &rows);
    // Equal counts keep the rows' own order, both ways.
    assert_eq!(shown(&view, &rows), ["a1", "e5", "c3", "b2", "d4"]);
    view.set_sort(
        tries.map(|mark| SortMark {
            descending: true,
            ..mark
        }),
        &rows,
    );
    assert_eq!(shown(&view, &rows), ["b2", "d4", "c3", "a1", "e5"]);
    // By time: the row with none is last, ascending and descending.
    let age = SortMark {
        column: 3,
        descending: false,
    };
    view.set_sort(Some(age), &rows);
    assert_eq!(shown(&view, &rows), ["a1", "b2", "d4", "e5", "c3"]);
    view.set_sort(
        Some(SortMark {
            descending: true,
            ..age
        }),
        &rows,
    );
    assert_eq!(shown(&view, &rows), ["e5", "d4", "b2", "a1", "c3"]);
    // Text in any case: `Delivered` sorts with `delivered`.
    view.set_sort(
        Some(SortMark {
            column: 1,
            descending: false,
        }),
        &rows,
    );
    assert_eq!(shown(&view, &rows), ["a1", "e5", "b2", "d4", "c3"]);
}

#[test]
fn the_selection_stays_on_its_record_across_filter_sort_and_new_rows() {
    let mut rows = rows();
    let mut view = view(&rows);
    view.select(3);
    assert_eq!(selected(&view, &rows), Some("d4"));
    view.set_filter("status:failed", &rows).unwrap();
    assert_eq!(selected(&view, &rows), Some("d4"));
    assert_eq!(view.selected_position(), Some(1));
    view.set_sort(
        Some(SortMark {
            column: 0,
            descending: true,
        }),
        &rows,
    );
    assert_eq!(selected(&view, &rows), Some("d4"));
    assert_eq!(view.selected_position(), Some(0));
    // New rows arrive (one more failed, in front): still on d4.
    let mut fresh = vec![attempt("f6", "failed", "77aa", Some(0), 1)];
    fresh.extend(rows.clone());
    view.replace(&mut rows, fresh);
    assert_eq!(shown(&view, &rows), ["f6", "d4", "b2"]);
    assert_eq!(selected(&view, &rows), Some("d4"));
    // Cleared: still on d4, now among every row.
    view.clear_filter(&rows);
    assert_eq!(selected(&view, &rows), Some("d4"));
    // A filter that hides it keeps the selection inside the table.
    view.set_filter("status:pending", &rows).unwrap();
    assert_eq!(selected(&view, &rows), Some("c3"));
}

fn press(view: &mut TableView<Attempt>, rows: &[Attempt], code: KeyCode) {
    view.type_key(&KeyEvent::new(code, KeyModifiers::NONE), rows);
}

fn type_text(view: &mut TableView<Attempt>, rows: &[Attempt], text: &str) {
    for c in text.chars() {
        press(view, rows, KeyCode::Char(c));
    }
}

#[test]
fn the_prompt_filters_as_typed_keeps_the_last_good_filter_and_esc_goes_back() {
    let rows = rows();
    let mut view = view(&rows);
    view.set_filter("sub:77aa", &rows).unwrap();
    view.run(TableCommand::Filter, &rows);
    assert_eq!(
        view.prompt.as_ref().map(|p| p.input.value()),
        Some("sub:77aa"),
        "the prompt holds the filter in force"
    );
    for _ in 0.."sub:77aa".len() {
        press(&mut view, &rows, KeyCode::Backspace);
    }
    assert_eq!(view.len(), 5, "an empty prompt shows every row");
    type_text(&mut view, &rows, "status:fa");
    let error = view.prompt.as_ref().and_then(|p| p.error.clone());
    assert!(error.is_some_and(|e| e.contains("one of delivered")));
    assert_eq!(
        view.filter_text(),
        "status",
        "the half-typed term is not applied: the last text that parsed stays"
    );
    type_text(&mut view, &rows, "iled");
    assert_eq!(shown(&view, &rows), ["b2", "d4"]);
    assert!(view.prompt.as_ref().is_some_and(|p| p.error.is_none()));
    // esc: back to the filter before `/`.
    view.run(TableCommand::CancelFilter, &rows);
    assert!(!view.prompting());
    assert_eq!(view.filter_text(), "sub:77aa");
    assert_eq!(shown(&view, &rows), ["c3", "d4", "e5"]);
    // enter keeps what was typed; one that does not parse keeps the prompt.
    view.run(TableCommand::Filter, &rows);
    type_text(&mut view, &rows, " colour:red");
    view.run(TableCommand::ApplyFilter, &rows);
    assert!(view.prompting(), "a wrong filter is not applied");
    for _ in 0.." colour:red".len() {
        press(&mut view, &rows, KeyCode::Backspace);
    }
    type_text(&mut view, &rows, " pend");
    view.run(TableCommand::ApplyFilter, &rows);
    assert!(!view.prompting());
    assert_eq!(shown(&view, &rows), ["c3"]);
    view.run(TableCommand::ClearFilter, &rows);
    assert_eq!((view.filter_text(), view.len()), ("", 5));
}

#[test]
fn the_keys_are_slash_and_s_and_esc_only_with_a_filter() {
    let rows = rows();
    let mut view = view(&rows);
    let keys = |commands: Vec<CommandInfo<TableCommand>>| -> Vec<&str> {
        commands.iter().map(|command| command.keys).collect()
    };
    assert_eq!(keys(table_commands("", view.filtering())), ["/", "S"]);
    view.set_filter("a1", &rows).unwrap();
    assert_eq!(
        keys(table_commands("", view.filtering())),
        ["/", "S", "esc"]
    );
    assert_eq!(keys(prompt_commands()), ["enter", "esc"]);
}

#[test]
fn any_case_contains_without_copying_ascii() {
    assert!(contains_any_case(
        "HTTP 401: Invalid Signature",
        "invalid sig"
    ));
    assert!(!contains_any_case("ab", "abc"));
    assert!(contains_any_case("anything", ""));
    assert!(contains_any_case("Überweisung", "über"));
}

#[test]
fn a_half_typed_filter_that_hides_the_selected_record_does_not_lose_it() {
    let rows = rows();
    let mut view = view(&rows);
    view.select(3);
    view.run(TableCommand::Filter, &rows);
    // `s`, `st`, `sta`, `stat`… hide d4 for a moment; `status:failed`
    // shows it again.
    type_text(&mut view, &rows, "status:failed");
    assert_eq!(selected(&view, &rows), Some("d4"));
    view.run(TableCommand::ApplyFilter, &rows);
    assert_eq!(selected(&view, &rows), Some("d4"));
    // esc in the prompt goes back to no filter, on d4 still.
    view.run(TableCommand::Filter, &rows);
    type_text(&mut view, &rows, "x");
    view.run(TableCommand::CancelFilter, &rows);
    assert_eq!(view.filter_text(), "status:failed");
    assert_eq!(selected(&view, &rows), Some("d4"));
}
