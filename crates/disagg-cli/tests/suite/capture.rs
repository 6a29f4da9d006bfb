//! `disagg_cli::capture`: the command line as a library (what the Python package's `disagg.cli`
//! calls). `--help` and `--version` are output, as the binary prints them with exit status 0;
//! bad arguments are one-line errors.

#[test]
fn help_and_version_are_output_not_errors() {
    assert_eq!(
        disagg_cli::capture(&["--version"]).unwrap(),
        format!("disagg {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert!(disagg_cli::capture(&["--help"])
        .unwrap()
        .contains("Usage: disagg"));
    let run_help = disagg_cli::capture(&["run", "--help"]).unwrap();
    assert!(run_help.contains("Usage: disagg run"));
    assert!(run_help.contains("--rate"));
    assert!(disagg_cli::capture(&["run", "-h"])
        .unwrap()
        .contains("Usage: disagg run"));
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let e = disagg_cli::capture(&["run", "--rate", "-1"]).unwrap_err();
    assert!(e.contains("--rate"), "{e}");
    assert!(!e.contains('\n'), "{e}");
    let e = disagg_cli::capture(&["frobnicate"]).unwrap_err();
    assert!(e.contains("frobnicate") && !e.contains('\n'), "{e}");
    // No command at all: the binary prints the help and exits 2, a usage error.
    assert!(disagg_cli::capture::<&str>(&[]).is_err());
}
