//! What each step needs RBAC to allow, in one place.
//!
//! Steps 1–7 check these before they start and exit with the list of what is
//! missing (`diagnose::preflight`); step 8 warns and goes on. The tables for
//! step 7 and step 8 are the rules of `manifests/rbac.yaml`, and a test below
//! keeps the two in step. (Go's sample-controller ships no RBAC: it runs with
//! whatever the kubeconfig's user may do.)

use crate::diagnose::{Permission, permission};

// ANCHOR: tables
/// Step 1 lists; steps 2–4 list and watch (the informers).
pub const STEP_2_TO_4: &[Permission] =
    &[LIST_FOOS, WATCH_FOOS, LIST_DEPLOYMENTS, WATCH_DEPLOYMENTS];

/// Step 1: list Foos and Deployments.
pub const STEP_1: &[Permission] = &[LIST_FOOS, LIST_DEPLOYMENTS];

/// Step 5: read, then create a Deployment and replace it (Go's `Create` and `Update`).
pub const STEP_5: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    UPDATE_DEPLOYMENTS,
];

/// Step 6: step 5, and a PUT to the Foo's status (Go's `UpdateStatus`).
pub const STEP_6: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    UPDATE_DEPLOYMENTS,
    UPDATE_FOO_STATUS,
];

/// Step 7, Go's whole program: step 6, and Events (kube's `Recorder` creates
/// an Event and patches a repeat into its series). ClusterRole
/// `sample-controller-step-7` in `manifests/rbac.yaml`.
pub const STEP_7: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    UPDATE_DEPLOYMENTS,
    UPDATE_FOO_STATUS,
    CREATE_EVENTS,
    PATCH_EVENTS,
];

/// Step 8, cluster-wide: server-side apply (`patch`) instead of `update` for
/// the Deployment and the Foo's status. ClusterRole `sample-controller` in
/// `manifests/rbac.yaml`.
pub const STEP_8: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    PATCH_DEPLOYMENTS,
    PATCH_FOO_STATUS,
    CREATE_EVENTS,
    PATCH_EVENTS,
];

/// Step 8 with `--leader-elect`, in the Lease's namespace only: read the
/// Lease, create it if missing, take, renew and release it. Role
/// `sample-controller-leader-election` in `manifests/rbac.yaml`.
pub const LEADER_ELECTION: &[Permission] = &[
    permission("get", "coordination.k8s.io", "leases"),
    permission("create", "coordination.k8s.io", "leases"),
    permission("patch", "coordination.k8s.io", "leases"),
];
// ANCHOR_END: tables

// The permissions the tables are made of, by name.
const LIST_FOOS: Permission = permission("list", "samplecontroller.k8s.io", "foos");
const WATCH_FOOS: Permission = permission("watch", "samplecontroller.k8s.io", "foos");
const LIST_DEPLOYMENTS: Permission = permission("list", "apps", "deployments");
const WATCH_DEPLOYMENTS: Permission = permission("watch", "apps", "deployments");
const CREATE_DEPLOYMENTS: Permission = permission("create", "apps", "deployments");
const UPDATE_DEPLOYMENTS: Permission = permission("update", "apps", "deployments");
const PATCH_DEPLOYMENTS: Permission = permission("patch", "apps", "deployments");
const UPDATE_FOO_STATUS: Permission = Permission {
    subresource: Some("status"),
    ..permission("update", "samplecontroller.k8s.io", "foos")
};
const PATCH_FOO_STATUS: Permission = Permission {
    subresource: Some("status"),
    ..permission("patch", "samplecontroller.k8s.io", "foos")
};
const CREATE_EVENTS: Permission = permission("create", "events.k8s.io", "events");
const PATCH_EVENTS: Permission = permission("patch", "events.k8s.io", "events");

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `verb group resource[/subresource]` for every verb of the rules of
    /// the object `kind`/`name` in manifests/rbac.yaml.
    fn manifest(kind: &str, name: &str) -> BTreeSet<String> {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/manifests/rbac.yaml"))
                .unwrap();
        let mut found = None;
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        for value in docs {
            if value["kind"].as_str() == Some(kind)
                && value["metadata"]["name"].as_str() == Some(name)
            {
                found = Some(value);
            }
        }
        let object = found.unwrap_or_else(|| panic!("no {kind} {name} in manifests/rbac.yaml"));
        let mut rules = BTreeSet::new();
        for rule in object["rules"].as_array().unwrap() {
            for group in rule["apiGroups"].as_array().unwrap() {
                for resource in rule["resources"].as_array().unwrap() {
                    for verb in rule["verbs"].as_array().unwrap() {
                        rules.insert(format!(
                            "{} {} {}",
                            verb.as_str().unwrap(),
                            group.as_str().unwrap(),
                            resource.as_str().unwrap()
                        ));
                    }
                }
            }
        }
        rules
    }

    fn table(permissions: &[Permission]) -> BTreeSet<String> {
        permissions
            .iter()
            .map(|p| {
                let resource = match p.subresource {
                    Some(sub) => format!("{}/{sub}", p.resource),
                    None => p.resource.to_string(),
                };
                format!("{} {} {resource}", p.verb, p.group)
            })
            .collect()
    }

    #[test]
    fn step_8s_table_is_the_sample_controller_cluster_role() {
        assert_eq!(table(STEP_8), manifest("ClusterRole", "sample-controller"));
    }

    #[test]
    fn step_7s_table_is_the_step_7_cluster_role() {
        assert_eq!(
            table(STEP_7),
            manifest("ClusterRole", "sample-controller-step-7")
        );
    }

    #[test]
    fn the_leader_election_table_is_the_lease_role() {
        assert_eq!(
            table(LEADER_ELECTION),
            manifest("Role", "sample-controller-leader-election")
        );
    }
}
