//! Reading Go without a Go parser: each line's nesting depth, the top-level
//! declarations with their leading comments, and the names in a line.

use anyhow::{Result, bail, ensure};

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineInfo {
    /// Nesting depth of `(`, `{`, `[` at the start and end of the line, and
    /// the lowest it reaches on the line.
    pub(super) depth_before: i32,
    pub(super) depth_after: i32,
    pub(super) min_depth: i32,
    pub(super) blank: bool,
    /// Only comment text (or a blank line inside `/* */`).
    pub(super) comment_only: bool,
    /// The line starts outside comments and raw strings.
    pub(super) starts_in_code: bool,
    /// The line ends outside comments and raw strings.
    pub(super) ends_in_code: bool,
}

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
    pub(super) decls: Vec<Decl>,
    /// The file header's copyright line, e.g. "Copyright 2017 The Kubernetes Authors."
    pub(super) copyright: String,
}

impl GoFile {
    pub(super) fn parse(path: &str, text: &str) -> GoFile {
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let info = scan(&lines);
        let decls = declarations(&lines, &info);
        let copyright = lines
            .iter()
            .take(20)
            .find(|l| l.contains("Copyright"))
            .map(|l| l.trim().trim_end_matches('.').to_string() + ".")
            .unwrap_or_else(|| "Copyright The Kubernetes Authors.".to_string());
        GoFile {
            path: path.to_string(),
            lines,
            info,
            decls,
            copyright,
        }
    }

    pub(super) fn line(&self, n: usize) -> &str {
        &self.lines[n - 1]
    }

    pub(super) fn at(&self, n: usize) -> LineInfo {
        self.info[n - 1]
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

/// The nesting depth of every line, skipping strings, runes and comments.
pub(super) fn scan(lines: &[String]) -> Vec<LineInfo> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        BlockComment,
        RawString,
    }
    let mut state = State::Code;
    let mut depth = 0;
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let started = state;
        let depth_before = depth;
        let mut min_depth = depth;
        let (mut code, mut comment) = (false, false);
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            match state {
                State::BlockComment => {
                    comment = true;
                    if c == '*' && next == Some('/') {
                        state = State::Code;
                        i += 1;
                    }
                }
                State::RawString => {
                    code = true;
                    if c == '`' {
                        state = State::Code;
                    }
                }
                State::Code if c.is_whitespace() => {}
                State::Code if c == '/' && next == Some('/') => {
                    comment = true;
                    break;
                }
                State::Code if c == '/' && next == Some('*') => {
                    comment = true;
                    state = State::BlockComment;
                    i += 1;
                }
                State::Code => {
                    code = true;
                    match c {
                        '"' | '\'' => {
                            i += 1;
                            while i < chars.len() && chars[i] != c {
                                i += if chars[i] == '\\' { 2 } else { 1 };
                            }
                        }
                        '`' => state = State::RawString,
                        '(' | '{' | '[' => depth += 1,
                        ')' | '}' | ']' => {
                            depth -= 1;
                            min_depth = min_depth.min(depth);
                        }
                        _ => {}
                    }
                }
            }
            i += 1;
        }
        out.push(LineInfo {
            depth_before,
            depth_after: depth,
            min_depth,
            blank: line.trim().is_empty() && started == State::Code,
            comment_only: !code && (comment || started == State::BlockComment),
            starts_in_code: started == State::Code,
            ends_in_code: state == State::Code,
        });
    }
    out
}

/// The top-level declarations (gofmt'd source: each starts at column 0).
pub(super) fn declarations(lines: &[String], info: &[LineInfo]) -> Vec<Decl> {
    const KEYWORDS: [&str; 6] = ["func", "type", "const", "var", "import", "package"];
    let mut decls = Vec::new();
    let mut n = 0;
    while n < lines.len() {
        let text = lines[n].as_str();
        let at = info[n];
        let keyword = KEYWORDS.iter().copied().find(|k| {
            text.strip_prefix(k)
                .is_some_and(|rest| rest.starts_with([' ', '(']))
        });
        let Some(keyword) = keyword.filter(|_| at.depth_before == 0 && at.starts_in_code) else {
            n += 1;
            continue;
        };
        let mut end = n;
        while end + 1 < lines.len() && (info[end].depth_after != 0 || !info[end].ends_in_code) {
            end += 1;
        }
        let rest = text[keyword.len()..].trim_start();
        let names = match keyword {
            "func" => {
                // `func (c *Controller) Run(` → Run
                let after_receiver = if rest.starts_with('(') {
                    let mut depth = 0;
                    let close = rest
                        .char_indices()
                        .find(|&(_, c)| {
                            match c {
                                '(' => depth += 1,
                                ')' => depth -= 1,
                                _ => {}
                            }
                            depth == 0
                        })
                        .map_or(rest.len(), |(i, _)| i + 1);
                    rest[close..].trim_start()
                } else {
                    rest
                };
                leading_ident(after_receiver).into_iter().collect()
            }
            "import" => vec!["import".to_string()],
            _ if rest.starts_with('(') => {
                let mut names = vec![keyword.to_string()];
                for inner in n + 1..end {
                    if info[inner].depth_before == 1 && !info[inner].comment_only {
                        names.extend(leading_idents(lines[inner].trim_start()));
                    }
                }
                names
            }
            "type" | "package" => leading_ident(rest).into_iter().collect(),
            _ => leading_idents(rest),
        };
        let mut names = names;
        if keyword == "package" {
            names.insert(0, "package".to_string());
        }
        decls.push(Decl {
            keyword,
            names,
            starts: leading_comment_starts(lines, info, n)
                .into_iter()
                .chain([n + 1])
                .collect(),
            line: n + 1,
            end: end + 1,
        });
        n = end + 1;
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

pub(super) fn leading_ident(s: &str) -> Option<String> {
    let end = s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len());
    (end > 0 && !s.starts_with(|c: char| c.is_ascii_digit())).then(|| s[..end].to_string())
}

/// `a, b = …` → [a, b].
pub(super) fn leading_idents(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = s;
    while let Some(name) = leading_ident(rest) {
        rest = rest[name.len()..].trim_start();
        names.push(name);
        match rest.strip_prefix(',') {
            Some(more) => rest = more.trim_start(),
            None => break,
        }
    }
    names
}

/// `word` occurs in `text` as a whole identifier.
pub(super) fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(is_ident_char) && !after.is_some_and(is_ident_char)
    })
}
