//! Prints the Foo CustomResourceDefinition as YAML.
//!
//! `cargo run --bin crdgen > manifests/crd.yaml` regenerates the checked-in
//! file; a test fails when the two differ.
fn main() -> anyhow::Result<()> {
    print!("{}", sample_controller::crd::crd_yaml()?);
    Ok(())
}
