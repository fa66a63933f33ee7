//! Step 5 exercise: print the Deployment step 5 would create for a Foo manifest
//! (no cluster needed).
//!
//!     cargo run --example step5_preview_deployment -- manifests/example-foo.yaml

use anyhow::Context as _;
use sample_controller::Foo;
use sample_controller::deployment::new_deployment;

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "manifests/example-foo.yaml".into());
    let yaml = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    let mut foo: Foo = serde_saphyr::from_str(&yaml).with_context(|| format!("parsing {path}"))?;
    // What the API server would have filled in by the time the controller sees it.
    foo.metadata
        .namespace
        .get_or_insert_with(|| "default".into());
    foo.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
    print!("{}", serde_saphyr::to_string(&new_deployment(&foo))?);
    Ok(())
}
