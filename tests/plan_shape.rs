//! The plan's shape check (`plan::shape`), with the registered kinds' sections: every unknown
//! key, wrong type and number out of range at once, in the plan's own words.

use fabricplan::plan::shape::check;
use toml::de::DeTable;

fn problems(text: &str) -> Vec<(String, String, String)> {
    let doc = DeTable::parse(text).unwrap();
    check(&doc, &fabricplan::kinds::CATALOG)
        .problems
        .into_iter()
        .map(|p| (p.code.to_string(), p.message, p.help.unwrap_or_default()))
        .collect()
}

#[test]
fn every_unknown_key_and_wrong_type_at_once_in_plain_words() {
    let p = problems(
        "format-version = 1\nname = \"x\"\n[[node]]\nname = \"a\"\nssh = { hots = \"h\", port = \"22\" }\n[tests.rdma-bw]\nduraton-s = 6\nqps = \"4\"\nenabled = 1\n[[tests.nccl]]\ncollective = \"all_reduce\"\nwarmup = 1.5\n",
    );
    let codes: Vec<&str> = p.iter().map(|(c, _, _)| c.as_str()).collect();
    assert_eq!(
        codes,
        [
            "plan::unknown-key",
            "plan::type",
            "plan::unknown-key",
            "plan::type",
            "plan::type",
            "plan::type"
        ],
        "{p:#?}"
    );
    assert!(p[0].1.contains("`hots`"), "{p:?}");
    assert_eq!(p[0].2, "did you mean `host`?");
    assert_eq!(p[2].2, "did you mean `duration-s`?");
    assert_eq!(p[3].1, "`qps` must be a whole number, not a string");
    assert!(p[3].2.starts_with("`qps` is a whole number from "), "{p:?}");
    for (_, m, h) in &p {
        for internal in ["u32", "u16", "struct", "Raw", "invalid type", "expected"] {
            assert!(!m.contains(internal) && !h.contains(internal), "{m} / {h}");
        }
    }
}

#[test]
fn missing_keys_and_table_forms() {
    let p = problems("name = \"x\"\n[[node]]\nssh = { host = \"h\" }\n[[tests.rdma-bw]]\n");
    let msgs: Vec<&str> = p.iter().map(|(_, m, _)| m.as_str()).collect();
    assert!(msgs.contains(&"missing field `format-version`"), "{msgs:?}");
    assert!(
        msgs.contains(&"missing field `name` in `[[node]]`"),
        "{msgs:?}"
    );
    let t = p.iter().find(|(c, _, _)| c == "plan::type").unwrap();
    assert!(
        t.2.contains("write `[tests.rdma-bw]`, not `[[tests.rdma-bw]]`"),
        "{t:?}"
    );
}

#[test]
fn maps_take_any_key_and_check_the_values() {
    let p = problems(
        "format-version = 1\nname = \"x\"\n[[node]]\nname = \"a\"\nenv = { PATH = \"/x\", N = 3 }\n[gates.anything]\npass = 90\n",
    );
    assert_eq!(p.len(), 2, "{p:?}");
    assert!(p.iter().all(|(c, _, _)| c == "plan::type"));
}
