//! What a `{{#go}}` directive or a `go:` link selects in a file: whole
//! declarations, statements inside one, or lines of any other file.

use anyhow::{Context, Result, ensure};

/// `Name` or `Name@N`: the Nth statement (from 1) whose first line uses
/// `Name`; `Name+K`: the Kth statement after that one in the same block
/// (`syncHandler/updateFooStatus+1`: the `if err != nil` that follows it).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pick {
    pub(super) word: String,
    pub(super) nth: usize,
    pub(super) after: usize,
}

impl Pick {
    fn parse(text: &str) -> Result<Pick> {
        let (text, after) = match text.split_once('+') {
            Some((text, k)) => (
                text,
                k.parse()
                    .ok()
                    .filter(|&k| k > 0)
                    .with_context(|| format!("`{text}+{k}`: write NAME+K with K from 1"))?,
            ),
            None => (text, 0),
        };
        let (word, nth) = match text.split_once('@') {
            Some((word, n)) => (
                word,
                n.parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .with_context(|| format!("`{text}`: write NAME@N with N from 1"))?,
            ),
            None => (text, 1),
        };
        ensure!(!word.is_empty(), "an empty name in the selector");
        Ok(Pick {
            word: word.to_string(),
            nth,
            after,
        })
    }
}

impl std::fmt::Display for Pick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.word)?;
        if self.nth != 1 {
            write!(f, "@{}", self.nth)?;
        }
        if self.after != 0 {
            write!(f, "+{}", self.after)?;
        }
        Ok(())
    }
}

/// What a link or excerpt shows of a file.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Selector {
    /// Whole top-level declarations of a `.go` file: `Foo,FooSpec`.
    Decls(Vec<String>),
    /// Statements inside a declaration: `syncHandler/Get` or `main/A..B`.
    Statements {
        decl: String,
        first: Pick,
        last: Option<Pick>,
    },
    /// Lines of any other file: `replicas:` or `A..B`.
    Text { first: Pick, last: Option<Pick> },
}

impl Selector {
    pub(super) fn parse(path: &str, text: &str) -> Result<Selector> {
        let range = |text: &str| -> Result<(Pick, Option<Pick>)> {
            match text.split_once("..") {
                Some((a, b)) => Ok((Pick::parse(a)?, Some(Pick::parse(b)?))),
                None => Ok((Pick::parse(text)?, None)),
            }
        };
        if !path.ends_with(".go") {
            let (first, last) = range(text)?;
            return Ok(Selector::Text { first, last });
        }
        match text.split_once('/') {
            Some((decl, statements)) => {
                let (first, last) = range(statements)?;
                ensure!(!decl.is_empty(), "`{text}`: DECLARATION/STATEMENT");
                Ok(Selector::Statements {
                    decl: decl.to_string(),
                    first,
                    last,
                })
            }
            None => {
                let names: Vec<String> = text
                    .split(',')
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .collect();
                ensure!(!names.is_empty(), "an empty selector");
                Ok(Selector::Decls(names))
            }
        }
    }
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let range = |first: &Pick, last: &Option<Pick>| match last {
            Some(last) => format!("{first}..{last}"),
            None => first.to_string(),
        };
        match self {
            Selector::Decls(names) => write!(f, "{}", names.join(",")),
            Selector::Statements { decl, first, last } => {
                write!(f, "{decl}/{}", range(first, last))
            }
            Selector::Text { first, last } => write!(f, "{}", range(first, last)),
        }
    }
}
