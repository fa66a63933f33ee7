//! Why a reconcile failed: a sync error of Go's vocabulary, or step 8's own,
//! with the short kind `/metrics` counts it under.

use sample_controller::vocabulary;

/// Why a reconcile failed; every variant is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// What Go's `syncHandler` can fail with: a Deployment it does not
    /// control, or a failed API call.
    #[error(transparent)]
    Sync(#[from] vocabulary::Error),
    /// The Deployment cache stopped before its first list (the controller is
    /// shutting down).
    #[error("the Deployment cache stopped")]
    CacheStopped,
}

impl From<kube::Error> for Error {
    fn from(err: kube::Error) -> Self {
        Error::Sync(err.into())
    }
}

impl Error {
    /// A short name for the kind of failure: the `error` label of the
    /// reconcile metric.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Sync(vocabulary::Error::ResourceExists(_)) => "resource_exists",
            Error::Sync(vocabulary::Error::Kube(_)) => "api",
            Error::CacheStopped => "cache",
        }
    }

    /// The API error, if the failure was a refused or failed request.
    pub fn kube(&self) -> Option<&kube::Error> {
        match self {
            Error::Sync(vocabulary::Error::Kube(err)) => Some(err),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_has_its_metric_kind() {
        let refused = Error::from(vocabulary::Error::ResourceExists("web".into()));
        assert_eq!(refused.kind(), "resource_exists");
        assert_eq!(
            refused.to_string(),
            vocabulary::message_resource_exists("web")
        );
        assert_eq!(Error::CacheStopped.kind(), "cache");
        let api = Error::from(kube::Error::LinesCodecMaxLineLengthExceeded);
        assert_eq!(api.kind(), "api");
        assert!(api.kube().is_some());
    }
}
