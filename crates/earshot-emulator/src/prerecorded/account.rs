//! The account's control route (`/_emulator/account`): balance and
//! concurrency, read as an [`AccountSnapshot`], changed by an
//! [`AccountChange`].

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::queue::pump;
use crate::SharedState;
use crate::problem::Problem;

/// A change to the emulated account: the body of `POST
/// /_emulator/account`. Fields left `None` keep their value.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AccountChange {
    /// The balance; below zero, one job processes at a time (spec part 8 E).
    #[serde(default)]
    pub balance: Option<f64>,
    /// Pre-recorded jobs processing at once; at least 1.
    #[serde(default)]
    pub concurrency: Option<u32>,
}

impl AccountChange {
    /// Sets the balance.
    pub fn balance(mut self, balance: f64) -> AccountChange {
        self.balance = Some(balance);
        self
    }

    /// Sets the concurrency limit (queued jobs start at once if it allows).
    pub fn concurrency(mut self, concurrency: u32) -> AccountChange {
        self.concurrency = Some(concurrency);
        self
    }
}

/// The emulated account and its pre-recorded queue: the answer of
/// `/_emulator/account`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct AccountSnapshot {
    pub balance: f64,
    pub concurrency: u32,
    /// The limit in force: 1 while the balance is negative.
    pub effective_concurrency: u32,
    /// Jobs processing now.
    pub processing: u32,
    /// Jobs waiting for a slot.
    pub queued: usize,
}

/// The account as it is now.
pub(crate) fn snapshot(state: &SharedState) -> AccountSnapshot {
    let account = state.prerecorded.account();
    let jobs = state.prerecorded.jobs();
    AccountSnapshot {
        balance: account.balance,
        concurrency: account.concurrency,
        effective_concurrency: account.effective_concurrency(),
        processing: jobs.processing,
        queued: jobs.queue.len(),
    }
}

/// Applies `change`; queued jobs start at once if the new limit allows.
pub(crate) fn change(
    state: &SharedState,
    change: AccountChange,
) -> Result<AccountSnapshot, Problem> {
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
    pump(state, &mut state.prerecorded.jobs());
    Ok(snapshot(state))
}

/// `GET /_emulator/account`.
pub(crate) async fn get_account(State(state): State<SharedState>) -> Json<AccountSnapshot> {
    Json(snapshot(&state))
}

/// `POST /_emulator/account {"balance"?, "concurrency"?}`.
pub(crate) async fn set_account(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<AccountSnapshot>, Problem> {
    let requested: AccountChange = crate::problem::parse_body(&body)?;
    Ok(Json(change(&state, requested)?))
}
