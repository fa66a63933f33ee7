// The Chinese edition's search tokenizer. `cargo xtask book build` puts this
// file in front of that edition's search index (booktool/src/search.rs,
// whose `tokens` is the same function in Rust), so that it is in place
// before the searcher loads the index, and elasticlunr cuts a query the way
// the index was cut: runs of Chinese characters into overlapping pairs
// (工作队列 → 工作, 作队, 队列), ASCII words lower-cased.
(() => {
    if (window.elasticlunr) {
        const ideograph = (c) => (c >= '\u3400' && c <= '\u4dbf')
            || (c >= '\u4e00' && c <= '\u9fff') || (c >= '\uf900' && c <= '\ufaff');
        const wordChar = (c) => /^[A-Za-z0-9_]$/.test(c);
        const cjkTokens = (text) => {
            const tokens = [];
            let word = '';
            let run = [];
            const flushWord = () => {
                if (word) {
                    tokens.push(word.toLowerCase());
                }
                word = '';
            };
            const flushRun = () => {
                if (run.length === 1) {
                    tokens.push(run[0]);
                }
                for (let i = 0; i + 1 < run.length; i++) {
                    tokens.push(run[i] + run[i + 1]);
                }
                run = [];
            };
            for (const c of String(text)) {
                if (ideograph(c)) {
                    flushWord();
                    run.push(c);
                } else if (wordChar(c)) {
                    flushRun();
                    word += c;
                } else {
                    flushWord();
                    flushRun();
                }
            }
            flushWord();
            flushRun();
            return tokens;
        };
        window.elasticlunr.tokenizer = (text) => {
            if (text === null || text === undefined) {
                return [];
            }
            return Array.isArray(text) ? text.flatMap(cjkTokens) : cjkTokens(text);
        };
    }
})();
