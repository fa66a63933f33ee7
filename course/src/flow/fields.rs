//! The parts of a log record the flow reads: times, object keys, durations,
//! lists and API paths, as the steps and kube's spans write them.

use serde_json::Value;

/// Seconds of the log's `timestamp`, the uptime its format writes
/// (`   1.234567890s`).
pub(super) fn seconds(timestamp: Option<&str>) -> f64 {
    let text = timestamp.unwrap_or_default().trim();
    text.strip_suffix('s')
        .and_then(|s| s.parse().ok())
        .unwrap_or_default()
}

/// `namespace/name` from the ways the steps print a key: already so (Go's
/// `klog.KObj`), or as kube's `ObjectRef` displays itself,
/// `Kind.version.group/name.namespace` (a namespace has no dots).
pub(super) fn object_key(text: &str) -> String {
    match text.split_once('/') {
        Some((kind, rest)) if kind.contains('.') => match rest.rsplit_once('.') {
            Some((name, namespace)) => format!("{namespace}/{name}"),
            None => rest.to_string(),
        },
        _ => text.to_string(),
    }
}

/// The strings of a `Debug`-printed list of names: `["a", "b"]`.
pub(super) fn debug_strings(text: &str) -> Vec<String> {
    text.trim_start_matches('[')
        .trim_end_matches(']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Milliseconds of a `Debug`-printed `Duration` (`5ms`, `1.28s`, `250µs`).
pub(super) fn duration_ms(text: &str) -> Option<u64> {
    let units = [("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6), ("s", 1000.0)];
    let (number, scale) = units
        .iter()
        .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, scale)))?;
    let value: f64 = number.parse().ok()?;
    Some((value * scale).round() as u64)
}

/// Milliseconds between two of the log's times, to a tenth.
pub(super) fn millis(seconds: f64) -> Value {
    Value::from((seconds * 10_000.0).round() / 10.0)
}

/// The resource, namespace, name and subresource of an API path:
/// `/apis/apps/v1/namespaces/ns/deployments/d?…` → resource `deployments`,
/// namespace `ns`, name `d`.
pub(super) fn path_parts(url: &str) -> Vec<(&'static str, String)> {
    let path = url.split('?').next().unwrap_or_default();
    let path = path
        .find("/api/")
        .or_else(|| path.find("/apis/"))
        .map_or(path, |start| &path[start..]);
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // Past `api/v1` or `apis/GROUP/VERSION`.
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    }
    .unwrap_or_default();
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
        _ => (None, rest),
    };
    let mut parts = Vec::new();
    let names = ["resource", "name", "subresource"];
    if let Some(ns) = namespace {
        parts.push(("namespace", ns.to_string()));
    }
    for (name, value) in names.into_iter().zip(rest) {
        parts.push((name, value.to_string()));
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_read_the_same_from_go_names_and_kubes_object_refs() {
        assert_eq!(object_key("ns/a"), "ns/a");
        assert_eq!(
            object_key("Foo.v1alpha1.samplecontroller.k8s.io/a.b.ns"),
            "ns/a.b"
        );
        assert_eq!(duration_ms("5ms"), Some(5));
        assert_eq!(duration_ms("1.28s"), Some(1280));
        assert_eq!(duration_ms("250µs"), Some(0));
        assert_eq!(duration_ms("soon"), None);
        assert_eq!(debug_strings(r#"["a", "b"]"#), ["a", "b"]);
        assert!(debug_strings("[]").is_empty());
        assert_eq!(seconds(Some("   1.250000000s")), 1.25);
    }

    #[test]
    fn api_paths_name_their_resource_namespace_name_and_subresource() {
        let parts = |url| path_parts(url);
        assert_eq!(
            parts("https://h/api/v1/namespaces/ns/events?watch=true"),
            [("namespace", "ns".into()), ("resource", "events".into())]
        );
        assert_eq!(
            parts("/apis/apps/v1/deployments?watch=true&sendInitialEvents=true"),
            [("resource", "deployments".into())]
        );
        assert_eq!(
            parts("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/a/status"),
            [
                ("namespace", "ns".into()),
                ("resource", "foos".into()),
                ("name", "a".into()),
                ("subresource", "status".into())
            ]
        );
        assert_eq!(
            parts("/api/v1/namespaces/ns"),
            [("resource", "namespaces".into()), ("name", "ns".into())]
        );
    }
}
