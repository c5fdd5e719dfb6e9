//! The values an `each` block reads from one object: gauge values, info label sets and
//! state-set members, each with the labels its path adds.

use super::*;

/// Upstream's `compiledGauge.value`: `Ok(None)` when `valueFrom` does not resolve
/// (and the element exists), which is silently skipped.
pub(super) fn gauge_value(
    it: Option<&Value>,
    value_from: &ValuePath,
    nil_is_zero: bool,
) -> Result<Option<EachValue>, String> {
    let Some(got) = value_from.get(it) else {
        if nil_is_zero {
            return Ok(Some(EachValue::new(0.0)));
        }
        if it.is_none_or(Value::is_null) {
            return Err("got nil while resolving path".into());
        }
        return Ok(None);
    };
    to_float64(Some(got), nil_is_zero)
        .map(|v| Some(EachValue::new(v)))
        .map_err(|e| format!("{value_from}: {e}"))
}

pub(super) fn gauge_values(
    path: &ValuePath,
    v: Option<&Value>,
    labels_from_path: &[(String, ValuePath)],
    label_from_key: &str,
    value_from: &ValuePath,
    nil_is_zero: bool,
) -> (Vec<EachValue>, Vec<String>) {
    let mut result = Vec::new();
    let mut errors = Vec::new();
    match v {
        Some(Value::Object(map)) => {
            // A one-segment valueFrom naming a key of this object takes that key's value.
            let direct_key = match value_from.segments() {
                [only] if !only.is_empty() && !only.contains(',') => Some(only.as_str()),
                _ => None,
            };
            for (key, it) in map {
                let mut ev = if direct_key == Some(key.as_str()) {
                    match to_float64(Some(it), nil_is_zero) {
                        Ok(value) => EachValue::new(value),
                        Err(e) => {
                            errors.push(format!("{path}: [{key}]: {e}"));
                            continue;
                        }
                    }
                } else {
                    // Upstream drops errors of this fallback silently.
                    match gauge_value(Some(it), value_from, nil_is_zero) {
                        Ok(Some(ev)) => ev,
                        _ => continue,
                    }
                };
                if !key.is_empty() && !label_from_key.is_empty() {
                    ev.labels.insert(label_from_key.to_string(), key.clone());
                }
                add_path_labels(Some(it), labels_from_path, &mut ev.labels);
                // Also relative to the object holding the entries.
                add_path_labels(v, labels_from_path, &mut ev.labels);
                result.push(ev);
            }
        }
        Some(Value::Array(items)) => {
            for (i, it) in items.iter().enumerate() {
                match gauge_value(Some(it), value_from, nil_is_zero) {
                    Ok(Some(mut ev)) => {
                        add_path_labels(Some(it), labels_from_path, &mut ev.labels);
                        result.push(ev);
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(format!("{path}: [{i}]: {e}")),
                }
            }
        }
        _ => match gauge_value(v, value_from, nil_is_zero) {
            Ok(Some(mut ev)) => {
                add_path_labels(v, labels_from_path, &mut ev.labels);
                result.push(ev);
            }
            Ok(None) => {}
            Err(e) => errors.push(format!("{path}: {e}")),
        },
    }
    (result, errors)
}

/// Upstream's `compiledInfo.values`: one sample of value 1 if any label resolves.
pub(super) fn info_value(
    v: Option<&Value>,
    labels_from_path: &[(String, ValuePath)],
) -> Option<EachValue> {
    v.filter(|v| !v.is_null())?;
    let mut ev = EachValue::new(1.0);
    add_path_labels(v, labels_from_path, &mut ev.labels);
    (!ev.labels.is_empty()).then_some(ev)
}

pub(super) fn info_values(
    path: &ValuePath,
    v: Option<&Value>,
    labels_from_path: &[(String, ValuePath)],
    label_from_key: &str,
) -> (Vec<EachValue>, Vec<String>) {
    let mut result = Vec::new();
    let mut errors = Vec::new();
    match v {
        Some(Value::Array(items)) => {
            result.extend(
                items
                    .iter()
                    .filter_map(|it| info_value(Some(it), labels_from_path)),
            );
        }
        Some(Value::Object(map)) => {
            let whole = info_value(v, labels_from_path);
            if let Some(w) = &whole
                && !label_from_key.is_empty()
                && w.labels.contains_key(label_from_key)
            {
                errors.push(format!(
                    "{path}: labelFromKey ({label_from_key}) generated labels conflict with labelsFromPath, consider renaming it"
                ));
            }
            for (key, it) in map {
                let mut ev = EachValue::new(1.0);
                if !key.is_empty() && !label_from_key.is_empty() {
                    ev.labels.insert(label_from_key.to_string(), key.clone());
                }
                add_path_labels(Some(it), labels_from_path, &mut ev.labels);
                if !ev.labels.is_empty() {
                    result.push(ev);
                }
            }
            result.extend(whole);
        }
        other => result.extend(info_value(other, labels_from_path)),
    }
    (result, errors)
}

/// Go's name for the dynamic type of a decoded JSON value, for error messages.
pub(super) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

pub(super) fn state_set_values(
    path: &ValuePath,
    v: Option<&Value>,
    labels_from_path: &[(String, ValuePath)],
    list: &[String],
    label_name: &str,
    value_from: &ValuePath,
) -> Result<Vec<EachValue>, String> {
    let Some(comparable) = value_from.get(v) else {
        return Ok(Vec::new());
    };
    let Value::String(value) = comparable else {
        let mut full = path.segments().to_vec();
        full.extend(value_from.segments().iter().cloned());
        return Err(format!(
            "[{}]: expected value for path to be string, got {}",
            full.join(","),
            go_type_name(comparable)
        ));
    };
    Ok(list
        .iter()
        .map(|entry| {
            let mut ev = EachValue::new(if value == entry { 1.0 } else { 0.0 });
            ev.labels.insert(label_name.to_string(), entry.clone());
            add_path_labels(v, labels_from_path, &mut ev.labels);
            ev
        })
        .collect())
}
