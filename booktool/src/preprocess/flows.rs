//! `{{#flow NAME}}`: a recorded run of a step, played back in the page by
//! the flow view (book/theme/flow.js, the view `cargo xtask watch` serves
//! live). The recording is `book/src/outputs/flow/NAME.jsonl`, the flow of
//! the JSON log the step wrote with `SAMPLE_CONTROLLER_LOG_JSON` set
//! (course/src/flow/mod.rs); it is written into the page, so the book plays it from a file:// URL too, without a
//! request.
//!
//! A missing recording or a line that is not a JSON object fails the build
//! with the page and the line.

use std::path::Path;

use anyhow::{Context, Result, bail};

const DIRECTIVE: &str = "flow";

/// `page` with every `{{#flow NAME}}` replaced by the view and its
/// recording, read from `outputs/flow/NAME.jsonl` under `src` (`book/src`).
pub(super) fn expand(page_name: &str, page: &str, src: &Path) -> Result<String> {
    super::replace_directives(page_name, page, DIRECTIVE, |name, line| {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            bail!(
                "{page_name}:{line}: {{{{#flow {name}}}}}: a recording's name is letters, digits and dashes"
            );
        }
        let path = src.join("outputs/flow").join(format!("{name}.jsonl"));
        let trace = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "{page_name}:{line}: {{{{#flow {name}}}}}: reading {} (`cargo xtask book outputs` records it)",
                path.display()
            )
        })?;
        for (n, text) in trace.lines().enumerate() {
            if !matches!(serde_json::from_str(text), Ok(serde_json::Value::Object(_))) {
                bail!(
                    "{page_name}:{line}: {{{{#flow {name}}}}}: line {} of {} is not a JSON object",
                    n + 1,
                    path.display()
                );
            }
        }
        Ok(view(name, &trace))
    })
}

/// The view's element and the recording it plays, as an HTML block.
fn view(name: &str, trace: &str) -> String {
    // Inside <script>, only `</` could end the element early; JSON allows
    // `<\/` for it.
    let trace = trace.replace("</", "<\\/");
    format!(
        "<div class=\"flow-view\" id=\"flow-{name}\" data-trace=\"{name}\"></div>\n\
         <script type=\"application/json\" id=\"flow-trace-{name}\">\n{}\n</script>\n",
        trace.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_is_written_into_the_page_and_a_missing_or_broken_one_fails_with_its_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("outputs/flow")).unwrap();
        std::fs::write(
            dir.join("outputs/flow/run.jsonl"),
            "{\"t\":0.1,\"lane\":\"event\",\"note\":\"a </script> inside\"}\n",
        )
        .unwrap();
        let page = expand("p.md", "Before\n\n{{#flow run}}\n\nAfter", &dir).unwrap();
        assert!(
            page.contains("<div class=\"flow-view\" id=\"flow-run\" data-trace=\"run\"></div>")
        );
        assert!(page.contains("<script type=\"application/json\" id=\"flow-trace-run\">"));
        assert!(page.contains("a <\\/script> inside"), "{page}");
        assert_eq!(page.matches("</script>").count(), 1, "{page}");

        let err = expand("p.md", "a\n{{#flow gone}}", &dir).unwrap_err();
        assert!(format!("{err:#}").contains("p.md:2"), "{err:#}");
        std::fs::write(
            dir.join("outputs/flow/broken.jsonl"),
            "{\"t\":1}\nnot json\n",
        )
        .unwrap();
        let err = expand("p.md", "{{#flow broken}}", &dir)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
        let err = expand("p.md", "{{#flow ../x}}", &dir)
            .unwrap_err()
            .to_string();
        assert!(err.contains("letters, digits and dashes"), "{err}");
    }
}
