//! What a simulated placer asks for, and why: the daemon's action kinds
//! ([`ActionKind`]) with a reason that is either numakit's daemon's own
//! ([`Why`]) or another placer's, in its own words (numad's log line).
//! The library's [`Why`] stays numakit's: reasons only the simulator's
//! models give live here.

use std::fmt;

use numakit::daemon::{Action, ActionKind, Why};
use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

/// Why a simulated placer acted.
#[derive(Debug, Clone, PartialEq)]
pub enum Reason {
    /// numakit's daemon's reason.
    Daemon(Why),
    /// Another placer's move (the simulator's rewrite of numad), in that
    /// placer's own words; numakit's daemon never gives it.
    Peer {
        /// What the placer says of the move.
        text: String,
    },
}

/// As the daemon's reasons are written (`{"why": "improve", …}`), a peer's
/// as `{"why": "peer", "text": …}`.
impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reason::Daemon(why) => why.serialize(s),
            Reason::Peer { text } => {
                let mut m = s.serialize_struct("Reason", 2)?;
                m.serialize_field("why", "peer")?;
                m.serialize_field("text", text)?;
                m.end()
            }
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Daemon(why) => why.fmt(f),
            Reason::Peer { text } => f.write_str(text),
        }
    }
}

/// One action of a simulated placer for one process: the daemon's
/// [`Action`] with a [`Reason`] (serialised the same way).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimAction {
    /// Process id.
    pub pid: i32,
    /// The change.
    #[serde(flatten)]
    pub kind: ActionKind,
    /// The reason.
    pub reason: Reason,
    /// Expected speed-up of the process (fraction; 0 for keep, revert and
    /// other placers' moves).
    pub expected_gain: f64,
}

impl SimAction {
    /// Whether the action changes anything.
    pub fn changes(&self) -> bool {
        !matches!(self.kind, ActionKind::Keep)
    }
}

impl From<Action> for SimAction {
    fn from(a: Action) -> Self {
        Self { pid: a.pid, kind: a.kind, reason: Reason::Daemon(a.reason), expected_gain: a.expected_gain }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_serialise_as_the_daemons_do() {
        let peer = SimAction {
            pid: 7,
            kind: ActionKind::Keep,
            reason: Reason::Peer { text: "numad: move".into() },
            expected_gain: 0.0,
        };
        let json = serde_json::to_string(&peer).expect("json");
        assert_eq!(
            json,
            r#"{"pid":7,"action":"keep","reason":{"why":"peer","text":"numad: move"},"expected_gain":0.0}"#
        );
        assert_eq!(peer.reason.to_string(), "numad: move");
        let ours = Action { pid: 7, kind: ActionKind::Keep, reason: Why::Budget, expected_gain: 0.0 };
        let want = serde_json::to_string(&ours).expect("json");
        let ours = SimAction::from(ours);
        assert_eq!(serde_json::to_string(&ours).expect("json"), want);
        assert_eq!(ours.reason.to_string(), Why::Budget.to_string());
    }
}
