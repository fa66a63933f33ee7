//! The `Foo` custom resource.
//!
//! Go: `pkg/apis/samplecontroller/v1alpha1/types.go`, plus the CRD in
//! `artifacts/examples/crd-status-subresource.yaml`. Go generates deep-copy
//! functions, a clientset, listers and informers from these types; in Rust the
//! `CustomResource` derive generates the `Foo` wrapper type and its CRD, and
//! `Api<Foo>` is the whole typed client.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The annotation a CRD in a protected `*.k8s.io` group must carry (KEP-2337);
/// without it the API server rejects the CRD.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

// ANCHOR: foo
// Go: types.go `FooSpec`. The derive also generates `Foo` (metadata + spec +
// status), `Foo::new(name, spec)` and `Foo::crd()`. Doc comments become the
// descriptions `kubectl explain foo.spec` prints.
/// The desired state of a Foo: an nginx Deployment with this name and size.
// clippy reads the several `printcolumn(type_ = ...)` entries as one attribute
// repeated; they are distinct columns.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    plural = "foos",
    namespaced,
    doc = "A Foo asks the sample controller for an nginx Deployment and reports how many of its replicas are available.",
    status = "FooStatus",
    annotation(
        "api-approved.kubernetes.io",
        "unapproved, experimental-only; this is a sample, see https://github.com/kubernetes/enhancements/blob/master/keps/sig-api-machinery/2337-k8s.io-group-protection/README.md"
    ),
    printcolumn(
        name = "Deployment",
        type_ = "string",
        json_path = ".spec.deploymentName"
    ),
    printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type_ = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    // Go: `DeploymentName string`. Not required by the schema, as in Go: the
    // controller logs an empty name and does not retry it.
    /// Name of the Deployment the controller creates and owns for this Foo.
    #[serde(default)]
    #[schemars(transform = no_default)]
    pub deployment_name: String,

    // Go: `Replicas *int32`. `None` leaves the Deployment's own default (1).
    /// Desired number of nginx replicas, from 1 to 10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10))]
    pub replicas: Option<i32>,
}

// Go: types.go `FooStatus`.
/// The observed state of a Foo, written by the controller through the `/status` subresource.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// Available replicas of the owned Deployment, as last seen by the controller.
    #[serde(default)]
    #[schemars(transform = no_default)]
    pub available_replicas: i32,
}
// ANCHOR_END: foo

// ANCHOR: no_default
/// Drops the `default` that schemars derives from `#[serde(default)]`: the API
/// server would otherwise store the default in every Foo, which Go's CRD does not.
fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}
// ANCHOR_END: no_default
