//! No import circle: in no crate of the workspace does a module name a
//! module that names it back, directly or through others. Its test reads
//! every crate's source as tokens (proc-macro2: comments and strings are no
//! paths, a path inside a macro's arguments is one).
//!
//! A crate's files are followed from its root (each lib and bin target that
//! `cargo metadata` lists) through their `mod NAME;` lines, `#[path]`
//! included (the steps' checks, starters and capture scenarios, which live
//! in the step folders), and through
//! `include!(concat!(env!("OUT_DIR"), "/NAME"))` into what its build script
//! wrote. At each level of the module tree, the children
//! are the nodes, each with everything below it: `a` → `b` when a file in
//! `a` names a path into `b` (`crate::b::…`, `super::b::…`, a `use` tree).
//! A module naming its own ancestors (`super::helper`) or its own children
//! is how Rust modules are built, and no edge.
//!
//! The same paths show whether a module names an item of the crate's root:
//! a program's root, its `main.rs`, is its command line alone, and none may.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module's path from its crate's root: `["book", "i18n"]`.
type ModPath = Vec<String>;

/// A file of a crate: its module and the paths it names, each with the
/// module it is named in (an inline `mod tests { … }` is one deeper).
struct File {
    path: PathBuf,
    module: ModPath,
    children: BTreeSet<String>,
    named: Vec<(ModPath, Vec<String>)>,
}

/// Every circle among the modules of the crate rooted at `root`, each as
/// `a → b → a (a's FILE names PATH; …)`. `out_dir` is where the crate's
/// build script wrote the files it includes, if it has one.
pub fn circles(root: &Path, out_dir: Option<&Path>) -> Result<Vec<String>> {
    let files = files(root, out_dir)?;
    // Level (a module) → its children → the children they name, with why.
    let mut levels: BTreeMap<ModPath, BTreeMap<String, BTreeMap<String, String>>> = BTreeMap::new();
    for Named {
        file, raw, target, ..
    } in named(&files)
    {
        let common = file
            .module
            .iter()
            .zip(&target)
            .take_while(|(a, b)| a == b)
            .count();
        if common == file.module.len() || common == target.len() {
            continue;
        }
        let why = format!("{} names {}", rel(root, &file.path), raw.join("::"));
        levels
            .entry(target[..common].to_vec())
            .or_default()
            .entry(file.module[common].clone())
            .or_default()
            .entry(target[common].clone())
            .or_insert(why);
    }
    let mut found = Vec::new();
    for graph in levels.values() {
        let mut seen = BTreeSet::new();
        for start in graph.keys() {
            let Some(circle) = circle_through(graph, start) else {
                continue;
            };
            let members: BTreeSet<&String> = circle.iter().collect();
            if !seen.insert(members.into_iter().cloned().collect::<Vec<_>>()) {
                continue;
            }
            let reasons: Vec<&str> = circle
                .windows(2)
                .map(|w| graph[&w[0]][&w[1]].as_str())
                .collect();
            found.push(format!("{} ({})", circle.join(" → "), reasons.join("; ")));
        }
    }
    Ok(found)
}

/// Every item of the crate's root module that another module names, as `FILE
/// names PATH`: of a binary such as xtask, whose `main.rs` is its command
/// line alone, none.
pub fn root_items_named(root: &Path, out_dir: Option<&Path>) -> Result<Vec<String>> {
    let files = files(root, out_dir)?;
    let found = named(&files)
        .into_iter()
        .filter(|n| !n.file.module.is_empty() && n.target.is_empty() && !n.full.is_empty());
    Ok(found
        .map(|n| format!("{} names {}", rel(root, &n.file.path), n.raw.join("::")))
        .collect())
}

/// A path a file names into its own crate.
struct Named<'a> {
    file: &'a File,
    /// As written (`super::b::x`).
    raw: &'a [String],
    /// From the crate's root (`["a", "b", "x"]`).
    full: ModPath,
    /// The module it names: the longest prefix of `full` that is one.
    target: ModPath,
}

/// Every path of `files` that names something in their crate.
fn named(files: &[File]) -> Vec<Named<'_>> {
    let known: BTreeSet<&ModPath> = files.iter().map(|f| &f.module).collect();
    let mut found = Vec::new();
    for file in files {
        for (here, raw) in &file.named {
            let Some(full) = resolve(file, here, raw) else {
                continue;
            };
            let Some(target) = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|m| known.contains(m))
            else {
                continue;
            };
            found.push(Named {
                file,
                raw,
                full,
                target,
            });
        }
    }
    found
}

/// The shortest circle from `start` back to it, if any: `[start, …, start]`.
fn circle_through(
    graph: &BTreeMap<String, BTreeMap<String, String>>,
    start: &String,
) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in graph.get(node).into_iter().flat_map(BTreeMap::keys) {
            if next == start {
                let mut circle = vec![start.clone(), node.clone()];
                let mut at = node;
                while at != start {
                    at = came_from[at];
                    circle.push(at.clone());
                }
                circle.reverse();
                return Some(circle);
            }
            if !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    None
}

/// The module path `raw` (as written in module `here` of `file`) names,
/// from the crate's root; `None` for a path that starts elsewhere (another
/// crate, a type, a local name).
fn resolve(file: &File, here: &ModPath, raw: &[String]) -> Option<ModPath> {
    let (mut base, mut rest) = (here.clone(), raw);
    match raw.first()?.as_str() {
        "crate" => (base, rest) = (Vec::new(), &raw[1..]),
        "self" => rest = &raw[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        name if here == &file.module && file.children.contains(name) => {}
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// What a file declares besides the paths it names: its file modules
/// (`mod NAME;` with its `#[path = "…"]`) and the files it includes from
/// its build script's output.
#[derive(Default)]
struct Declared {
    modules: Vec<(String, Option<String>)>,
    generated: Vec<String>,
}

/// The files of the crate rooted at `root`, followed through `mod NAME;`;
/// a file included from `OUT_DIR` is read as part of the file that
/// includes it, as the compiler does.
fn files(root: &Path, out_dir: Option<&Path>) -> Result<Vec<File>> {
    let mut files = Vec::new();
    let mut pending = vec![(Vec::new(), root.to_path_buf(), true)];
    while let Some((module, path, owns_dir)) = pending.pop() {
        let mut file = File {
            path: path.clone(),
            module: module.clone(),
            children: BTreeSet::new(),
            named: Vec::new(),
        };
        let mut declared = Declared::default();
        read(tokens(&path)?, &module, &mut file.named, &mut declared);
        while let Some(name) = declared.generated.pop() {
            let dir = out_dir.with_context(|| {
                format!(
                    "{} includes {name} from OUT_DIR: where did its build script write it?",
                    path.display()
                )
            })?;
            read(
                tokens(&dir.join(name))?,
                &module,
                &mut file.named,
                &mut declared,
            );
        }
        // A `mod.rs`, `lib.rs` or `main.rs` holds its children beside it;
        // `a.rs` holds them in `a/`.
        let dir = match owns_dir {
            true => path.parent().map(Path::to_path_buf).unwrap_or_default(),
            false => path.with_extension(""),
        };
        for (name, attribute) in declared.modules {
            let (child, owns) = match attribute {
                // An absolute `#[path]` (a build script's) replaces the base.
                // A step folder's file, `../../../steps/step-N/check.rs`: its real path.
                Some(at) => {
                    let joined = path.parent().unwrap_or(Path::new(".")).join(at);
                    (joined.canonicalize().unwrap_or(joined), false)
                }
                None if dir.join(format!("{name}.rs")).is_file() => {
                    (dir.join(format!("{name}.rs")), false)
                }
                None => (dir.join(&name).join("mod.rs"), true),
            };
            let mut child_module = module.clone();
            child_module.push(name.clone());
            file.children.insert(name);
            pending.push((child_module, child, owns));
        }
        files.push(file);
    }
    Ok(files)
}

/// The Rust tokens of the file at `path`.
fn tokens(path: &Path) -> Result<TokenStream> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.parse()
        .map_err(|e| anyhow!("{}: not Rust tokens: {e}", path.display()))
}

/// Collects from `tokens` (in module `here`) every path that starts a
/// `::` chain, and what is declared at the top: file modules (`mod NAME;`,
/// with its `#[path = "…"]`) and `include!`s from `OUT_DIR`; an inline
/// `mod NAME { … }` is read as module `here::NAME`.
fn read(
    tokens: TokenStream,
    here: &ModPath,
    named: &mut Vec<(ModPath, Vec<String>)>,
    declared: &mut Declared,
) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut path_attribute = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(group) if group.delimiter() == Delimiter::Bracket => {
                let inside: Vec<TokenTree> = group.stream().into_iter().collect();
                if let [
                    TokenTree::Ident(name),
                    TokenTree::Punct(eq),
                    TokenTree::Literal(at),
                ] = inside.as_slice()
                    && name == "path"
                    && eq.as_char() == '='
                {
                    path_attribute = Some(at.to_string().trim_matches('"').to_string());
                } else {
                    read(group.stream(), here, named, declared);
                }
            }
            TokenTree::Ident(keyword) if keyword == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    match tokens.get(i + 2) {
                        Some(TokenTree::Group(body)) => {
                            let mut inner = here.clone();
                            inner.push(name.to_string());
                            read(body.stream(), &inner, named, &mut Declared::default());
                        }
                        _ => declared
                            .modules
                            .push((name.to_string(), path_attribute.take())),
                    }
                    i += 3;
                    continue;
                }
            }
            // `include!(concat!(env!("OUT_DIR"), "/NAME"))`
            TokenTree::Ident(mac) if mac == "include" && is_bang(tokens.get(i + 1)) => {
                if let Some(TokenTree::Group(args)) = tokens.get(i + 2) {
                    let strings = literals(args.stream());
                    if strings.iter().any(|s| s == "OUT_DIR")
                        && let Some(name) = strings.last()
                    {
                        declared.generated.push(name.trim_start_matches('/').into());
                    }
                }
            }
            TokenTree::Ident(_) if !follows_colons(&tokens, i) => {
                let end = chain(&tokens, i, &[], here, named);
                if end > i + 1 {
                    i = end;
                    continue;
                }
            }
            TokenTree::Group(group) => {
                read(group.stream(), here, named, declared);
                // An item's body ends what a `#[path]` before it was about
                // (a `pub(crate)` between them does not).
                if group.delimiter() == Delimiter::Brace {
                    path_attribute = None;
                }
            }
            TokenTree::Punct(end) if end.as_char() == ';' => path_attribute = None,
            _ => {}
        }
        i += 1;
    }
}

fn is_bang(token: Option<&TokenTree>) -> bool {
    matches!(token, Some(TokenTree::Punct(p)) if p.as_char() == '!')
}

/// The string literals in `tokens`, at any depth, without their quotes.
fn literals(tokens: TokenStream) -> Vec<String> {
    let mut found = Vec::new();
    for token in tokens {
        match token {
            TokenTree::Literal(literal) => {
                found.push(literal.to_string().trim_matches('"').to_string());
            }
            TokenTree::Group(group) => found.extend(literals(group.stream())),
            _ => {}
        }
    }
    found
}

/// Whether `tokens[i]` is preceded by `::` (the middle of a path, not its start).
fn follows_colons(tokens: &[TokenTree], i: usize) -> bool {
    i >= 2 && is_colons(&tokens[i - 2], &tokens[i - 1])
}

fn is_colons(a: &TokenTree, b: &TokenTree) -> bool {
    matches!((a, b), (TokenTree::Punct(a), TokenTree::Punct(b))
        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
}

/// Reads the path `prefix` + `IDENT::IDENT::…` starting at `tokens[i]` (a
/// `{ … }` after `::` is a use tree: each of its paths continues this one),
/// records it if it has a `::`, and returns where it ends.
fn chain(
    tokens: &[TokenTree],
    mut i: usize,
    prefix: &[String],
    here: &ModPath,
    named: &mut Vec<(ModPath, Vec<String>)>,
) -> usize {
    let mut path = prefix.to_vec();
    while let Some(TokenTree::Ident(ident)) = tokens.get(i) {
        path.push(ident.to_string());
        i += 1;
        match (tokens.get(i), tokens.get(i + 1)) {
            (Some(a), Some(b)) if is_colons(a, b) => i += 2,
            _ => break,
        }
        if let Some(TokenTree::Group(tree)) = tokens.get(i)
            && tree.delimiter() == Delimiter::Brace
        {
            let inside: Vec<TokenTree> = tree.stream().into_iter().collect();
            let mut j = 0;
            while j < inside.len() {
                j = chain(&inside, j, &path, here, named).max(j + 1);
            }
            return i + 1;
        }
    }
    if path.len() > prefix.len().max(1) {
        named.push((here.clone(), path));
    }
    i
}

/// `file` from its crate's folder, or from the repository's for a file
/// outside it (a step's check.rs).
fn rel(root: &Path, file: &Path) -> String {
    let base = root.parent().and_then(Path::parent).unwrap_or(root);
    match file.strip_prefix(base) {
        Ok(inside) => inside.display().to_string(),
        Err(_) => course::workspace::rel(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root file of every lib and bin target of the workspace, with
    /// where its package's build script wrote its files, if it has one.
    fn crate_roots() -> Vec<(PathBuf, Option<PathBuf>)> {
        let mut roots: Vec<(PathBuf, Option<PathBuf>)> =
            course::workspace::packages(&course::workspace::repo_root())
                .unwrap()
                .iter()
                .flat_map(|package| {
                    let built = package.targets.iter().any(|t| t.is_custom_build());
                    let out_dir = built.then(|| out_dir(&package.name)).flatten();
                    package
                        .targets
                        .iter()
                        .filter(|target| target.is_lib() || target.is_bin())
                        .map(move |target| (target.src_path.clone().into(), out_dir.clone()))
                })
                .collect();
        roots.sort();
        roots.dedup();
        roots
    }

    /// Where the build script of `package` wrote the files its crate
    /// includes, for this very build.
    fn out_dir(package: &str) -> Option<PathBuf> {
        match package {
            "xtask" | "booktool" | "testsuite" | "upkeep" => None, // no build script
            "testcluster" => Some(testcluster::OUT_DIR.into()),
            "course" => Some(course::OUT_DIR.into()),
            other => panic!("{other} has a build script: say here where it writes"),
        }
    }

    #[test]
    fn no_module_of_any_crate_names_a_module_that_names_it_back() {
        let roots = crate_roots();
        assert!(roots.len() > 8, "{roots:?}");
        let mut all = Vec::new();
        for (root, out_dir) in &roots {
            let found = circles(root, out_dir.as_deref()).unwrap();
            all.extend(
                found
                    .into_iter()
                    .map(|c| format!("{}: {c}", root.display())),
            );
        }
        assert!(all.is_empty(), "import circles:\n{}", all.join("\n"));
        // The crates are read through their modules, not just their roots,
        // and through the modules their build scripts declare.
        let read = |package: &str, root: &str| -> Vec<PathBuf> {
            let root = course::workspace::repo_root().join(root);
            files(&root, out_dir(package).as_deref())
                .unwrap()
                .into_iter()
                .map(|f| f.path)
                .collect()
        };
        let course = read("course", "course/src/lib.rs");
        assert!(course.len() > 20, "{} files of course", course.len());
        let booktool = read("booktool", "booktool/src/lib.rs");
        assert!(booktool.len() > 30, "{} files of booktool", booktool.len());
        let step8 = course::workspace::repo_root().join("steps/step-8");
        for (files, name) in [
            (&course, "starter.rs"),
            (&booktool, "capture.rs"),
            (&course, "check.rs"),
        ] {
            assert!(
                files
                    .iter()
                    .any(|f| f.starts_with(&step8) && f.ends_with(name)),
                "step 8's {name} was not read"
            );
        }
    }

    #[test]
    fn no_module_of_a_program_names_its_command_line() {
        let mut programs = 0;
        let mut named = Vec::new();
        for (root, out_dir) in crate_roots() {
            if root.file_name().is_some_and(|f| f == "lib.rs") {
                continue;
            }
            programs += 1;
            named.extend(root_items_named(&root, out_dir.as_deref()).unwrap());
        }
        assert!(programs > 8, "{programs} programs");
        assert!(
            named.is_empty(),
            "a program's main.rs is its command line: move what these name into the module \
             whose job it is:\n{}",
            named.join("\n")
        );
    }

    /// A crate made of `files` (path, source, `$TMP` for the directory's
    /// path) in a scratch directory, its build script's output in `out/`,
    /// and what `analysis` finds in it.
    fn analysed(
        files: &[(&str, &str)],
        analysis: fn(&Path, Option<&Path>) -> Result<Vec<String>>,
    ) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        for (path, source) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, source.replace("$TMP", &dir.path().to_string_lossy())).unwrap();
        }
        analysis(
            &dir.path().join("src/lib.rs"),
            Some(&dir.path().join("out")),
        )
        .unwrap()
    }

    fn circles_of(files: &[(&str, &str)]) -> Vec<String> {
        analysed(files, circles)
    }

    #[test]
    fn a_module_naming_an_item_of_the_root_is_named_and_the_roots_own_tests_are_not() {
        let found = analysed(
            &[
                (
                    "src/lib.rs",
                    "mod a;\npub fn helper() {}\n#[cfg(test)]\nmod tests { use super::helper; }\n",
                ),
                (
                    "src/a.rs",
                    "mod b;\npub fn x() { crate::helper(); b::y() }\n",
                ),
                ("src/a/b.rs", "pub fn y() { super::super::helper() }\n"),
            ],
            root_items_named,
        );
        assert_eq!(
            found,
            [
                "src/a.rs names crate::helper",
                "src/a/b.rs names super::super::helper"
            ]
        );
    }

    #[test]
    fn two_modules_that_name_each_other_are_a_circle_with_the_lines_that_make_it() {
        let found = circles_of(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::x;\npub fn y() {}\n"),
            (
                "src/b.rs",
                "pub fn x() { println!(\"{}\", crate::a::y()) }\n",
            ),
        ]);
        assert_eq!(
            found,
            ["a → b → a (src/a.rs names crate::b::x; src/b.rs names crate::a::y)"]
        );
    }

    #[test]
    fn a_circle_through_a_folders_files_is_one_between_the_folder_and_the_other() {
        let found = circles_of(&[
            ("src/lib.rs", "mod setup;\nmod book;\n"),
            ("src/setup.rs", "pub fn run() { crate::book::tool() }\n"),
            ("src/book/mod.rs", "mod tools;\npub fn tool() {}\n"),
            (
                "src/book/tools.rs",
                "use crate::{setup::{self, run as go}};\n",
            ),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("book → setup → book"), "{found:?}");
    }

    #[test]
    fn a_module_a_build_script_declares_is_read_where_it_is_included() {
        let found = circles_of(&[
            ("src/lib.rs", "mod checks;\nmod steps;\n"),
            (
                "src/checks/mod.rs",
                "include!(concat!(env!(\"OUT_DIR\"), \"/checks.rs\"));\n",
            ),
            (
                "out/checks.rs",
                "#[path = \"$TMP/steps/step-2/check.rs\"]\nmod step2;\n",
            ),
            ("steps/step-2/check.rs", "use crate::steps::STEPS;\n"),
            (
                "src/steps.rs",
                "pub fn run() { crate::checks::step2::run() }\n",
            ),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("checks → steps → checks (")
                && found[0].contains("steps/step-2/check.rs names crate::steps::STEPS"),
            "{found:?}"
        );
    }

    #[test]
    fn parents_children_comments_strings_and_other_crates_are_no_edges() {
        let found = circles_of(&[
            ("src/lib.rs", "mod c;\nmod e;\npub fn top() {}\n"),
            (
                "src/c/mod.rs",
                "mod d;\npub fn z() { d::w() }\n// crate::e::f\nconst S: &str = \"crate::e::f\";\n",
            ),
            (
                "src/c/d.rs",
                "pub fn w() { super::z(); crate::top(); std::mem::drop(1) }\n",
            ),
            (
                "src/e.rs",
                "use crate::c::z;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            ),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }
}
