//! The lines of the flow one log record gives, each stamped with the
//! record's time: a lane, what happened in it, and its fields.

use serde_json::{Map, Value};

/// The lines one record gives, each stamped with the record's time.
pub(super) struct Lines {
    pub(super) t: f64,
    pub(super) lines: Vec<Map<String, Value>>,
}

impl Lines {
    /// Adds `line` as it is, `t` first.
    pub(super) fn raw(&mut self, mut fields: Map<String, Value>) {
        let mut line = Map::new();
        line.insert("t".into(), Value::from((self.t * 1000.0).round() / 1000.0));
        line.append(&mut fields);
        self.lines.push(line);
    }

    /// Adds a line of `lane` and `what` with `fields`.
    pub(super) fn line(&mut self, lane: &str, what: &str, fields: &[(&str, Value)]) {
        let mut line = Map::new();
        line.insert("lane".into(), lane.into());
        line.insert("what".into(), what.into());
        for (name, value) in fields {
            line.insert((*name).into(), value.clone());
        }
        self.raw(line);
    }

    /// A handler's decision: the key it enqueues (`Ok`) or why none (`Err`).
    pub(super) fn decided(&mut self, resource: &str, object: &str, decision: Result<&str, &str>) {
        let (what, field, value) = match decision {
            Ok(key) => ("enqueue", "key", key),
            Err(reason) => ("ignore", "reason", reason),
        };
        self.line(
            "handler",
            what,
            &[
                ("resource", resource.into()),
                ("object", object.into()),
                (field, value.into()),
            ],
        );
    }
}
