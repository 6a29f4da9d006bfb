//! The catalogue as the user sees it: the built-in presets plus a `--catalogue FILE.toml` (custom
//! hardware described with flags is in `scenario_flags` of the command line: the option table's
//! rows), and TOML files read with errors that name the flag, the file and the line.

use std::path::Path;

use disagg_model::custom::CatalogueFile;
use disagg_model::Catalogue;

use crate::error::UsageError;
use crate::report::Warnings;

/// Reads the TOML file given to `flag` into `T`, with errors that name the flag and the file (and
/// the line, for syntax errors and unknown keys). The file is read with
/// `disagg_trace::input::read_input` (a regular file of at most 16 MiB, or `--max-input-bytes`).
pub fn read_toml<T: serde::de::DeserializeOwned>(flag: &str, path: &Path) -> Result<T, UsageError> {
    use disagg_trace::input::{read_input, InputKind};
    let text =
        read_input(path, InputKind::Config).map_err(|e| UsageError(format!("{flag}: {e}")))?;
    parse_toml(flag, &path.display().to_string(), &text)
}

/// Parses the TOML `text` of the file `name` given to `flag` into `T` (errors as [`read_toml`]).
pub fn parse_toml<T: serde::de::DeserializeOwned>(
    flag: &str,
    name: &str,
    text: &str,
) -> Result<T, UsageError> {
    toml::from_str(text).map_err(|e| {
        let mut msg = e.message().replace('\n', " ");
        if msg.trim().is_empty() {
            // Some syntax errors (e.g. `key =` and nothing after) come without a message.
            msg = "invalid TOML: expected a value".into();
        }
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(":{line}")
            })
            .unwrap_or_default();
        UsageError(format!("{flag}: {name}{at}: {msg}"))
    })
}

/// The built-in catalogue plus the file's entries; an entry that replaces a built-in one is told
/// through `warnings`.
pub fn load_catalogue(
    path: Option<&Path>,
    warnings: &mut Warnings,
) -> Result<Catalogue, UsageError> {
    let mut cat = Catalogue::builtin();
    if let Some(p) = path {
        let f: CatalogueFile = read_toml("--catalogue", p)?;
        for key in f.replaced(&cat) {
            let kind = key.split('.').next().unwrap_or("").trim_end_matches('s');
            warnings.warn(&format!(
                "--catalogue {}: {key} replaces the built-in {kind} of that name",
                p.display()
            ));
        }
        f.apply(&mut cat)
            .map_err(|e| UsageError(format!("{}: {e}", p.display())))?;
    }
    Ok(cat)
}
