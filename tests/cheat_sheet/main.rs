//! The book's Go → Rust cheat sheet (Appendix A), row by row: each test does
//! what its rows say the Rust side is, and asserts what the rows claim, most
//! of them against a real API server (kube-apiserver and etcd, the Foo CRD).
//!
//! A `// Cheat sheet: `KEY`` line above a test names a row it covers (KEY:
//! the row's first code in its Go column, or the first words of a row of
//! "Things kube-rs does not have"). A row exercised better elsewhere carries
//! the line above that test instead (src/workqueue.rs, src/informer.rs,
//! src/fixtures.rs, tests/production.rs). The last test fails on a row
//! without a test and on a line naming no row.

#[path = "../support/mod.rs"]
mod support;

mod caches;
mod clients;
mod workers;
mod writes;

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event as StoredEvent;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, CustomResourceExt, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, config_from_flags};
use sample_controller::deployment::{
    controller_of, is_controlled_by, new_controller_ref, new_deployment,
};
use sample_controller::informer::{key_string, object_name, watch_list};
use sample_controller::workqueue::{self, RateLimiter};
use sample_controller::{Foo, FooSpec, vocabulary};
use serde_json::json;

/// This binary's control plane: kube-apiserver and etcd with the Foo CRD
/// (no kube-controller-manager: nothing here needs Pods).
async fn cluster() -> &'static testcluster::ControlPlane {
    static CLUSTER: tokio::sync::OnceCell<testcluster::ControlPlane> =
        tokio::sync::OnceCell::const_new();
    CLUSTER
        .get_or_init(|| async {
            support::own_cluster(testcluster::Options::api_server_only())
                .await
                .0
        })
        .await
}

/// A client of [`cluster`], for this test's runtime (a client's connection
/// task dies with the runtime that started it).
async fn api_server() -> Client {
    cluster().await.client().await.expect("client")
}

/// A Foo named `name` in `ns`, as the API server stored it.
async fn stored_foo(client: &Client, ns: &str, name: &str) -> Foo {
    support::create_foo(client, ns, name, &format!("{name}-nginx"), Some(1)).await
}

/// A synced cache holding `objects`, as an informer leaves it (src/fixtures.rs's
/// `cache`, which this package's integration tests cannot reach: they see the
/// library without its `fixtures` feature).
fn synced<K>(objects: impl IntoIterator<Item = K>) -> Store<K>
where
    K: Resource + Clone,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone,
{
    let (store, mut writer) = reflector::store();
    writer.apply_watcher_event(&watcher::Event::Init);
    for object in objects {
        writer.apply_watcher_event(&watcher::Event::InitApply(object));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    store
}

/// A Foo in `default` with a UID, as a cache would hold it.
fn foo(name: &str) -> Foo {
    let mut foo = Foo::new(
        name,
        FooSpec {
            deployment_name: format!("{name}-nginx"),
            replicas: Some(1),
        },
    );
    foo.metadata.namespace = Some("default".into());
    foo.metadata.uid = Some(format!("{name}-uid"));
    foo
}

/// The key of each row of the cheat sheet's tables, from its first cell as
/// written: in a Go table the first code span, in the table of what kube-rs
/// does not have the words before " (".
fn rows() -> Vec<String> {
    use pulldown_cmark::{Event as Md, Options, Parser as Markdown, Tag, TagEnd};
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/book/src/appendix-a-cheat-sheet.md"
    ))
    .unwrap();
    let mut rows = Vec::new();
    let (mut table, mut in_head, mut cell) = (String::new(), false, 0);
    for (event, range) in Markdown::new_ext(&page, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Md::Start(Tag::TableHead) => (in_head, cell) = (true, 0),
            Md::End(TagEnd::TableHead) => in_head = false,
            Md::Start(Tag::TableRow) => cell = 0,
            Md::Start(Tag::TableCell) => {
                cell += 1;
                let first = page[range].trim().trim_matches('|').trim();
                if cell > 1 {
                    continue;
                } else if in_head {
                    table = first.to_string();
                } else if table == "Go" {
                    rows.push(first.split('`').nth(1).unwrap_or(first).to_string());
                } else {
                    rows.push(first.split(" (").next().unwrap_or(first).to_string());
                }
            }
            _ => {}
        }
    }
    rows
}

/// Every `// Cheat sheet: `KEY`` line in the project's Rust, by file, each
/// with whether a test follows it.
fn marked_rows() -> Vec<(String, String, bool)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "steps"] {
        let mut stack = vec![root.join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
    }
    let marker = "// Cheat sheet: ";
    let mut marked = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (n, line) in lines.iter().enumerate() {
            let Some(rest) = line.strip_prefix(marker) else {
                continue;
            };
            let key = rest.trim().trim_matches('`').to_string();
            // The next line that is no marker or comment is a test attribute.
            let is_test = lines[n + 1..]
                .iter()
                .find(|l| !l.starts_with("//"))
                .is_some_and(|l| l.starts_with("#[test]") || l.starts_with("#[tokio::test"));
            let place = format!("{}:{}", file.strip_prefix(root).unwrap().display(), n + 1);
            marked.push((key, place, is_test));
        }
    }
    marked
}

#[test]
fn every_row_of_the_cheat_sheet_has_a_test_and_every_marker_names_a_row() {
    let rows = rows();
    assert!(rows.len() > 50, "{rows:?}");
    let marked = marked_rows();
    let mut problems = Vec::new();
    for (key, place, is_test) in &marked {
        if !rows.contains(key) {
            problems.push(format!("{place}: {key:?} is no row of the cheat sheet"));
        }
        if !is_test {
            problems.push(format!("{place}: {key:?} is not above a test"));
        }
    }
    for row in &rows {
        if !marked.iter().any(|(key, _, _)| key == row) {
            problems.push(format!("the row {row:?} has no test"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
