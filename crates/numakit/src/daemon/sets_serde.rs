//! Serde for [`NodeSet`] in the kernel list syntax (`"0-3,8"`), used with
//! `#[serde(with = "sets_serde")]` by the daemon's persisted types.

use serde::{Deserialize, Deserializer, Serializer};

use crate::sets::NodeSet;

/// Writes a node set as its list string.
pub fn serialize<S: Serializer>(set: &NodeSet, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&set.to_list())
}

/// Reads a node set from its list string.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<NodeSet, D::Error> {
    let text = String::deserialize(d)?;
    NodeSet::parse_list(&text).map_err(serde::de::Error::custom)
}
