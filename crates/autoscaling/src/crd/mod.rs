//! The autoscaling CustomResourceDefinitions, wire-compatible with gocrane/api v0.11.

pub mod autoscaling;
pub mod prediction;

/// The shape of a cron schedule, as a CEL string literal for the API server's `matches()`:
/// an optional `CRON_TZ=`/`TZ=` prefix, then five fields or a `@descriptor` (`@every 1h`). It
/// catches the usual mistake (six fields, a missing one) at `kubectl apply`; the field syntax
/// itself is checked by craned's parser, which says what is wrong in the EHPA's status.
pub const CRON_SHAPE_CEL: &str = r"r'^\s*((CRON_)?TZ=\S+\s+)?(@[A-Za-z]+(\s+\S+)?|[-0-9A-Za-z*?,/]+(\s+[-0-9A-Za-z*?,/]+){4})\s*$'";

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// What a CRD declares, for tests that compare it with Crane's.
pub mod inspect {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    /// The first version's printer columns as [name, type, JSONPath].
    pub fn columns(crd: &CustomResourceDefinition) -> Vec<[String; 3]> {
        crd.spec
            .versions
            .first()
            .and_then(|v| v.additional_printer_columns.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|c| [c.name, c.type_, c.json_path])
            .collect()
    }

    /// The first version's OpenAPI schema as JSON (`null` without one).
    pub fn schema(crd: &CustomResourceDefinition) -> serde_json::Value {
        crd.spec
            .versions
            .first()
            .and_then(|v| v.schema.as_ref())
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::CRON_SHAPE_CEL;
    use crate::cron::Schedule;

    // RE2 (the API server's `matches()`) and the regex crate agree on this syntax.
    fn shape() -> regex::Regex {
        let pattern = CRON_SHAPE_CEL
            .strip_prefix("r'")
            .and_then(|p| p.strip_suffix('\''))
            .expect("a CEL raw string literal");
        regex::Regex::new(pattern).expect("the cron shape compiles")
    }

    #[test]
    fn the_api_servers_cron_shape_admits_every_schedule_craned_parses() {
        let shape = shape();
        for schedule in [
            "0 9 * * *",
            " 30 18 * * MON-FRI ",
            "*/15 0-6,22-23 1,15 JAN-MAR ?",
            "CRON_TZ=Asia/Shanghai 0 6 * * *",
            "TZ=Europe/Paris 0 6 * * *",
            "@daily",
            "@every 1h30m",
            "@hourly",
        ] {
            assert!(
                Schedule::parse(schedule).is_ok(),
                "craned parses {schedule:?}"
            );
            assert!(
                shape.is_match(schedule),
                "the API server admits {schedule:?}"
            );
        }
    }

    #[test]
    fn the_api_servers_cron_shape_refuses_the_wrong_number_of_fields() {
        let shape = shape();
        for schedule in [
            "",
            "0 9 * *",
            "0 0 9 * * *",
            "CRON_TZ=Asia/Shanghai",
            "CRON_TZ=Asia/Shanghai 0 9 * *",
            "0 9 * * * @daily",
        ] {
            assert!(
                Schedule::parse(schedule).is_err(),
                "craned refuses {schedule:?}"
            );
            assert!(
                !shape.is_match(schedule),
                "the API server refuses {schedule:?}"
            );
        }
    }
}
