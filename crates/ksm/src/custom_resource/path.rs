//! Paths into an object, with kube-state-metrics' custom-resource semantics.
//!
//! A path is a list of segments, each resolved against the value the previous one
//! produced:
//!
//! * on an object, a segment is a key; `k=v` returns the value of `k` when it is the
//!   string `v`, and otherwise falls back to the key `k=v` itself;
//! * on a list, a segment is an index (`"0"`, `"-1"` counts from the end);
//! * `[key=value]` picks the first object in a list whose `key` equals `value`,
//!   compared as a string, then as a number (via [`to_float64`]), then as a bool.
//!
//! Anything that does not resolve (missing key, index out of range, wrong shape) gives
//! `None`; JSON `null` counts as missing, as Go's `nil` does upstream. There are no
//! wildcards in v2.20 paths; `*` only has a meaning in `labelsFromPath` keys.

use serde_json::Value;

use super::value::to_float64;

/// A path that does not compile (only list lookups can be malformed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid list lookup: {0}")]
pub struct PathError(pub String);

#[derive(Debug, Clone, PartialEq)]
enum Op {
    /// A map key (with the `k=v` variant) or a list index.
    Key(String),
    /// `[key=value]` over a list of objects.
    Find {
        key: String,
        value: String,
        number: Option<f64>,
        boolean: Option<bool>,
    },
}

/// A compiled path; the empty path resolves to the value itself.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ValuePath {
    ops: Vec<Op>,
    segments: Vec<String>,
}

impl ValuePath {
    pub fn compile<S: AsRef<str>>(segments: &[S]) -> Result<Self, PathError> {
        let mut ops = Vec::with_capacity(segments.len());
        for part in segments {
            let part = part.as_ref();
            if part.len() >= 2 && part.starts_with('[') && part.ends_with(']') {
                let inner = &part[1..part.len() - 1];
                let Some((key, value)) = inner.split_once('=') else {
                    return Err(PathError(part.to_string()));
                };
                ops.push(Op::Find {
                    key: key.to_string(),
                    value: value.to_string(),
                    number: to_float64(Some(&Value::String(value.to_string())), false).ok(),
                    boolean: go_parse_bool(value),
                });
            } else {
                ops.push(Op::Key(part.to_string()));
            }
        }
        Ok(ValuePath {
            ops,
            segments: segments.iter().map(|s| s.as_ref().to_string()).collect(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// The segments as written in the configuration.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Resolves the path against `obj`; `None` when any step does not resolve.
    pub fn get<'a>(&self, obj: Option<&'a Value>) -> Option<&'a Value> {
        let mut cur = obj.filter(|v| !v.is_null())?;
        for op in &self.ops {
            cur = apply(op, cur).filter(|v| !v.is_null())?;
        }
        Some(cur)
    }
}

/// `[a,b,c]`, as upstream prints paths in its error messages.
impl std::fmt::Display for ValuePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}]", self.segments.join(","))
    }
}

fn apply<'a>(op: &Op, v: &'a Value) -> Option<&'a Value> {
    match op {
        Op::Key(part) => match v {
            Value::Object(map) => {
                // `k=v`: exactly one `=`, and the key holds that very string.
                let mut pieces = part.split('=');
                if let (Some(k), Some(val), None) = (pieces.next(), pieces.next(), pieces.next())
                    && let Some(found @ Value::String(s)) = map.get(k)
                    && s == val
                {
                    return Some(found);
                }
                map.get(part.as_str())
            }
            Value::Array(list) => {
                let i: i64 = go_atoi(part)?;
                let len = list.len() as i64;
                let i = if i < 0 { i + len } else { i };
                if i < 0 || i >= len {
                    return None;
                }
                list.get(usize::try_from(i).ok()?)
            }
            _ => None,
        },
        Op::Find {
            key,
            value,
            number,
            boolean,
        } => {
            let Value::Array(list) = v else {
                return None;
            };
            list.iter().find(|item| {
                let Value::Object(m) = item else {
                    return false;
                };
                let Some(candidate) = m.get(key.as_str()) else {
                    return false;
                };
                if matches!(candidate, Value::String(s) if s == value) {
                    return true;
                }
                if let Some(n) = number
                    && let Ok(c) = to_float64(Some(candidate), false)
                    && c == *n
                {
                    return true;
                }
                matches!((boolean, candidate), (Some(b), Value::Bool(c)) if b == c)
            })
        }
    }
}

/// Go's `strconv.Atoi`: optional sign, decimal digits, nothing else.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseBool`.
pub(crate) fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom_resource::testdata::cr;
    use serde_json::json;

    fn get(path: &[&str]) -> Option<Value> {
        ValuePath::compile(path)
            .expect("compiles")
            .get(Some(&cr()))
            .cloned()
    }

    // Upstream Test_valuePath_Get.
    #[test]
    fn upstream_get_cases() {
        assert_eq!(get(&["spec", "replicas"]), Some(json!(1)));
        assert_eq!(
            get(&["status", "condition_values", "[name=b]", "value"]),
            Some(json!(66))
        );
        assert_eq!(get(&["spec", "order", "0", "value"]), Some(json!(true)));
        assert_eq!(get(&["metadata", "labels", "foo"]), Some(json!("bar")));
        assert_eq!(
            get(&["spec", "order", "[id=3]", "value"]),
            Some(json!(false))
        );
        assert_eq!(
            get(&["spec", "order", "[value=false]", "id"]),
            Some(json!(3))
        );
    }

    #[test]
    fn negative_and_out_of_range_indices() {
        assert_eq!(get(&["spec", "order", "-1", "id"]), Some(json!(3)));
        assert_eq!(get(&["spec", "order", "-2", "id"]), Some(json!(1)));
        assert_eq!(get(&["spec", "order", "-3"]), None);
        assert_eq!(get(&["spec", "order", "5"]), None);
        assert_eq!(get(&["spec", "order", "+1", "id"]), Some(json!(3)));
        assert_eq!(get(&["spec", "order", "x"]), None);
        assert_eq!(get(&["spec", "order", " 1"]), None);
    }

    #[test]
    fn key_equals_value_segment() {
        assert_eq!(
            get(&["metadata", "annotations", "bar=baz"]),
            Some(json!("baz"))
        );
        // Not equal: falls back to the literal key, which does not exist.
        assert_eq!(get(&["metadata", "annotations", "bar=nope"]), None);
        let obj = json!({"a=b": 7, "a": "c"});
        let p = ValuePath::compile(&["a=b"]).unwrap();
        assert_eq!(p.get(Some(&obj)), Some(&json!(7)));
    }

    #[test]
    fn list_lookup_compares_as_number_and_bool() {
        let obj = json!({"l": [
            {"k": "True", "n": "first"},
            {"k": 2, "n": "second"},
            {"k": "50%", "n": "third"},
            {"k": true, "n": "fourth"},
        ]});
        let n = |seg: &str| {
            ValuePath::compile(&["l", seg, "n"])
                .unwrap()
                .get(Some(&obj))
                .cloned()
        };
        // "true" as a number is 1, and the string "True" converts to 1 as well.
        assert_eq!(n("[k=true]"), Some(json!("first")));
        assert_eq!(n("[k=2.0]"), Some(json!("second")));
        assert_eq!(n("[k=0.5]"), Some(json!("third")));
        assert_eq!(n("[k=t]"), Some(json!("fourth")));
        assert_eq!(n("[k=nothing]"), None);
        assert_eq!(n("[missing=1]"), None);
        // A value with '=' in it: only the first '=' splits.
        let obj = json!({"l": [{"k": "a=b", "n": 1}]});
        let p = ValuePath::compile(&["l", "[k=a=b]", "n"]).unwrap();
        assert_eq!(p.get(Some(&obj)), Some(&json!(1)));
    }

    #[test]
    fn invalid_list_lookup_is_a_compile_error() {
        assert_eq!(
            ValuePath::compile(&["status", "[Ready]"]).unwrap_err(),
            PathError("[Ready]".into())
        );
        // "[]" has no '=' either.
        assert!(ValuePath::compile(&["[]"]).is_err());
    }

    #[test]
    fn null_is_missing_and_empty_path_is_identity() {
        let obj = json!({"a": null, "b": {"c": 1}});
        assert_eq!(ValuePath::compile(&["a"]).unwrap().get(Some(&obj)), None);
        assert_eq!(
            ValuePath::compile::<&str>(&[]).unwrap().get(Some(&obj)),
            Some(&obj)
        );
        assert_eq!(
            ValuePath::compile(&["b", "c", "d"])
                .unwrap()
                .get(Some(&obj)),
            None
        );
    }

    #[test]
    fn display_like_upstream() {
        let p = ValuePath::compile(&["status", "conditions", "[type=Ready]"]).unwrap();
        assert_eq!(p.to_string(), "[status,conditions,[type=Ready]]");
        assert_eq!(ValuePath::default().to_string(), "[]");
    }
}
