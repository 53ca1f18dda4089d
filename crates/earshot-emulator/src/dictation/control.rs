//! The control route `/_emulator/dictation`: read the counters, make the
//! next rewrites time out or fail, or clear what was armed.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::Value;

use super::LlmFailure;
use crate::SharedState;
use crate::problem::Problem;

/// `POST /_emulator/dictation`: the next `count` dictation rewrites fail.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ArmLlm {
    llm: LlmFailure,
    #[serde(default = "one")]
    count: u32,
}

/// Most rewrite failures one control call may arm.
const MAX_ARMED: u32 = 10_000;

fn one() -> u32 {
    1
}

pub(super) async fn control_get(State(state): State<SharedState>) -> Json<Value> {
    Json(state.dictation.snapshot())
}

pub(super) async fn control_arm(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Json<Value>, Problem> {
    let arm: ArmLlm = crate::problem::parse_body(&body)?;
    if !(1..=MAX_ARMED).contains(&arm.count) {
        return Err(Problem::bad_request(format!(
            "`count`: must be from 1 to {MAX_ARMED}"
        )));
    }
    state
        .dictation
        .failures()
        .extend(std::iter::repeat_n(arm.llm, arm.count as usize));
    Ok(Json(state.dictation.snapshot()))
}

pub(super) async fn control_clear(State(state): State<SharedState>) -> Json<Value> {
    state.dictation.failures().clear();
    Json(state.dictation.snapshot())
}
