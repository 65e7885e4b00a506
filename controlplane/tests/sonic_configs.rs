//! SONiC's own configurations, rendered from sonic-buildimage's buffer and QoS templates for ten hwskus
//! across vendors (`configs/sonic/`, `scripts/render-sonic-configs.py`), import and validate as SONiC
//! accepts them: the tables the model does not use are reported once each as not modelled, an ASIC with no
//! personality is named, and nothing is refused.

mod common;

use common::swctl;

fn rendered() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/sonic");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_rendered_sonic_config_imports_and_validates() {
    let files = rendered();
    assert!(files.len() >= 6, "{files:?}");
    let mut hwskus = Vec::new();
    for file in &files {
        let path = file.to_str().unwrap();
        let import = swctl(&["import", path]);
        assert!(import.status.success(), "{path}: {}", String::from_utf8_lossy(&import.stderr));
        let out = swctl(&["validate", path]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains(": valid ("), "{path}:\n{text}");
        // Each table the model does not use is named once.
        for table in ["DEVICE_NEIGHBOR|", "DEVICE_NEIGHBOR_METADATA|"] {
            assert_eq!(
                text.matches(&format!("{table}: SONiC table not modelled")).count(),
                1,
                "{path}:\n{text}"
            );
        }
        assert!(!text.contains("error"), "{path}:\n{text}");
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        hwskus.push(json["DEVICE_METADATA"]["localhost"]["hwsku"].as_str().unwrap().to_owned());
        // Tomahawk 3 has no personality: the generic one runs, and the warning says so.
        if path.contains("Z9332f") {
            assert!(text.contains("no ASIC personality for DellEMC-Z9332f-O32"), "{text}");
        } else {
            assert!(!text.contains("no ASIC personality"), "{path}:\n{text}");
        }
    }
    let vendors = ["Arista", "Force10", "Dell", "ACS-MSN", "Celestica"];
    let covered = vendors.iter().filter(|v| hwskus.iter().any(|h| h.starts_with(*v))).count();
    assert!(covered >= 4, "{hwskus:?}");
}

#[test]
fn qos_params_of_a_rendered_config_are_sonic_mgmts() {
    // Arista-7050CX3-32S-C32 (Trident 3) t1, Ethernet0 (300 m) -> Ethernet8: qos_params.td3.yaml
    // topo-t1-lag 100000_300m publishes 59605 / 60228 (margin 4) and lossy_queue_1 113198.
    let file = rendered().into_iter().find(|f| f.to_str().unwrap().contains("7050CX3")).unwrap();
    let out =
        swctl(&["--json", "qos-params", file.to_str().unwrap(), "--src", "Ethernet0", "--dst", "Ethernet8"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let topo = &json["qos_params"]["td3"]["topo-any"];
    let xoff = &topo["100000_300m"]["xoff_1"];
    let near = |v: &serde_json::Value, published: u64, margin: u64| {
        v.as_u64().unwrap().abs_diff(published) <= margin
    };
    assert!(near(&xoff["pkts_num_trig_pfc"], 59605, 4), "{xoff}");
    assert!(near(&xoff["pkts_num_trig_ingr_drp"], 60228, 4), "{xoff}");
    assert!(near(&topo["lossy_queue_1"]["pkts_num_trig_egr_drp"], 113198, 2), "{topo}");
    assert_eq!(topo["cell_size"], 256);
}
