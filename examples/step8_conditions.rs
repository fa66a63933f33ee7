//! Step 8 example: status conditions and `observedGeneration`.
//!
//! Foo's status has only `availableReplicas` (and the API server prunes
//! fields its schema does not list), so this example brings a small CRD of its
//! own, `Widget` (`examples.samplecontroller.k8s.io/v1alpha1`), installs it at
//! start, and reconciles every Widget into a `Ready` condition: `True` when
//! `spec.size` is within 1..=10, `False` otherwise.
//!
//!     cargo run --example step8_conditions -- --namespace default
//!     kubectl apply -f - <<'EOF'
//!     apiVersion: examples.samplecontroller.k8s.io/v1alpha1
//!     kind: Widget
//!     metadata: {name: example-widget}
//!     spec: {size: 3}
//!     EOF
//!     kubectl get widgets                          # READY True
//!     kubectl patch widget example-widget --type merge -p '{"spec":{"size":42}}'
//!     kubectl get widget example-widget -o jsonpath='{.status}'
//!
//! Installing the CRD needs `create`/`patch` on customresourcedefinitions
//! (cluster-wide); a real controller ships its CRD as a manifest instead.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use sample_controller::config::{ClientFlags, NamespaceFlag, client_from_flags};
use sample_controller::telemetry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The field manager of our server-side applies.
const MANAGER: &str = "step8-conditions";
/// The condition type this controller owns.
const READY: &str = "Ready";
/// The sizes a Widget may ask for.
const SIZES: std::ops::RangeInclusive<i32> = 1..=10;

// Go (kubebuilder): a types.go with `+kubebuilder:subresource:status`, and
// controller-gen for the CRD YAML.
/// A Widget asks for something of a given size; the controller says whether it can.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "examples.samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    // The group ends in .k8s.io, which the API server protects (KEP-2337).
    annotation("api-approved.kubernetes.io", "unapproved, experimental-only"),
    printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#
    )
)]
pub struct WidgetSpec {
    // Deliberately not limited by the schema (no `range`), so that the
    // controller has something to report. Check in the schema what can be
    // checked there; conditions are for what only the controller can find out.
    /// How big the Widget should be; the controller accepts 1 to 10.
    pub size: i32,
}

// Go: the status struct of a kubebuilder type, with
// `Conditions []metav1.Condition` and `ObservedGeneration int64`.
/// What the controller last observed about a Widget.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// The `metadata.generation` this status describes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,

    /// The latest observations of the Widget's state, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The schema of `metav1.Condition` as Kubernetes' own types declare it,
/// including `+listType=map` / `+listMapKey=type`: server-side apply then
/// merges conditions by type, so each field manager owns only its own types.
fn conditions_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {"type": "string", "maxLength": 1024, "minLength": 1},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {"type": "string", "maxLength": 316}
            }
        }
    })
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    client: ClientFlags,
    #[command(flatten)]
    namespace: NamespaceFlag,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("writing the status of {0}: {1}")]
    WriteStatus(String, #[source] kube::Error),
    #[error("the Widget has no namespace")]
    NoNamespace,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    telemetry::init();
    let args = Args::parse();
    let client = client_from_flags(&args.client).await?.client;

    // Install (or update) the CRD by server-side apply, then wait until the
    // API server serves it. Go: an apiextensions clientset Create, then
    // polling for the Established condition (envtest's CRDInstallOptions does this).
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Widget::crd();
    let crd_name = crd.name_any();
    crds.patch(
        &crd_name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await
    .with_context(|| format!("applying CRD {crd_name}"))?;
    let established = await_condition(crds, &crd_name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .with_context(|| format!("CRD {crd_name} not Established within 30 s"))??;
    tracing::info!("CRD {crd_name} established");

    // Go (controller-runtime): ctrl.NewControllerManagedBy(mgr).For(&Widget{}).Complete(r).
    tracing::info!("watching Widgets in {}", args.namespace.describe());
    let widgets = args.namespace.api::<Widget>(&client);
    Controller::new(widgets, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::warn!("{e}"); // Go: utilruntime.HandleError
            }
        })
        .await;
    tracing::info!("stopped");
    Ok(())
}

/// One Widget: compute the status it should have, and write it only if it
/// differs from the status it has.
async fn reconcile(widget: Arc<Widget>, client: Arc<Client>) -> Result<Action, Error> {
    let ns = widget.namespace().ok_or(Error::NoNamespace)?;
    let key = format!("{ns}/{}", widget.name_any());
    let rv = widget.resource_version().unwrap_or_default();

    // observedGeneration: the API server bumps metadata.generation on every
    // change to the spec (not to metadata or status). Copying it into the
    // status tells a client *which* spec this status describes: if
    // status.observedGeneration < metadata.generation, the controller has not
    // caught up with the latest change yet, and `Ready` may be stale.
    // (`kubectl rollout status` reads Deployments the same way.)
    let generation = widget.metadata.generation;
    let size = widget.spec.size;
    let (status, reason, message) = if SIZES.contains(&size) {
        (
            "True",
            "SizeInRange",
            format!("size {size} is within {SIZES:?}"),
        )
    } else {
        (
            "False",
            "SizeOutOfRange",
            format!("size {size} is outside {SIZES:?}"),
        )
    };

    // lastTransitionTime is when `status` last *changed*: keep the old time
    // while True stays True (even if reason or message change).
    // Go: meta.SetStatusCondition does exactly this.
    let current = widget.status.as_ref();
    let current_ready = current.and_then(|s| s.conditions.iter().find(|c| c.type_ == READY));
    let last_transition_time = match current_ready {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    let ready = Condition {
        type_: READY.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time,
        observed_generation: generation,
    };

    // The comparison: only what this controller owns (observedGeneration and
    // its own condition type; other writers may own other conditions). Equal
    // means no write: a reconcile triggered by our own last status write, a
    // label change or a restart costs no request, and a status holding a
    // fresh timestamp could never set off a write, watch, write... loop.
    if current.and_then(|s| s.observed_generation) == generation && current_ready == Some(&ready) {
        tracing::info!("{key}: status up to date at resourceVersion {rv}; no write");
        return Ok(Action::await_change());
    }

    // Server-side apply of the status subresource: we send only the fields we
    // own, as field manager MANAGER. Go: Status().Patch(ctx, w, client.Apply, ...)
    // (or Status().Update, which needs the current resourceVersion).
    let patch = Patch::Apply(json!({
        "apiVersion": Widget::api_version(&()),
        "kind": Widget::kind(&()),
        "status": WidgetStatus {
            observed_generation: generation,
            conditions: vec![ready],
        },
    }));
    Api::<Widget>::namespaced((*client).clone(), &ns)
        .patch_status(
            &widget.name_any(),
            &PatchParams::apply(MANAGER).force(),
            &patch,
        )
        .await
        .map_err(|e| Error::WriteStatus(key.clone(), e))?;
    tracing::info!(
        "{key}: wrote status Ready={status} ({reason}), observedGeneration {}",
        generation.unwrap_or_default()
    );
    Ok(Action::await_change())
}

/// After a failed reconcile: try again in 5 s. Go: `AddRateLimited`.
fn error_policy(_widget: Arc<Widget>, _error: &Error, _client: Arc<Client>) -> Action {
    Action::requeue(Duration::from_secs(5))
}
