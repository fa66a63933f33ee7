//! `{{#terms}}`: in a translated edition, its term list (book/po/LANG.toml,
//! the list its translations are checked against) as a section with a
//! table; in English, nothing. The glossary page holds it, so the zh-CN
//! edition's glossary ends with the English and Chinese terms side by side.

use anyhow::Result;

use crate::i18n::{EDITIONS, edition_config};

const DIRECTIVE: &str = "{{#terms}}";

/// `page` with `{{#terms}}` replaced by `language`'s term section, or removed
/// when the book is built in English.
pub(super) fn expand(page: &str, language: Option<&str>) -> Result<String> {
    if !page.contains(DIRECTIVE) {
        return Ok(page.to_string());
    }
    let Some(lang) = language.filter(|l| EDITIONS.contains(l)) else {
        return Ok(page.replace(DIRECTIVE, ""));
    };
    let config = edition_config(lang)?;
    let mut section = format!(
        "## {} {{#terms}}\n\n{}\n\n| English | {lang} |\n|---|---|\n",
        config.glossary.heading, config.glossary.intro
    );
    for (english, translated) in &config.terms {
        section.push_str(&format!("| {english} | {translated} |\n"));
    }
    Ok(page.replace(DIRECTIVE, &section))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_english_edition_shows_no_term_list() {
        let page = "# Glossary\n\n{{#terms}}\n";
        assert_eq!(expand(page, Some("en")).unwrap(), "# Glossary\n\n\n");
        assert_eq!(expand(page, None).unwrap(), "# Glossary\n\n\n");
    }

    #[test]
    fn the_chinese_edition_shows_every_term_of_its_list() {
        let section = expand("{{#terms}}", Some("zh-CN")).unwrap();
        let config = edition_config("zh-CN").unwrap();
        assert!(section.starts_with(&format!("## {} {{#terms}}", config.glossary.heading)));
        for (english, translated) in &config.terms {
            assert!(
                section.contains(&format!("| {english} | {translated} |")),
                "{section}"
            );
        }
    }
}
