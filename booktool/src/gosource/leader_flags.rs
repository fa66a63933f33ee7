//! The book's claim that step 8's leader-election flags are
//! kube-controller-manager's, held against Go's source: the flag names
//! component-base binds (`BindLeaderElectionFlags`), and the defaults its
//! `RecommendedDefaultLeaderElectionConfiguration` and controller-manager's
//! `RecommendedDefaultGenericControllerManagerConfiguration` give them, read
//! with tree-sitter from the pinned release's modules and compared with the
//! help step 8's `LeaderFlags` prints.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use tree_sitter::Node;

use super::modcache::module_dir_of;
use super::scan::parse_go;
use testcluster::binaries::Release;

/// What step 8 has that kube-controller-manager does not; its help and the
/// book say so ("Not in kube-controller-manager").
pub const ADDITIONS: &[&str] = &["--leader-elect-identity"];

/// Defaults step 8 chose differently, and why (the book says so too):
/// `--leader-elect` is off so that `cargo run` needs no Lease.
pub const OWN_DEFAULTS: &[(&str, &str)] = &[("--leader-elect", "false")];

/// A flag kube-controller-manager binds, and its default where the generic
/// configuration sets one (the Lease's name and namespace are set by
/// kube-controller-manager's own command, not here).
#[derive(Debug, Clone, PartialEq)]
pub struct GoFlag {
    pub name: String,
    pub default: Option<String>,
}

/// The leader-election flags of kube-controller-manager at `release`, from
/// Go's module cache.
pub fn kube_controller_manager(release: &Release) -> Result<Vec<GoFlag>> {
    let read = |module: &str, path: &str| -> Result<String> {
        let file = module_dir_of(module, &release.staging)?.join(path);
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))
    };
    let binds = read(
        "k8s.io/component-base",
        "config/options/leaderelectionconfig.go",
    )?;
    let generic = read("k8s.io/component-base", "config/v1alpha1/defaults.go")?;
    let manager = read("k8s.io/controller-manager", "config/v1alpha1/defaults.go")?;
    let flags = bound_flags(&binds, "BindLeaderElectionFlags")?;
    let mut defaults = assigned(
        &generic,
        "RecommendedDefaultLeaderElectionConfiguration",
        "obj.",
    )?;
    // controller-manager sets its own before calling component-base's,
    // which then only fills what is still empty: its values win.
    defaults.extend(assigned(
        &manager,
        "RecommendedDefaultGenericControllerManagerConfiguration",
        "obj.LeaderElection.",
    )?);
    Ok(flags
        .into_iter()
        .map(|(name, field)| GoFlag {
            default: defaults.get(&field).cloned().flatten(),
            name,
        })
        .collect())
}

/// A flag in step 8's help: its name and its `[default: …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct HelpFlag {
    pub name: String,
    pub default: Option<String>,
    pub text: String,
}

/// The flags of `help` (clap's long help) whose names start with `prefix`.
pub fn help_flags(help: &str, prefix: &str) -> Vec<HelpFlag> {
    let mut flags: Vec<HelpFlag> = Vec::new();
    for line in help.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("--") {
            let name = trimmed.split_whitespace().next().unwrap_or_default();
            flags.push(HelpFlag {
                name: name.to_string(),
                default: None,
                text: String::new(),
            });
        } else if trimmed.starts_with('-') {
            flags.push(HelpFlag {
                name: String::new(),
                default: None,
                text: String::new(),
            });
        } else if let Some(flag) = flags.last_mut() {
            flag.text.push_str(trimmed);
            flag.text.push(' ');
        }
    }
    for flag in &mut flags {
        flag.default = flag
            .text
            .split_once("[default: ")
            .and_then(|(_, rest)| rest.split_once(']'))
            .map(|(value, _)| value.to_string());
    }
    flags.retain(|f| f.name.starts_with(prefix));
    flags
}

/// Every way step 8's flags differ from kube-controller-manager's, beyond
/// [`ADDITIONS`] and [`OWN_DEFAULTS`]; empty when the book's sentence holds.
pub fn differences(go: &[GoFlag], ours: &[HelpFlag]) -> Vec<String> {
    let mut found = Vec::new();
    let ours_named = |name: &str| ours.iter().find(|f| f.name == name);
    for flag in go {
        let Some(mine) = ours_named(&flag.name) else {
            found.push(format!(
                "kube-controller-manager has {}; step 8 does not",
                flag.name
            ));
            continue;
        };
        let own = OWN_DEFAULTS.iter().find(|(name, _)| *name == flag.name);
        // A boolean flag's help shows no default: it is off.
        let mine_default = mine.default.clone().or_else(|| own.map(|_| "false".into()));
        match (own, &flag.default) {
            (Some((_, chosen)), Some(theirs)) => {
                if theirs == chosen {
                    found.push(format!(
                        "{}: step 8's default is said to differ from kube-controller-manager's, \
                         but both are {theirs}",
                        flag.name
                    ));
                } else if mine_default.as_deref() != Some(*chosen) {
                    found.push(format!(
                        "{}: step 8's default should be {chosen}, its help says {mine_default:?}",
                        flag.name
                    ));
                }
            }
            (None, Some(theirs)) if !same_value(theirs, mine_default.as_deref()) => {
                found.push(format!(
                    "{}: kube-controller-manager's default is {theirs}, step 8's {}",
                    flag.name,
                    mine_default.as_deref().unwrap_or("none")
                ));
            }
            _ => {}
        }
    }
    for mine in ours {
        let in_go = go.iter().any(|f| f.name == mine.name);
        let added = ADDITIONS.contains(&mine.name.as_str());
        if !in_go && !added {
            found.push(format!(
                "step 8 has {}, which kube-controller-manager does not",
                mine.name
            ));
        }
        if added && !mine.text.contains("Not in kube-controller-manager") {
            found.push(format!(
                "{}'s help does not say it is not in kube-controller-manager",
                mine.name
            ));
        }
    }
    found
}

/// Whether Go's default and step 8's are the same value: durations compared
/// as durations (`15s` and `15000ms`), anything else as text.
fn same_value(go: &str, ours: Option<&str>) -> bool {
    let Some(ours) = ours else { return false };
    let duration = |text: &str| text.parse::<k8s_openapi::jiff::SignedDuration>().ok();
    match (duration(go), duration(ours)) {
        (Some(a), Some(b)) => a == b,
        _ => go == ours,
    }
}

/// The flags a Go function binds with `fs.XxxVar(&l.Field…, "name", …)`:
/// each name with the configuration field it fills.
fn bound_flags(source: &str, function: &str) -> Result<Vec<(String, String)>> {
    let tree = parse_go(source)?;
    let body = function_body(tree.root_node(), source, function)?;
    let mut flags = Vec::new();
    for call in descendants(body, "call_expression") {
        let callee = call.child_by_field_name("function");
        let is_var = callee
            .is_some_and(|c| c.kind() == "selector_expression" && text(c, source).ends_with("Var"));
        let args: Vec<Node> = call
            .child_by_field_name("arguments")
            .map(named_children)
            .unwrap_or_default();
        if !is_var || args.len() < 2 {
            continue;
        }
        // `&l.LeaseDuration.Duration`: the field is the one after `l.`.
        let target = text(args[0], source).trim_start_matches('&');
        let Some(field) = target.split('.').nth(1) else {
            bail!("{function}: cannot read the field of {target:?}");
        };
        let Some(name) = string_literal(args[1], source) else {
            bail!(
                "{function}: the flag name {:?} is not a string",
                text(args[1], source)
            );
        };
        flags.push((format!("--{name}"), field.to_string()));
    }
    if flags.is_empty() {
        bail!("{function} binds no flag that this reader recognises");
    }
    Ok(flags)
}

/// The values a Go function assigns to `PREFIX.Field` (`obj.LeaseDuration =
/// metav1.Duration{Duration: 15 * time.Second}` gives `LeaseDuration` →
/// `15s`); `None` for a value this reader does not evaluate (a constant).
fn assigned(
    source: &str,
    function: &str,
    prefix: &str,
) -> Result<BTreeMap<String, Option<String>>> {
    let tree = parse_go(source)?;
    let body = function_body(tree.root_node(), source, function)?;
    let mut values = BTreeMap::new();
    for assignment in descendants(body, "assignment_statement") {
        let (Some(left), Some(right)) = (
            assignment.child_by_field_name("left"),
            assignment.child_by_field_name("right"),
        ) else {
            continue;
        };
        let Some(field) = text(left, source).strip_prefix(prefix) else {
            continue;
        };
        if field.contains('.') {
            continue;
        }
        values.insert(field.to_string(), value(right, source));
    }
    Ok(values)
}

/// A Go expression's value as a flag's default would print it: a string, a
/// boolean, `N * time.Unit` as a Go duration, through a one-argument call
/// (`ptr.To(true)`) or a one-field composite literal.
fn value(node: Node, source: &str) -> Option<String> {
    match node.kind() {
        "expression_list" | "literal_value" | "keyed_element" | "literal_element" => {
            let children = named_children(node);
            value(*children.last()?, source)
        }
        "interpreted_string_literal" | "raw_string_literal" => string_literal(node, source),
        "true" | "false" => Some(node.kind().to_string()),
        "composite_literal" => value(node.child_by_field_name("body")?, source),
        "call_expression" => {
            let args = named_children(node.child_by_field_name("arguments")?);
            match args.as_slice() {
                [only] => value(*only, source),
                _ => None,
            }
        }
        "binary_expression" => {
            let left = node.child_by_field_name("left")?;
            let right = node.child_by_field_name("right")?;
            let count: u64 = text(left, source).parse().ok()?;
            let unit = match text(right, source) {
                "time.Hour" => Duration::from_secs(3600),
                "time.Minute" => Duration::from_secs(60),
                "time.Second" => Duration::from_secs(1),
                "time.Millisecond" => Duration::from_millis(1),
                _ => return None,
            };
            let total = unit.checked_mul(u32::try_from(count).ok()?)?;
            Some(go_duration(total))
        }
        _ => None,
    }
}

/// A duration as Go prints it: `15s`, `1m30s`, `300ms`.
fn go_duration(duration: Duration) -> String {
    use k8s_openapi::jiff::fmt::friendly::{Designator, Spacing, SpanPrinter};
    SpanPrinter::new()
        .designator(Designator::Compact)
        .spacing(Spacing::None)
        .unsigned_duration_to_string(&duration)
}

fn function_body<'t>(root: Node<'t>, source: &str, name: &str) -> Result<Node<'t>> {
    descendants(root, "function_declaration")
        .into_iter()
        .find(|f| {
            f.child_by_field_name("name")
                .is_some_and(|n| text(n, source) == name)
        })
        .and_then(|f| f.child_by_field_name("body"))
        .with_context(|| format!("no function {name}"))
}

fn descendants<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut found = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == kind {
            found.push(n);
        }
        let mut cursor = n.walk();
        let children: Vec<Node<'t>> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    found
}

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn text<'s>(node: Node, source: &'s str) -> &'s str {
    &source[node.byte_range()]
}

/// A Go string literal's content (no escapes in the strings read here).
fn string_literal(node: Node, source: &str) -> Option<String> {
    match node.kind() {
        "interpreted_string_literal" | "raw_string_literal" => {
            let quoted = text(node, source);
            Some(quoted[1..quoted.len() - 1].to_string())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    /// The long help of step 8's leader-election flags, as `step-8 --help`
    /// prints it (the same derive).
    fn step_8_help() -> String {
        let command = step8::leader::LeaderFlags::augment_args(clap::Command::new("step-8"));
        command.term_width(0).render_long_help().to_string()
    }

    #[test]
    fn step_8s_leader_election_flags_are_kube_controller_managers() {
        let go = kube_controller_manager(&Release::pinned()).expect("read Go's source");
        let names: Vec<&str> = go.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names.len(), 7, "{go:?}");
        let ours = help_flags(&step_8_help(), "--leader-elect");
        assert_eq!(
            differences(&go, &ours),
            Vec::<String>::new(),
            "Go: {go:?}\nours: {ours:?}"
        );
        // What the comparison rests on was read, not assumed.
        let default = |name: &str| {
            go.iter()
                .find(|f| f.name == name)
                .and_then(|f| f.default.clone())
        };
        assert_eq!(
            default("--leader-elect-lease-duration").as_deref(),
            Some("15s")
        );
        assert_eq!(
            default("--leader-elect-resource-lock").as_deref(),
            Some("leases")
        );
        assert_eq!(default("--leader-elect").as_deref(), Some("true"));
    }

    #[test]
    fn a_renamed_flag_a_changed_default_or_an_unmarked_addition_is_a_difference() {
        let go = vec![
            GoFlag {
                name: "--leader-elect".into(),
                default: Some("true".into()),
            },
            GoFlag {
                name: "--leader-elect-lease-duration".into(),
                default: Some("15s".into()),
            },
            GoFlag {
                name: "--leader-elect-renew-deadline".into(),
                default: Some("10s".into()),
            },
        ];
        let help = "Options:\n      --leader-elect\n          Run for leader\n      \
                    --leader-elect-lease-duration <DURATION>\n          How long [default: 20s]\n      \
                    --leader-elect-renew-grace <SECONDS>\n          Before expiry [default: 5]\n      \
                    --leader-elect-identity <ID>\n          This replica's name\n  \
                    -h, --help\n          Print help\n";
        let ours = help_flags(help, "--leader-elect");
        assert_eq!(
            differences(&go, &ours),
            [
                "--leader-elect-lease-duration: kube-controller-manager's default is 15s, step 8's 20s",
                "kube-controller-manager has --leader-elect-renew-deadline; step 8 does not",
                "step 8 has --leader-elect-renew-grace, which kube-controller-manager does not",
                "--leader-elect-identity's help does not say it is not in kube-controller-manager",
            ]
        );
        // The same durations written two ways are the same default.
        let help = help.replace("[default: 20s]", "[default: 15s]");
        assert!(
            !differences(&go, &help_flags(&help, "--leader-elect"))
                .iter()
                .any(|d| d.contains("lease-duration"))
        );
    }

    #[test]
    fn go_defaults_are_read_through_literals_calls_and_time_units() {
        let source = "package p\nfunc D(obj *C) {\n\tif obj.A == zero {\n\t\tobj.A = metav1.Duration{Duration: 15 * time.Second}\n\t}\n\
                      \tobj.B = ptr.To(true)\n\tobj.C = \"leases\"\n\tobj.D = SomeConst\n\tobj.E = 300 * time.Millisecond\n\tobj.X.Y = \"no\"\n}\n";
        let values = assigned(source, "D", "obj.").unwrap();
        assert_eq!(values["A"].as_deref(), Some("15s"));
        assert_eq!(values["B"].as_deref(), Some("true"));
        assert_eq!(values["C"].as_deref(), Some("leases"));
        assert_eq!(values["D"], None);
        assert_eq!(values["E"].as_deref(), Some("300ms"));
        assert!(!values.contains_key("X.Y"));
    }
}
