//! The PostgreSQL statement `event_list::postgres_query` builds for each
//! filter: its parameters, where it limits in SQL, the outcome filters'
//! arms, and what `postgres_lacks` refuses.

use super::event_list::{
    Filter, past_prefix, postgres_lacks, postgres_query, postgres_query_read, postgres_query_typed,
};
use super::outcomes::EventState;

#[test]
fn the_statement_limits_in_sql_only_when_nothing_is_left_to_fold() {
    let plain = postgres_query(&Filter::default());
    assert!(plain.sql.ends_with("LIMIT $2"), "{}", plain.sql);
    assert!(plain.texts.is_empty() && !plain.checked_here);

    let words = vec!["über".to_owned()];
    let filter = Filter {
        event_type: Some("Call"),
        session: Some("ses-1"),
        words: &words,
        ..Filter::default()
    };
    let query = postgres_query(&filter);
    assert!(query.checked_here);
    assert!(!query.sql.contains("LIMIT"), "{}", query.sql);
    assert_eq!(
        query.texts,
        [
            "ses-1".to_owned(),
            past_prefix("ses-1"),
            "call".into(),
            "über".into()
        ]
    );
    // Every text column falls through to Rust when it is not ASCII.
    for column in ["event_id", "session_id", "event"] {
        assert!(
            query.sql.contains(&format!(
                "octet_length(e.{column}) <> char_length(e.{column})"
            )),
            "{column}"
        );
    }
    assert!(query.sql.contains("$5"), "{}", query.sql);
}

#[test]
fn a_live_read_takes_the_transaction_as_its_second_parameter() {
    let live = Filter {
        after_xid: Some((1 << 32) + 7),
        session: Some("ses"),
        ..Filter::default()
    };
    let query = postgres_query(&live);
    assert_eq!(query.after_xid32, Some(7), "its low 32 bits");
    assert!(
        query
            .sql
            .contains("(e.xmin::text::bigint - $2 + 4294967296) % 4294967296 < 2147483648"),
        "{}",
        query.sql
    );
    assert!(query.sql.contains(">= $3") && query.sql.contains("< $4"));
    assert!(query.sql.ends_with("LIMIT $5"), "{}", query.sql);
    assert_eq!(postgres_lacks(&live), None, "answered on PostgreSQL");
}

#[test]
fn status_and_sub_are_answered_and_only_sqlites_row_numbers_are_refused() {
    let missed = Filter {
        state: Some(EventState::Missed),
        subscription: Some("db31"),
        ..Filter::default()
    };
    assert_eq!(postgres_lacks(&missed), None);
    let query = postgres_query(&missed);
    assert_eq!(
        query.texts,
        ["missed".to_owned(), "db31".into(), past_prefix("db31")]
    );
    assert!(
        query.sql.contains("o.state = $2")
            && query.sql.contains("o.subscription_id COLLATE \"C\" >= $3")
            && query.sql.contains("o.subscription_id COLLATE \"C\" < $4"),
        "{}",
        query.sql
    );
    // No event without rows is missed: SQLite files those `unknown`.
    assert!(!query.sql.contains("UNION"), "{}", query.sql);
    assert!(query.sql.ends_with("LIMIT $5"), "{}", query.sql);
    // Without a state, or `unknown`, the events not swept yet that a
    // subscription with the prefix listens to are SQLite's too.
    for state in [None, Some(EventState::Unknown)] {
        let filter = Filter {
            state,
            subscription: Some("db31"),
            ..Filter::default()
        };
        let query = postgres_query(&filter);
        assert!(
            query.sql.contains("UNION ALL")
                && query.sql.contains("u.id COLLATE \"C\" >= $")
                && query.sql.contains("s.last_swept_ms < e.received_ms")
                && query.sql.contains(super::event_list::UNSWEPT_SESSIONS),
            "{}",
            query.sql
        );
    }
    let live = Filter {
        after_seq: Some(7),
        ..Filter::default()
    };
    assert!(
        postgres_lacks(&live)
            .expect("refused")
            .contains("live list")
    );
}

#[test]
fn a_type_read_first_is_an_array_parameter_and_leaves_nothing_to_fold() {
    let filter = Filter {
        event_type: Some("CALL"),
        after_xid: Some(9),
        session: Some("ses"),
        ..Filter::default()
    };
    let types = ["call.ended".to_owned(), "call.failed".to_owned()];
    let query = postgres_query_typed(&filter, Some(&types));
    assert!(
        query
            .sql
            .contains("e.event COLLATE \"C\" = ANY($3::text[])"),
        "after the window and the transaction: {}",
        query.sql
    );
    assert!(
        !query.sql.contains("strpos(lower(e.event "),
        "{}",
        query.sql
    );
    assert_eq!(query.types.as_deref(), Some(&types[..]));
    assert_eq!(query.texts, ["ses".to_owned(), past_prefix("ses")]);
    assert!(query.sql.contains(">= $4") && query.sql.ends_with("LIMIT $6"));
    assert!(!query.checked_here);
    // Without the types (the index not built yet) the type is tested.
    let tested = postgres_query_typed(&filter, None);
    assert!(tested.checked_here && tested.types.is_none());
    assert!(
        tested.sql.contains("strpos(lower(e.event "),
        "{}",
        tested.sql
    );
}

#[test]
fn ids_read_first_follow_the_types_and_every_condition_is_still_tested() {
    let words = vec!["7f3a".to_owned()];
    let filter = Filter {
        event_type: Some("call"),
        words: &words,
        ..Filter::default()
    };
    let types = ["call.ended".to_owned()];
    let ids = ["evt-1".to_owned(), "evt-2".to_owned()];
    let query = postgres_query_read(&filter, Some(&types), Some(&ids));
    // One type is compared as a value, for the type index's order.
    assert!(
        query
            .sql
            .contains("e.event COLLATE \"C\" = ($2::text[])[1]")
            && query.sql.contains("e.event_id = ANY($3::text[])"),
        "{}",
        query.sql
    );
    assert_eq!(query.ids.as_deref(), Some(&ids[..]));
    // The word is still tested in SQL and in Rust.
    assert_eq!(query.texts, ["7f3a".to_owned()]);
    assert!(
        query.sql.contains("strpos(lower(e.event_id "),
        "{}",
        query.sql
    );
    assert!(query.checked_here && !query.sql.contains("LIMIT"));
    // A batch of a status's events, nothing to fold: limited in SQL.
    let missed = Filter {
        state: Some(EventState::Missed),
        ..Filter::default()
    };
    let query = postgres_query_read(&missed, None, Some(&ids));
    assert!(query.sql.contains("e.event_id = ANY($2::text[])"));
    assert!(query.sql.contains("o.state = $3") && query.sql.ends_with("LIMIT $4"));
}

#[test]
fn the_text_index_is_read_for_words_with_a_trigram_their_wildcards_escaped() {
    use super::postgres::text_index::{MARKER, candidates_query, contained, folded, indexable};
    assert!(indexable("abc") && indexable("x-7f3") && indexable("ses-1abc"));
    assert!(!indexable("ab") && !indexable("a-b-c") && !indexable("ü-ö-ä") && !indexable("%_%"));
    assert_eq!(contained("100%_off"), "%100\\%\\_off%");
    assert_eq!(contained("a\\b"), "%a\\\\b%");
    let sql = candidates_query(2);
    let text = folded("e.");
    assert!(
        sql.contains(&format!(
            "(({text} LIKE $2 AND {text} LIKE $3) OR {text} LIKE '%{MARKER}%')"
        )),
        "{sql}"
    );
    assert!(sql.ends_with("LIMIT $4"), "{sql}");
    // The index's text is the query's, columns unqualified.
    assert_eq!(folded("e.").replace("e.", ""), folded(""));
}
