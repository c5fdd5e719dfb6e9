//! `Table` answers (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), what
//! `kubectl get podmetrics` and `kubectl get nodemetrics` ask for. The columns are those of
//! metrics-server's table convertor, which prometheus-adapter serves: `Name`, one column per
//! resource in name order (`cpu`, `memory`; a pod's usage summed over its containers), then
//! `Window`. Each row carries the object's metadata as a `PartialObjectMetadata`, or the whole
//! object with `includeObject=Object`.

use serde::Serialize;

use super::model::{ItemMeta, NodeMetrics, PodMetrics, Usage};
use ferrocrane_core::quantity::{Quantity, QuantityFormat, format_milli};

/// A table the client asked for: the `meta.k8s.io` version and what each row carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRequest {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub api_version: &'static str,
    pub include: Include,
}

/// `includeObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

/// The table the `Accept` header asks for, if its first media range this server can answer
/// is a Table (a plain `application/json` or `*/*` earlier in the list wins, as in Go's
/// negotiation by order).
pub fn table_request(accept: Option<&str>, include_object: Option<&str>) -> Option<TableRequest> {
    let include = match include_object {
        Some("None") => Include::None,
        Some("Object") => Include::Object,
        _ => Include::Metadata,
    };
    for range in accept?.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("");
        let params: Vec<(&str, &str)> = parts.filter_map(|p| p.split_once('=')).collect();
        let param = |k: &str| params.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        match (media, param("as")) {
            ("application/json", Some("Table")) => {
                if param("g") != Some("meta.k8s.io") {
                    continue;
                }
                let api_version = match param("v") {
                    Some("v1") => "meta.k8s.io/v1",
                    Some("v1beta1") => "meta.k8s.io/v1beta1",
                    _ => continue,
                };
                return Some(TableRequest {
                    api_version,
                    include,
                });
            }
            ("application/json" | "*/*" | "application/*", None) => return None,
            _ => {}
        }
    }
    None
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Table {
    kind: &'static str,
    api_version: &'static str,
    metadata: Empty,
    /// `null` for an empty table, as Go writes a nil slice.
    column_definitions: Option<Vec<Column>>,
    rows: Option<Vec<Row>>,
}

#[derive(Debug, Serialize)]
struct Empty {}

#[derive(Debug, Serialize)]
struct Column {
    name: &'static str,
    #[serde(rename = "type")]
    type_: &'static str,
    format: &'static str,
    description: &'static str,
    priority: i32,
}

#[derive(Debug, Serialize)]
struct Row {
    cells: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<serde_json::Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartialObjectMetadata<'a> {
    kind: &'static str,
    api_version: &'static str,
    metadata: &'a ItemMeta,
}

fn columns() -> Vec<Column> {
    let column = |name, format, description| Column {
        name,
        type_: "string",
        format,
        description,
        priority: 0,
    };
    vec![
        column("Name", "name", "Name of the resource"),
        column("cpu", "quantity", ""),
        column("memory", "quantity", ""),
        column("Window", "duration", ""),
    ]
}

fn table(request: TableRequest, rows: Vec<Row>) -> Table {
    let empty = rows.is_empty();
    Table {
        kind: "Table",
        api_version: request.api_version,
        metadata: Empty {},
        column_definitions: (!empty).then(columns),
        rows: (!empty).then_some(rows),
    }
}

fn object<T: Serialize>(
    request: TableRequest,
    meta: &ItemMeta,
    full: &T,
) -> Option<serde_json::Value> {
    match request.include {
        Include::None => None,
        Include::Metadata => serde_json::to_value(PartialObjectMetadata {
            kind: "PartialObjectMetadata",
            api_version: request.api_version,
            metadata: meta,
        })
        .ok(),
        Include::Object => serde_json::to_value(full).ok(),
    }
}

/// Quantities added as Go's `Quantity.Add` does for these integers: the sum keeps the format.
fn sum(quantities: &[&str], format: QuantityFormat) -> String {
    let milli: i64 = quantities
        .iter()
        .filter_map(|q| Quantity::parse(q).ok())
        .fold(0i64, |acc, q| acc.saturating_add(q.milli_value()));
    format_milli(milli, format)
}

/// The pods' table; `objects` are the items with their type meta when whole objects are asked.
pub fn pods_table(request: TableRequest, pods: &[PodMetrics]) -> Table {
    let rows = pods
        .iter()
        .map(|p| {
            let usages: Vec<&Usage> = p.containers.iter().map(|c| &c.usage).collect();
            let cpu: Vec<&str> = usages.iter().map(|u| u.cpu.as_str()).collect();
            let memory: Vec<&str> = usages.iter().map(|u| u.memory.as_str()).collect();
            Row {
                cells: vec![
                    p.metadata.name.clone(),
                    sum(&cpu, QuantityFormat::DecimalSi),
                    sum(&memory, QuantityFormat::BinarySi),
                    p.window.clone(),
                ],
                object: object(request, &p.metadata, p),
            }
        })
        .collect();
    table(request, rows)
}

pub fn nodes_table(request: TableRequest, nodes: &[NodeMetrics]) -> Table {
    let rows = nodes
        .iter()
        .map(|n| Row {
            cells: vec![
                n.metadata.name.clone(),
                n.usage.cpu.clone(),
                n.usage.memory.clone(),
                n.window.clone(),
            ],
            object: object(request, &n.metadata, n),
        })
        .collect();
    table(request, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

    #[test]
    fn negotiates_tables_in_accept_order() {
        let t = table_request(Some(KUBECTL), None).unwrap();
        assert_eq!(
            (t.api_version, t.include),
            ("meta.k8s.io/v1", Include::Metadata)
        );
        let t = table_request(
            Some("application/json; as=Table; v=v1beta1; g=meta.k8s.io"),
            Some("Object"),
        )
        .unwrap();
        assert_eq!(
            (t.api_version, t.include),
            ("meta.k8s.io/v1beta1", Include::Object)
        );
        for plain in [
            None,
            Some("application/json"),
            Some("*/*"),
            Some("application/json, application/json;as=Table;v=v1;g=meta.k8s.io"),
            Some("application/json;as=Table;v=v2;g=meta.k8s.io"),
            Some("application/json;as=Table;v=v1;g=other.io"),
        ] {
            assert_eq!(table_request(plain, None), None, "{plain:?}");
        }
    }

    #[test]
    fn sums_container_usage_keeping_the_format() {
        assert_eq!(sum(&["250m", "50m"], QuantityFormat::DecimalSi), "300m");
        assert_eq!(sum(&["64Mi", "16Mi"], QuantityFormat::BinarySi), "80Mi");
        assert_eq!(sum(&["1", "500m"], QuantityFormat::DecimalSi), "1500m");
        assert_eq!(sum(&[], QuantityFormat::BinarySi), "0");
    }

    #[test]
    fn an_empty_table_has_null_columns_and_rows() {
        let t = table_request(Some(KUBECTL), None).unwrap();
        let v = serde_json::to_value(pods_table(t, &[])).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {},
                               "columnDefinitions": null, "rows": null})
        );
    }
}
