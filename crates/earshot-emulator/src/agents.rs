//! Voice agent API routes (spec part 4 C): subscriptions, delivery history,
//! sessions. Requests are checked with the same rules as the client
//! ([`earshot_protocol::validate`]) plus DNS resolution of the URL's host.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, middleware};
use chrono::Utc;
use serde_json::{Map, Value, json};
use url::Host;

use super::problem::Problem;
use super::store::StoredSubscription;
use super::{SharedState, auth};
use earshot_protocol::redact::SecretString;
use earshot_protocol::types::agents::{DeliveryRecord, Subscription};
use earshot_protocol::validate::{self, UrlPolicy, ValidationError};

const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 200;
/// How long a URL's host may take to resolve before it counts as unresolvable.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

pub(crate) fn routes(state: SharedState) -> Router<SharedState> {
    Router::new()
        .route(
            "/v1/webhook-subscriptions",
            get(list_subscriptions).post(create_subscription),
        )
        .route(
            "/v1/webhook-subscriptions/{id}",
            get(get_subscription)
                .patch(update_subscription)
                .delete(delete_subscription),
        )
        .route(
            "/v1/sessions/{session_id}/webhook-deliveries",
            get(list_deliveries),
        )
        .route(
            "/v1/sessions/{session_id}/webhook-deliveries/latest",
            get(latest_deliveries),
        )
        .route("/v1/sessions/{session_id}", get(get_session))
        .route_layer(middleware::from_fn_with_state(state, auth::agents_key))
}

/// The JSON object of a request body, or the 400 that explains why not.
fn json_object(body: &[u8]) -> Result<Map<String, Value>, Problem> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Problem::bad_request("the body must be a JSON object")),
        Err(error) => Err(Problem::bad_request(format!(
            "the body is not valid JSON: {error}"
        ))),
    }
}

fn reject_unknown_fields(object: &Map<String, Value>, allowed: &[&str]) -> Result<(), Problem> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(Problem::bad_request(format!(
            "`{key}`: unknown field; allowed: {}",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

fn string_field(
    object: &Map<String, Value>,
    field: &'static str,
) -> Result<Option<String>, Problem> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(Problem::from(ValidationError::new(
            field,
            "must be a string",
        ))),
    }
}

fn bool_field(object: &Map<String, Value>, field: &'static str) -> Result<Option<bool>, Problem> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(_) => Err(Problem::from(ValidationError::new(
            field,
            "must be true or false",
        ))),
    }
}

fn events_field(object: &Map<String, Value>) -> Result<Option<Vec<String>>, Problem> {
    let Some(value) = object.get("events") else {
        return Ok(None);
    };
    let names = value
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
        })
        .ok_or_else(|| {
            Problem::from(ValidationError::new(
                "events",
                "must be an array of event names",
            ))
        })?;
    validate::event_names(&names)?;
    Ok(Some(names))
}

fn required<T>(value: Option<T>, field: &'static str) -> Result<T, Problem> {
    value.ok_or_else(|| Problem::from(ValidationError::new(field, "is required")))
}

/// The URL rules of part 2 C; with `--allow-private-urls`, any http(s) URL.
async fn check_url(state: &SharedState, raw: &str) -> Result<(), Problem> {
    if state.config.allow_private_urls {
        validate::url_under(raw, UrlPolicy::AnyHttp)?;
        return Ok(());
    }
    let parsed = validate::url(raw)?;
    if let Some(Host::Domain(name)) = parsed.host() {
        let port = parsed.port_or_known_default().unwrap_or(443);
        let resolved =
            tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((name, port))).await;
        let addresses: Vec<IpAddr> = match resolved {
            Ok(Ok(addresses)) => addresses.map(|address| address.ip()).collect(),
            _ => Vec::new(),
        };
        if addresses.is_empty() {
            return Err(Problem::from(ValidationError::new(
                "url",
                format!("{name} does not resolve in public DNS"),
            )));
        }
        if let Some((ip, reason)) = addresses
            .iter()
            .find_map(|ip| validate::non_public_reason(*ip).map(|reason| (ip, reason)))
        {
            return Err(Problem::from(ValidationError::new(
                "url",
                format!("must be publicly reachable; {name} resolves to {ip}, a {reason} address"),
            )));
        }
    }
    Ok(())
}

async fn create_subscription(
    State(state): State<SharedState>,
    body: Bytes,
) -> Result<Response, Problem> {
    let object = json_object(&body)?;
    reject_unknown_fields(&object, &["url", "events", "secret", "agent_id", "enabled"])?;
    let url = required(string_field(&object, "url")?, "url")?;
    let events = required(events_field(&object)?, "events")?;
    let secret = required(string_field(&object, "secret")?, "secret")?;
    validate::secret(&secret)?;
    let agent_id = string_field(&object, "agent_id")?
        .map(|agent| validate::agent_id(&agent))
        .transpose()?;
    let enabled = bool_field(&object, "enabled")?.unwrap_or(true);
    check_url(&state, &url).await?;

    let mut extra = Map::new();
    extra.insert("created_at".into(), json!(Utc::now()));
    let record = Subscription {
        id: uuid::Uuid::new_v4().to_string(),
        url,
        events,
        agent_id,
        enabled,
        secret_version: 1,
        extra,
    };
    state.lock().subscriptions.push(StoredSubscription {
        record: record.clone(),
        secret: SecretString::new(secret),
    });
    Ok((StatusCode::CREATED, Json(record)).into_response())
}

/// `limit` and `starting_after`, checked.
struct Page {
    limit: usize,
    starting_after: Option<String>,
}

fn page_params(query: &HashMap<String, String>) -> Result<Page, Problem> {
    let limit = match query.get("limit") {
        None => DEFAULT_PAGE,
        Some(text) => match text.parse::<usize>() {
            Ok(limit) if limit >= 1 => limit.min(MAX_PAGE),
            _ => {
                return Err(Problem::bad_request(format!(
                    "`limit`: must be an integer from 1 to {MAX_PAGE}"
                )));
            }
        },
    };
    Ok(Page {
        limit,
        starting_after: query.get("starting_after").cloned(),
    })
}

/// One page of `items` (already in list order) after `starting_after`.
fn paginate<T: Clone>(
    items: &[T],
    id_of: impl Fn(&T) -> &str,
    page: &Page,
) -> Result<(Vec<T>, bool), Problem> {
    let start = match &page.starting_after {
        None => 0,
        Some(after) => match items.iter().position(|item| id_of(item) == after) {
            Some(index) => index + 1,
            None => {
                return Err(Problem::bad_request(format!(
                    "`starting_after`: {after:?} is not in this list"
                )));
            }
        },
    };
    let rest = &items[start..];
    let taken = rest.iter().take(page.limit).cloned().collect();
    Ok((taken, rest.len() > page.limit))
}

async fn list_subscriptions(
    State(state): State<SharedState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, Problem> {
    let include_disabled = match query.get("include_disabled").map(String::as_str) {
        None | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            return Err(Problem::bad_request(format!(
                "`include_disabled`: must be true or false (got {other:?})"
            )));
        }
    };
    let page = page_params(&query)?;
    let visible: Vec<Subscription> = state
        .lock()
        .subscriptions
        .iter()
        .rev()
        .filter(|stored| include_disabled || stored.record.enabled)
        .map(|stored| stored.record.clone())
        .collect();
    let (subscriptions, has_more) = paginate(&visible, |record| &record.id, &page)?;
    Ok(Json(
        json!({ "subscriptions": subscriptions, "has_more": has_more }),
    ))
}

async fn get_subscription(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<Json<Subscription>, Problem> {
    let store = state.lock();
    let stored = store
        .subscription(&id)
        .ok_or_else(|| Problem::not_found("subscription", &id))?;
    Ok(Json(stored.record.clone()))
}

async fn update_subscription(
    State(state): State<SharedState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Subscription>, Problem> {
    let id = id.as_str();
    if state.lock().subscription(id).is_none() {
        return Err(Problem::not_found("subscription", id));
    }
    let object = json_object(&body)?;
    reject_unknown_fields(&object, &["url", "events", "secret", "enabled"])?;
    if object.is_empty() {
        return Err(Problem::bad_request(
            "nothing to change: send any of url, events, secret, enabled",
        ));
    }
    let url = string_field(&object, "url")?;
    if let Some(url) = &url {
        check_url(&state, url).await?;
    }
    let events = events_field(&object)?;
    let secret = string_field(&object, "secret")?;
    if let Some(secret) = &secret {
        validate::secret(secret)?;
    }
    let enabled = bool_field(&object, "enabled")?;

    let mut store = state.lock();
    let stored = store
        .subscription_mut(id)
        .ok_or_else(|| Problem::not_found("subscription", id))?;
    if let Some(url) = url {
        stored.record.url = url;
    }
    if let Some(events) = events {
        stored.record.events = events;
    }
    if let Some(secret) = secret {
        stored.secret = SecretString::new(secret);
        stored.record.secret_version += 1;
    }
    if let Some(enabled) = enabled {
        stored.record.enabled = enabled;
    }
    Ok(Json(stored.record.clone()))
}

async fn delete_subscription(
    State(state): State<SharedState>,
    Path(id): Path<String>,
) -> Result<StatusCode, Problem> {
    if state.lock().delete_subscription(&id) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(Problem::not_found("subscription", &id))
    }
}

async fn list_deliveries(
    State(state): State<SharedState>,
    Path(session_id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, Problem> {
    let page = page_params(&query)?;
    let attempts = session_attempts(&state, &session_id)?;
    let (deliveries, has_more) = paginate(&attempts, |record| &record.id, &page)?;
    Ok(Json(
        json!({ "deliveries": deliveries, "has_more": has_more }),
    ))
}

async fn latest_deliveries(
    State(state): State<SharedState>,
    Path(session_id): Path<String>,
) -> Result<Json<Value>, Problem> {
    let attempts = session_attempts(&state, &session_id)?;
    let mut latest: Vec<DeliveryRecord> = Vec::new();
    for attempt in attempts.into_iter().rev() {
        if !latest
            .iter()
            .any(|seen| seen.subscription_id == attempt.subscription_id)
        {
            latest.push(attempt);
        }
    }
    Ok(Json(json!({ "deliveries": latest, "has_more": false })))
}

/// Every attempt for a session or call, oldest first; 404 if never seen.
fn session_attempts(state: &SharedState, session_id: &str) -> Result<Vec<DeliveryRecord>, Problem> {
    let store = state.lock();
    let attempts = store.session_deliveries(session_id).to_vec();
    if attempts.is_empty() && !store.conversations.contains_key(session_id) {
        return Err(Problem::not_found("session or call", session_id));
    }
    Ok(attempts)
}

async fn get_session(
    State(state): State<SharedState>,
    Path(session_id): Path<String>,
) -> Result<Json<Value>, Problem> {
    state
        .lock()
        .conversation_json(&session_id, state.clock.now())
        .map(Json)
        .ok_or_else(|| Problem::not_found("session or call", &session_id))
}
