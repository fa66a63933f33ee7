//! Every version of Kubernetes, its Go modules, etcd and kwok that the
//! repository names is the one `versions.toml` declares: Go links pinned to a
//! tag, module paths, the wrapper modules' requirements, cache directories in
//! the book, k8s-openapi's feature in each Cargo.toml, captures, prose. A move
//! to the next release is an edit of versions.toml, then of what this lists.
//!
//! It reads every file `git ls-files` lists, except the lock files (`Cargo.lock`,
//! `go.sum`), the wrapper modules' `go.mod` (their dependencies have
//! versions of their own; `binaries::tests` checks what they require) and
//! this file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

use regex::Regex;
use testcluster::binaries::{
    ETCD_VERSION, K8S_OPENAPI_FEATURE, KUBERNETES_VERSION, KWOK_VERSION, OLDEST_KUBERNETES_VERSION,
    STAGING_VERSION,
};

/// The staging modules of a Kubernetes release that this project names.
const STAGING: &str = "sample-controller|client-go|apimachinery|api|code-generator|apiextensions-apiserver|apiserver|component-base";

/// A way the repository names a version: the pattern (its first group is the
/// version), the version it must be, and what it is.
struct Rule {
    pattern: Regex,
    wanted: &'static str,
    what: &'static str,
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |pattern: &str, wanted, what| Rule {
        pattern: Regex::new(pattern).expect("a valid pattern"),
        wanted,
        what,
    };
    vec![
        rule(
            r"github\.com/kubernetes/kubernetes/(?:blob|tree)/(v[0-9][0-9.]*[0-9])",
            KUBERNETES_VERSION,
            "a link into kubernetes/kubernetes",
        ),
        rule(
            &format!(r"github\.com/kubernetes/(?:{STAGING})/(?:blob|tree)/(v[0-9][0-9.]*[0-9])"),
            STAGING_VERSION,
            "a link into a staging repository",
        ),
        rule(
            &format!(r"k8s\.io/(?:{STAGING})(?:/[\w./-]*)?[@ ](v[0-9]+\.[0-9]+\.[0-9]+)"),
            STAGING_VERSION,
            "a staging module",
        ),
        rule(
            r"k8s\.io/kubernetes[@ ](v[0-9]+\.[0-9]+\.[0-9]+)",
            KUBERNETES_VERSION,
            "the k8s.io/kubernetes module",
        ),
        rule(
            r"(?:sample-controller|client-go)[ -]+(v0\.[0-9]+\.[0-9]+)",
            STAGING_VERSION,
            "the Go sample-controller or client-go",
        ),
        rule(
            r"(?i:kubernetes|kube-apiserver|kubectl|kube-controller-manager|kube-scheduler)[ -]+(v?1\.[0-9]+\.[0-9]+)",
            KUBERNETES_VERSION,
            "a Kubernetes binary or release",
        ),
        // Any other v0.2x–v0.4x or v1.2x–v1.4x is one of these releases
        // ("pinned to v0.36.3"), unless a crate of that version is named
        // right before it (a build's timings name `k8s-openapi v0.29.0`).
        rule(
            r"(?:^|[^\w.-])(v0\.(?:2[0-9]|3[0-9]|4[0-9])\.[0-9]+)\b",
            STAGING_VERSION,
            "a Kubernetes staging module's version",
        ),
        rule(
            r"(?:^|[^\w.-])(v1\.(?:2[0-9]|3[0-9]|4[0-9])\.[0-9]+)\b",
            KUBERNETES_VERSION,
            "a Kubernetes version",
        ),
        rule(
            r"etcd[\w/ .`-]{0,24}?[ /-](v?3\.[0-9]+\.[0-9]+)",
            ETCD_VERSION,
            "etcd",
        ),
        rule(
            r"kwok[\w/ .@`-]{0,24}?[ @/-](v?0\.[0-9]+\.[0-9]+)",
            KWOK_VERSION,
            "kwok",
        ),
        rule(
            r#"k8s-openapi\s*=.*features\s*=\s*\[[^\]]*"(v1_[0-9]+)""#,
            K8S_OPENAPI_FEATURE,
            "k8s-openapi's Kubernetes feature",
        ),
    ]
});

/// The oldest Kubernetes the course claims, named as such ("the oldest it
/// claims, Kubernetes 1.36.3"): it must be versions.toml's
/// `oldest_kubernetes`, and the rules above leave it alone.
static OLDEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\boldest\b[^.;]{0,60}?\b(v?1\.[0-9]+\.[0-9]+)").expect("a valid pattern")
});

/// Crates whose versions look like a Kubernetes module's: a version right
/// after one of these is theirs.
const OTHER_PROJECTS: &[&str] = &["k8s-openapi ", "rustls "];

/// Every package in Cargo.lock: a version right after one of these names
/// and a space is that crate's, as cargo prints them (`object v0.39.1` in a
/// build's timings).
static CRATES: LazyLock<std::collections::BTreeSet<String>> = LazyLock::new(|| {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    lock.lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect()
});

/// Whether `before` (the text before a version) ends with a crate's name
/// and a space.
fn after_a_crate(before: &str) -> bool {
    let Some(before) = before.strip_suffix(' ') else {
        return false;
    };
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .map_or(0, |i| i + 1);
    CRATES.contains(&before[start..])
}

/// Text that names another version on purpose: (file, text, why).
const ELSEWHERE: &[(&str, &str, &str)] = &[(
    "controlplane/README.md",
    "kwok uses\n`k8s.io/client-go v0.36.1`",
    "kwok's own dependency, the reason the wrapper modules are kept apart",
)];

/// Every version the rules find in `text` that is not the wanted one:
/// (line number, the version, what it is, what it should be).
fn disagreements(text: &str) -> Vec<(usize, String, &'static str, &'static str)> {
    // By where the version starts: two rules may find the same one.
    let mut found = std::collections::BTreeMap::new();
    let mut oldest = std::collections::BTreeSet::new();
    for m in OLDEST.captures_iter(text) {
        let Some(version) = m.get(1) else { continue };
        if version.as_str().trim_start_matches('v')
            == OLDEST_KUBERNETES_VERSION.trim_start_matches('v')
        {
            oldest.insert(version.start());
        } else {
            let line = text[..version.start()].lines().count().max(1);
            found.insert(
                version.start(),
                (
                    line,
                    version.as_str().to_string(),
                    "the oldest Kubernetes claimed",
                    OLDEST_KUBERNETES_VERSION,
                ),
            );
        }
    }
    for rule in RULES.iter() {
        for m in rule.pattern.captures_iter(text) {
            let Some(version) = m.get(1) else { continue };
            if oldest.contains(&version.start()) {
                continue;
            }
            let named = version.as_str();
            let before = &text[..version.start()];
            let theirs =
                OTHER_PROJECTS.iter().any(|p| before.ends_with(p)) || after_a_crate(before);
            if !theirs && named.trim_start_matches('v') != rule.wanted.trim_start_matches('v') {
                let line = text[..version.start()].lines().count().max(1);
                found.entry(version.start()).or_insert((
                    line,
                    named.to_string(),
                    rule.what,
                    rule.wanted,
                ));
            }
        }
    }
    found.into_values().collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testcluster/ is in the repository")
        .to_path_buf()
}

/// Every file git tracks, but the ones generated by tools (lock files) and
/// this file, whose tests name other versions on purpose.
fn tracked_files() -> Vec<String> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    let files: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .split('\0')
        .filter(|f| !f.is_empty())
        .filter(|f| !f.ends_with("Cargo.lock") && !f.ends_with("go.sum"))
        .filter(|f| !(f.starts_with("controlplane/") && f.ends_with("go.mod")))
        // This file names other versions on purpose (the rules' wrong inputs).
        .filter(|f| *f != "testcluster/tests/versions.rs")
        .map(str::to_string)
        .collect();
    assert!(files.len() > 100, "only {} files listed", files.len());
    files
}

/// Links into a Kubernetes repository on GitHub with a line fragment (`#L48`
/// or `#L48-L52`): (line, URL).
fn typed_line_links(text: &str) -> Vec<(usize, String)> {
    text.match_indices("https://github.com/kubernetes/")
        .filter_map(|(at, _)| {
            let url: String = text[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ')' | '>' | '"' | ']' | '`'))
                .collect();
            let fragment = url.split_once('#')?.1;
            let lines = fragment
                .strip_prefix('L')?
                .starts_with(|c: char| c.is_ascii_digit());
            (url.contains("/blob/") && lines).then(|| (text[..at].matches('\n').count() + 1, url))
        })
        .collect()
}

/// `go:` links whose text types the lines (`[lines 25–28](go:…)`): (line,
/// the text). The preprocessor writes them for `{lines}`.
fn typed_line_texts(text: &str) -> Vec<(usize, String)> {
    static TYPED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\[([^\[\]]*\blines? [0-9]+[^\[\]]*)\]\(go:").expect("a valid pattern")
    });
    TYPED
        .captures_iter(text)
        .map(|c| {
            let at = c.get(0).map_or(0, |m| m.start());
            (text[..at].matches('\n').count() + 1, c[1].to_string())
        })
        .collect()
}

#[test]
fn no_go_line_number_is_typed_by_hand() {
    let mut typed = Vec::new();
    for file in tracked_files() {
        let Ok(text) = std::fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (line, url) in typed_line_links(&text) {
            typed.push(format!("{file}:{line}: {url}"));
        }
        for (line, words) in typed_line_texts(&text) {
            typed.push(format!(
                "{file}:{line}: [{words}](go:…): write {{lines}} for the lines"
            ));
        }
    }
    assert!(
        typed.is_empty(),
        "{} links carry Go line numbers typed by hand; in the book write `go:FILE#NAME` \
         (resolved at build time, booktool/src/gosource/links.rs), elsewhere link the file and \
         name the function:\n{}",
        typed.len(),
        typed.join("\n")
    );
}

#[test]
fn a_go_link_whose_text_types_its_lines_is_found_and_one_that_asks_for_them_is_not() {
    let text = "[lines 25–28](go:a.yaml#x)\nand [`Synced`, line 310](go:controller.go#y),\n\
                [{lines} of `main`](go:main.go#main) [line](go:main.go#main)";
    let found = typed_line_texts(text);
    assert_eq!(
        found,
        [
            (1, "lines 25–28".to_string()),
            (2, "`Synced`, line 310".to_string())
        ]
    );
}

#[test]
fn a_typed_line_number_is_found_and_a_file_link_is_not() {
    let text = "see\n[x](https://github.com/kubernetes/sample-controller/blob/v0.36.3/main.go#L48-L52)\n\
                <https://github.com/kubernetes/client-go/blob/v0.36.3/rest/config.go>\n\
                [r](https://github.com/kubernetes/sample-controller/blob/v0.36.3/README.md#running)";
    let found = typed_line_links(text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 2);
    assert!(found[0].1.ends_with("main.go#L48-L52"));
}

#[test]
fn every_version_the_repository_names_is_the_one_versions_toml_declares() {
    let files = tracked_files();

    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let Ok(mut text) = std::fs::read_to_string(root().join(file)) else {
            continue; // not text (an image), or deleted in the work tree
        };
        for (_, said, _) in ELSEWHERE.iter().filter(|(f, ..)| f == file) {
            assert!(
                text.contains(said),
                "{file} no longer says {said:?}: remove it from ELSEWHERE"
            );
            text = text.replace(said, "");
        }
        checked += 1;
        for (line, version, what, wanted) in disagreements(&text) {
            wrong.push(format!("{file}:{line}: {what} at {version}, not {wanted}"));
        }
    }
    assert!(checked > 100, "only {checked} text files read");
    assert!(
        wrong.is_empty(),
        "{} places name another version than versions.toml:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn each_rule_rejects_another_version() {
    // Versions older than any this project was built on.
    let wrong = [
        "https://github.com/kubernetes/sample-controller/blob/v0.20.1/controller.go#L1-L2",
        "https://github.com/kubernetes/kubernetes/blob/v1.20.1/cmd/kube-controller-manager/app/controllermanager.go",
        "go mod download -json k8s.io/sample-controller@v0.20.0",
        "\tk8s.io/client-go v0.20.1 // indirect",
        "k8s.io/kubernetes v1.20.2",
        "Go sample-controller v0.20.1",
        "~/.cache/sample-controller-rs/bin/kubernetes-v1.20.1/kubectl",
        "go.etcd.io/etcd/server/v3 v3.0.1",
        "etcd-v3.0.2",
        "| etcd | `go.etcd.io/etcd/server/v3` v3.0.1 via `controlplane/etcd` |",
        "| kwok | `sigs.k8s.io/kwok` v0.0.9 via `controlplane/kwok` |",
        "each explained against the Go source (pinned to **v0.20.1**)",
        "`k8s.io/kubernetes` v1.20.1 via the wrapper module",
        "sigs.k8s.io/kwok v0.0.7",
        r#"k8s-openapi = { version = "0.29.0", features = ["v1_20"] }"#,
        "and against the oldest it claims, Kubernetes 1.20.1",
    ];
    for line in wrong {
        assert_eq!(disagreements(line).len(), 1, "not caught: {line}");
    }
    let right = [
        format!("https://github.com/kubernetes/sample-controller/blob/{STAGING_VERSION}/main.go"),
        format!("kubernetes-{KUBERNETES_VERSION}/kubectl"),
        format!("go.etcd.io/etcd/server/v3 {ETCD_VERSION}"),
        format!("sigs.k8s.io/kwok {KWOK_VERSION}"),
        format!(r#"k8s-openapi = {{ version = "0.29.0", features = ["{K8S_OPENAPI_FEATURE}"] }}"#),
        format!("and against the oldest it claims,\nKubernetes {OLDEST_KUBERNETES_VERSION}"),
        // Other versions of other things.
        "k8s-openapi v0.29.0, rustls v0.23.46, Kubernetes 1.33 ships with WatchList off"
            .to_string(),
        // A build's timings: any crate of Cargo.lock, at its own version.
        "    2.6  object v0.39.1".to_string(),
    ];
    for line in &right {
        assert_eq!(disagreements(line), [], "{line}");
    }
    // The oldest release is right only where it is named as the oldest.
    let unnamed = format!("built on Kubernetes {OLDEST_KUBERNETES_VERSION}");
    assert_eq!(disagreements(&unnamed).len(), 1, "not caught: {unnamed}");
}
