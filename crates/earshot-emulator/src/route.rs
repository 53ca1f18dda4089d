//! [`Route`]: the platform's routes by name, as the journal and the
//! expectations of a test call them, read from the method and the matched
//! path of a request. Control routes (`/_emulator/...`) are not the
//! platform's and have no `Route`.

use std::fmt;

/// One route of the platform interface (spec part 4), as the emulator
/// serves it: `Route::CreateTranscript` is `POST /v2/transcript`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Route {
    /// `POST /v1/transcribe/live` (and its alias `/v1/transcribe/stream`).
    DictateLive,
    /// `POST /v1/transcribe`: buffered dictation.
    DictateBuffered,
    /// `POST /transcribe`: sync transcription.
    Sync,
    /// `POST /v1/webhook-subscriptions`.
    CreateSubscription,
    /// `GET /v1/webhook-subscriptions`.
    ListSubscriptions,
    /// `GET /v1/webhook-subscriptions/{id}`.
    GetSubscription,
    /// `PATCH /v1/webhook-subscriptions/{id}`.
    UpdateSubscription,
    /// `DELETE /v1/webhook-subscriptions/{id}`.
    DeleteSubscription,
    /// `GET /v1/sessions/{session_id}/webhook-deliveries`.
    ListDeliveries,
    /// `GET /v1/sessions/{session_id}/webhook-deliveries/latest`.
    LatestDeliveries,
    /// `GET /v1/sessions/{session_id}`.
    GetSession,
    /// `POST /v2/upload`.
    Upload,
    /// `POST /v2/transcript`.
    CreateTranscript,
    /// `GET /v2/transcript/{transcript_id}`.
    GetTranscript,
}

impl Route {
    /// Every route, in the spec's order.
    pub const ALL: [Route; 14] = [
        Route::DictateLive,
        Route::DictateBuffered,
        Route::Sync,
        Route::CreateSubscription,
        Route::ListSubscriptions,
        Route::GetSubscription,
        Route::UpdateSubscription,
        Route::DeleteSubscription,
        Route::ListDeliveries,
        Route::LatestDeliveries,
        Route::GetSession,
        Route::Upload,
        Route::CreateTranscript,
        Route::GetTranscript,
    ];

    /// The method and path pattern, as the spec writes them:
    /// `"POST /v2/transcript"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::DictateLive => "POST /v1/transcribe/live",
            Route::DictateBuffered => "POST /v1/transcribe",
            Route::Sync => "POST /transcribe",
            Route::CreateSubscription => "POST /v1/webhook-subscriptions",
            Route::ListSubscriptions => "GET /v1/webhook-subscriptions",
            Route::GetSubscription => "GET /v1/webhook-subscriptions/{id}",
            Route::UpdateSubscription => "PATCH /v1/webhook-subscriptions/{id}",
            Route::DeleteSubscription => "DELETE /v1/webhook-subscriptions/{id}",
            Route::ListDeliveries => "GET /v1/sessions/{session_id}/webhook-deliveries",
            Route::LatestDeliveries => "GET /v1/sessions/{session_id}/webhook-deliveries/latest",
            Route::GetSession => "GET /v1/sessions/{session_id}",
            Route::Upload => "POST /v2/upload",
            Route::CreateTranscript => "POST /v2/transcript",
            Route::GetTranscript => "GET /v2/transcript/{transcript_id}",
        }
    }

    /// The route a request took, from its method and the pattern the
    /// router matched (`/v2/transcript/{id}`); `None` for control routes,
    /// unknown paths and methods a route does not take.
    pub(crate) fn matched(method: &str, pattern: &str) -> Option<Route> {
        let route = match (method, pattern) {
            ("POST", "/v1/transcribe/live" | "/v1/transcribe/stream") => Route::DictateLive,
            ("POST", "/v1/transcribe") => Route::DictateBuffered,
            ("POST", "/transcribe") => Route::Sync,
            ("POST", "/v1/webhook-subscriptions") => Route::CreateSubscription,
            ("GET", "/v1/webhook-subscriptions") => Route::ListSubscriptions,
            ("GET", "/v1/webhook-subscriptions/{id}") => Route::GetSubscription,
            ("PATCH", "/v1/webhook-subscriptions/{id}") => Route::UpdateSubscription,
            ("DELETE", "/v1/webhook-subscriptions/{id}") => Route::DeleteSubscription,
            ("GET", "/v1/sessions/{session_id}/webhook-deliveries") => Route::ListDeliveries,
            ("GET", "/v1/sessions/{session_id}/webhook-deliveries/latest") => {
                Route::LatestDeliveries
            }
            ("GET", "/v1/sessions/{session_id}") => Route::GetSession,
            ("POST", "/v2/upload") => Route::Upload,
            ("POST", "/v2/transcript") => Route::CreateTranscript,
            ("GET", "/v2/transcript/{id}") => Route::GetTranscript,
            _ => return None,
        };
        Some(route)
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route is found again from its own method and pattern (the
    /// router's `{id}` stands for the spec's `{transcript_id}`).
    #[test]
    fn every_route_is_matched_from_its_pattern() {
        for route in Route::ALL {
            let (method, pattern) = route.as_str().split_once(' ').unwrap();
            let pattern = pattern.replace("{transcript_id}", "{id}");
            assert_eq!(Route::matched(method, &pattern), Some(route), "{route}");
        }
        assert_eq!(Route::matched("GET", "/_emulator/stats"), None);
        assert_eq!(Route::matched("PUT", "/v2/transcript"), None);
    }
}
