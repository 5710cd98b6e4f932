//! Plugin HTTP policy: a community plugin reaches only the origins its package lists in
//! `permissions.http` (scheme, host and port compared exactly), with only the methods listed
//! there, and in the studio every request is answered from the session's recorded mocks unless
//! the session opts into live network. The host enforces this on its own side of the call —
//! plugin code only asks — and applies it again to every redirect hop.

use crate::context::{HttpMock, HttpPolicy};
use serde::Serialize;
use serde_json::Value;

/// One `permissions.http` entry: an origin and the methods allowed there (all when empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpGrant {
    pub origin: String,
    pub methods: Vec<String>,
}

/// What the host does with a request.
#[derive(Debug, Clone, PartialEq)]
pub enum HttpDecision<'a> {
    /// Answer from this recorded mock.
    Mock(&'a HttpMock),
    /// Send it (the session opted into live network).
    Live,
    /// Refuse it, saying why.
    Refused(String),
}

/// The origin of an absolute http(s) URL, normalized: lower-case scheme and host, the port only
/// when it is not the scheme's default.
pub fn origin_of(url: &str) -> Result<String, String> {
    let parsed =
        url::Url::parse(url).map_err(|e| format!("`{url}` is not an absolute URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("`{url}`: only http and https URLs can be fetched"));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("`{url}` has no host"))?;
    Ok(match parsed.port() {
        Some(port) => format!("{}://{host}:{port}", parsed.scheme()),
        None => format!("{}://{host}", parsed.scheme()),
    })
}

/// Whether `method` may go to `url` under the grants of `plugin`.
pub fn check(plugin: &str, grants: &[HttpGrant], method: &str, url: &str) -> Result<(), String> {
    let origin = origin_of(url)?;
    let grant = grants
        .iter()
        .find(|g| origin_of(&g.origin).is_ok_and(|o| o == origin))
        .ok_or_else(|| {
            format!("HTTP origin {origin} is not listed in permissions.http of plugin {plugin}")
        })?;
    let method = method.to_ascii_uppercase();
    if !grant.methods.is_empty()
        && !grant
            .methods
            .iter()
            .any(|m| m.eq_ignore_ascii_case(&method))
    {
        return Err(format!(
            "HTTP method {method} is not allowed for {origin} by permissions.http of plugin {plugin} (allowed: {})",
            grant.methods.join(", ")
        ));
    }
    Ok(())
}

/// Decides a request: refused, answered by a mock, or sent live.
pub fn decide<'a>(
    plugin: &str,
    grants: &[HttpGrant],
    policy: &'a HttpPolicy,
    method: &str,
    url: &str,
) -> HttpDecision<'a> {
    if let Err(why) = check(plugin, grants, method, url) {
        return HttpDecision::Refused(why);
    }
    let method = method.to_ascii_uppercase();
    let mock = policy
        .mocks
        .iter()
        .find(|m| m.method.eq_ignore_ascii_case(&method) && mock_matches(&m.url, url));
    match mock {
        Some(mock) => HttpDecision::Mock(mock),
        None if policy.live => HttpDecision::Live,
        None => HttpDecision::Refused(format!(
            "no recorded HTTP answer for {method} {url} (the session answers plugin HTTP from its recorded mocks; set http.live to reach the network)"
        )),
    }
}

/// A mock's URL matches the request exactly, or as a prefix ending at a path boundary.
fn mock_matches(mock: &str, url: &str) -> bool {
    url == mock
        || (url.starts_with(mock)
            && (mock.ends_with('/') || url[mock.len()..].starts_with(['/', '?', '#'])))
}

/// A mock's body as the text a response carries.
pub fn mock_body(mock: &HttpMock) -> String {
    match &mock.body {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grants() -> Vec<HttpGrant> {
        vec![HttpGrant {
            origin: "https://api.example.org".into(),
            methods: vec!["GET".into()],
        }]
    }

    #[test]
    fn origins_compare_scheme_host_and_port_exactly() {
        assert!(check("p", &grants(), "GET", "https://api.example.org/v1?q=1").is_ok());
        assert!(
            check("p", &grants(), "GET", "https://API.example.org:443/v1").is_ok(),
            "default port and case"
        );
        assert!(
            check("p", &grants(), "GET", "http://api.example.org/v1").is_err(),
            "scheme"
        );
        assert!(
            check("p", &grants(), "GET", "https://api.example.org:8443/v1").is_err(),
            "port"
        );
        assert!(
            check("p", &grants(), "GET", "https://api.example.org.evil.net/").is_err(),
            "suffix"
        );
        assert!(
            check("p", &grants(), "GET", "https://evil.net/@api.example.org").is_err(),
            "userinfo tricks"
        );
    }

    #[test]
    fn methods_listed_in_permissions_are_enforced() {
        let refused = check("p", &grants(), "post", "https://api.example.org/v1")
            .expect_err("POST is not listed");
        assert!(
            refused.contains("POST") && refused.contains("allowed: GET"),
            "{refused}"
        );
    }

    #[test]
    fn mocks_answer_first_and_live_needs_the_session_opt_in() {
        let mock = HttpMock {
            url: "https://api.example.org/v1".into(),
            method: "GET".into(),
            status: 200,
            headers: Default::default(),
            body: Value::Null,
        };
        let policy = HttpPolicy {
            live: false,
            mocks: vec![mock],
        };
        assert!(matches!(
            decide(
                "p",
                &grants(),
                &policy,
                "GET",
                "https://api.example.org/v1/x"
            ),
            HttpDecision::Mock(_)
        ));
        assert!(
            matches!(
                decide(
                    "p",
                    &grants(),
                    &policy,
                    "GET",
                    "https://api.example.org/v10"
                ),
                HttpDecision::Refused(_)
            ),
            "prefix ends at a boundary"
        );
        let live = HttpPolicy {
            live: true,
            mocks: Vec::new(),
        };
        assert_eq!(
            decide("p", &grants(), &live, "GET", "https://api.example.org/v2"),
            HttpDecision::Live
        );
    }
}
