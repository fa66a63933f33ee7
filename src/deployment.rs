//! The Deployment a Foo owns, and the owner-reference checks around it.
//!
//! Go: `newDeployment` in
//! [controller.go](https://github.com/kubernetes/sample-controller/blob/v0.37.1/controller.go)
//! and `NewControllerRef` / `GetControllerOf` / `IsControlledBy` in
//! apimachinery's `pkg/apis/meta/v1/controller_ref.go`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use crate::Foo;

// ANCHOR: new_deployment
/// Builds the Deployment a Foo asks for: `spec.replicas` nginx pods, labelled
/// `app: nginx` and `controller: <foo name>`, owned by the Foo.
///
/// The owner reference makes kube-controller-manager's garbage collector delete the
/// Deployment with its Foo, and lets the controller recognise its own
/// Deployments (see [`is_controlled_by`]).
pub fn new_deployment(foo: &Foo) -> Deployment {
    let labels = BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        ("controller".to_string(), foo.name_any()),
    ]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: foo.namespace(),
            owner_references: Some(vec![new_controller_ref(foo)]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: foo.spec.replicas,
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".to_string(),
                        image: Some("nginx:latest".to_string()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}
// ANCHOR_END: new_deployment

// ANCHOR: owner_refs
/// A controller owner reference to `foo`. Go: `metav1.NewControllerRef`.
///
/// Unlike kube's `Resource::controller_owner_ref`, this sets
/// `blockOwnerDeletion` as Go does, and still works for a Foo without a UID
/// (as in Go's unit tests), leaving the UID empty.
pub fn new_controller_ref(foo: &Foo) -> OwnerReference {
    OwnerReference {
        api_version: Foo::api_version(&()).into_owned(),
        kind: Foo::kind(&()).into_owned(),
        name: foo.name_any(),
        uid: foo.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The owner reference marked `controller: true`, if any. Go: `metav1.GetControllerOf`.
pub fn controller_of<K: Resource>(obj: &K) -> Option<&OwnerReference> {
    obj.meta()
        .owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether `deployment`'s controller is this very Foo (same UID, so a Foo
/// deleted and recreated under the same name does not count).
/// Go: `metav1.IsControlledBy`.
pub fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    match (controller_of(deployment), foo.uid()) {
        (Some(owner), Some(uid)) => owner.uid == uid,
        _ => false,
    }
}
// ANCHOR_END: owner_refs

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FooSpec;

    fn foo(uid: Option<&str>, replicas: Option<i32>) -> Foo {
        let mut foo = Foo::new(
            "test",
            FooSpec {
                deployment_name: "test-deployment".into(),
                replicas,
            },
        );
        foo.metadata.namespace = Some("default".into());
        foo.metadata.uid = uid.map(String::from);
        foo
    }

    #[test]
    fn new_deployment_matches_go_new_deployment() {
        let d = new_deployment(&foo(Some("uid-1"), Some(3)));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "test-deployment",
                    "namespace": "default",
                    "ownerReferences": [{
                        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
                        "kind": "Foo",
                        "name": "test",
                        "uid": "uid-1",
                        "controller": true,
                        "blockOwnerDeletion": true
                    }]
                },
                "spec": {
                    "replicas": 3,
                    "selector": {"matchLabels": {"app": "nginx", "controller": "test"}},
                    "template": {
                        "metadata": {"labels": {"app": "nginx", "controller": "test"}},
                        "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}
                    }
                }
            })
        );
    }

    #[test]
    fn new_deployment_leaves_replicas_unset_when_the_foo_does() {
        let d = new_deployment(&foo(Some("uid-1"), None));
        assert_eq!(d.spec.replicas, None);
    }

    #[test]
    fn new_controller_ref_works_without_a_uid_like_go() {
        let r = new_controller_ref(&foo(None, Some(1)));
        assert_eq!(r.uid, "");
        assert_eq!(r.controller, Some(true));
        assert_eq!(r.block_owner_deletion, Some(true));
    }

    #[test]
    fn a_deployment_made_for_a_foo_is_controlled_by_it() {
        let owner = foo(Some("uid-1"), Some(1));
        assert!(is_controlled_by(&new_deployment(&owner), &owner));
    }

    #[test]
    fn a_foo_recreated_with_a_new_uid_does_not_control_the_old_deployment() {
        let old = foo(Some("uid-1"), Some(1));
        let new = foo(Some("uid-2"), Some(1));
        assert!(!is_controlled_by(&new_deployment(&old), &new));
    }

    #[test]
    fn a_deployment_without_owner_references_is_not_controlled() {
        let owner = foo(Some("uid-1"), Some(1));
        let mut d = new_deployment(&owner);
        d.metadata.owner_references = Some(vec![]);
        assert!(!is_controlled_by(&d, &owner));
    }

    #[test]
    fn a_non_controller_owner_reference_does_not_count() {
        let owner = foo(Some("uid-1"), Some(1));
        let mut d = new_deployment(&owner);
        d.metadata.owner_references.as_mut().unwrap()[0].controller = Some(false);
        assert!(controller_of(&d).is_none());
        assert!(!is_controlled_by(&d, &owner));
    }
}
