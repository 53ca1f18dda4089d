//! The account's control route (`/_emulator/account`): balance and
//! concurrency.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};

use super::queue::pump;
use crate::SharedState;
use crate::problem::Problem;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountChange {
    #[serde(default)]
    balance: Option<f64>,
    #[serde(default)]
    concurrency: Option<u32>,
}

fn account_answer(state: &SharedState) -> Json<Value> {
    let account = state.prerecorded.account();
    let jobs = state.prerecorded.jobs();
    Json(json!({
        "balance": account.balance,
        "concurrency": account.concurrency,
        "effective_concurrency": account.effective_concurrency(),
        "processing": jobs.processing,
        "queued": jobs.queue.len(),
    }))
}

/// `GET /_emulator/account`.
pub(crate) async fn get_account(State(state): State<SharedState>) -> Json<Value> {
    account_answer(&state)
}

/// `POST /_emulator/account {"balance"?, "concurrency"?}`: changes the
/// account; queued jobs start at once if the new limit allows.
pub(crate) async fn set_account(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<Value>, Problem> {
    let change: AccountChange = crate::problem::parse_body(&body)?;
    if change.concurrency == Some(0) {
        return Err(Problem::bad_request("`concurrency`: must be at least 1"));
    }
    {
        let mut account = state
            .prerecorded
            .account
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some(balance) = change.balance {
            account.balance = balance;
        }
        if let Some(concurrency) = change.concurrency {
            account.concurrency = concurrency;
        }
    }
    pump(&state, &mut state.prerecorded.jobs());
    Ok(account_answer(&state))
}
