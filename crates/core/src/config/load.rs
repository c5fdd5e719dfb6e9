//! Strict YAML loading and validation.
//!
//! Strict because a misspelt key (`seriesQuerry`) that is silently ignored turns into an HPA that
//! never scales, which is far harder to debug than a startup error naming the line.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_saphyr::{DuplicateKeyPolicy, MessageFormatter, Options, UserMessageFormatter};

/// Why a configuration could not be used. `Display` is one line naming the file, and the line,
/// column and key where known, so it can be printed as the process' last words.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// Not YAML, or YAML not matching the schema (unknown key, wrong type, missing field).
    #[error("{file}:{}{message}", position(*line, *column))]
    Parse {
        file: String,
        line: Option<u64>,
        column: Option<u64>,
        message: String,
    },

    /// Parsed, but semantically wrong.
    #[error("{file}: invalid configuration: {error}")]
    Invalid {
        file: String,
        #[source]
        error: ValidationError,
    },

    /// The directory watch could not be set up.
    #[error("{}: cannot watch for changes: {reason}", path.display())]
    Watch { path: PathBuf, reason: String },

    /// Reload self-metrics could not be registered (usually a duplicate registration).
    #[error("cannot register config reload metrics: {0}")]
    Metrics(String),
}

fn position(line: Option<u64>, column: Option<u64>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{l}:{c}: "),
        (Some(l), None) => format!("{l}: "),
        _ => " ".to_owned(),
    }
}

/// A semantic problem found after parsing: which field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct ValidationError {
    /// Path of the offending field as written in the file, e.g. `rules[2].seriesQuery`; empty
    /// when the problem is not tied to one field.
    pub field: String,
    pub message: String,
}

impl ValidationError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ValidationError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Prefixes the field path, so nested validators can report paths relative to themselves and
    /// the parent adds where they sit: `e.at("rules[2]")` turns `seriesQuery` into
    /// `rules[2].seriesQuery`.
    pub fn at(mut self, parent: impl AsRef<str>) -> Self {
        let parent = parent.as_ref();
        self.field = match (parent.is_empty(), self.field.is_empty()) {
            (true, _) => self.field,
            (false, true) => parent.to_owned(),
            (false, false) if self.field.starts_with('[') => format!("{parent}{}", self.field),
            (false, false) => format!("{parent}.{}", self.field),
        };
        self
    }
}

/// Checks a parsed configuration beyond what its types express (regexes compile, ranges are
/// ordered, references resolve). Run after every parse, including reloads, so a bad reload is
/// rejected before it replaces a good config.
pub trait Validate {
    /// The default accepts everything, for config types whose schema says it all.
    fn validate(&self) -> Result<(), ValidationError> {
        Ok(())
    }
}

/// Options shared by every load: duplicate keys are errors (YAML says they are, and "last one
/// wins" hides copy-paste mistakes); no source snippets because messages must stay one line.
fn options() -> Options {
    // `Options` is non-exhaustive: start from the defaults and set fields.
    let mut o = Options::default();
    o.duplicate_keys = DuplicateKeyPolicy::Error;
    o.with_snippet = false;
    o
}

/// Turns a serde-saphyr error into `file:line:col: message`, without saphyr's own location
/// suffix (we print the location first, compiler-style) and without control characters, which
/// could otherwise forge log lines from a hostile file.
fn parse_error(name: &str, err: &serde_saphyr::Error) -> ConfigError {
    let err = err.without_snippet();
    let location = err.location();
    let message: String = UserMessageFormatter
        .format_message(err)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    ConfigError::Parse {
        file: name.to_owned(),
        line: location.map(|l| l.line()).filter(|&l| l > 0),
        column: location.map(|l| l.column()).filter(|&c| c > 0),
        message,
    }
}

/// Parses YAML text strictly; `name` is what error messages call the source (usually the file
/// name). Unknown keys are rejected only if `T` uses `#[serde(deny_unknown_fields)]`, which every
/// ferrocrane config type does.
pub fn parse_yaml_str<T: DeserializeOwned>(name: &str, text: &str) -> Result<T, ConfigError> {
    serde_saphyr::from_str_with_options(text, options()).map_err(|e| parse_error(name, &e))
}

/// Like [`parse_yaml_str`], then [`Validate::validate`].
pub fn parse_and_validate_str<T: DeserializeOwned + Validate>(
    name: &str,
    text: &str,
) -> Result<T, ConfigError> {
    let value: T = parse_yaml_str(name, text)?;
    value.validate().map_err(|error| ConfigError::Invalid {
        file: name.to_owned(),
        error,
    })?;
    Ok(value)
}

/// Reads and strictly parses a YAML file. Errors name the file as given by the caller.
pub fn load_yaml<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<T, ConfigError> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_yaml_str(&path.display().to_string(), &text)
}

/// Reads, strictly parses and validates a YAML file: what services call at startup.
pub fn load_and_validate<T: DeserializeOwned + Validate>(
    path: impl AsRef<Path>,
) -> Result<T, ConfigError> {
    let path = path.as_ref();
    let text = read_text(path)?;
    parse_and_validate_str(&path.display().to_string(), &text)
}

fn read_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    utf8_text(&path.display().to_string(), bytes)
}

/// YAML must be UTF-8 here; the error points at the first bad byte so it can be found.
pub fn utf8_text(name: &str, bytes: Vec<u8>) -> Result<String, ConfigError> {
    String::from_utf8(bytes).map_err(|e| ConfigError::Parse {
        file: name.to_owned(),
        line: None,
        column: None,
        message: format!(
            "not valid UTF-8 (byte offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Rule {
        series_query: String,
        #[serde(default)]
        metrics_query: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        rules: Vec<Rule>,
        #[serde(default)]
        interval_seconds: u32,
    }

    impl Validate for Cfg {
        fn validate(&self) -> Result<(), ValidationError> {
            for (i, r) in self.rules.iter().enumerate() {
                if r.series_query.trim().is_empty() {
                    return Err(ValidationError::new("seriesQuery", "must not be empty")
                        .at(format!("rules[{i}]")));
                }
            }
            Ok(())
        }
    }

    #[test]
    fn parses_valid() {
        let c: Cfg = parse_and_validate_str(
            "c.yaml",
            "rules:\n  - seriesQuery: up\n    metricsQuery: sum(<<.Series>>)\ninterval_seconds: 5\n",
        )
        .expect("valid");
        assert_eq!(c.rules[0].series_query, "up");
        assert_eq!(c.interval_seconds, 5);
    }

    #[test]
    fn unknown_key_names_file_line_and_key() {
        let text = "rules:\n  - seriesQuery: up\n  - seriesQuerry: down\n";
        let e = parse_yaml_str::<Cfg>("config.yaml", text).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("config.yaml:3:"), "{msg}");
        assert!(msg.contains("seriesQuerry"), "{msg}");
        assert!(msg.contains("seriesQuery"), "expected keys listed: {msg}");
        assert!(!msg.contains('\n'), "one line: {msg:?}");
        match e {
            ConfigError::Parse { line, column, .. } => {
                assert_eq!(line, Some(3));
                assert!(column.is_some());
            }
            other => panic!("expected Parse, got {other:?}"),
        }
    }

    #[test]
    fn type_errors_and_duplicates_have_positions() {
        let e = parse_yaml_str::<Cfg>("c.yaml", "rules: []\ninterval_seconds: soon\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.yaml:2:"), "{e}");
        let e = parse_yaml_str::<Cfg>("c.yaml", "rules: []\nrules: []\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.yaml:2:"), "{e}");
        let e = parse_yaml_str::<Cfg>("c.yaml", "rules: [\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c.yaml:"), "{e}");
        let e = parse_yaml_str::<Cfg>("c.yaml", "{}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rules"), "missing field named: {e}");
    }

    #[test]
    fn validation_failure_names_file_and_field() {
        let e =
            parse_and_validate_str::<Cfg>("c.yaml", "rules:\n  - seriesQuery: ' '\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.yaml: invalid configuration: rules[0].seriesQuery: must not be empty"
        );
    }

    #[test]
    fn load_from_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("c.yaml");
        std::fs::write(&p, "rules:\n  - seriesQuery: up\n").expect("write");
        let c: Cfg = load_and_validate(&p).expect("loads");
        assert_eq!(c.rules.len(), 1);
        let missing = dir.path().join("missing.yaml");
        let e = load_yaml::<Cfg>(&missing).unwrap_err().to_string();
        assert!(e.contains("missing.yaml: cannot read"), "{e}");
        std::fs::write(&p, [0xff, 0xfe, b'\n']).expect("write");
        let e = load_yaml::<Cfg>(&p).unwrap_err().to_string();
        assert!(e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn validation_paths_compose() {
        assert_eq!(
            ValidationError::new("[0]", "x").at("rules").field,
            "rules[0]"
        );
        assert_eq!(ValidationError::new("", "x").at("a").field, "a");
        assert_eq!(ValidationError::new("b", "x").at("").field, "b");
        assert_eq!(ValidationError::new("", "bad").to_string(), "bad");
    }
}
