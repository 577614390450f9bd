//! Activity messages: `ACTIVITY_SNAPSHOT` and `ACTIVITY_DELTA`, and the activity
//! ownership a `MESSAGES_SNAPSHOT` declares.

use serde_json::Value;

use super::*;

/// The `MESSAGES_SNAPSHOT` activity-ownership declaration
/// (`metadata["@ag-ui/client"].authoritativeActivityTypes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActivityOwnership {
    /// No declaration.
    Undeclared,
    /// `null`: the snapshot owns no activity type (every local activity is kept).
    Null,
    /// The activity types the snapshot is authoritative for.
    Types(Vec<String>),
}

/// Reads the activity-ownership declaration of a `MESSAGES_SNAPSHOT`.
pub fn authoritative_activity_types(metadata: Option<&JsonObject>) -> ActivityOwnership {
    let Some(value) = metadata.and_then(|m| m.get("@ag-ui/client")) else {
        return ActivityOwnership::Undeclared;
    };
    let Value::Object(obj) = value else {
        return ActivityOwnership::Types(Vec::new());
    };
    match obj.get("authoritativeActivityTypes") {
        None => ActivityOwnership::Undeclared,
        Some(Value::Null) => ActivityOwnership::Null,
        Some(Value::Array(a)) if a.iter().all(Value::is_string) => ActivityOwnership::Types(
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        ),
        Some(_) => ActivityOwnership::Types(Vec::new()),
    }
}

impl Reducer {
    pub(super) fn activity_snapshot(&mut self, out: &mut Applied, e: ActivitySnapshot) {
        let replace = e.replace.unwrap_or(true);
        let fresh = |e: &ActivitySnapshot| ActivityMessage {
            id: e.message_id.clone(),
            activity_type: e.activity_type.clone(),
            content: JsonText::from(e.content.clone()),
            subagent_run_id: e.subagent_run_id.clone(),
            ..ActivityMessage::wire_blank()
        };
        out.messages_changed = true;
        match self.find(&e.message_id) {
            None => {
                let mut m = fresh(&e);
                merge_metadata(&mut m.metadata, e.metadata.map(|b| *b));
                out.new_message_ids.push(e.message_id);
                self.push_message(Message::Activity(m));
            }
            Some(i) => {
                let Some(existing) = self.messages.get_mut(i) else {
                    return;
                };
                match existing {
                    Message::Activity(a) => {
                        if replace {
                            a.activity_type = e.activity_type;
                            a.content = JsonText::from(e.content);
                            a.subagent_run_id = e.subagent_run_id;
                        }
                        merge_metadata(&mut a.metadata, e.metadata.map(|b| *b));
                        out.updated = Some(i);
                    }
                    _ if replace => {
                        let mut m = fresh(&e);
                        merge_metadata(&mut m.metadata, e.metadata.map(|b| *b));
                        *existing = Message::Activity(m);
                        out.new_message_ids.push(e.message_id);
                        out.structure_changed = true;
                        self.rebuild_index();
                    }
                    _ => {}
                }
            }
        }
    }

    pub(super) fn activity_delta(&mut self, out: &mut Applied, e: ActivityDelta) {
        let Some(i) = self.find(&e.message_id) else {
            return;
        };
        let Some(m) = self.messages.get_mut(i) else {
            return;
        };
        let Message::Activity(a) = m else {
            warn(
                out,
                format!(
                    "ACTIVITY_DELTA: Message '{}' is not an activity message",
                    e.message_id
                ),
            );
            return;
        };
        if merge_metadata(&mut a.metadata, e.metadata.map(|b| *b)) {
            out.messages_changed = true;
            out.updated = Some(i);
        }
        let touches_root = e.patch.iter().any(|op| op.path().is_empty());
        // The content is held as text: read, patched, written back.
        let mut doc = a.content.to_value();
        let backup = touches_root.then(|| doc.clone());
        match apply_patch(&mut doc, e.patch) {
            Ok(()) => match doc {
                Value::Object(o) => {
                    a.content = JsonText::from(o);
                    a.activity_type = e.activity_type;
                    out.messages_changed = true;
                    out.updated = Some(i);
                }
                _ => {
                    if let Some(Value::Object(o)) = backup {
                        a.content = JsonText::from(o);
                    }
                    warn(
                        out,
                        format!(
                            "Failed to apply activity patch for '{}': the result is not an object",
                            e.message_id
                        ),
                    );
                }
            },
            Err(err) => {
                if let Value::Object(o) = doc {
                    a.content = JsonText::from(o);
                }
                warn(
                    out,
                    format!(
                        "Failed to apply activity patch for '{}': {err}",
                        e.message_id
                    ),
                );
            }
        }
    }
}
