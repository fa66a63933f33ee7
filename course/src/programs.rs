//! Programs found on `PATH`, for the commands that run one the machine
//! provides (Chromium for the book check and the live page's test; the
//! package managers and compilers `cargo xtask setup` looks for).

use std::path::{Path, PathBuf};

/// The headless browser: `chromium` (Debian, Fedora's newer packages), else
/// `chromium-browser` (Fedora, Ubuntu), else the macOS application.
pub fn chromium() -> Option<PathBuf> {
    which("chromium")
        .or_else(|| which("chromium-browser"))
        .or_else(|| {
            let app = Path::new("/Applications/Chromium.app/Contents/MacOS/Chromium");
            app.is_file().then(|| app.to_path_buf())
        })
}

/// `name`'s path on `PATH`, if it is there and executable.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|file| {
            file.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
