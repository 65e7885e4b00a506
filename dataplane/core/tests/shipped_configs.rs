//! Every configuration shipped in `configs/` validates cleanly: no error and no warning.

use lossless_core::model::config::{ConfigDb, compile};
use std::path::Path;

fn yaml_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") && is_switch_config(&path) {
            out.push(path);
        }
    }
}

/// Topology and scenario files (`switches:`/`hosts:`/`links:`/`steps:`) live beside the switch configs they
/// use; only the latter are CONFIG_DB content.
fn is_switch_config(path: &Path) -> bool {
    let text = std::fs::read_to_string(path).unwrap();
    !text
        .lines()
        .any(|l| ["switches:", "hosts:", "links:", "steps:", "topology:"].iter().any(|k| l.starts_with(k)))
}

#[test]
fn every_shipped_profile_validates_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    files.sort();
    assert!(files.len() >= 4, "found {files:?}");
    for file in files {
        let db = ConfigDb::from_yaml_str(&std::fs::read_to_string(&file).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        match compile(&db) {
            Ok(c) => assert!(
                c.warnings.is_empty(),
                "{}: {:?}",
                file.display(),
                c.warnings.iter().map(ToString::to_string).collect::<Vec<_>>()
            ),
            Err(e) => panic!("{}: {e}", file.display()),
        }
    }
}
