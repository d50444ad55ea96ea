//! The bench's figures: each printed beside its budget as it is measured and kept under a
//! stable key, so `--json FILE` can write them all as one object and the bench can exit
//! non-zero naming every figure over its budget.

use serde_json::{Map, Value};

/// The figures measured so far.
#[derive(Default)]
pub struct Report {
    figures: Map<String, Value>,
    budgets: Map<String, Value>,
    /// Keys of the figures over their budget, in the order measured.
    pub over: Vec<String>,
}

impl Report {
    /// Prints `name` and `value` (with its budget and verdict when it has one) and keeps the
    /// value under `key`.
    pub fn figure(&mut self, key: &str, name: &str, value: f64, unit: &str, budget: Option<f64>) {
        self.figures.insert(key.into(), number(value));
        match budget {
            Some(b) => {
                self.budgets.insert(key.into(), number(b));
                let verdict = if value <= b {
                    "ok"
                } else {
                    self.over.push(key.into());
                    "OVER BUDGET"
                };
                println!("  {name:<48} {value:>14.1} {unit:<18} budget {b:>12.0}  {verdict}");
            }
            None => println!("  {name:<48} {value:>14.1} {unit}"),
        }
    }

    /// A figure that must stay within ±5 % of `reference` to be called flat: printed with the
    /// difference, never a budget.
    pub fn scaling(&mut self, key: &str, name: &str, value: f64, unit: &str, reference: f64) {
        self.figures.insert(key.into(), number(value));
        let change = 100.0 * (value - reference) / reference;
        let flat = if change.abs() <= 5.0 {
            "flat"
        } else {
            "NOT FLAT"
        };
        println!("  {name:<48} {value:>14.1} {unit:<18} {change:>+7.1}% vs {reference:.1}  {flat}");
    }

    /// Every figure, its budgets under `budgets` and the keys over budget under `over_budget`.
    pub fn json(&self) -> Value {
        let mut all = self.figures.clone();
        all.insert("budgets".into(), Value::Object(self.budgets.clone()));
        all.insert(
            "over_budget".into(),
            Value::Array(self.over.iter().cloned().map(Value::String).collect()),
        );
        Value::Object(all)
    }
}

/// Whole numbers as JSON integers (instruction counts, bytes), the rest as floats; NaN (a figure
/// the module did not report) as `null`.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_budgets_and_verdicts_go_into_one_object() {
        let mut r = Report::default();
        r.figure("get_status", "GET /", 60_000.0, "insns", Some(50_000.0));
        r.figure(
            "echo_per_byte",
            "echo byte",
            14.25,
            "insns/byte",
            Some(15.0),
        );
        r.figure("init", "init", 5_000_000.0, "insns", None);
        r.figure("idle_heap_bytes", "idle", f64::NAN, "bytes", None);
        r.scaling("discover_10", "discover, 10", 105.0, "insns", 100.0);
        assert_eq!(r.over, vec!["get_status".to_string()]);
        let j = r.json();
        assert_eq!(j["get_status"], 60_000);
        assert_eq!(j["echo_per_byte"], 14.25);
        assert_eq!(j["init"], 5_000_000);
        assert_eq!(j["idle_heap_bytes"], Value::Null);
        assert_eq!(j["discover_10"], 105);
        assert_eq!(j["budgets"]["get_status"], 50_000);
        assert!(j["budgets"].get("init").is_none());
        assert_eq!(j["over_budget"], serde_json::json!(["get_status"]));
    }
}
