//! Tables of Foos and Deployments, in the shape `kubectl get` prints them.

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;

use crate::Foo;
use crate::deployment::controller_of;

/// Formats rows as left-aligned columns separated by three spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("   ").trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push('\n');
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

fn opt<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| "<none>".to_string(), |v| v.to_string())
}

/// `kubectl get foos`: namespace, name, deployment, desired and available replicas.
pub fn foos<'a>(foos: impl IntoIterator<Item = &'a Foo>) -> String {
    let mut rows: Vec<Vec<String>> = foos
        .into_iter()
        .map(|f| {
            vec![
                f.namespace().unwrap_or_default(),
                f.name_any(),
                f.spec.deployment_name.clone(),
                opt(f.spec.replicas),
                opt(f.status.as_ref().map(|s| s.available_replicas)),
            ]
        })
        .collect();
    rows.sort();
    table(
        &["NAMESPACE", "NAME", "DEPLOYMENT", "REPLICAS", "AVAILABLE"],
        &rows,
    )
}

/// `kubectl get deployments`, plus the controller owner of each.
pub fn deployments<'a>(deployments: impl IntoIterator<Item = &'a Deployment>) -> String {
    let mut rows: Vec<Vec<String>> = deployments
        .into_iter()
        .map(|d| {
            let spec = d.spec.replicas;
            let ready = d
                .status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            let available = d
                .status
                .as_ref()
                .and_then(|s| s.available_replicas)
                .unwrap_or(0);
            vec![
                d.namespace().unwrap_or_default(),
                d.name_any(),
                format!("{ready}/{}", spec.unwrap_or(0)),
                available.to_string(),
                controller_of(d).map_or_else(
                    || "<none>".to_string(),
                    |o| format!("{}/{}", o.kind, o.name),
                ),
            ]
        })
        .collect();
    rows.sort();
    table(
        &["NAMESPACE", "NAME", "READY", "AVAILABLE", "CONTROLLED BY"],
        &rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = vec![vec!["default".to_string(), "example-foo".to_string()]];
        assert_eq!(
            table(&["NAMESPACE", "NAME"], &rows),
            "NAMESPACE   NAME\ndefault     example-foo"
        );
    }
}
