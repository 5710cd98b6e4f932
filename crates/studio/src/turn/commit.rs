//! A played turn's effects, applied when its reply is appended: the events of the turn reach
//! the slots that preview their topic, and the tools' proposals are committed as Covel's
//! commit pipeline does (`PreStateCommit` may reject a proposal or replace its payload, then
//! the write, then `PostStateCommit`). A tool writes only its own plugin's data; the slots
//! that watch a written namespace are projected again.

use super::record::{CommitStep, EventStep, LoopStep};
use super::tools::ToolState;
use super::{STORY_RUNTIME, TurnPlugins};
use crate::slots::{SlotChange, SlotHost, Trigger};
use crate::workspace::Workspace;
use covel_kernel::context::{DataRow, is_hidden_namespace};
use serde_json::{Value, json};

/// What committing a turn's effects changed.
#[derive(Debug, Default)]
pub struct Committed {
    /// The accepted events, as the turn report lists them (`{topic, data, turnId, pluginId?}`).
    pub events: Vec<Value>,
    pub slot_changes: Vec<SlotChange>,
    /// Forms the tools asked the player to fill (`interaction.request` proposals).
    pub forms: Vec<Value>,
    /// Whether plugin data was written (undo then restores it).
    pub wrote: bool,
}

/// Applies a turn's effects: its events, then its proposals (its forms are kept as they are).
/// `steps` gets an entry per event and proposal.
pub fn commit(
    workspace: &mut Workspace,
    slots: &mut SlotHost,
    plugins: &TurnPlugins,
    turn_id: &str,
    effects: ToolState,
    steps: &mut Vec<LoopStep>,
) -> Committed {
    let ToolState {
        proposals,
        events,
        forms,
        ..
    } = effects;
    let mut out = Committed {
        forms,
        ..Committed::default()
    };
    for (topic, data, plugin_id) in events {
        apply_event(
            workspace, slots, plugins, turn_id, topic, data, plugin_id, steps, &mut out,
        );
    }
    for (owner, proposal) in proposals {
        let checked = plugins.dispatch(
            "PreStateCommit",
            json!({"proposal": proposal}),
            &owner,
            steps,
        );
        let kind = proposal["type"].as_str().unwrap_or_default().to_string();
        let mut step = CommitStep {
            plugin_id: owner.clone(),
            proposal_type: kind.clone(),
            committed: false,
            detail: None,
            writes: Vec::new(),
            slots: Vec::new(),
        };
        if let Some(reason) = checked.rejected {
            step.detail = Some(format!("pre-state-commit hook aborted: {reason}"));
            finish(plugins, &proposal, step, steps);
            continue;
        }
        // A hook may replace the payload only; the type and the source stay.
        let payload = checked
            .replaced("proposal")
            .and_then(|p| p.get("payload"))
            .unwrap_or(&proposal["payload"])
            .clone();
        let source = proposal.pointer("/source/pluginId").and_then(Value::as_str);
        if let Some(source) = source.filter(|s| *s != owner) {
            step.detail = Some(format!(
                "refused: a tool writes only its own plugin's data, and {owner}'s tool proposed a write as {source}"
            ));
            finish(plugins, &proposal, step, steps);
            continue;
        }
        let writes = match kind.as_str() {
            "plugin.data" => Ok(vec![payload.clone()]),
            "plugin.data.batch" => payload["items"]
                .as_array()
                .cloned()
                .ok_or_else(|| "a plugin.data.batch needs `items`, a list".to_string()),
            "plugin.data.delete" => Ok(vec![
                json!({"namespace": payload["namespace"], "key": payload["key"], "delete": true}),
            ]),
            "event.emit" => {
                let topic = payload["topic"].as_str().unwrap_or_default().to_string();
                let data = payload.get("data").cloned().unwrap_or(Value::Null);
                apply_event(
                    workspace,
                    slots,
                    plugins,
                    turn_id,
                    topic,
                    data,
                    Some(owner.clone()),
                    steps,
                    &mut out,
                );
                step.committed = true;
                finish(plugins, &proposal, step, steps);
                continue;
            }
            "interaction.request" => {
                out.forms.push(super::forms::record(&owner, &payload));
                step.committed = true;
                step.detail = Some(format!(
                    "a {} for the player: {}",
                    payload["type"].as_str().unwrap_or("form"),
                    payload["title"].as_str().unwrap_or("(untitled)")
                ));
                finish(plugins, &proposal, step, steps);
                continue;
            }
            other => Err(format!(
                "not applied: the studio commits plugin data, events and interaction requests; `{other}` proposals are applied by Covel's store"
            )),
        };
        let rows = match writes.and_then(|rows| {
            rows.iter()
                .map(checked_write)
                .collect::<Result<Vec<_>, _>>()
        }) {
            Ok(rows) => rows,
            Err(why) => {
                step.detail = Some(why);
                finish(plugins, &proposal, step, steps);
                continue;
            }
        };
        let mut namespaces: Vec<String> = Vec::new();
        for (namespace, key, value) in rows {
            write_row(workspace, &owner, &namespace, &key, value);
            step.writes.push(format!("{namespace}/{key}"));
            if !is_hidden_namespace(&namespace) && !namespaces.contains(&namespace) {
                namespaces.push(namespace);
            }
        }
        out.wrote = true;
        step.committed = true;
        if !namespaces.is_empty() {
            let changes = workspace.apply_slots(
                slots,
                &Trigger::PluginData {
                    plugin_id: owner.clone(),
                    namespaces,
                },
            );
            step.slots = changes.iter().map(|c| c.slot.to_string()).collect();
            out.slot_changes.extend(changes);
        }
        finish(plugins, &proposal, step, steps);
    }
    out
}

/// Records a proposal's commit step and tells `PostStateCommit` handlers.
fn finish(plugins: &TurnPlugins, proposal: &Value, step: CommitStep, steps: &mut Vec<LoopStep>) {
    let result = json!({"committed": step.committed, "error": step.detail.clone().filter(|_| !step.committed)});
    steps.push(LoopStep::Commit(step));
    plugins.dispatch(
        "PostStateCommit",
        json!({"proposal": proposal, "result": result}),
        STORY_RUNTIME,
        steps,
    );
}

/// A write as `(namespace, key, value)`, `value` None to delete; a write without a namespace or
/// key is refused.
fn checked_write(item: &Value) -> Result<(String, String, Option<Value>), String> {
    let text = |field: &str| {
        item[field]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                format!(
                    "refused: a plugin data write needs a non-empty `{field}` string, not {}",
                    super::kind_of(&item[field])
                )
            })
    };
    let value = if item["delete"] == Value::Bool(true) {
        None
    } else {
        Some(item.get("value").cloned().unwrap_or(Value::Null))
    };
    Ok((text("namespace")?, text("key")?, value))
}

/// Writes (or deletes) one of `plugin_id`'s rows in the session.
fn write_row(
    workspace: &mut Workspace,
    plugin_id: &str,
    namespace: &str,
    key: &str,
    value: Option<Value>,
) {
    let rows = &mut workspace.session.plugin_data;
    let found = rows
        .iter()
        .position(|r| r.plugin_id == plugin_id && r.namespace == namespace && r.key == key);
    match (found, value) {
        (Some(index), Some(value)) => rows[index].value = value,
        (Some(index), None) => {
            rows.remove(index);
        }
        (None, Some(value)) => rows.push(DataRow {
            plugin_id: plugin_id.to_string(),
            namespace: namespace.to_string(),
            key: key.to_string(),
            value,
            created_at: None,
            updated_at: None,
        }),
        (None, None) => {}
    }
}

/// Checks one event and, when accepted, previews it on the slots that list its topic.
#[allow(clippy::too_many_arguments)]
fn apply_event(
    workspace: &Workspace,
    slots: &mut SlotHost,
    plugins: &TurnPlugins,
    turn_id: &str,
    topic: String,
    data: Value,
    plugin_id: Option<String>,
    steps: &mut Vec<LoopStep>,
    out: &mut Committed,
) {
    let mut step = EventStep {
        topic: topic.clone(),
        data: data.clone(),
        plugin_id: plugin_id.clone(),
        accepted: true,
        detail: None,
        slots: Vec::new(),
    };
    if let Err(why) = plugins.check_event(&topic, &data) {
        step.accepted = false;
        step.detail = Some(why);
        steps.push(LoopStep::Event(step));
        return;
    }
    let mut listed = json!({"topic": topic, "data": data, "turnId": turn_id});
    if let Some(plugin) = &plugin_id {
        listed["pluginId"] = json!(plugin);
    }
    out.events.push(listed);
    let changes = workspace.apply_slots(
        slots,
        &Trigger::EventPreviewed {
            turn_id: turn_id.to_string(),
            topic,
            data,
            plugin_id,
        },
    );
    step.slots = changes.iter().map(|c| c.slot.to_string()).collect();
    out.slot_changes.extend(changes);
    steps.push(LoopStep::Event(step));
}
