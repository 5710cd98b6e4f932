//! The host's own `prompt.segment@1` provider for a plugin's `contributes.prompt`: registered
//! under the reserved id `static-prompt`, audience `self`, volatility `session` (or `turn` when
//! the plugin ships a locale variant, since the text then depends on the session language).

use crate::contract::PointId;
use crate::manifest::{ExtensionDecl, STATIC_PROMPT_ID};
use crate::package::Package;
use crate::runner::{CallReport, Invoker, Provider, ProviderCall};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Serves a package's static segments.
pub struct StaticPrompt {
    package: Package,
}

impl StaticPrompt {
    /// The provider for a package, when its `contributes.prompt` is non-empty.
    pub fn provider(package: &Package) -> Option<Provider> {
        if package.manifest.static_prompt.is_empty() {
            return None;
        }
        Some(Provider {
            plugin_id: package.id().to_string(),
            decl: Arc::new(ExtensionDecl::new(
                PointId::PromptSegment,
                STATIC_PROMPT_ID,
                0,
            )),
            runtime_ids: Arc::new(package.manifest.runtime_ids()),
            checked: Default::default(),
            settled: Default::default(),
            invoker: Arc::new(StaticPrompt {
                package: package.clone(),
            }),
        })
    }

    fn segments(&self, locale: &str) -> Value {
        let volatility = if self.package.has_prompt_variants() {
            "turn"
        } else {
            "session"
        };
        Value::Array(
            self.package
                .static_prompt_for(locale)
                .into_iter()
                .map(|seg| {
                    let mut out = json!({
                        "id": seg.id,
                        "content": seg.content,
                        "position": seg.position,
                        "audience": "self",
                        "volatility": volatility,
                    });
                    if let (Some(role), Some(map)) = (seg.role, out.as_object_mut()) {
                        map.insert("role".into(), Value::String(role));
                    }
                    out
                })
                .collect(),
        )
    }
}

impl Invoker for StaticPrompt {
    fn call(&self, call: &ProviderCall) -> CallReport {
        CallReport {
            result: Ok(Arc::new(self.segments(&call.context.view.locale))),
            duration: Duration::ZERO,
            logs: Vec::new(),
            notes: Vec::new(),
            cached: false,
            ran: None,
            not_cached: None,
        }
    }
}
