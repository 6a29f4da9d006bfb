//! Option objects from outside (a JSON API body, a Python call): keys are the CLI's option names
//! in snake_case, laid over a base value (the CLI's defaults, or a preset), with one-line errors
//! that name the field. The status of an [`ApiError`] is the HTTP status the web API answers with.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// An error answer: status, one-line message, and what it is about.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// 400 (malformed, unknown field, wrong type), 404, 405, 413 (over a limit), 422 (invalid
    /// value), 500 (a bug).
    pub status: u16,
    /// One line.
    pub message: String,
    /// The request field it is about, if one.
    pub field: Option<String>,
    /// The limit exceeded (413): name and maximum.
    pub limit: Option<(&'static str, f64)>,
}

impl ApiError {
    /// A 400.
    pub fn bad(field: Option<&str>, message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            message: one_line(message.into()),
            field: field.map(str::to_string),
            limit: None,
        }
    }
    /// A 422: the value is well-formed but not valid.
    pub fn invalid(field: Option<&str>, message: impl Into<String>) -> Self {
        ApiError {
            status: 422,
            ..ApiError::bad(field, message)
        }
    }
    /// A 413: over limit `name` (maximum `max`).
    pub fn limit(name: &'static str, max: f64, field: Option<&str>, message: String) -> Self {
        ApiError {
            status: 413,
            limit: Some((name, max)),
            ..ApiError::bad(field, message)
        }
    }
    /// The JSON body: `{"error": ..., "field": ..., "limit": ..., "max": ...}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("error".into(), Value::String(self.message.clone()));
        if let Some(f) = &self.field {
            m.insert("field".into(), Value::String(f.clone()));
        }
        if let Some((name, max)) = self.limit {
            m.insert("limit".into(), Value::String(name.into()));
            // Whole limits as integers (200000, not 200000.0).
            let max = if max.fract() == 0.0 && max.abs() < 9e15 {
                serde_json::json!(max as i64)
            } else {
                serde_json::json!(max)
            };
            m.insert("max".into(), max);
        }
        Value::Object(m)
    }
}

fn one_line(s: String) -> String {
    if s.contains('\n') {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        s
    }
}

/// The body as a JSON object (an empty body is `{}`). A path-like field anywhere in it (see
/// [`path_field`]) is refused: the API never opens a file on the server's disk.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => {
            no_paths(&m)?;
            Ok(m)
        }
        Ok(other) => Err(ApiError::bad(
            None,
            format!(
                "the request body must be a JSON object, got {}",
                kind(&other)
            ),
        )),
        Err(e) => Err(ApiError::bad(None, format!("malformed JSON: {e}"))),
    }
}

/// Is `key` a field that names a file or directory: the CLI's file options (`trace_file`,
/// `workload_file`, `catalogue`, `config`, `spec`, the output flags) and anything ending in
/// `_file`, `_path`, `_dir` or `_out`.
pub fn path_field(key: &str) -> bool {
    const NAMES: &[&str] = &[
        "catalogue",
        "config",
        "spec",
        "file",
        "path",
        "dir",
        "trace",
        "jsonl",
        "csv",
        "plot",
        "out",
        "output_file",
        "requests_out",
        "resume",
    ];
    let k = key.to_ascii_lowercase().replace('-', "_");
    NAMES.contains(&k.as_str())
        || ["_file", "_path", "_dir", "_out", "_files"]
            .iter()
            .any(|s| k.ends_with(s))
}

/// 422 for the first path-like key with a value (not `null`: a scenario as the API returns it has
/// `"trace_file": null`) in `m` or in any object nested in it. The message names the key, never
/// its value.
fn no_paths(m: &Map<String, Value>) -> Result<(), ApiError> {
    fn walk(v: &Value) -> Option<&str> {
        match v {
            Value::Object(m) => m.iter().find_map(|(k, v)| {
                if path_field(k) && !v.is_null() {
                    Some(k.as_str())
                } else {
                    walk(v)
                }
            }),
            Value::Array(a) => a.iter().find_map(walk),
            _ => None,
        }
    }
    for (k, v) in m {
        let key = if path_field(k) && !v.is_null() {
            Some(k.as_str())
        } else {
            walk(v)
        };
        if let Some(key) = key {
            let mut shown: String = key.chars().take(64).collect();
            if shown.len() < key.len() {
                shown.push('…');
            }
            let hint = if shown == "trace_file" {
                "; replay traces with `disagg run --trace-file`"
            } else {
                "; use the `disagg` command line for files"
            };
            return Err(ApiError::invalid(
                Some(&shown),
                format!("{shown}: the API does not read files on the server{hint}"),
            ));
        }
    }
    Ok(())
}

/// Serde's "invalid type: floating point `1.5`, expected u64" as "field 'x': expected a whole
/// number, got 1.5"; other messages with the field name in front.
pub fn friendly(field: &str, serde_msg: &str) -> String {
    let rest = serde_msg
        .strip_prefix("invalid type: ")
        .or_else(|| serde_msg.strip_prefix("invalid value: "));
    let Some((got, expected)) = rest.and_then(|r| r.rsplit_once(", expected ")) else {
        return format!("field '{field}': {serde_msg}");
    };
    // Serde's "at line 1 column 12" tail means nothing to the caller of an overlay.
    let expected = expected.split(" at line ").next().unwrap_or(expected);
    let whole = |max: &str| format!("a whole number from 0 to {max}");
    let want = match expected {
        "u8" => whole("255"),
        "u16" => whole("65535"),
        "u32" => whole("4294967295"),
        "u64" | "usize" => "a whole number".to_string(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number (may be negative)".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        "a sequence" => "an array".to_string(),
        other => other.to_string(),
    };
    let shown = got_value(got);
    let neg_or_big = expected.starts_with('u') && serde_msg.starts_with("invalid value");
    let want = if neg_or_big && expected == "u64" {
        format!("{want} from 0 to 18446744073709551615")
    } else {
        want
    };
    format!("field '{field}': expected {want}, got {shown}")
}

/// Serde's description of a value as the JSON the caller sent: "floating point `1.5`" is 1.5,
/// "string \"x\"" is "x", "map" is an object.
fn got_value(got: &str) -> String {
    let tick = |s: &str| {
        s.strip_prefix('`')
            .and_then(|s| s.strip_suffix('`'))
            .map(str::to_string)
    };
    for p in ["floating point ", "integer ", "boolean "] {
        if let Some(v) = got.strip_prefix(p).and_then(tick) {
            return v;
        }
    }
    if let Some(s) = got.strip_prefix("string ") {
        let mut s = s.to_string();
        if s.chars().count() > 40 {
            s = s.chars().take(40).collect::<String>() + "…\"";
        }
        return format!("the string {s}");
    }
    match got {
        "map" => "an object".to_string(),
        "sequence" => "an array".to_string(),
        "unit value" | "null" => "null".to_string(),
        other => other.to_string(),
    }
}

/// What kind of JSON value `v` is.
pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The field serde's "unknown field `x`, expected ..." message names.
fn unknown_field(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    Some(rest[..rest.find('`')?].to_string())
}

/// `base` with every key of `obj` laid over it. Unknown keys and values of the wrong type are 400s
/// naming the key.
pub fn overlay<T: Serialize + DeserializeOwned>(
    base: &T,
    obj: &Map<String, Value>,
) -> Result<T, ApiError> {
    let Value::Object(base) = serde_json::to_value(base).expect("a struct serialises") else {
        unreachable!("a struct serialises to an object")
    };
    let with = |keys: &mut dyn Iterator<Item = (&String, &Value)>| {
        let mut m = base.clone();
        for (k, v) in keys {
            m.insert(k.clone(), v.clone());
        }
        serde_json::from_value::<T>(Value::Object(m))
    };
    match with(&mut obj.iter()) {
        Ok(t) => Ok(t),
        Err(e) => {
            let msg = e.to_string();
            if let Some(f) = unknown_field(&msg) {
                return Err(ApiError::bad(Some(&f), msg));
            }
            // Find the key at fault: the first one that fails on its own.
            for (k, v) in obj {
                if let Err(e) = with(&mut std::iter::once((k, v))) {
                    let msg = e.to_string();
                    // A well-formed name the option does not know (`"mode": "both"`): the
                    // option's own message, a 422 like every other invalid value.
                    if msg.starts_with("unknown --") || msg.starts_with("--") {
                        return Err(ApiError::invalid(Some(k), api_spelling(&msg).0));
                    }
                    return Err(ApiError::bad(Some(k), friendly(k, &msg)));
                }
            }
            Err(ApiError::bad(None, msg))
        }
    }
}

/// Takes key `key` out of `obj`, of the type `T`, if present (400 on a wrong type).
pub fn take<T: DeserializeOwned>(
    obj: &mut Map<String, Value>,
    key: &str,
    expected: &str,
) -> Result<Option<T>, ApiError> {
    match obj.remove(key) {
        None => Ok(None),
        Some(v) => serde_json::from_value::<T>(v.clone())
            .map(Some)
            .map_err(|_| {
                ApiError::bad(
                    Some(key),
                    format!("field '{key}': expected {expected}, got {}", describe(&v)),
                )
            }),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() > 40 => {
            format!("the string {:?}…", s.chars().take(40).collect::<String>())
        }
        Value::String(s) => format!("the string {s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => kind(other).to_string(),
    }
}

/// A one-line validation message from the engine, with the CLI's `--flag-name` spellings turned
/// into the API's `flag_name`, and the first such name (the field at fault).
pub fn api_spelling(msg: &str) -> (String, Option<String>) {
    let mut out = String::with_capacity(msg.len());
    let mut first = None;
    let b = msg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let at_word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'-');
        if at_word_start && b[i..].starts_with(b"--") {
            let mut j = i + 2;
            while j < b.len()
                && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit() || b[j] == b'-')
            {
                j += 1;
            }
            if j > i + 2 {
                let name = msg[i + 2..j].trim_end_matches('-').replace('-', "_");
                if first.is_none() {
                    first = Some(name.clone());
                }
                out.push_str(&name);
                out.push_str(&msg[i + 2 + name.len()..j]);
                i = j;
                continue;
            }
        }
        let ch = msg[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    (out, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spelling() {
        assert_eq!(
            api_spelling("--rate: must be a positive number, got -1"),
            (
                "rate: must be a positive number, got -1".into(),
                Some("rate".into())
            )
        );
        assert_eq!(
            api_spelling("unknown --kv-compress-at 'x'; valid: transit, link"),
            (
                "unknown kv_compress_at 'x'; valid: transit, link".into(),
                Some("kv_compress_at".into())
            )
        );
        assert_eq!(api_spelling("a -- b µs").0, "a -- b µs");
    }

    #[test]
    fn serde_messages_read_as_the_caller_wrote() {
        #[derive(serde::Serialize, serde::Deserialize, Default, Debug)]
        #[serde(deny_unknown_fields, default)]
        struct S {
            prompt_tokens: u64,
            n: u32,
            on: bool,
        }
        let msg = |body: &[u8]| {
            overlay(&S::default(), &object(body).unwrap())
                .unwrap_err()
                .message
        };
        assert_eq!(
            msg(br#"{"prompt_tokens": 1.5}"#),
            "field 'prompt_tokens': expected a whole number, got 1.5"
        );
        assert_eq!(
            msg(br#"{"prompt_tokens": -3}"#),
            "field 'prompt_tokens': expected a whole number from 0 to 18446744073709551615, got -3"
        );
        assert_eq!(
            msg(br#"{"n": 4294967296}"#),
            "field 'n': expected a whole number from 0 to 4294967295, got 4294967296"
        );
        assert_eq!(
            msg(br#"{"on": "yes"}"#),
            "field 'on': expected true or false, got the string \"yes\""
        );
        assert_eq!(
            msg(br#"{"n": {"a": 1}}"#),
            "field 'n': expected a whole number from 0 to 4294967295, got an object"
        );
        for m in [msg(br#"{"n": [1]}"#), msg(br#"{"on": null}"#)] {
            assert!(m.starts_with("field '") && !m.contains('`'), "{m}");
        }
    }

    #[test]
    fn path_fields() {
        for k in [
            "trace_file",
            "workload_file",
            "catalogue",
            "config",
            "spec",
            "requests_out",
            "x_path",
            "Trace-File",
        ] {
            assert!(path_field(k), "{k}");
            let body = format!("{{\"{k}\": \"/etc/passwd\"}}");
            let e = object(body.as_bytes()).unwrap_err();
            assert_eq!(e.status, 422);
            assert!(!e.message.contains("/etc/passwd"), "{}", e.message);
        }
        for k in [
            "prompt_tokens",
            "output",
            "trace_format",
            "workload",
            "link",
            "profile",
        ] {
            assert!(!path_field(k), "{k}");
        }
        let e = object(br#"{"batch": [{"link": "x"}, {"trace_file": "/dev/zero"}]}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("trace_file"));
        // A scenario as the API answers it (the page sends it back) has "trace_file": null.
        for body in [&br#"{"trace_file": null}"#[..], br#"{"a": {"spec": null}}"#] {
            assert!(object(body).is_ok());
        }
        for v in ["\"\"", "0", "false", "[]", "{}"] {
            let body = format!("{{\"trace_file\": {v}}}");
            assert!(object(body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn an_unknown_option_name_is_a_422_in_the_api_spelling() {
        let base = crate::Scenario::default();
        for (body, msg) in [
            (
                serde_json::json!({"mode": "both"}),
                "unknown mode 'both'; valid: disagg, colocated",
            ),
            (
                serde_json::json!({"first_token": "last"}),
                "unknown first_token 'last'; valid: prefill, decode",
            ),
        ] {
            let e = overlay(&base, body.as_object().unwrap()).unwrap_err();
            assert_eq!((e.status, e.message.as_str()), (422, msg));
        }
        let e = overlay(&base, serde_json::json!({"send": 5}).as_object().unwrap()).unwrap_err();
        assert_eq!(e.status, 400);
    }

    #[test]
    fn overlay_names_the_field() {
        #[derive(serde::Serialize, serde::Deserialize, Default, Debug)]
        #[serde(deny_unknown_fields, default)]
        struct S {
            a: u32,
            b: f64,
        }
        let o = object(br#"{"a": 3, "b": "x"}"#).unwrap();
        let e = overlay(&S::default(), &o).unwrap_err();
        assert_eq!(e.status, 400);
        assert_eq!(e.field.as_deref(), Some("b"));
        assert_eq!(
            e.message,
            "field 'b': expected a number, got the string \"x\""
        );
        let o = object(br#"{"zz": 3}"#).unwrap();
        let e = overlay(&S::default(), &o).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("zz"));
        let s: S = overlay(&S::default(), &object(br#"{"a": 3}"#).unwrap()).unwrap();
        assert_eq!(s.a, 3);
    }
}
