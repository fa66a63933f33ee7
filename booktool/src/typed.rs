//! The book check's rule against typed figures: a figure a run measured is
//! written as `{{#figure}}` (booktool/src/preprocess/figures.rs), so that it says
//! what the run says and changes with it; typed, it ages silently.
//!
//! The rule, for prose ([`crate::markdown::prose`]: outside code blocks,
//! inline code, `{{#…}}` directives, HTML and link targets): a *figure* is
//! a number with a unit of time (`ms`, `s`, `min`, `minutes`, `seconds`,
//! `hours`), of size (`B`, `bytes`, `KB`, `KiB`, `MB`, `MiB`, `GB`, `GiB`)
//! or a ratio (`%`, `×`), or a range of them (`5–18 s`). A figure is
//! *measured*, and the check fails on it, when
//!
//! 1. its text says so: its sentence (or its table cell, or its column's
//!    heading) says `measured`, `median`, `in the run above`, `this project's
//!    machine` or `on 2 cores`, or the words right before it are `took`,
//!    `takes`, `converged in` or `converges in`; or
//! 2. it has a fractional part (`6.5 s`, `17.4 MB`): the settings the book
//!    talks about are whole numbers of their unit (a 5 ms base delay, a 30 s
//!    resync, a 10 s lease).
//!
//! Not measured, whatever the rule above says: a bound (`at most 0.5×`,
//! `up to 5 minutes`, `within 4 s`: a target or a limit), and arithmetic
//! shown with its operands (the sentence has `=`, `≈`, `·` or `−`: "5 ms ·
//! 2¹⁷ = 655.36 s").

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

/// A figure: a number (or a range), a space or none, a unit.
static FIGURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:^|[^\w.])(\d+(?:[.,]\d+)*(?:\s?(?:–|-|to)\s?\d+(?:[.,]\d+)*)?)(?:\s|&nbsp;)?(ms|s|min|minutes|seconds|hours|B|bytes|KB|KiB|MB|MiB|GB|GiB|%|×)(?:$|[^\w])",
    )
    .expect("a valid pattern")
});

/// Words that say a sentence, a cell or a column holds measurements.
static SAYS_MEASURED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)measured|median|in the run above|this project.s machine|on 2 cores|on two cores",
    )
    .expect("a valid pattern")
});

/// Words right before a figure that say it was measured.
static MEASURED_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:took|takes|converged in|converges in)(?:\s+(?:about|over|only))?\s*$")
        .expect("a valid pattern")
});

/// Words right before a figure that make it a bound.
static BOUND_BEFORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:at most|at least|within|up to|under|no more than)\s*$")
        .expect("a valid pattern")
});

/// Every typed measured figure of `pages`, as `page:line: "figure" …`.
pub(super) fn check(pages: &[(PathBuf, String)]) -> Vec<String> {
    let mut failures = Vec::new();
    for (page, text) in pages {
        for (line, figure, context) in typed_figures(text) {
            failures.push(format!(
                "{}:{line}: {figure:?} is a measured figure typed into prose (write it as \
                 {{{{#figure RUN KEY}}}} from the capture that measured it, or remove it; \
                 the rule: booktool/src/typed.rs): {context:?}",
                page_name(page)
            ));
        }
    }
    failures
}

fn page_name(page: &Path) -> String {
    page.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The measured figures typed in `page`: line, figure, its sentence.
fn typed_figures(page: &str) -> Vec<(usize, String, String)> {
    let mut found = Vec::new();
    for crate::markdown::Prose {
        line: first_line,
        text: block,
        heading,
    } in crate::markdown::prose(page)
    {
        for sentence in sentences(&block) {
            for m in FIGURE.captures_iter(sentence) {
                let (Some(number), Some(unit)) = (m.get(1), m.get(2)) else {
                    continue;
                };
                let before = &sentence[..number.start()];
                let said = SAYS_MEASURED.is_match(sentence)
                    || SAYS_MEASURED.is_match(&heading)
                    || MEASURED_BEFORE.is_match(before);
                let fractional = number.as_str().contains('.');
                let exempt =
                    BOUND_BEFORE.is_match(before) || sentence.contains(['=', '≈', '·', '−']);
                if (said || fractional) && !exempt {
                    let figure = &sentence[number.start()..unit.end()];
                    let figure = figure.split_whitespace().collect::<Vec<_>>().join(" ");
                    let line = first_line
                        + block
                            .find(sentence)
                            .map_or(0, |at| block[..at].matches('\n').count())
                        + sentence[..number.start()].matches('\n').count();
                    // The words around it, for the message.
                    let words: Vec<&str> = sentence[..number.start()]
                        .split_whitespace()
                        .rev()
                        .take(8)
                        .collect();
                    let after = sentence[unit.end()..].split_whitespace().take(6);
                    let context = words
                        .into_iter()
                        .rev()
                        .chain(std::iter::once(figure.as_str()))
                        .chain(after)
                        .collect::<Vec<_>>()
                        .join(" ");
                    found.push((line, figure.clone(), context));
                }
            }
        }
    }
    found
}

/// The sentences of a piece of prose: it splits after `.`, `;`, `!` or `?` and a space.
fn sentences(block: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in block.char_indices() {
        let ends =
            matches!(c, '.' | ';' | '!' | '?') && block[i + 1..].starts_with(char::is_whitespace);
        if ends {
            out.push(&block[start..=i]);
            start = i + 1;
        }
    }
    out.push(&block[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(page: &str) -> Vec<String> {
        typed_figures(page).into_iter().map(|(_, f, _)| f).collect()
    }

    #[test]
    fn the_books_pages_type_no_measured_figure() {
        let src = super::super::book_dir().join("src");
        let mut pages = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap();
                pages.push((path, text));
            }
        }
        assert!(pages.len() > 20, "the book's pages were read");
        let failures = check(&pages);
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_planted_typed_figure_fails_with_its_page_and_line() {
        let page = "# Leader election\n\nSome prose.\n\n`b` took over\n6.5 s after `a` froze.\n";
        let failures = check(&[(PathBuf::from("book/src/lead.md"), page.to_string())]);
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].starts_with("lead.md:6: \"6.5 s\""),
            "{}",
            failures[0]
        );
    }

    #[test]
    fn a_figure_is_measured_when_its_text_says_so_or_it_has_a_fraction() {
        // A fraction, in a paragraph, a quote, a table cell.
        assert_eq!(
            figures("It is about 17.4 MB (16.6 MiB) big."),
            ["17.4 MB", "16.6 MiB"]
        );
        assert_eq!(
            figures("> [!NOTE]\n> stopped 5.4 s after the cut"),
            ["5.4 s"]
        );
        assert_eq!(
            figures("| a | b |\n|---|---|\n| x | 0.8 s (above) |"),
            ["0.8 s"]
        );
        // Between two directives on a line.
        assert_eq!(
            figures("{{#figure a count {..}}} of {{#figure b {} as MB}} then 0.5 s"),
            ["0.5 s"]
        );
        // Whole numbers, when the text says they were measured.
        assert_eq!(figures("step 8 took 23–37 s to converge"), ["23–37 s"]);
        assert_eq!(
            figures("a Foo converged in 5–18 s; gone for longer"),
            ["5–18 s"]
        );
        assert_eq!(
            figures("On this project's machine a build took 9 to 13 minutes."),
            ["9 to 13 minutes"]
        );
        assert_eq!(
            figures("| Target | Measured |\n|---|---|\n| fast | 12 s |"),
            ["12 s"]
        );
        assert_eq!(
            figures("the long part, 15–25 minutes on 2 cores the first time"),
            ["15–25 minutes"]
        );
    }

    #[test]
    fn settings_bounds_arithmetic_and_code_are_not_measured_figures() {
        for page in [
            "Step 7 replays its caches every 30 s; the lease is 10 s, the grace 3 s.",
            "| Target | Measured |\n|---|---|\n| at most 0.5× Go's time | {{#figure performance 500 step8 vs-go}} |",
            "It waits up to 2.5 s, within 0.8 s of the deadline.",
            "The 18th waits 5 ms · 2¹⁷ = 655.36 s, the last delay under the cap.",
            "Run `sleep 6.5` or\n\n```text\ntook 17.4 MB\n```\n",
            "took {{#figure leader-lost (b became leader {} after a froze)}} and [a link](x.md#took-6.5-s)",
            "<!-- measured 6.5 s -->",
            "the 10 s lease: it expired 10 s after `a` took it.",
        ] {
            assert_eq!(figures(page), Vec::<String>::new(), "{page}");
        }
    }
}
