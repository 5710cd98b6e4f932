//! The host side of plugin HTTP (`covel.http`, `ctx.utils`): plugin code only asks; this module
//! decides with the kernel's policy (`covel_kernel::http`) for the call that is running —
//! origin and method from `permissions.http`, the session's mocks, its live opt-in — and sends
//! live requests itself, checking every redirect hop again, within the call's deadline and a
//! response size cap.

use covel_kernel::context::{ExecutionContext, HttpPolicy};
use covel_kernel::http::{self, HttpDecision, HttpGrant};
use serde_json::{Value as Json, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Responses larger than this are refused (plugins read JSON APIs, not downloads).
pub const MAX_RESPONSE_BYTES: u64 = 4 * 1024 * 1024;
/// Redirects followed at most (each hop is checked against the policy).
const MAX_REDIRECTS: usize = 5;

/// What HTTP the running call may do: the plugin's grants and the policy of the call's
/// execution (shared, not copied per call).
#[derive(Debug, Clone)]
pub struct CallHttp {
    pub plugin: String,
    pub context: Arc<ExecutionContext>,
    pub deadline: Instant,
}

impl CallHttp {
    /// `permissions.http` of the running plugin.
    pub fn grants(&self) -> &[HttpGrant] {
        self.context
            .view
            .plugins
            .get(&self.plugin)
            .map_or(&[], |scope| scope.http.as_slice())
    }

    /// How the execution answers HTTP (mocks, live opt-in).
    pub fn policy(&self) -> &HttpPolicy {
        &self.context.view.http
    }
}

/// The engine's slot for the running call's HTTP (empty between calls: no HTTP at load time).
pub type HttpSlot = Arc<Mutex<Option<CallHttp>>>;

/// Why a URL may not be fetched by the running call, or `None` when it may.
pub fn refusal(slot: &HttpSlot, method: &str, url: &str) -> Option<String> {
    let call = slot.lock().ok()?.clone();
    match call {
        Some(call) => http::check(&call.plugin, call.grants(), method, url).err(),
        None => Some("HTTP is available only while a handler runs".into()),
    }
}

/// Answers one request of the running call: `{status, headers, body, url}`, or why not.
pub fn fetch(slot: &HttpSlot, method: &str, url: &str, body: Option<&str>) -> Result<Json, String> {
    let call = slot
        .lock()
        .map_err(|_| "HTTP state is unavailable".to_string())?
        .clone();
    let Some(call) = call else {
        return Err("HTTP is available only while a handler runs".into());
    };
    match http::decide(&call.plugin, call.grants(), call.policy(), method, url) {
        HttpDecision::Refused(why) => Err(why),
        HttpDecision::Mock(mock) => {
            let headers: serde_json::Map<String, Json> = mock
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), Json::String(v.clone())))
                .collect();
            Ok(
                json!({"status": mock.status, "headers": headers, "body": http::mock_body(mock), "url": url}),
            )
        }
        HttpDecision::Live => live(&call, method, url, body),
    }
}

/// A live request, following redirects only where each hop passes the policy.
fn live(call: &CallHttp, method: &str, url: &str, body: Option<&str>) -> Result<Json, String> {
    let mut method = method.to_ascii_uppercase();
    let mut url = url.to_string();
    let mut body = body.map(str::to_string);
    for _ in 0..=MAX_REDIRECTS {
        let left = call.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!("{method} {url}: the call's deadline passed"));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(left.max(Duration::from_millis(20))))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        let response = match (method.as_str(), body.as_deref()) {
            ("GET", _) => agent.get(&url).call(),
            ("HEAD", _) => agent.head(&url).call(),
            ("DELETE", _) => agent.delete(&url).call(),
            ("POST", b) => agent.post(&url).send(b.unwrap_or_default()),
            ("PUT", b) => agent.put(&url).send(b.unwrap_or_default()),
            ("PATCH", b) => agent.patch(&url).send(b.unwrap_or_default()),
            (other, _) => return Err(format!("HTTP method {other} is not supported")),
        };
        let mut response = response.map_err(|e| format!("{method} {url} failed: {e}"))?;
        let status = response.status().as_u16();
        if (300..400).contains(&status)
            && let Some(location) = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
        {
            let next = url::Url::parse(&url)
                .and_then(|base| base.join(location))
                .map_err(|e| format!("{url} redirected to an invalid location: {e}"))?;
            let next = next.to_string();
            http::check(
                &call.plugin,
                call.grants(),
                if status == 303 { "GET" } else { &method },
                &next,
            )
            .map_err(|why| format!("{url} redirected to {next}, which is refused: {why}"))?;
            if status == 303 || ((status == 301 || status == 302) && method == "POST") {
                method = "GET".into();
                body = None;
            }
            url = next;
            continue;
        }
        let headers: serde_json::Map<String, Json> = response
            .headers()
            .iter()
            .filter_map(|(k, v)| {
                v.to_str()
                    .ok()
                    .map(|v| (k.as_str().to_lowercase(), Json::String(v.to_string())))
            })
            .collect();
        let text = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_string()
            .map_err(|e| {
                format!(
                    "reading {url}: {e} (responses are limited to {} MiB)",
                    MAX_RESPONSE_BYTES / (1024 * 1024)
                )
            })?;
        return Ok(json!({"status": status, "headers": headers, "body": text, "url": url}));
    }
    Err(format!("{url}: more than {MAX_REDIRECTS} redirects"))
}
