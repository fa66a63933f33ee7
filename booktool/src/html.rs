//! The rendered book and the DOM Chromium prints, read as a browser reads
//! them: parsed by html5ever (through scraper) and queried with CSS
//! selectors, never searched as text.

use scraper::{ElementRef, Html, Selector};

/// The elements of `page` that the CSS `selector` matches, in the order of
/// the page.
pub fn select<'a>(page: &'a Html, selector: &str) -> Vec<ElementRef<'a>> {
    select_in(page.root_element(), selector)
}

/// The elements below `element` that the CSS `selector` matches. The
/// selectors are the tooling's own, written in its code: one that does not
/// parse is a bug, and panics naming it.
pub fn select_in<'a>(element: ElementRef<'a>, selector: &str) -> Vec<ElementRef<'a>> {
    let parsed = Selector::parse(selector)
        .unwrap_or_else(|err| panic!("the CSS selector {selector:?}: {err}"));
    element.select(&parsed).collect()
}

/// The text an element holds, its descendants' included.
pub fn text(element: ElementRef<'_>) -> String {
    element.text().collect()
}
