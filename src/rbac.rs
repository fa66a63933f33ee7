//! What RBAC must allow, layer by layer, in one place.
//!
//! Each table is what a program built up to that layer asks of the API
//! server; a step names the one it needs and checks it before it starts,
//! exiting with the list of what is missing (`diagnose::preflight`), or
//! warns and goes on. [`GO_CONTROLLER`] and [`SERVER_SIDE_APPLY`] are the
//! rules of `manifests/rbac.yaml`, and a test below keeps the two in step.
//! (Go's sample-controller ships no RBAC: it runs with whatever the
//! kubeconfig's user may do.)

use crate::diagnose::{Permission, permission};

// ANCHOR: tables
/// A client that lists Foos and Deployments once.
pub const LIST: &[Permission] = &[LIST_FOOS, LIST_DEPLOYMENTS];

/// Two informers list, then watch, Foos and Deployments.
pub const INFORMERS: &[Permission] = &[LIST_FOOS, WATCH_FOOS, LIST_DEPLOYMENTS, WATCH_DEPLOYMENTS];

/// The informers, and a sync that creates a Deployment and replaces it (Go's
/// `Create` and `Update`).
pub const WRITE_DEPLOYMENTS: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    UPDATE_DEPLOYMENTS,
];

/// [`WRITE_DEPLOYMENTS`], and a PUT to the Foo's status (Go's `UpdateStatus`).
pub const WRITE_STATUS: &[Permission] = &[
    LIST_FOOS,
    WATCH_FOOS,
    LIST_DEPLOYMENTS,
    WATCH_DEPLOYMENTS,
    CREATE_DEPLOYMENTS,
    UPDATE_DEPLOYMENTS,
    UPDATE_FOO_STATUS,
];

/// Go's whole program: [`WRITE_STATUS`], and Events (kube's `Recorder`
/// creates an Event and patches a repeat into its series). ClusterRole
/// `sample-controller-step-7` in `manifests/rbac.yaml`.
pub const GO_CONTROLLER: &[Permission] = &[
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

/// The same controller with server-side apply (`patch`) instead of `update`
/// for the Deployment and the Foo's status, cluster-wide. ClusterRole
/// `sample-controller` in `manifests/rbac.yaml`.
pub const SERVER_SIDE_APPLY: &[Permission] = &[
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

/// `--leader-elect`, in the Lease's namespace only: read the Lease, create it
/// if missing, take, renew and release it. Role
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
    fn the_server_side_apply_table_is_the_sample_controller_cluster_role() {
        assert_eq!(
            table(SERVER_SIDE_APPLY),
            manifest("ClusterRole", "sample-controller")
        );
    }

    #[test]
    fn the_go_controller_table_is_the_step_7_cluster_role() {
        assert_eq!(
            table(GO_CONTROLLER),
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
