//! Request bodies: JSON objects whose keys are the CLI's option names in snake_case, laid over a
//! base value (the CLI's defaults, or a preset), with one-line errors that name the field.

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

/// The body as a JSON object (an empty body is `{}`).
pub fn object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
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
                    return Err(ApiError::bad(Some(k), format!("{k}: {e}")));
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
                    format!("{key}: invalid type: {}, expected {expected}", describe(&v)),
                )
            }),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => format!("string {s:?}"),
        Value::Number(n) => format!("number {n}"),
        Value::Bool(b) => format!("boolean `{b}`"),
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
        assert!(e.message.starts_with("b: invalid type: string"), "{e:?}");
        let o = object(br#"{"zz": 3}"#).unwrap();
        let e = overlay(&S::default(), &o).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("zz"));
        let s: S = overlay(&S::default(), &object(br#"{"a": 3}"#).unwrap()).unwrap();
        assert_eq!(s.a, 3);
    }
}
