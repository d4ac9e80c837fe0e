//! Conversations over the open KB: a question asked in one is read with its earlier turns
//! (`protocols::followup`) and its answer kept as a turn (`kb::conversations`).

use serde_json::{json, Value};

use super::{Service, ServiceError};
use crate::kb::conversations::{
    export_markdown, is_conversation_id, ConversationSummary, Conversations, NoSuchConversation,
    Turn,
};

/// What `conversation` in an ask request may say besides an id: start one.
pub const NEW_CONVERSATION: &str = "new";

/// The conversation a question is asked in.
pub(super) struct AskedIn {
    /// Its id; `None`: a new one, started when its first answer is kept.
    pub id: Option<String>,
    /// The questions its earlier turns were read as, oldest first.
    pub earlier: Vec<String>,
}

impl Service {
    /// The open KB's conversations file.
    pub fn conversations(&self) -> Result<Conversations, ServiceError> {
        Ok(Conversations::open(&self.kb_dir())?)
    }

    /// The conversation an ask request names, if any.
    pub(super) fn conversation_for(
        &self,
        conversation: Option<&str>,
    ) -> Result<Option<AskedIn>, ServiceError> {
        let Some(id) = conversation.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(None);
        };
        if id == NEW_CONVERSATION {
            return Ok(Some(AskedIn {
                id: None,
                earlier: Vec::new(),
            }));
        }
        let store = self.conversations()?;
        let id = checked_id(id)?;
        let earlier = store
            .turns(&id)
            .map_err(conversation_error)?
            .into_iter()
            .map(|t| t.standalone)
            .collect();
        Ok(Some(AskedIn {
            id: Some(id),
            earlier,
        }))
    }

    /// Keeps an answered turn in conversation `id` (`None`: a new one, titled after the
    /// question); returns the conversation's id and the turn's number.
    pub(super) fn keep_turn(
        &self,
        id: Option<String>,
        turn: &Turn,
    ) -> Result<(String, usize), ServiceError> {
        let mut store = self.conversations()?;
        let id = match id {
            Some(id) => id,
            None => store.create(&turn.question)?,
        };
        let n = store.add_turn(&id, turn).map_err(conversation_error)?;
        Ok((id, n))
    }

    pub(super) fn list_conversations(&self) -> Result<Value, ServiceError> {
        Ok(json!({ "conversations": self.conversations()?.list()? }))
    }

    /// A kept conversation (checked id, not deleted) with its turns.
    fn kept(&self, id: &str) -> Result<(ConversationSummary, Vec<Turn>), ServiceError> {
        let id = checked_id(id)?;
        let store = self.conversations()?;
        let summary = store.summary(&id).map_err(conversation_error)?;
        let turns = store.turns(&id).map_err(conversation_error)?;
        Ok((summary, turns))
    }

    pub(super) fn conversation_json(&self, id: &str) -> Result<Value, ServiceError> {
        let (summary, turns) = self.kept(id)?;
        Ok(json!({ "conversation": summary, "turns": turns }))
    }

    pub(super) fn rename_conversation(&self, id: &str, title: &str) -> Result<Value, ServiceError> {
        let id = checked_id(id)?;
        if title.trim().is_empty() {
            return Err(ServiceError::BadRequest(
                "missing field: title (a non-empty string)".into(),
            ));
        }
        let mut store = self.conversations()?;
        store.rename(&id, title).map_err(conversation_error)?;
        Ok(json!({ "conversation": store.summary(&id)? }))
    }

    /// Deleting keeps the turns: `restore_conversation` brings it back.
    pub(super) fn delete_conversation(
        &self,
        id: &str,
        restore: bool,
    ) -> Result<Value, ServiceError> {
        let id = checked_id(id)?;
        let mut store = self.conversations()?;
        if restore {
            store.restore(&id).map_err(conversation_error)?;
            return Ok(json!({ "restored": id }));
        }
        store.delete(&id).map_err(conversation_error)?;
        Ok(json!({ "deleted": id }))
    }

    pub(super) fn export_conversation(&self, id: &str) -> Result<Value, ServiceError> {
        let (summary, turns) = self.kept(id)?;
        Ok(json!({ "markdown": export_markdown(&summary, &turns), "title": summary.title }))
    }
}

fn checked_id(id: &str) -> Result<String, ServiceError> {
    let id = id.trim();
    if !is_conversation_id(id) {
        return Err(ServiceError::BadRequest(format!(
            "{:?} is not a conversation id (\"c-\" and 16 hex digits, as GET /api/conversations \
             lists them, or \"new\" in an ask to start one)",
            id.chars().take(40).collect::<String>()
        )));
    }
    Ok(id.to_string())
}

fn conversation_error(e: anyhow::Error) -> ServiceError {
    match e.downcast_ref::<NoSuchConversation>() {
        Some(missing) => ServiceError::NotFound(missing.to_string()),
        None => ServiceError::Internal(e),
    }
}
