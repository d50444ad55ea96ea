//! `cargo xtask bench --json FILE`: every figure of the bench as one JSON object with stable
//! keys (issue 18). The lockstep bench (`tools/iris/examples/bench/`) writes its own figures;
//! xtask adds what only it measures (the image's size, the hostile suite's figures) and, when
//! the reference peers ran (`--peers`), their figures under `peers`. `write_json` is the one
//! place that assembles the file.

use serde_json::Value;
use std::path::Path;

/// Writes `figures` (the bench's object) with `extra` figures merged in and `peers` under the
/// key `peers` (`null` when the peers did not run) to `path`.
pub fn write_json(
    path: &Path,
    figures: Value,
    extra: &[(&str, u64)],
    peers: Option<Value>,
) -> Result<(), String> {
    let text = serde_json::to_string_pretty(&assemble(figures, extra, peers)?)
        .map_err(|e| format!("figures as JSON: {e}"))?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// The object `write_json` writes.
fn assemble(figures: Value, extra: &[(&str, u64)], peers: Option<Value>) -> Result<Value, String> {
    let Value::Object(mut all) = figures else {
        return Err("the bench's figures are not a JSON object".into());
    };
    for (key, value) in extra {
        all.insert((*key).into(), Value::from(*value));
    }
    all.insert("peers".into(), peers.unwrap_or(Value::Null));
    Ok(Value::Object(all))
}

/// Reads the bench's figures file.
pub fn read_figures(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str::<Value>(&text)
        .map_err(|e| format!("{}: not JSON: {e}", path.display()))
        .and_then(|v| match v {
            Value::Object(_) => Ok(v),
            _ => Err(format!("{}: not a JSON object", path.display())),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn extra_figures_and_peers_join_the_bench_figures() {
        let figures = json!({"get_status": 70_739, "echo_per_byte": 40.8, "budgets": {}});
        let v = assemble(
            figures.clone(),
            &[("image_text_rodata", 633_972)],
            Some(json!({"rmcp": {"echo_small": 167_000}})),
        )
        .unwrap();
        assert_eq!(v["get_status"], 70_739);
        assert_eq!(v["echo_per_byte"], 40.8);
        assert_eq!(v["image_text_rodata"], 633_972);
        assert_eq!(v["peers"]["rmcp"]["echo_small"], 167_000);
        let without = assemble(figures, &[], None).unwrap();
        assert_eq!(without["peers"], Value::Null);
        assert!(assemble(json!([1]), &[], None).is_err());
    }

    #[test]
    fn the_file_round_trips() {
        let dir = std::env::temp_dir().join(format!("xtask-bench-json-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("figures.json");
        write_json(
            &path,
            json!({"discover": 1}),
            &[("hostile_heap_peak", 2)],
            None,
        )
        .unwrap();
        let v = read_figures(&path).unwrap();
        assert_eq!(
            v,
            json!({"discover": 1, "hostile_heap_peak": 2, "peers": null})
        );
        std::fs::write(&path, "[]").unwrap();
        assert!(
            read_figures(&path)
                .unwrap_err()
                .contains("not a JSON object")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
