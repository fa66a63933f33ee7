// The language picker: a link in the menu bar to the same page in the other
// edition. English is at the book's root, each translation in a folder of
// its own (`cargo xtask book build`: book/book and book/book/zh-CN).
(() => {
    const editions = [
        { lang: 'en', dir: '', label: 'English' },
        { lang: 'zh-CN', dir: 'zh-CN/', label: '中文' },
    ];
    const here = editions.find((e) => e.lang === document.documentElement.lang);
    const buttons = document.querySelector('.right-buttons');
    if (!here || !buttons) {
        return;
    }
    // mdBook's `path_to_root` leads to this edition's root; the site's root
    // is above it by the edition's folder.
    const editionRoot = new URL(path_to_root + './', window.location.href);
    const siteRoot = new URL(here.dir ? '../' : './', editionRoot);
    const page = window.location.pathname.slice(editionRoot.pathname.length);
    for (const other of editions.filter((e) => e !== here)) {
        const link = document.createElement('a');
        link.className = 'edition-picker';
        link.href = new URL(other.dir + page, siteRoot).href + window.location.hash;
        link.hreflang = other.lang;
        link.lang = other.lang;
        link.title = other.label;
        link.textContent = other.label;
        buttons.prepend(link);
    }
})();
