// The Go/Rust tab groups of `{{#go …}}` excerpts (booktool/src/gosource/mod.rs).
// CSS switches the tabs; this keeps one choice for every group of the book
// (remembered in localStorage) and numbers the Go lines as in the Go file.
(() => {
    const key = 'gosource-tab';
    const groups = Array.from(document.querySelectorAll('.gosource-tabs'));

    function pick(lang) {
        for (const group of groups) {
            const input = group.querySelector('input.gosource-pick-' + lang);
            if (input) {
                input.checked = true;
            }
        }
    }

    // `?gosource=go` in the URL shows the Go side (the book check's
    // screenshots use it); otherwise the reader's last choice.
    let wanted = new URLSearchParams(window.location.search).get('gosource');
    if (wanted !== 'go' && wanted !== 'rust') {
        try {
            wanted = window.localStorage.getItem(key);
        } catch (e) {
            wanted = null;
        }
    }
    if (wanted === 'go' || wanted === 'rust') {
        pick(wanted);
    }
    for (const group of groups) {
        for (const input of group.querySelectorAll('input[type="radio"]')) {
            input.addEventListener('change', () => {
                const lang = input.classList.contains('gosource-pick-go') ? 'go' : 'rust';
                pick(lang);
                try {
                    window.localStorage.setItem(key, lang);
                } catch (e) {
                    // no storage (private mode): the choice lasts for this page
                }
            });
            // Arrow keys move between the tabs, not to the next chapter (book.js).
            input.addEventListener('keydown', (e) => e.stopPropagation());
        }
    }

    // The Go file's line numbers beside each excerpt.
    for (const pane of document.querySelectorAll('.gosource-pane-go[data-first-line]')) {
        const code = pane.querySelector('pre > code');
        if (!code) {
            continue;
        }
        const first = parseInt(pane.dataset.firstLine, 10);
        const count = code.textContent.replace(/\n$/, '').split('\n').length;
        const numbers = [];
        for (let i = 0; i < count; i++) {
            numbers.push(String(first + i));
        }
        const gutter = document.createElement('span');
        gutter.className = 'gosource-gutter hljs';
        gutter.setAttribute('aria-hidden', 'true');
        gutter.textContent = numbers.join('\n');
        code.parentNode.insertBefore(gutter, code);
        code.parentNode.classList.add('gosource-numbered');
    }
})();
