//! The names, errors and Events of Go's controller.go that every sync uses:
//! the constants (`controllerAgentName`, `FieldManager`, the
//! Event reasons and messages), the sync's [`Error`], the Event recorder, and
//! the ownership check that records `ErrResourceExists`.
//!
//! Go: [controller.go](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go),
//! its `const` block, `syncHandler`'s errors and `c.recorder`.

use k8s_openapi::api::apps::v1::Deployment;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};

use crate::Foo;
use crate::deployment::is_controlled_by;
use crate::informer::object_name;

// ANCHOR: constants
/// Names this controller in Events and in managedFields. Go: `controllerAgentName`.
pub const CONTROLLER_AGENT_NAME: &str = "sample-controller";
/// Field manager of every write. Go: `FieldManager`.
pub const FIELD_MANAGER: &str = CONTROLLER_AGENT_NAME;
/// Event reason after a successful sync. Go: `SuccessSynced`.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event reason when the Deployment name is taken. Go: `ErrResourceExists`.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Event message after a successful sync. Go: `MessageResourceSynced`.
pub const MESSAGE_RESOURCE_SYNCED: &str = "Foo synced successfully";

/// Event message (and error) when the Deployment name is taken by an object
/// this Foo does not control. Go: `MessageResourceExists`.
pub fn message_resource_exists(deployment: &str) -> String {
    format!("Resource {deployment:?} already exists and is not managed by Foo")
}
// ANCHOR_END: constants

// ANCHOR: errors
/// Why a sync failed; every variant is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Deployment name is taken by an object this Foo does not control.
    /// Go: `fmt.Errorf("%s", msg)` with `MessageResourceExists`.
    #[error("{}", message_resource_exists(.0))]
    ResourceExists(String),
    /// A failed API call (create, update, status update or apply).
    #[error(transparent)]
    Kube(#[from] kube::Error),
}
// ANCHOR_END: errors

/// The Event recorder of this controller. Go: `record.NewBroadcaster` and
/// `NewRecorder` with `controllerAgentName`. kube writes events.k8s.io/v1
/// Events and folds repeats into a series itself.
pub fn recorder(client: Client) -> Recorder {
    let reporter = Reporter {
        controller: CONTROLLER_AGENT_NAME.into(),
        instance: std::env::var("POD_NAME").ok(),
    };
    Recorder::new(client, reporter)
}

/// Records an Event about `foo`. Go: `c.recorder.Event(foo, type, reason, message)`.
///
/// Go's recorder sends in the background and never fails the sync; a failed
/// publish is likewise only logged.
pub async fn publish(
    recorder: &Recorder,
    foo: &Foo,
    type_: EventType,
    reason: &str,
    message: &str,
) {
    let event = Event {
        type_,
        reason: reason.into(),
        note: Some(message.into()),
        action: "Sync".into(),
        secondary: None,
    };
    // Go's event broadcaster also logs each Event (`StartStructuredLogging`);
    // here at debug level.
    tracing::debug!(
        object = %object_name(foo),
        type_ = ?event.type_,
        reason,
        note = message,
        "Event occurred"
    );
    if let Err(err) = recorder.publish(&event, &foo.object_ref(&())).await {
        tracing::warn!(%reason, error = %err, "cannot record event");
    }
}

// ANCHOR: ensure_controlled
/// Fails with [`Error::ResourceExists`], after a Warning Event, unless `foo`
/// controls `deployment`: a Deployment of that name that someone else made
/// is never touched. Go: the `metav1.IsControlledBy` check in `syncHandler`.
pub async fn ensure_controlled(
    recorder: &Recorder,
    deployment: &Deployment,
    foo: &Foo,
) -> Result<(), Error> {
    if is_controlled_by(deployment, foo) {
        return Ok(());
    }
    let message = message_resource_exists(&deployment.name_any());
    publish(
        recorder,
        foo,
        EventType::Warning,
        ERR_RESOURCE_EXISTS,
        &message,
    )
    .await;
    Err(Error::ResourceExists(deployment.name_any()))
}
// ANCHOR_END: ensure_controlled
