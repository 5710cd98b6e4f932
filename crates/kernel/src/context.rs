//! What a handler can get: the data behind `ctx` for one execution (seed page, "What a handler
//! can get"). The kernel builds it; an engine (covel-js) turns it into the `ctx` object.
//!
//! Everything here is a frozen snapshot: a handler reads copies, never the session itself.

use crate::manifest::Manifest;
use crate::session::Session;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The namespace prefix of hidden world data, never readable by an extension handler.
pub const HIDDEN_NAMESPACE_PREFIX: &str = "_hidden.";

/// Whether a namespace holds hidden world data (`_hidden.*`).
pub fn is_hidden_namespace(namespace: &str) -> bool {
    namespace.starts_with(HIDDEN_NAMESPACE_PREFIX)
}

/// The data behind one handler's `ctx` (seed page, "What a handler can get"), built by
/// [`SessionView::handler_context`]; an engine only turns it into the `ctx` object (the
/// per-call parts — `turnId`, the abort signal, `utils`, `gateway` — are the engine's).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandlerContext {
    pub session_id: String,
    pub locale: String,
    /// `ctx.world`: the session's World Model view.
    pub world: Value,
    /// `ctx.getOwnSettings()`: the plugin's declared defaults overridden by the session.
    pub settings: Map<String, Value>,
    /// `ctx.messages`: the plugin's translations for the session's locale.
    pub messages: Map<String, Value>,
    /// What `ctx.pluginData.get` / `list` read: the plugin's own rows, hidden namespaces left
    /// out, grouped by namespace in order of first appearance, rows in creation order.
    pub plugin_data: Vec<NamespaceRows>,
}

/// The readable rows of one namespace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceRows {
    pub namespace: String,
    pub rows: Vec<ReadableRow>,
}

/// One row as `ctx.pluginData.list` returns it: without the storage identifier fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadableRow {
    pub key: String,
    pub value: Value,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// One stored plugin-data record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DataRow {
    pub plugin_id: String,
    pub namespace: String,
    pub key: String,
    pub value: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

/// A recorded HTTP answer served to `ctx.utils.fetchWithRetry` / `covel.http`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpMock {
    /// Full URL, or an origin + path prefix.
    pub url: String,
    #[serde(default = "default_method")]
    pub method: String,
    #[serde(default = "default_status")]
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The body: a string is sent as is, anything else as JSON.
    #[serde(default)]
    pub body: Value,
}

fn default_method() -> String {
    "GET".into()
}

fn default_status() -> u16 {
    200
}

/// How plugin HTTP is answered in this execution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpPolicy {
    /// Live network is an explicit per-session opt-in; by default only mocks answer.
    #[serde(default)]
    pub live: bool,
    #[serde(default)]
    pub mocks: Vec<HttpMock>,
}

/// Per-plugin part of the context: settings and the origins the package may reach.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginScope {
    /// Declared defaults overridden by the session.
    pub settings: serde_json::Map<String, Value>,
    /// `permissions.http` of the package.
    pub http: Vec<crate::http::HttpGrant>,
}

/// Text generation lent to providers as `ctx.gateway` (e.g. a compaction provider asking the
/// session's `fast` model for a summary). The studio implements it over its model backends.
pub trait TextGateway: Send + Sync {
    /// `request` is `{preset?, system?, prompt?, messages?, maxOutputTokens?}`; the answer is
    /// `{text, finishReason, usage?}`. It gives up after `within` (what is left of the calling
    /// provider's deadline): a model server that never answers costs the call, not the studio.
    fn generate(&self, request: &Value, within: std::time::Duration) -> Result<Value, String>;
}

/// A shared gateway handle (compared by identity).
#[derive(Clone)]
pub struct Gateway(pub Arc<dyn TextGateway>);

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Gateway")
    }
}

impl PartialEq for Gateway {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a session state lets handlers see: the part of an execution that does not depend on the
/// turn (seed page, "What a handler can get").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionData {
    pub session_id: String,
    pub locale: String,
    /// The World Model view: `worldRecord`, `characterSchema`, `characters`, `dimensions`,
    /// `seats`, …
    pub world: Value,
    /// Plugin data by plugin id, in creation order.
    pub plugin_data: BTreeMap<String, Vec<DataRow>>,
    pub plugins: BTreeMap<String, PluginScope>,
    pub http: HttpPolicy,
}

/// [`SessionData`] frozen, with an identity: every execution over the same state (a preview's
/// world context, its two turns, its slots) shares one view, and a view's id is new whenever
/// its data may differ. That is what lets an engine keep its handler context and memo across
/// executions without hashing what a plugin sees again (see [`SessionView::id`]).
#[derive(Debug)]
pub struct SessionView {
    id: u64,
    data: SessionData,
    /// Hash of what every plugin sees (session, locale, world, HTTP policy), computed once.
    shared_key: std::sync::OnceLock<u64>,
    /// Hash of all of it, computed once ([`SessionView::data_key`]).
    data_key: std::sync::OnceLock<u64>,
}

impl std::ops::Deref for SessionView {
    type Target = SessionData;
    fn deref(&self) -> &SessionData {
        &self.data
    }
}

static NEXT_VIEW: AtomicU64 = AtomicU64::new(1);

impl SessionView {
    /// Freezes `data` under a new id.
    pub fn new(data: SessionData) -> Arc<SessionView> {
        Arc::new(SessionView {
            id: NEXT_VIEW.fetch_add(1, Ordering::Relaxed),
            data,
            shared_key: std::sync::OnceLock::new(),
            data_key: std::sync::OnceLock::new(),
        })
    }

    /// Unique per view: two views with the same id hold the same data (a view cannot change,
    /// and no two views share an id).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// No session data: what `covel call` uses without `--session`.
    pub fn empty() -> Arc<SessionView> {
        Self::new(SessionData {
            session_id: "studio".into(),
            locale: "en".into(),
            world: default_world(),
            plugin_data: BTreeMap::new(),
            plugins: BTreeMap::new(),
            http: HttpPolicy::default(),
        })
    }

    /// A session's committed state: plugin data grouped by plugin in creation order, each
    /// plugin's settings merged over its declared defaults, the origins its package may reach,
    /// and the session's world view (see [`crate::world`]).
    pub fn from_session<'a>(
        session: &Session,
        manifests: impl IntoIterator<Item = &'a Manifest>,
        dimension_providers: &[String],
    ) -> Arc<SessionView> {
        let mut plugin_data: BTreeMap<String, Vec<DataRow>> = BTreeMap::new();
        for row in &session.plugin_data {
            plugin_data
                .entry(row.plugin_id.clone())
                .or_default()
                .push(row.clone());
        }
        // `list()` answers in creation order; the sort is stable, so file order breaks ties.
        for rows in plugin_data.values_mut() {
            rows.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        }
        let plugins = manifests
            .into_iter()
            .map(|manifest| {
                let settings =
                    crate::settings::merged(&manifest.settings, session.settings.get(&manifest.id));
                (
                    manifest.id.clone(),
                    PluginScope {
                        settings,
                        http: manifest.http_grants(),
                    },
                )
            })
            .collect();
        Self::new(SessionData {
            session_id: session.id.clone(),
            locale: session.locale.clone(),
            world: crate::world::world_view(
                &session.world,
                &session.plugin_data,
                dimension_providers,
            ),
            plugin_data,
            plugins,
            http: session.http.clone(),
        })
    }

    /// A key that changes whenever anything in the view changes, as its JSON text reads (an
    /// object's keys in order, as a handler sees them): the same digest [`SessionView::visible_key`]
    /// trusts for each plugin's part.
    pub fn data_key(&self) -> u64 {
        *self.data_key.get_or_init(|| hash_json(&self.data))
    }

    /// A key that changes whenever anything a provider of `plugin_id` can see changes (its own
    /// data, its settings, the world, the locale…), but not with the turn: engines reuse their
    /// handler context and memoized answers while it holds.
    pub fn visible_key(&self, plugin_id: &str) -> u64 {
        let shared = *self
            .shared_key
            .get_or_init(|| hash_json(&(&self.session_id, &self.locale, &self.world, &self.http)));
        let own = hash_json(&(self.plugin_data.get(plugin_id), self.plugins.get(plugin_id)));
        own ^ shared.rotate_left(17)
    }

    /// What a handler of `plugin_id` receives as `ctx` data over this state: the one place the
    /// handler context is shaped. `messages` are the plugin's translations by file name; the
    /// handler gets those of the session's locale. Hidden namespaces (`_hidden.*`) are left out
    /// here, once: a handler cannot read them, because its output goes into the prompt or to
    /// the client.
    pub fn handler_context(
        &self,
        plugin_id: &str,
        messages: &BTreeMap<String, Map<String, Value>>,
    ) -> HandlerContext {
        let mut plugin_data: Vec<NamespaceRows> = Vec::new();
        // `ctx.pluginData` reads only the provider's own plugin's data, never `_hidden.*`.
        let readable = self
            .plugin_data
            .get(plugin_id)
            .into_iter()
            .flatten()
            .filter(|row| !is_hidden_namespace(&row.namespace));
        for row in readable {
            let record = ReadableRow {
                key: row.key.clone(),
                value: row.value.clone(),
                created_at: row.created_at.clone(),
                updated_at: row.updated_at.clone(),
            };
            match plugin_data
                .iter_mut()
                .find(|group| group.namespace == row.namespace)
            {
                Some(group) => group.rows.push(record),
                None => plugin_data.push(NamespaceRows {
                    namespace: row.namespace.clone(),
                    rows: vec![record],
                }),
            }
        }
        HandlerContext {
            session_id: self.session_id.clone(),
            locale: self.locale.clone(),
            world: self.world.clone(),
            settings: self
                .plugins
                .get(plugin_id)
                .map(|scope| scope.settings.clone())
                .unwrap_or_default(),
            messages: crate::locale::messages_for_locale(messages, &self.locale)
                .cloned()
                .unwrap_or_default(),
            plugin_data,
        }
    }
}

/// One execution: a session state's view and the turn it runs for, shared by every provider
/// call made in it.
#[derive(Debug, Clone)]
pub struct ExecutionContext {
    /// Unique per execution; engines may cache per-execution objects under it.
    pub execution_id: u64,
    pub turn_id: Option<String>,
    /// What the handlers see; shared with the other executions over the same state.
    pub view: Arc<SessionView>,
    /// `ctx.gateway`, when the call site lends one (compaction does).
    pub gateway: Option<Gateway>,
}

static NEXT_EXECUTION: AtomicU64 = AtomicU64::new(1);

impl ExecutionContext {
    /// A fresh execution id.
    pub fn next_id() -> u64 {
        NEXT_EXECUTION.fetch_add(1, Ordering::Relaxed)
    }

    /// An execution over `view` for `turn_id`, lending no gateway.
    pub fn new(view: Arc<SessionView>, turn_id: Option<String>) -> ExecutionContext {
        ExecutionContext {
            execution_id: Self::next_id(),
            turn_id,
            view,
            gateway: None,
        }
    }

    /// A context with no session data: what `covel call` uses without `--session`.
    pub fn empty() -> Arc<ExecutionContext> {
        Arc::new(Self::new(SessionView::empty(), None))
    }
}

/// A stable-within-the-process hash of a value's JSON text, written into the hasher in chunks
/// (no value copied, no text kept). serde_json writes a value in many small pieces (a quote, a
/// colon, a key); each reaching the hasher on its own cost more than hashing the bytes, and the
/// hash of a byte stream does not depend on how it is cut.
pub fn hash_json<T: Serialize + ?Sized>(value: &T) -> u64 {
    use std::hash::Hasher;
    use std::io::Write;
    struct Feed(std::collections::hash_map::DefaultHasher);
    impl Write for Feed {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut chunks = std::io::BufWriter::with_capacity(
        1024,
        Feed(std::collections::hash_map::DefaultHasher::new()),
    );
    // Serializing JSON-shaped data into a writer that cannot fail does not fail.
    let _ = serde_json::to_writer(&mut chunks, value);
    let _ = chunks.flush();
    chunks.get_ref().0.finish()
}

/// A stable-within-the-process hash of a JSON value, read from the value itself: the same key
/// for values whose JSON text reads the same (an object's keys in order), without writing the
/// text. The runner keys every call's input with it (a slot chain's step hashes its input at
/// every step, and serializing small values cost several times what reading them costs). Each
/// node is tagged and each string and container carries its length, so different texts feed
/// different streams.
pub fn hash_value(value: &Value) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    fn feed(hasher: &mut impl Hasher, value: &Value) {
        match value {
            Value::Null => hasher.write_u8(0),
            Value::Bool(b) => hasher.write_u8(if *b { 1 } else { 2 }),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => {
                    hasher.write_u8(3);
                    hasher.write_u64(u);
                }
                (None, Some(i)) => {
                    hasher.write_u8(4);
                    hasher.write_i64(i);
                }
                (None, None) => {
                    hasher.write_u8(5);
                    hasher.write_u64(n.as_f64().map_or(0, f64::to_bits));
                }
            },
            Value::String(text) => {
                hasher.write_u8(6);
                hasher.write_usize(text.len());
                hasher.write(text.as_bytes());
            }
            Value::Array(items) => {
                hasher.write_u8(7);
                hasher.write_usize(items.len());
                for item in items {
                    feed(hasher, item);
                }
            }
            Value::Object(map) => {
                hasher.write_u8(8);
                hasher.write_usize(map.len());
                for (key, item) in map {
                    hasher.write_usize(key.len());
                    hasher.write(key.as_bytes());
                    feed(hasher, item);
                }
            }
        }
    }
    let mut hasher = foldhash::quality::FixedState::with_seed(0x1A5E_C0DE).build_hasher();
    feed(&mut hasher, value);
    hasher.finish()
}

/// The empty World Model view.
pub fn default_world() -> Value {
    serde_json::json!({
        "worldRecord": null,
        "characterSchema": null,
        "characters": [],
        "dimensions": {},
        "seats": []
    })
}

#[cfg(test)]
mod tests {
    use super::{ExecutionContext, SessionData, SessionView, hash_json, hash_value};
    use serde_json::json;
    use std::hash::Hasher;
    use std::sync::Arc;

    #[test]
    fn every_session_view_has_its_own_id_even_over_equal_data() {
        let data: SessionData = (**SessionView::empty()).clone();
        let (a, b) = (SessionView::new(data.clone()), SessionView::new(data));
        assert_ne!(
            a.id(),
            b.id(),
            "an id stands for one frozen view, not for its data"
        );
        assert_eq!(
            a.visible_key("p"),
            b.visible_key("p"),
            "equal data: the engines keep their context"
        );
        let other = SessionView::new(SessionData {
            locale: "fr".into(),
            ..(*a).clone()
        });
        assert_ne!(a.visible_key("p"), other.visible_key("p"));
    }

    #[test]
    fn executions_over_one_view_share_it_and_each_has_its_own_id_and_turn() {
        let view = SessionView::empty();
        let (one, two) = (
            ExecutionContext::new(Arc::clone(&view), Some("t1".into())),
            ExecutionContext::new(Arc::clone(&view), None),
        );
        assert!(Arc::ptr_eq(&one.view, &two.view));
        assert_ne!(one.execution_id, two.execution_id);
        assert_eq!(one.turn_id.as_deref(), Some("t1"));
        assert!(one.gateway.is_none());
    }

    /// Values hash alike exactly when their JSON texts read alike, on values built to feed the
    /// same bytes when read carelessly (concatenated strings, a string against an array of it,
    /// an integer against a float, keys in another order, empty containers).
    #[test]
    fn hash_value_tells_apart_what_the_json_text_tells_apart() {
        let values = [
            json!(null),
            json!(false),
            json!(true),
            json!(0),
            json!(1),
            json!(-1),
            json!(1.0),
            json!(u64::MAX),
            json!(""),
            json!("a"),
            json!(["a"]),
            json!(["ab", ""]),
            json!(["a", "b"]),
            json!([]),
            json!({}),
            json!([[]]),
            json!([{}]),
            json!({"a": 1, "b": 2}),
            json!({"b": 2, "a": 1}),
            json!({"a": "b"}),
            json!({"ab": ""}),
            json!({"a": {"b": null}}),
            json!({"a": ["b", null]}),
            json!({"slot": "stage.cast", "previous": null, "events": []}),
            json!({"slot": "stage.cast", "previous": {"cast": []}, "events": []}),
        ];
        // The texts, not the values: two objects with their keys in another order are equal
        // values but read differently.
        let text = |v: &serde_json::Value| serde_json::to_string(v).expect("json");
        for a in &values {
            for b in &values {
                let same_text = text(a) == text(b);
                assert_eq!(hash_value(a) == hash_value(b), same_text, "{a} and {b}");
            }
            assert_eq!(hash_value(a), hash_value(&a.clone()), "{a} again");
        }
    }

    #[test]
    fn hash_json_is_the_hash_of_the_json_text_however_it_is_chunked() {
        let long = "x".repeat(5000);
        for value in [
            json!(null),
            json!({"a": [1, 2.5, "é\"\n"], "b": {"c": true}}),
            json!({"long": long, "then": [long, {"k": long}]}),
        ] {
            let mut whole = std::collections::hash_map::DefaultHasher::new();
            whole.write(&serde_json::to_vec(&value).expect("json"));
            assert_eq!(hash_json(&value), whole.finish(), "{value}");
        }
        assert_ne!(hash_json(&json!({"a": 1})), hash_json(&json!({"a": 2})));
    }
}
