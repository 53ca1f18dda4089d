//! Area C calls: webhook subscriptions, delivery history and sessions.
//!
//! All at `{agents_url}` with the raw API key in `Authorization`.

use reqwest::Method;
use reqwest::header::AUTHORIZATION;

use super::types::agents::{
    DeliveryList, DeliveryRecord, NewSubscription, SessionRecord, Subscription, SubscriptionList,
    SubscriptionPatch,
};
use super::{ApiError, Client, path_segment};

/// Page size asked for when following `has_more` (the emulator's maximum).
const PAGE_SIZE: u32 = 200;

impl Client {
    fn agents_request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, Self::url(&self.endpoints.agents, path))
            .header(AUTHORIZATION, self.key_header())
    }

    /// Creates a subscription after checking every rule of part 2 C.
    pub async fn create_subscription(
        &self,
        subscription: &NewSubscription,
    ) -> Result<Subscription, ApiError> {
        subscription.validate(self.url_policy)?;
        let request = self
            .agents_request(Method::POST, "/v1/webhook-subscriptions")
            .json(subscription);
        Self::send_json("create subscription", request).await
    }

    /// Every subscription, following `has_more` across pages, newest first.
    pub async fn list_subscriptions(
        &self,
        include_disabled: bool,
    ) -> Result<Vec<Subscription>, ApiError> {
        let mut all: Vec<Subscription> = Vec::new();
        loop {
            let after = all.last().map(|last| last.id.as_str());
            let page = self.subscriptions_page(include_disabled, after).await?;
            let more = page.has_more && !page.subscriptions.is_empty();
            all.extend(page.subscriptions);
            if !more {
                return Ok(all);
            }
        }
    }

    /// One page of subscriptions after the one with id `after`: one request.
    pub async fn subscriptions_page(
        &self,
        include_disabled: bool,
        after: Option<&str>,
    ) -> Result<SubscriptionList, ApiError> {
        let mut query = vec![
            ("include_disabled", include_disabled.to_string()),
            ("limit", PAGE_SIZE.to_string()),
        ];
        if let Some(after) = after {
            query.push(("starting_after", after.to_owned()));
        }
        let request = self
            .agents_request(Method::GET, "/v1/webhook-subscriptions")
            .query(&query);
        Self::send_json("list subscriptions", request).await
    }

    pub async fn get_subscription(&self, id: &str) -> Result<Subscription, ApiError> {
        let request = self.agents_request(Method::GET, &subscription_path(id)?);
        Self::send_json("get subscription", request).await
    }

    /// Changes any of `url`, `events`, `secret`, `enabled`.
    pub async fn update_subscription(
        &self,
        id: &str,
        patch: &SubscriptionPatch,
    ) -> Result<Subscription, ApiError> {
        patch.validate(self.url_policy)?;
        let request = self
            .agents_request(Method::PATCH, &subscription_path(id)?)
            .json(patch);
        Self::send_json("update subscription", request).await
    }

    /// Removes the subscription and its delivery history.
    pub async fn delete_subscription(&self, id: &str) -> Result<(), ApiError> {
        let request = self.agents_request(Method::DELETE, &subscription_path(id)?);
        Self::send("delete subscription", request).await.map(drop)
    }

    /// Every delivery attempt for a session or call, across all pages.
    pub async fn list_deliveries(&self, session_id: &str) -> Result<Vec<DeliveryRecord>, ApiError> {
        let mut all: Vec<DeliveryRecord> = Vec::new();
        loop {
            let after = all.last().map(|last| last.id.as_str());
            let page = self.deliveries_page(session_id, after).await?;
            let more = page.has_more && !page.deliveries.is_empty();
            all.extend(page.deliveries);
            if !more {
                return Ok(all);
            }
        }
    }

    /// One page of a session's attempts after the one with id `after`: one
    /// request.
    pub async fn deliveries_page(
        &self,
        session_id: &str,
        after: Option<&str>,
    ) -> Result<DeliveryList, ApiError> {
        let path = format!(
            "/v1/sessions/{}/webhook-deliveries",
            path_segment(session_id)?
        );
        let mut query = vec![("limit", PAGE_SIZE.to_string())];
        if let Some(after) = after {
            query.push(("starting_after", after.to_owned()));
        }
        let request = self.agents_request(Method::GET, &path).query(&query);
        Self::send_json("list deliveries", request).await
    }

    /// The most recent attempt per subscription for a session or call.
    pub async fn latest_deliveries(
        &self,
        session_id: &str,
    ) -> Result<Vec<DeliveryRecord>, ApiError> {
        let path = format!(
            "/v1/sessions/{}/webhook-deliveries/latest",
            path_segment(session_id)?
        );
        let request = self.agents_request(Method::GET, &path);
        let list: DeliveryList = Self::send_json("latest deliveries", request).await?;
        Ok(list.deliveries)
    }

    pub async fn get_session(&self, session_id: &str) -> Result<SessionRecord, ApiError> {
        let path = format!("/v1/sessions/{}", path_segment(session_id)?);
        let request = self.agents_request(Method::GET, &path);
        Self::send_json("get session", request).await
    }
}

fn subscription_path(id: &str) -> Result<String, ApiError> {
    Ok(format!("/v1/webhook-subscriptions/{}", path_segment(id)?))
}
