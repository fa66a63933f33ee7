//! `{{#version NAME}}`: a version of `versions.toml`, written into a page at
//! build time, so that no page types one.
//!
//! NAME is `kubernetes` (`v1.37.1`: kube-apiserver, kubectl, …), `staging`
//! (`v0.37.1`: client-go, the Go sample-controller), `minor` (its `1.MINOR`),
//! `oldest` (the oldest Kubernetes the course claims, which `cargo xtask
//! oldest` tests), `etcd` or `kwok`. It works in prose and in code blocks (a command that
//! names a version); `\{{#version …}}` is left alone.

use anyhow::{Result, bail};
use testcluster::binaries::{
    ETCD_VERSION, KUBERNETES_MINOR, KUBERNETES_VERSION, KWOK_VERSION, OLDEST_KUBERNETES_VERSION,
    STAGING_VERSION,
};

/// The version `name` stands for.
fn version(name: &str) -> Option<&'static str> {
    Some(match name {
        "kubernetes" => KUBERNETES_VERSION,
        "staging" => STAGING_VERSION,
        "minor" => KUBERNETES_MINOR,
        "oldest" => OLDEST_KUBERNETES_VERSION,
        "etcd" => ETCD_VERSION,
        "kwok" => KWOK_VERSION,
        _ => return None,
    })
}

/// `page` with every `{{#version NAME}}` replaced; an unknown NAME is an
/// error naming the page and line.
pub(super) fn expand(page_name: &str, page: &str) -> Result<String> {
    super::replace_directives(page_name, page, "version", |name, line| {
        let Some(version) = version(name) else {
            bail!(
                "{page_name}:{line}: {{{{#version {name}}}}}: write kubernetes, staging, minor, \
                 oldest, etcd or kwok"
            );
        };
        Ok(version.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_is_the_version_versions_toml_declares() {
        let page = "kubectl {{#version kubernetes}}, client-go {{#version staging}}, \
                    a {{#version minor}} API server, etcd {{#version etcd}}, kwok {{#version kwok}}, \
                    from {{#version oldest}}";
        let out = expand("p.md", page).unwrap();
        assert_eq!(
            out,
            format!(
                "kubectl {KUBERNETES_VERSION}, client-go {STAGING_VERSION}, a {KUBERNETES_MINOR} \
                 API server, etcd {ETCD_VERSION}, kwok {KWOK_VERSION}, from {OLDEST_KUBERNETES_VERSION}"
            )
        );
    }

    #[test]
    fn an_unknown_name_fails_with_its_line_and_an_escaped_one_is_kept() {
        let err = expand("p.md", "a\n{{#version go}}")
            .unwrap_err()
            .to_string();
        assert!(err.contains("p.md:2"), "{err}");
        assert_eq!(
            expand("p.md", "\\{{#version kubernetes}}").unwrap(),
            "{{#version kubernetes}}"
        );
    }
}
