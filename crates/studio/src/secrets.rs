//! Which secret may go where. A session file names a model's `baseUrl` and the environment
//! variable holding its key (`apiKeyEnv`), but it cannot choose to send a key anywhere new:
//! the pairs "environment variable → origin it may be sent to" are the user's own settings,
//! kept outside plugin folders and sessions (`$COVEL_STUDIO_CONFIG`, else
//! `$XDG_CONFIG_HOME/covel-studio/trusted-keys.yaml`, else `~/.config/covel-studio/…`). Built in
//! are only the providers' official HTTPS endpoints. A loopback model server gets no key.

use serde::Deserialize;
use std::path::PathBuf;

/// Keys trusted without any setting: each provider's official endpoint.
const BUILT_IN: &[(&str, &str)] = &[
    ("ANTHROPIC_API_KEY", "https://api.anthropic.com"),
    ("OPENAI_API_KEY", "https://api.openai.com"),
];

/// One trusted pair of the user's settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKey {
    pub env: String,
    pub origin: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Settings {
    #[serde(default)]
    trusted_keys: Vec<TrustedKey>,
}

/// Where the user's trusted keys live: `$COVEL_STUDIO_CONFIG`, else
/// `$XDG_CONFIG_HOME/covel-studio/trusted-keys.yaml`, else `$HOME/.config/covel-studio/…`.
/// Only an absolute path counts: an empty or relative `XDG_CONFIG_HOME` (or no `HOME`) would
/// make it relative to wherever the studio runs, where a plugin folder or a cloned repository
/// could hold a file that trusts its own key. Then there is no trust file (said once).
pub fn settings_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("COVEL_STUDIO_CONFIG").map(PathBuf::from) {
        if path.is_absolute() {
            return Some(path);
        }
        say_once(&format!(
            "covel-studio: COVEL_STUDIO_CONFIG is the relative path {}; only an absolute path is read for trusted keys, so none is used",
            path.display()
        ));
        return None;
    }
    // As the XDG base directory rules say: a relative (or empty) value is ignored.
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let base = absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")));
    if base.is_none() {
        say_once(
            "covel-studio: no absolute XDG_CONFIG_HOME or HOME, so no trusted-keys file is used (only the providers' official endpoints get keys)",
        );
    }
    base.map(|b| b.join("covel-studio").join("trusted-keys.yaml"))
}

/// Writes a note to stderr once per process.
fn say_once(note: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| eprintln!("{note}"));
}

/// The user's trusted pairs (none when the file is absent or no absolute place for it is
/// known; an unreadable file trusts nothing and says why).
pub fn trusted_keys() -> Result<Vec<TrustedKey>, String> {
    let Some(path) = settings_path() else {
        return Ok(Vec::new());
    };
    if std::fs::symlink_metadata(&path).is_err() {
        return Ok(Vec::new());
    }
    let text = covel_kernel::files::read_regular(&path, 1024 * 1024).map_err(|e| e.to_string())?;
    let settings: Settings = covel_kernel::yaml::from_str(&text).map_err(|e| e.in_file(&path))?;
    Ok(settings.trusted_keys)
}

/// What to do with a session's key for a base URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyUse {
    /// Send the key held in this variable.
    Send(String),
    /// Send no key (none named, or a loopback server).
    None,
}

/// Whether an origin is this machine.
fn is_loopback(origin: &str) -> bool {
    url::Url::parse(origin)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
        .is_some_and(|host| match host {
            url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        })
}

/// Decides whether the key in `env` may be sent to `base_url`.
pub fn key_use(
    env: Option<&str>,
    base_url: &str,
    trusted: &[TrustedKey],
) -> Result<KeyUse, String> {
    let origin = covel_kernel::http::origin_of(base_url)?;
    let Some(env) = env else {
        return Ok(KeyUse::None);
    };
    let listed =
        |e: &str, o: &str| e == env && covel_kernel::http::origin_of(o).is_ok_and(|o| o == origin);
    if BUILT_IN.iter().any(|(e, o)| listed(e, o))
        || trusted.iter().any(|t| listed(&t.env, &t.origin))
    {
        return Ok(KeyUse::Send(env.to_string()));
    }
    if is_loopback(&origin) {
        return Ok(KeyUse::None);
    }
    let file = settings_path().map_or_else(
        || "a settings file named by COVEL_STUDIO_CONFIG (an absolute path)".to_string(),
        |p| p.display().to_string(),
    );
    Err(format!(
        "the session asks to send the environment variable {env} to {origin}, which you have not trusted: keys go only where your own settings allow. To trust it, add\n  trustedKeys:\n    - {{ env: {env}, origin: {origin} }}\nto {file}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_endpoints_are_trusted_and_nothing_else_without_a_setting() {
        assert_eq!(
            key_use(Some("ANTHROPIC_API_KEY"), "https://api.anthropic.com", &[]),
            Ok(KeyUse::Send("ANTHROPIC_API_KEY".into()))
        );
        assert!(
            key_use(Some("ANTHROPIC_API_KEY"), "https://evil.example.org", &[]).is_err(),
            "a session cannot redirect a key"
        );
        assert!(
            key_use(Some("HOME"), "https://api.anthropic.com", &[]).is_err(),
            "nor send any variable to a trusted host"
        );
        assert_eq!(
            key_use(Some("ANY"), "http://127.0.0.1:8080/v1", &[]),
            Ok(KeyUse::None),
            "a loopback server needs no key"
        );
        let trusted = [TrustedKey {
            env: "ROUTER_KEY".into(),
            origin: "https://router.example.net".into(),
        }];
        assert_eq!(
            key_use(
                Some("ROUTER_KEY"),
                "https://router.example.net/v1",
                &trusted
            ),
            Ok(KeyUse::Send("ROUTER_KEY".into()))
        );
    }
}
