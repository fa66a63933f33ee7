//! A source file as the selectors read it: for Go, parsed by tree-sitter's
//! Go grammar, each line's code and comment, the statements, and the
//! top-level declarations with their leading comments; any other file
//! (YAML, a shell script) as plain lines.

use anyhow::{Context, Result, bail, ensure};
use tree_sitter::{Node, Parser, Tree};

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineInfo {
    pub(super) blank: bool,
    /// Only comment text (or a blank line inside `/* */`).
    pub(super) comment_only: bool,
    /// Where its trailing `//` comment starts, if it has one (a byte offset).
    pub(super) comment_from: Option<usize>,
}

/// What the statement selectors count as a statement, where it begins its
/// line: a statement of a block, an element of a composite literal, a case
/// of a switch or select, a spec of a grouped declaration, a field, and a
/// call's argument when they stand one a line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Statement {
    /// Its first and last line (1-based).
    pub(super) first: usize,
    pub(super) last: usize,
    /// The list it is in, as the parser's node id: the statements of one
    /// block share it.
    pub(super) list: usize,
}

/// The nodes whose named children are [`Statement`]s.
const LISTS: &[&str] = &[
    "statement_list",
    "argument_list",
    "literal_value",
    "expression_switch_statement",
    "type_switch_statement",
    "select_statement",
    "const_declaration",
    "var_spec_list",
    "type_declaration",
    "field_declaration_list",
    "interface_type",
];

#[derive(Debug)]
pub(super) struct Decl {
    pub(super) keyword: &'static str,
    /// What names it: a function's or type's name; a const/var's names; for a
    /// `const (…)`/`var (…)`/`type (…)`/`import (…)` group also the keyword.
    pub(super) names: Vec<String>,
    /// Lines a range over it may start on: the first line of each leading
    /// comment group (nearest first adjacent, others separated by blank
    /// lines only), then the keyword line. Ascending.
    pub(super) starts: Vec<usize>,
    /// The keyword line and the closing line (1-based).
    pub(super) line: usize,
    pub(super) end: usize,
}

impl Decl {
    pub(super) fn first(&self) -> usize {
        self.starts[0]
    }

    pub(super) fn label(&self) -> String {
        match (self.keyword, self.names.first()) {
            ("func", Some(name)) => format!("`func {name}`"),
            (keyword, Some(name)) if name == keyword => format!("the `{keyword}` block"),
            (keyword, Some(name)) => format!("`{keyword} {name}`"),
            (keyword, None) => format!("`{keyword}`"),
        }
    }
}

pub(super) struct GoFile {
    pub(super) path: String,
    pub(super) lines: Vec<String>,
    pub(super) info: Vec<LineInfo>,
    pub(super) statements: Vec<Statement>,
    pub(super) decls: Vec<Decl>,
    /// The file header's copyright line, e.g. "Copyright 2017 The Kubernetes Authors."
    pub(super) copyright: String,
}

impl GoFile {
    /// `text`, the file at `path`; a `.go` file is parsed as Go.
    pub(super) fn parse(path: &str, text: &str) -> Result<GoFile> {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let (info, statements, decls) = match path.ends_with(".go") {
            true => {
                let tree = parse_go(text).with_context(|| format!("parsing {path} as Go"))?;
                let info = line_info(&lines, &tree);
                let statements = statements(&lines, &tree);
                let decls = declarations(&tree, text, &lines, &info);
                (info, statements, decls)
            }
            false => (
                lines.iter().map(|l| plain_line(l)).collect(),
                Vec::new(),
                Vec::new(),
            ),
        };
        let copyright = lines
            .iter()
            .take(20)
            .find(|l| l.contains("Copyright"))
            .map(|l| l.trim().trim_end_matches('.').to_string() + ".")
            .unwrap_or_else(|| "Copyright The Kubernetes Authors.".to_string());
        Ok(GoFile {
            path: path.to_string(),
            lines,
            info,
            statements,
            decls,
            copyright,
        })
    }

    pub(super) fn line(&self, n: usize) -> &str {
        &self.lines[n - 1]
    }

    pub(super) fn at(&self, n: usize) -> LineInfo {
        self.info[n - 1]
    }

    /// Line `n` without its trailing `//` comment, trimmed.
    pub(super) fn code(&self, n: usize) -> &str {
        let line = self.line(n);
        line[..self.at(n).comment_from.unwrap_or(line.len())].trim()
    }

    /// The declarations named `names`, which must follow each other: their
    /// range from the first one's leading comment to the last one's end.
    pub(super) fn resolve(&self, names: &[String]) -> Result<(usize, usize)> {
        let mut found = Vec::new();
        for name in names {
            // `package main` names the package, not a declaration `main`.
            let matching: Vec<usize> = (0..self.decls.len())
                .filter(|&i| self.decls[i].keyword != "package" || name == "package")
                .filter(|&i| self.decls[i].names.iter().any(|n| n == name))
                .collect();
            match matching.as_slice() {
                [] => bail!("{} declares no top-level `{name}`", self.path),
                [one] => found.push(*one),
                _ => bail!(
                    "{} declares `{name}` more than once: give the lines (`{}#Lx-Ly {name}`)",
                    self.path,
                    self.path
                ),
            }
        }
        found.sort_unstable();
        found.dedup();
        let (Some(&first), Some(&last)) = (found.first(), found.last()) else {
            bail!("no declaration named");
        };
        ensure!(
            last - first + 1 == found.len(),
            "{}: {} do not follow each other ({} comes between)",
            self.path,
            names.join(", "),
            self.decls[(first..=last).find(|i| !found.contains(i)).unwrap_or(first)].label()
        );
        Ok((self.decls[first].first(), self.decls[last].end))
    }
}

/// `text` parsed by tree-sitter's Go grammar.
pub(super) fn parse_go(text: &str) -> Result<Tree> {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_go::LANGUAGE.into())
        .context("loading tree-sitter's Go grammar")?;
    parser.parse(text, None).context("tree-sitter gave no tree")
}

/// A line of a file that is not Go: code, unless blank.
fn plain_line(line: &str) -> LineInfo {
    LineInfo {
        blank: line.trim().is_empty(),
        ..LineInfo::default()
    }
}

/// Each line's [`LineInfo`], from the tokens of `tree`: a comment makes a
/// line comment, any other token code; a token over several lines (a
/// `/* */` comment, a raw string) is what the lines after its first start in.
fn line_info(lines: &[String], tree: &Tree) -> Vec<LineInfo> {
    #[derive(Clone, Copy, PartialEq)]
    enum In {
        Code,
        Comment,
        RawString,
    }
    let count = lines.len();
    let (mut code, mut comment) = (vec![false; count], vec![false; count]);
    let mut starts = vec![In::Code; count];
    let mut comment_from = vec![None; count];
    let leaves = nodes(tree.root_node())
        .into_iter()
        .filter(|node| node.child_count() == 0);
    for leaf in leaves {
        let (from, to) = (leaf.start_position().row, leaf.end_position().row);
        if leaf.start_byte() == leaf.end_byte() || from >= count {
            continue; // a token the parser assumed, not one in the text
        }
        let is_comment = leaf.kind() == "comment";
        let column = leaf.start_position().column;
        if is_comment
            && lines[from]
                .get(column..)
                .is_some_and(|c| c.starts_with("//"))
        {
            comment_from[from] = Some(column);
        }
        let to = to.min(count - 1);
        for row in from..=to {
            if is_comment {
                comment[row] = true;
            } else if row == from || !lines[row].is_empty() {
                code[row] = true;
            }
        }
        let inside = if is_comment {
            In::Comment
        } else {
            In::RawString
        };
        starts[from + 1..=to].fill(inside);
    }
    (0..count)
        .map(|row| LineInfo {
            blank: lines[row].trim().is_empty() && starts[row] == In::Code,
            comment_only: !code[row] && (comment[row] || starts[row] == In::Comment),
            comment_from: comment_from[row],
        })
        .collect()
}

/// The [`Statement`]s of `tree`: of the nodes that begin a line, the
/// outermost one a [`LISTS`] node holds.
fn statements(lines: &[String], tree: &Tree) -> Vec<Statement> {
    let mut found = Vec::new();
    let mut begun = vec![false; lines.len()];
    for node in nodes(tree.root_node()) {
        let Some(list) = node.parent().filter(|p| LISTS.contains(&p.kind())) else {
            continue;
        };
        let (row, column) = (node.start_position().row, node.start_position().column);
        let indent = lines.get(row).map(|l| l.len() - l.trim_start().len());
        if !node.is_named() || node.kind() == "comment" || indent != Some(column) {
            continue;
        }
        // Arguments that start on the call's line go on from it: `f(a,`
        // then `b)` is one statement; `f(` then `a,` and `b,` are three.
        let first_argument = list.named_child(0).map(|a| a.start_position().row);
        if list.kind() == "argument_list" && first_argument == Some(list.start_position().row) {
            continue;
        }
        if std::mem::replace(&mut begun[row], true) {
            continue; // a node inside the one that begins this line
        }
        found.push(Statement {
            first: row + 1,
            last: node.end_position().row + 1,
            list: list.id(),
        });
    }
    found
}

/// Every node under `node`, itself first, in the order of the text.
fn nodes(node: Node<'_>) -> Vec<Node<'_>> {
    let mut found = Vec::new();
    let mut cursor = node.walk();
    'walk: loop {
        found.push(cursor.node());
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    found
}

/// The named nodes right under `node`.
fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The top-level declarations of the Go file `text`, parsed as `tree`.
fn declarations(tree: &Tree, text: &str, lines: &[String], info: &[LineInfo]) -> Vec<Decl> {
    let source = text.as_bytes();
    let name_of = |node: Node<'_>| node.utf8_text(source).unwrap_or_default().to_string();
    let mut decls = Vec::new();
    for node in named_children(tree.root_node()) {
        let (keyword, names): (&'static str, Vec<String>) = match node.kind() {
            "package_clause" => (
                "package",
                ["package".to_string()]
                    .into_iter()
                    .chain(node.named_child(0).map(name_of))
                    .collect(),
            ),
            "import_declaration" => ("import", vec!["import".to_string()]),
            "function_declaration" | "method_declaration" => (
                "func",
                node.child_by_field_name("name")
                    .map(name_of)
                    .into_iter()
                    .collect(),
            ),
            kind @ ("type_declaration" | "const_declaration" | "var_declaration") => {
                let keyword = match kind {
                    "type_declaration" => "type",
                    "const_declaration" => "const",
                    _ => "var",
                };
                // `const (…)`, `var (…)`, `type (…)`: named by the keyword too.
                let grouped = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .any(|child| matches!(child.kind(), "(" | "var_spec_list"));
                let mut names = Vec::new();
                if grouped {
                    names.push(keyword.to_string());
                }
                // A grouped `var (…)` holds its specs in a list.
                let specs = named_children(node)
                    .into_iter()
                    .flat_map(|child| match child.kind() {
                        "var_spec_list" => named_children(child),
                        _ => vec![child],
                    });
                for spec in specs {
                    let mut cursor = spec.walk();
                    names.extend(
                        spec.children_by_field_name("name", &mut cursor)
                            .filter(|n| n.is_named())
                            .map(name_of),
                    );
                }
                (keyword, names)
            }
            _ => continue,
        };
        let (line, end) = (node.start_position().row, node.end_position().row);
        decls.push(Decl {
            keyword,
            names,
            starts: leading_comment_starts(lines, info, line)
                .into_iter()
                .chain([line + 1])
                .collect(),
            line: line + 1,
            end: end + 1,
        });
    }
    decls
}

/// First lines (1-based, ascending) of the comment groups right above line
/// index `n`: the nearest must touch it, the others may be separated by
/// blank lines. The file's license header is not one of them.
pub(super) fn leading_comment_starts(lines: &[String], info: &[LineInfo], n: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut l = n;
    loop {
        // `l` is the index just below the next candidate group.
        let mut above = l;
        if !starts.is_empty() {
            while above > 0 && info[above - 1].blank {
                above -= 1;
            }
        }
        if above == 0 || !info[above - 1].comment_only {
            break;
        }
        let mut start = above - 1;
        while start > 0 && info[start - 1].comment_only {
            start -= 1;
        }
        let is_header = lines[start..above].iter().any(|l| l.contains("Copyright"));
        if is_header {
            break;
        }
        starts.push(start + 1);
        l = start;
    }
    starts.reverse();
    starts
}

pub(super) fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `word` occurs in `text` as a whole identifier.
pub(super) fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO: &str = r#"// Copyright 2017 The Kubernetes Authors.

package main

// A rune, a string and a raw string with brackets in them.
const (
	Open  = '{'
	Close = "}"
)

var a, b = `(
}`, 1

/* A block comment
   with a { in it. */
type List[T any] struct{ items []T }

// Len says how long.
func (l *List[T]) Len() int {
	s := fmt.Sprint("(", '[', `{
`) // )
	return len(l.items) + len(s)
}
"#;

    #[test]
    fn a_go_files_statements_and_comments_are_the_parsers_whatever_brackets_strings_hold() {
        let file = GoFile::parse("list.go", GO).unwrap();
        let spans: Vec<(usize, usize)> =
            file.statements.iter().map(|s| (s.first, s.last)).collect();
        assert_eq!(spans, [(7, 7), (8, 8), (20, 21), (22, 22)]);
        let list: Vec<usize> = file.statements.iter().map(|s| s.list).collect();
        assert!(list[0] == list[1] && list[2] == list[3] && list[0] != list[2]);
        assert!(
            !file.at(12).blank && !file.at(12).comment_only,
            "a raw string's line"
        );
        assert!(file.at(15).comment_only, "a block comment's line");
        assert_eq!(file.code(21), "`)", "a `)` in a comment");
        assert_eq!(file.code(8), r#"Close = "}""#);
        let url = GoFile::parse("u.go", "package p\n\nvar u = \"http://x\" // the URL\n").unwrap();
        assert_eq!(
            url.code(3),
            r#"var u = "http://x""#,
            "a `//` in a string is code"
        );
    }

    #[test]
    fn a_go_files_declarations_are_named_with_their_leading_comments() {
        let file = GoFile::parse("list.go", GO).unwrap();
        let decls: Vec<(&str, Vec<&str>, &[usize], usize)> = file
            .decls
            .iter()
            .map(|d| {
                let names = d.names.iter().map(String::as_str).collect();
                (d.keyword, names, d.starts.as_slice(), d.end)
            })
            .collect();
        assert_eq!(
            decls,
            [
                ("package", vec!["package", "main"], &[3][..], 3),
                ("const", vec!["const", "Open", "Close"], &[5, 6][..], 9),
                ("var", vec!["a", "b"], &[11][..], 12),
                ("type", vec!["List"], &[14, 16][..], 16),
                ("func", vec!["Len"], &[18, 19][..], 23),
            ]
        );
        assert_eq!(file.resolve(&["Len".to_string()]).unwrap(), (18, 23));
    }

    #[test]
    fn a_file_that_is_not_go_is_plain_lines() {
        let file = GoFile::parse("crd.yaml", "a: '{'\n\nb: [\n").unwrap();
        assert!(file.decls.is_empty() && file.statements.is_empty());
        assert!(file.at(2).blank && !file.at(1).blank && !file.at(1).comment_only);
    }
}
