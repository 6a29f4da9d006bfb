//! Reading the small fixtures in `tests/fixtures/` (see the README there): formats, errors,
//! skipping, windows, limits, time scaling and clipping.

use std::path::{Path, PathBuf};

use disagg_trace::{
    read_path, read_str, stats, ReadOptions, TraceErrorKind, TraceFormat, TraceRow, Unsorted,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn opts() -> ReadOptions {
    ReadOptions::default()
}

fn sort_opts() -> ReadOptions {
    ReadOptions {
        unsorted: Unsorted::Sort,
        ..opts()
    }
}

fn arrivals(rows: &[TraceRow]) -> Vec<f64> {
    rows.iter().map(|r| r.arrival_s).collect()
}

fn lines(rows: &[TraceRow]) -> Vec<usize> {
    rows.iter().map(|r| r.line).collect()
}

/// The synthetic Azure sample: seconds after 03:04:05.1234567 of lines 2-7, from the integer
/// nanosecond differences.
const AZURE_HEAD: [f64; 6] = [0.0, 4.3333324, 4.5308643, 4.7530865, 5.8888889, 6.3765434];

// ---------------------------------------------------------------------------------------------
// Azure

/// Arrivals across the end of February in century years: 2000 has a Feb 29 (Gregorian rule of
/// 400), 1900 and 2100 do not, so 23:00 on Feb 28 to 01:00 on Mar 1 is 26 h or 2 h.
#[test]
fn azure_century_leap_years() {
    for (year, gap_s) in [(1900, 7_200.0), (2000, 93_600.0), (2100, 7_200.0)] {
        let csv = format!(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n\
             {year}-02-28 23:00:00.5,10,2\n\
             {year}-03-01 01:00:00.5,10,2\n"
        );
        let t = read_str(&csv, "azure.csv", &opts()).unwrap();
        assert_eq!(t.format, TraceFormat::Azure);
        assert_eq!(arrivals(&t.rows), [0.0, gap_s], "{year}");
    }
    // Feb 29 of 1900 and 2100 is not a date (a malformed line 3); 2000's is one day later.
    for (year, leap) in [(1900, false), (2000, true), (2100, false)] {
        let csv = format!(
            "TIMESTAMP,ContextTokens,GeneratedTokens\n\
             {year}-02-28 00:00:00,10,2\n\
             {year}-02-29 00:00:00,10,2\n"
        );
        match read_str(&csv, "azure.csv", &opts()) {
            Ok(t) => {
                assert!(leap, "{year}-02-29 accepted");
                assert_eq!(arrivals(&t.rows), [0.0, 86_400.0]);
            }
            Err(e) => {
                assert!(!leap, "{year}: {e}");
                assert_eq!(e.kind(), TraceErrorKind::Malformed, "{year}: {e}");
                assert!(e.to_string().contains(":3:"), "{e}");
            }
        }
    }
}

#[test]
fn azure_crlf_without_final_newline() {
    let raw = std::fs::read(fixture("azure_sample.csv")).unwrap();
    assert!(raw.windows(2).any(|w| w == b"\r\n"));
    assert!(!raw.ends_with(b"\n"));

    let t = read_path(&fixture("azure_sample.csv"), &opts()).unwrap();
    assert_eq!(t.format, TraceFormat::Azure);
    assert_eq!(arrivals(&t.rows), AZURE_HEAD);
    assert_eq!(lines(&t.rows), [2, 3, 4, 5, 6, 7]);
    let prompts: Vec<u64> = t.rows.iter().map(|r| r.prompt_len).collect();
    let outputs: Vec<u64> = t.rows.iter().map(|r| r.output_len).collect();
    assert_eq!(prompts, [300, 420, 800, 90, 90, 390]);
    assert_eq!(outputs, [40, 100, 50, 20, 20, 80]);
    assert!(t.rows.iter().all(|r| r.hash_ids.is_none()));
    assert_eq!(t.report.lines_read, 7);
    assert_eq!(t.report.rows_kept, 6);
    assert_eq!(t.report.bad_lines_skipped, 0);
    assert_eq!(t.report.out_of_order, 0);
    assert!(t.report.warnings.is_empty());
}

#[test]
fn azure_lf_blank_lines_and_fraction_digits() {
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n\
               2023-11-16 18:17:03,10,1\n\
               \n\
               2023-11-16 18:17:03.5,20,2\n\
               2023-11-16 18:17:03.123456789,30,3\n\
               2023-11-16 18:17:04.0000001,40,4\n\
               2023-11-17 00:00:00.9799600,50,5\n\
               \n\n";
    let t = read_str(csv, "lf.csv", &sort_opts()).unwrap();
    // The third row is earlier than the second: sorted.
    assert_eq!(t.report.out_of_order, 1);
    assert_eq!(lines(&t.rows), [2, 5, 4, 6, 7]);
    assert_eq!(
        arrivals(&t.rows),
        [0.0, 0.123456789, 0.5, 1.0000001, 20577.97996]
    );
    assert_eq!(t.report.lines_read, 9);
}

#[test]
fn utf8_bom_and_zone_offsets() {
    let csv = "\u{feff}TIMESTAMP,ContextTokens,GeneratedTokens\r\n\
               2024-05-10 00:00:00.5+00:00,10,1\r\n\
               2024-05-10 02:00:01.5+02:00,20,2\r\n\
               2024-05-10T00:00:02Z,30,3\r\n";
    let t = read_str(csv, "bom.csv", &opts()).unwrap();
    assert_eq!(t.format, TraceFormat::Azure);
    assert_eq!(arrivals(&t.rows), [0.0, 1.0, 1.5]);
}

#[test]
fn azure_malformed_line_is_an_error_with_file_line_and_text() {
    let e = read_str(&text("azure_malformed.csv"), "trace.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert_eq!(e.line(), Some(4));
    assert_eq!(
        e.to_string(),
        "trace.csv:4: expected 3 comma-separated fields (TIMESTAMP,ContextTokens,GeneratedTokens), \
         got \"2024-01-02 03:04:09.6543210,800\""
    );

    let e = read_path(&fixture("azure_malformed.csv"), &opts()).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains("azure_malformed.csv:4: "), "{shown}");
    assert!(!shown.contains('\n'));
}

#[test]
fn azure_bad_number_names_the_column() {
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\r\n\
               2024-01-02 03:04:11.0123456,90,abc\r\n";
    let e = read_str(csv, "t.csv", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t.csv:2: expected GeneratedTokens to be a non-negative integer, got \"abc\" in \
         \"2024-01-02 03:04:11.0123456,90,abc\""
    );
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-01-02 03:04:05.12x,1,2\n";
    let e = read_str(csv, "t.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert!(e
        .to_string()
        .starts_with("t.csv:2: expected TIMESTAMP as YYYY-MM-DD HH:MM:SS"));
    assert!(e.to_string().contains("\"2024-01-02 03:04:05.12x\""));
}

#[test]
fn skip_bad_lines_counts_them() {
    let o = ReadOptions {
        skip_bad_lines: true,
        ..opts()
    };
    let t = read_path(&fixture("azure_malformed.csv"), &o).unwrap();
    assert_eq!(t.report.bad_lines_skipped, 2);
    assert_eq!(t.report.rows_kept, 5);
    assert_eq!(lines(&t.rows), [2, 3, 5, 7, 8]);
    assert_eq!(t.report.lines_read, 8);
    assert_eq!(t.report.warnings.len(), 2);
    assert!(t.report.warnings[0].contains("azure_malformed.csv:4: "));
    assert!(t.report.warnings[1].contains("azure_malformed.csv:6: "));
    assert!(t.report.warnings[1].contains("\"abc\""));

    // More than ten: ten warnings and a summary.
    let mut csv = String::from("TIMESTAMP,ContextTokens,GeneratedTokens\n");
    for i in 0..15 {
        csv.push_str(&format!("2023-11-16 18:00:{i:02},x,1\n"));
    }
    csv.push_str("2023-11-16 18:00:59,1,1\n");
    let t = read_str(&csv, "many.csv", &o).unwrap();
    assert_eq!(t.report.bad_lines_skipped, 15);
    assert_eq!(t.report.warnings.len(), 11);
    assert_eq!(t.report.warnings[10], "... and 5 more bad lines skipped");

    // Only bad lines: nothing left.
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\nnope\n";
    let e = read_str(csv, "bad.csv", &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NoRequests);
    assert_eq!(
        e.to_string(),
        "bad.csv: no requests left: 1 bad lines skipped"
    );
}

#[test]
fn negative_tokens() {
    let e = read_path(&fixture("azure_negative.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NegativeTokens);
    assert_eq!(e.line(), Some(3));
    let shown = e.to_string();
    assert!(shown.contains("azure_negative.csv:3: "), "{shown}");
    assert!(shown.contains("\"-420\""), "{shown}");
    assert!(
        shown.contains("\"2024-01-02 03:04:09.4567891,-420,100\""),
        "{shown}"
    );

    let o = ReadOptions {
        skip_bad_lines: true,
        ..opts()
    };
    let t = read_path(&fixture("azure_negative.csv"), &o).unwrap();
    assert_eq!(t.report.bad_lines_skipped, 1);
    assert_eq!(lines(&t.rows), [2, 4, 5]);

    let jsonl = "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": -1}\n";
    let e = read_str(jsonl, "m.jsonl", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NegativeTokens);
    assert!(e.to_string().starts_with("m.jsonl:1: "));
    assert!(e.to_string().contains("output_length, got -1"));
}

#[test]
fn out_of_order_rejected_by_default() {
    let e = read_path(&fixture("azure_out_of_order.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::OutOfOrder);
    assert_eq!(e.line(), Some(5));
    let shown = e.to_string();
    assert!(shown.contains("azure_out_of_order.csv:5: "), "{shown}");
    assert!(shown.contains("earlier than line 4"), "{shown}");
    assert!(
        shown.contains("\"2024-01-02 03:04:09.6543210,800,50\""),
        "{shown}"
    );
}

#[test]
fn out_of_order_sorted_on_request() {
    let t = read_path(&fixture("azure_out_of_order.csv"), &sort_opts()).unwrap();
    assert_eq!(t.report.out_of_order, 1);
    assert_eq!(t.report.warnings.len(), 1);
    assert!(t.report.warnings[0].contains("sorted"));
    assert_eq!(lines(&t.rows), [2, 3, 5, 4, 6, 7]);
    assert_eq!(arrivals(&t.rows), AZURE_HEAD);
}

#[test]
fn empty_and_header_only() {
    let e = read_path(&fixture("empty.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NoRequests);
    assert!(e
        .to_string()
        .ends_with("empty.csv: empty file: no requests"));

    let e = read_path(&fixture("azure_header_only.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NoRequests);
    assert_eq!(e.line(), Some(1));
    assert!(e
        .to_string()
        .ends_with("azure_header_only.csv:1: no requests: only the header \"TIMESTAMP,ContextTokens,GeneratedTokens\""));

    // Forced formats too.
    for f in TraceFormat::ALL {
        let o = ReadOptions {
            format: Some(f),
            ..opts()
        };
        let e = read_str("\n  \r\n", "blank", &o).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::NoRequests, "{f}");
    }
    let e = read_str(" [ ] ", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:1: no requests: the JSON array is empty"
    );
}

#[test]
fn unknown_and_undetectable_formats() {
    let e = read_path(&fixture("unknown_format.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::UnknownFormat);
    assert_eq!(e.line(), Some(1));
    let shown = e.to_string();
    for word in [
        "azure",
        "mooncake",
        "burstgpt",
        "reference",
        "--trace-format",
    ] {
        assert!(shown.contains(word), "{word}: {shown}");
    }
    assert!(shown.contains("\"arrived_at,num_prefill_tokens,num_decode_tokens\""));

    // Forcing a format that does not fit: a header error.
    let o = ReadOptions {
        format: Some(TraceFormat::Azure),
        ..opts()
    };
    let e = read_path(&fixture("unknown_format.csv"), &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert!(e.to_string().contains(
        "unknown_format.csv:1: expected the Azure CSV header TIMESTAMP,ContextTokens,GeneratedTokens, got"
    ));

    let e = TraceFormat::parse("csv").unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::UnknownFormat);
    assert_eq!(
        e.to_string(),
        "unknown trace format \"csv\": valid formats are azure, mooncake, burstgpt, reference"
    );
}

#[test]
fn format_names() {
    for f in TraceFormat::ALL {
        assert_eq!(TraceFormat::parse(f.as_str()).unwrap(), f);
        assert_eq!(f.to_string(), f.as_str());
        assert_eq!(f.as_str().parse::<TraceFormat>().unwrap(), f);
    }
    assert_eq!(
        TraceFormat::parse("BurstGPT").unwrap(),
        TraceFormat::BurstGpt
    );
    assert_eq!(
        TraceFormat::ALL.map(TraceFormat::as_str).join(", "),
        TraceFormat::VALID_NAMES
    );
    assert_eq!(
        serde_json::to_string(&TraceFormat::BurstGpt).unwrap(),
        "\"burstgpt\""
    );
}

#[test]
fn missing_and_unreadable_files() {
    let e = read_path(&fixture("no_such_file.csv"), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Io);
    assert!(e
        .to_string()
        .ends_with("no_such_file.csv: file does not exist"));

    let e = read_path(&fixture(""), &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Io);
    assert!(
        e.to_string().contains("not a regular file (a directory)"),
        "{e}"
    );
}

#[test]
fn long_offending_text_is_cut() {
    let long = format!(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1,{}\n",
        "9".repeat(300)
    );
    let e = read_str(&long, "long.csv", &opts()).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains("\"..."), "{shown}");
    assert!(shown.len() < 300, "{} chars: {shown}", shown.len());
    assert!(!shown.contains('\n'));
}

// ---------------------------------------------------------------------------------------------
// Mooncake

#[test]
fn mooncake_rows_and_blocks() {
    let t = read_path(&fixture("mooncake_sample.jsonl"), &opts()).unwrap();
    assert_eq!(t.format, TraceFormat::Mooncake);
    assert_eq!(t.rows.len(), 11);
    let mut expected = vec![0.0; 10];
    expected.push(3.0);
    assert_eq!(arrivals(&t.rows), expected);
    assert_eq!(t.rows[0].prompt_len, 5000);
    assert_eq!(t.rows[0].output_len, 400);
    assert_eq!(t.rows[10].line, 11);
    assert_eq!(
        t.rows[0].hash_ids.as_deref().unwrap(),
        (0..10).collect::<Vec<u64>>()
    );
    let blocks = t.stats().prefix_blocks.unwrap();
    assert_eq!(blocks.total_blocks, 104);
    assert_eq!(blocks.distinct_blocks, 94);
    assert_eq!(blocks.reused_blocks, 10);
    assert_eq!(blocks.reused_fraction, 10.0 / 104.0);

    let lite = ReadOptions {
        keep_hash_ids: false,
        ..opts()
    };
    let t2 = read_path(&fixture("mooncake_sample.jsonl"), &lite).unwrap();
    assert!(t2.rows.iter().all(|r| r.hash_ids.is_none()));
    assert_eq!(arrivals(&t2.rows), expected);
    assert_eq!(t2.stats().prefix_blocks, None);
}

#[test]
fn mooncake_malformed_line() {
    let mut jsonl = text("mooncake_sample.jsonl");
    jsonl.push_str("{\"timestamp\": 6000, \"output_length\": 5}\n");
    let e = read_str(&jsonl, "m.jsonl", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    let shown = e.to_string();
    assert!(
        shown.starts_with("m.jsonl:12: expected a JSON object"),
        "{shown}"
    );
    assert!(shown.contains("missing field `input_length`"), "{shown}");
    assert!(shown.contains("\"{\\\"timestamp\\\": 6000"), "{shown}");

    let o = ReadOptions {
        skip_bad_lines: true,
        ..opts()
    };
    jsonl
        .push_str("not json\n{\"timestamp\": 6001.5, \"input_length\": 7, \"output_length\": 8}\n");
    let t = read_str(&jsonl, "m.jsonl", &o).unwrap();
    assert_eq!(t.report.bad_lines_skipped, 2);
    assert_eq!(t.rows.len(), 12);
    let last = &t.rows[11];
    assert_eq!(
        (last.arrival_s, last.line, last.hash_ids.clone()),
        (6.0015, 14, None)
    );
}

// ---------------------------------------------------------------------------------------------
// BurstGPT

#[test]
fn burstgpt_failed_requests_are_skipped_and_counted() {
    let t = read_path(&fixture("burstgpt_sample.csv"), &opts()).unwrap();
    assert_eq!(t.format, TraceFormat::BurstGpt);
    assert_eq!(t.report.failed_requests_skipped, 2);
    assert_eq!(t.report.rows_kept, 4);
    assert_eq!(lines(&t.rows), [2, 4, 6, 7]);
    assert_eq!(arrivals(&t.rows), [0.0, 113.0, 116.5, 175.0]);
    let prompts: Vec<u64> = t.rows.iter().map(|r| r.prompt_len).collect();
    assert_eq!(prompts, [472, 417, 215, 8192]);

    let all_failed = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                      1,ChatGPT,10,0,10,API log\n";
    let e = read_str(all_failed, "b.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NoRequests);
    assert_eq!(
        e.to_string(),
        "b.csv: no requests left: 1 failed requests (0 response tokens) skipped"
    );

    // Columns are found by name (newer releases add Session ID and Elapsed time).
    let wide = "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                0.5,7,1.2,GPT-4,100,20,120,Conversation log\n";
    let t = read_str(wide, "w.csv", &opts()).unwrap();
    assert_eq!((t.rows[0].prompt_len, t.rows[0].output_len), (100, 20));
}

// ---------------------------------------------------------------------------------------------
// Reference workload JSON

/// `docs/exactness.md#python-random`, requests 0-9.
const REF_ARRIVALS: [f64; 10] = [
    0.01803638301368865,
    0.2123597420424336,
    0.24482956078540632,
    0.31337745059926425,
    0.34423992641338136,
    0.3699498973065865,
    0.714422418502744,
    0.8251367311446273,
    1.024704562720994,
    1.1649982235707586,
];

#[test]
fn reference_rows_keep_absolute_arrivals() {
    let t = read_path(&fixture("reference_rows.json"), &opts()).unwrap();
    assert_eq!(t.format, TraceFormat::Reference);
    assert_eq!(arrivals(&t.rows), REF_ARRIVALS);
    assert_eq!(lines(&t.rows), (1..=10).collect::<Vec<_>>());
    assert_eq!((t.rows[0].prompt_len, t.rows[0].output_len), (1236, 204));
    assert_eq!((t.rows[9].prompt_len, t.rows[9].output_len), (1529, 236));
    assert_eq!(t.report.lines_read, 10);

    // max_requests alone does not re-base.
    let o = ReadOptions {
        max_requests: Some(3),
        ..opts()
    };
    let t = read_path(&fixture("reference_rows.json"), &o).unwrap();
    assert_eq!(arrivals(&t.rows), REF_ARRIVALS[..3]);

    // A time scale re-bases and scales the gaps.
    let o = ReadOptions {
        time_scale: 2.0,
        ..opts()
    };
    let t = read_path(&fixture("reference_rows.json"), &o).unwrap();
    let want: Vec<f64> = REF_ARRIVALS
        .iter()
        .map(|a| (a - REF_ARRIVALS[0]) * 2.0)
        .collect();
    assert_eq!(arrivals(&t.rows), want);

    // A window re-bases to the first kept row.
    let o = ReadOptions {
        start_s: Some(0.2),
        duration_s: Some(0.5),
        ..opts()
    };
    let t = read_path(&fixture("reference_rows.json"), &o).unwrap();
    let want: Vec<f64> = REF_ARRIVALS[2..7]
        .iter()
        .map(|a| a - REF_ARRIVALS[2])
        .collect();
    assert_eq!(arrivals(&t.rows), want);
    assert_eq!(lines(&t.rows), [3, 4, 5, 6, 7]);
}

#[test]
fn reference_rows_with_a_fourth_element() {
    let t = read_path(&fixture("reference_rows_meta.json"), &opts()).unwrap();
    assert_eq!(arrivals(&t.rows), [0.5, 1.25, 4.0]);
    assert_eq!(lines(&t.rows), [2, 3, 4]);
    assert_eq!((t.rows[2].prompt_len, t.rows[2].output_len), (3000, 300));
    assert_eq!(t.report.lines_read, 5);
}

#[test]
fn reference_errors() {
    let e = read_str("[[0.1, 10, 5], [0.2, \"x\", 5]]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    let shown = e.to_string();
    assert!(
        shown.starts_with(
            "r.json:1: row 1: expected a row [arrival_seconds, prompt_len, output_len]"
        ),
        "{shown}"
    );
    assert!(shown.ends_with("got \"[0.2, \\\"x\\\", 5]\""), "{shown}");

    let o = ReadOptions {
        skip_bad_lines: true,
        ..opts()
    };
    let t = read_str(
        "[[0.1, 10, 5],\n [0.2, \"x\", 5],\n 7,\n [0.3, 1, 2, {}, 5],\n [0.4, 1, 2]]",
        "r.json",
        &o,
    )
    .unwrap();
    assert_eq!(t.report.bad_lines_skipped, 3);
    assert_eq!(lines(&t.rows), [1, 5]);

    let e = read_str("[\n [0.1, 10, 5],\n [0.2, -3, 5]\n]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NegativeTokens);
    assert_eq!(
        e.to_string(),
        "r.json:3: row 1: expected non-negative prompt_len and output_len, got \"[0.2, -3, 5]\""
    );

    let e = read_str("[[0.1, 10, 5],\n [0.2, 10", "r.json", &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert_eq!(e.line(), Some(2));

    let e = read_str("[[0.1, 10, 5] [0.2, 10, 5]]", "r.json", &o).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("r.json:1: expected , or ] after a row"),
        "{e}"
    );

    let e = read_str("[[0.1, 10, 5]]\nextra", "r.json", &o).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("r.json:2: expected nothing after the closing ]"),
        "{e}"
    );

    let e = read_str("[[0.1, 10, 5],\n [0.05, 1, 1]]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::OutOfOrder);
    assert_eq!(e.line(), Some(2));
}

// ---------------------------------------------------------------------------------------------
// Options

#[test]
fn window_is_in_trace_time_and_rebased() {
    let o = ReadOptions {
        start_s: Some(4.5),
        duration_s: Some(1.3),
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    // 4.5308643 and 4.7530865 are in [4.5, 5.8); re-based on exact nanoseconds.
    assert_eq!(arrivals(&t.rows), [0.0, 0.2222222]);
    assert_eq!(lines(&t.rows), [4, 5]);

    // The start is inclusive, the end exclusive.
    let o = ReadOptions {
        start_s: Some(4.3333324),
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(lines(&t.rows), [3, 4, 5, 6, 7]);
    let o = ReadOptions {
        duration_s: Some(4.5308643),
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(lines(&t.rows), [2, 3]);

    // Only a start, only a duration.
    let o = ReadOptions {
        start_s: Some(5.0),
        ..opts()
    };
    assert_eq!(
        lines(&read_path(&fixture("azure_sample.csv"), &o).unwrap().rows),
        [6, 7]
    );
    let o = ReadOptions {
        duration_s: Some(4.6),
        ..opts()
    };
    assert_eq!(
        lines(&read_path(&fixture("azure_sample.csv"), &o).unwrap().rows),
        [2, 3, 4]
    );

    let o = ReadOptions {
        start_s: Some(100.0),
        ..opts()
    };
    let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NothingSelected);
    assert!(
        e.to_string()
            .contains("no requests in the window from 100 s to end"),
        "{e}"
    );
}

#[test]
fn max_requests() {
    let o = ReadOptions {
        max_requests: Some(3),
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(arrivals(&t.rows), AZURE_HEAD[..3]);
    assert_eq!(t.report.rows_kept, 3);

    let o = ReadOptions {
        start_s: Some(4.5),
        max_requests: Some(1),
        ..opts()
    };
    assert_eq!(
        lines(&read_path(&fixture("azure_sample.csv"), &o).unwrap().rows),
        [4]
    );

    let o = ReadOptions {
        max_requests: Some(0),
        ..opts()
    };
    let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NothingSelected);
}

#[test]
fn time_scale_multiplies_every_gap() {
    for scale in [0.5, 2.0, 0.1] {
        let o = ReadOptions {
            time_scale: scale,
            ..opts()
        };
        let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
        let want: Vec<f64> = AZURE_HEAD.iter().map(|a| a * scale).collect();
        assert_eq!(arrivals(&t.rows), want);
    }
    // Window first (in trace time), then scale.
    let o = ReadOptions {
        start_s: Some(4.5),
        time_scale: 10.0,
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(t.rows.len(), 4);
    assert_eq!(t.rows[1].arrival_s, 0.2222222 * 10.0);

    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let o = ReadOptions {
            time_scale: bad,
            ..opts()
        };
        let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::InvalidOption);
        assert!(e.to_string().contains("time_scale must be finite and > 0"));
    }
    for (start, duration) in [
        (Some(-1.0), None),
        (None, Some(0.0)),
        (Some(f64::NAN), None),
    ] {
        let o = ReadOptions {
            start_s: start,
            duration_s: duration,
            ..opts()
        };
        let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::InvalidOption);
    }
}

#[test]
fn max_context_clips_and_counts() {
    let o = ReadOptions {
        max_context: Some(380),
        ..opts()
    };
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    let prompts: Vec<u64> = t.rows.iter().map(|r| r.prompt_len).collect();
    assert_eq!(prompts, [300, 380, 380, 90, 90, 380]);
    assert_eq!(t.report.clipped_prompts, 3);
    assert_eq!(t.report.warnings.len(), 1);
    assert!(t.report.warnings[0].contains("3 prompts longer than max_context = 380"));

    // Mooncake: the hash ids are cut to the clipped prompt's blocks.
    let o = ReadOptions {
        max_context: Some(1000),
        ..opts()
    };
    let t = read_path(&fixture("mooncake_sample.jsonl"), &o).unwrap();
    assert_eq!(t.report.clipped_prompts, 11);
    assert!(t.rows.iter().all(|r| r.prompt_len == 1000));
    assert_eq!(t.rows[0].hash_ids.as_deref().unwrap(), [0, 1]);
    assert_eq!(t.rows[10].hash_ids.as_deref().unwrap(), [0, 75]);

    let o = ReadOptions {
        max_context: Some(0),
        ..opts()
    };
    let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::InvalidOption);
}

// ---------------------------------------------------------------------------------------------
// Statistics on small data

fn row(arrival_s: f64, prompt_len: u64, output_len: u64) -> TraceRow {
    TraceRow {
        arrival_s,
        prompt_len,
        output_len,
        line: 0,
        hash_ids: None,
    }
}

#[test]
fn stats_of_small_inputs() {
    let t = read_path(&fixture("azure_sample.csv"), &opts()).unwrap();
    let s = t.stats();
    assert_eq!(s.rows, 6);
    assert_eq!(s.duration_s, 6.3765434);
    assert_eq!(s.mean_rate_rps, 6.0 / 6.3765434);
    assert_eq!(s.longest_gap_s, 4.3333324);
    assert_eq!(s.busiest_1s_requests, 3); // seconds 4, 4, 4 (4.33, 4.53, 4.75)
    assert_eq!(s.busiest_60s_requests, 6);
    assert_eq!(s.peak_rate_60s_rps, 0.1);
    assert_eq!(s.distinct_arrivals, 6);
    let i = s.input_tokens.clone().unwrap();
    // sorted 90 90 300 390 420 800: p50 rank 3, p90 rank ceil(5.4) = 6, p99 rank 6.
    assert_eq!(
        (i.p50, i.p90, i.p99, i.min, i.max),
        (300, 800, 800, 90, 800)
    );
    assert_eq!(i.mean, 2090.0 / 6.0);

    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["busiest_1s_requests"], 3);
    assert_eq!(json["input_tokens"]["p50"], 300);
    assert!(json["prefix_blocks"].is_null());

    // One row: no duration, no rate, no gap; NaN becomes null in JSON.
    let one = stats(&[row(2.0, 10, 1)]);
    assert_eq!(one.duration_s, 0.0);
    assert!(one.mean_rate_rps.is_nan());
    assert!(one.longest_gap_s.is_nan());
    let json = serde_json::to_value(&one).unwrap();
    assert!(json["mean_rate_rps"].is_null());
    assert!(json["longest_gap_s"].is_null());
    assert_eq!(json["duration_s"], 0.0);

    let none = stats(&[]);
    assert_eq!(none.rows, 0);
    assert_eq!(none.input_tokens, None);
    assert_eq!(none.busiest_1s_requests, 0);
    assert!(serde_json::to_value(&none).unwrap()["duration_s"].is_null());
}

#[test]
fn stats_buckets_count_from_the_first_arrival() {
    // Buckets are whole seconds / minutes after the first arrival, not clock seconds.
    let rows = [
        row(10.5, 1, 1),
        row(11.4, 1, 1),
        row(11.5, 1, 1),
        row(12.0, 1, 1),
        row(70.49, 1, 1),
        row(70.5, 1, 1),
    ];
    let s = stats(&rows);
    assert_eq!(s.busiest_1s_requests, 2); // [10.5, 11.5): 10.5, 11.4
    assert_eq!(s.busiest_60s_requests, 5); // [10.5, 70.5)
    assert_eq!(s.longest_gap_s, 70.49 - 12.0);
}

// ---------------------------------------------------------------------------------------------
// Inputs found by fuzzing (tests/suite/fuzz.rs; also in fuzz/corpus/)

#[test]
fn fuzz_findings_are_clean_errors() {
    // A non-ASCII character in a zone offset panicked (a byte slice inside a character).
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-01-02 03:04:05+0\u{e9}0,10,1\n";
    let e = read_str(csv, "z.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert_eq!(e.line(), Some(2));

    // Timestamps 2e308 s apart gave an infinite arrival time.
    let csv = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
               -1e308,ChatGPT,10,1,11,API log\n1e308,ChatGPT,10,1,11,API log\n";
    let e = read_str(csv, "b.csv", &opts()).unwrap_err();
    assert_eq!(e.line(), Some(3));
    assert!(e.to_string().contains("overflows"), "{e}");
    // So did a huge time scale.
    let o = ReadOptions {
        time_scale: f64::MAX,
        ..opts()
    };
    let e = read_path(&fixture("azure_sample.csv"), &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::InvalidOption);

    // A negative arrival time in the reference rows was kept as is.
    let e = read_str("[[-1.0, 10, 1], [0.5, 5, 5]]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert!(
        e.to_string().contains("expected arrival_seconds >= 0"),
        "{e}"
    );
}

// ---------------------------------------------------------------------------------------------
// Boundaries and messages pinned for mutation testing (issue 11). Every row below is made up.

const AZ_HEADER: &str = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
const BURST_HEADER: &str = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

fn with(f: impl FnOnce(&mut ReadOptions)) -> ReadOptions {
    let mut o = opts();
    f(&mut o);
    o
}

#[test]
fn option_bounds() {
    // A window start of exactly 0 is allowed and keeps every row (re-based: Azure always is).
    let o = with(|o| o.start_s = Some(0.0));
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(arrivals(&t.rows), AZURE_HEAD);
    for (start, duration, message) in [
        (
            Some(f64::INFINITY),
            None,
            "x.csv: the window start must be finite and >= 0 s, got inf",
        ),
        (
            Some(-0.5),
            None,
            "x.csv: the window start must be finite and >= 0 s, got -0.5",
        ),
        (
            None,
            Some(f64::INFINITY),
            "x.csv: the window duration must be finite and > 0 s, got inf",
        ),
        (
            None,
            Some(-2.0),
            "x.csv: the window duration must be finite and > 0 s, got -2",
        ),
    ] {
        let o = with(|o| {
            o.start_s = start;
            o.duration_s = duration;
        });
        let e = read_str(&text("azure_sample.csv"), "x.csv", &o).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::InvalidOption);
        assert_eq!(e.to_string(), message);
    }
    let o = with(|o| o.time_scale = 0.0);
    let e = read_str(&text("azure_sample.csv"), "x.csv", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.csv: time_scale must be finite and > 0, got 0"
    );
    // The smallest allowed max_context clips every prompt to 1 token.
    let o = with(|o| o.max_context = Some(1));
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert!(t.rows.iter().all(|r| r.prompt_len == 1));
    assert_eq!(t.report.clipped_prompts, 6);
}

#[test]
fn empty_window_names_the_window_and_the_span() {
    // The sample spans 0 to 6.3765434 s (AZURE_HEAD); [10, 10 + 1.5) holds no row.
    let o = with(|o| {
        o.start_s = Some(10.0);
        o.duration_s = Some(1.5);
    });
    let e = read_str(&text("azure_sample.csv"), "a.csv", &o).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NothingSelected);
    assert_eq!(
        e.to_string(),
        "a.csv: no requests in the window from 10 s to 11.5 s after the first arrival (the \
         trace spans 0 to 6.3765434 s)"
    );
    // A duration alone starts at 0: [0, 1) keeps only the first row.
    let o = with(|o| o.duration_s = Some(1.0));
    let t = read_str(&text("azure_sample.csv"), "a.csv", &o).unwrap();
    assert_eq!(lines(&t.rows), [2]);
    let e = read_str(
        &text("azure_sample.csv"),
        "a.csv",
        &with(|o| o.max_requests = Some(0)),
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "a.csv: max_requests = 0 leaves no requests");
}

#[test]
fn a_prompt_of_exactly_max_context_is_not_clipped() {
    // Prompts 300 420 800 90 90 390 against 300: 420, 800 and 390 are clipped, 300 is not.
    let o = with(|o| o.max_context = Some(300));
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    let prompts: Vec<u64> = t.rows.iter().map(|r| r.prompt_len).collect();
    assert_eq!(prompts, [300, 300, 300, 90, 90, 300]);
    assert_eq!(t.report.clipped_prompts, 3);
    assert_eq!(
        t.report.warnings,
        ["3 prompts longer than max_context = 300 tokens were clipped to it"]
    );
    // Nothing longer: no count, no warning.
    let o = with(|o| o.max_context = Some(800));
    let t = read_path(&fixture("azure_sample.csv"), &o).unwrap();
    assert_eq!(t.report.clipped_prompts, 0);
    assert!(t.report.warnings.is_empty());
}

#[test]
fn azure_zero_output_rows_and_quoted_fields_are_kept() {
    // Only BurstGPT treats 0 output tokens as a failed request. Quoted and padded fields are
    // unquoted and trimmed.
    let csv =
        format!("{AZ_HEADER}2023-11-16 18:17:03,10,0\n\"2023-11-16 18:17:04\", \"20\" ,\"3\"\n");
    let t = read_str(&csv, "z.csv", &opts()).unwrap();
    assert_eq!(t.report.failed_requests_skipped, 0);
    assert_eq!(arrivals(&t.rows), [0.0, 1.0]);
    let tokens: Vec<(u64, u64)> = t
        .rows
        .iter()
        .map(|r| (r.prompt_len, r.output_len))
        .collect();
    assert_eq!(tokens, [(10, 0), (20, 3)]);
    // A quote at one end only is not a quoted field.
    let csv = format!("{AZ_HEADER}2023-11-16 18:17:03,\"55,1\n");
    let e = read_str(&csv, "z.csv", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "z.csv:2: expected ContextTokens to be a non-negative integer, got \"\\\"55\" in \
         \"2023-11-16 18:17:03,\\\"55,1\""
    );
}

#[test]
fn burstgpt_timestamp_must_be_finite() {
    for ts in ["inf", "NaN", "x"] {
        let csv =
            format!("{BURST_HEADER}1.0,ChatGPT,10,5,15,API log\n{ts},ChatGPT,10,5,15,API log\n");
        let e = read_str(&csv, "b.csv", &opts()).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::Malformed, "{ts}");
        assert_eq!(
            e.to_string(),
            format!(
                "b.csv:3: expected Timestamp as a finite number of seconds, got \"{ts}\" in \
                 \"{ts},ChatGPT,10,5,15,API log\""
            )
        );
    }
}

#[test]
fn mooncake_timestamps_and_token_counts() {
    // Negative milliseconds too: -2000 ms to 1000 ms is 3 s; 1.5 ms after that, 3.0015 s.
    let jsonl = "{\"timestamp\": -2000, \"input_length\": 0, \"output_length\": 0}\n\
                 {\"timestamp\": 1000, \"input_length\": 4, \"output_length\": 1}\n\
                 {\"timestamp\": 1001.5, \"input_length\": 4, \"output_length\": 1}\n";
    let t = read_str(jsonl, "m.jsonl", &opts()).unwrap();
    assert_eq!(arrivals(&t.rows), [0.0, 3.0, 3.0015]);
    assert_eq!((t.rows[0].prompt_len, t.rows[0].output_len), (0, 0));

    for (line, message) in [
        (
            "{\"timestamp\": 1, \"input_length\": -5, \"output_length\": 2}",
            "expected a non-negative token count for input_length, got -5",
        ),
        (
            "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": -1}",
            "expected a non-negative token count for output_length, got -1",
        ),
        (
            "{\"timestamp\": 1, \"input_length\": -3, \"output_length\": -1}",
            "expected a non-negative token count for input_length, got -3",
        ),
    ] {
        let e = read_str(line, "m.jsonl", &opts()).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::NegativeTokens, "{line}");
        assert_eq!(e.line(), Some(1));
        assert!(e.message().starts_with(message), "{e}");
    }

    // 1e24 ms = 1e30 ns is out of range (the limit is |ns| < 1e30); 1e23 ms is not.
    let e = read_str(
        "{\"timestamp\": 1e24, \"input_length\": 1, \"output_length\": 1}",
        "m.jsonl",
        &opts(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Malformed);
    assert!(
        e.message()
            .contains("(timestamp 1000000000000000000000000 out of range at column "),
        "{e}"
    );
    let t = read_str(
        "{\"timestamp\": 1e23, \"input_length\": 1, \"output_length\": 1}",
        "m.jsonl",
        &opts(),
    )
    .unwrap();
    assert_eq!(arrivals(&t.rows), [0.0]);

    // serde_json's message keeps what was expected and loses its own position suffix; the
    // column is that of the value's last character (the closing quote of "noon" is the 20th).
    let e = read_str(
        "{\"timestamp\": \"noon\", \"input_length\": 1, \"output_length\": 1}",
        "m.jsonl",
        &opts(),
    )
    .unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.contains(
            "(invalid type: string \"noon\", expected a number of milliseconds at column 20)"
        ),
        "{shown}"
    );
    assert!(!shown.contains(" at line "), "{shown}");
}

#[test]
fn reference_boundaries_and_messages() {
    // Zero tokens are allowed; a negative output count is not.
    let t = read_str("[[0.0, 0, 0], [1.5, 1, 0]]", "r.json", &opts()).unwrap();
    assert_eq!(arrivals(&t.rows), [0.0, 1.5]);
    let e = read_str("[[0.5, 2, -1]]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NegativeTokens);
    assert_eq!(
        e.to_string(),
        "r.json:1: row 0: expected non-negative prompt_len and output_len, got \"[0.5, 2, -1]\""
    );

    // Too short a row names the expected shape.
    let e = read_str("[[0.5, 2]]", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:1: row 0: expected a row [arrival_seconds, prompt_len, output_len] with an \
         optional 4th (object) element (invalid length 2, expected an array of 3 or 4 \
         elements), got \"[0.5, 2]\""
    );

    // A syntax error on the row's first line: the column counts from the start of the file's
    // line. Line 2 is ` [0.2, 10 x]]`: the `x` is its 11th character.
    let e = read_str("[[0.1, 10, 5],\n [0.2, 10 x]]", "r.json", &opts()).unwrap_err();
    assert_eq!(e.line(), Some(2));
    assert_eq!(
        e.to_string(),
        "r.json:2: expected a JSON array of [arrival_seconds, prompt_len, output_len] rows \
         (expected `,` or `]` at column 11), got \"[0.2, 10 x]]\""
    );
    // On a later line of the row: that line's own column (`x` is the 5th character of ` 10 x]]`).
    let e = read_str("[[0.1, 10, 5],\n [0.2,\n 10 x]]", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:3: expected a JSON array of [arrival_seconds, prompt_len, output_len] rows \
         (expected `,` or `]` at column 5), got \"10 x]]\""
    );

    // The array never closes: the error is on the last line.
    let e = read_str("[[0.1, 1, 1],\n  \n", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:2: expected a row or ] to close the array opened on line 1, got the end of the file"
    );
    let e = read_str("\n[[0.1, 1, 1] x", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:2: expected , or ] after a row, got \"[[0.1, 1, 1] x\""
    );
    let e = read_str("[[0.1, 1, 1]]\n\n  extra ", "r.json", &opts()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:3: expected nothing after the closing ] of the array, got \"extra\""
    );
    // Not an array at all (forced format), after blank lines.
    let o = with(|o| o.format = Some(TraceFormat::Reference));
    let e = read_str("\n \n  7 ", "r.json", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.json:3: expected a JSON array of [arrival_seconds, prompt_len, output_len] rows, got \
         \"7\""
    );
}

#[test]
fn detection_names_the_first_non_blank_line() {
    let e = read_str("\n  \nnot a trace\n", "u.txt", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::UnknownFormat);
    assert_eq!(e.line(), Some(3));
    assert_eq!(
        TraceFormat::detect("\n\n[[0.1, 1, 1]]", "r").unwrap(),
        TraceFormat::Reference
    );
    let e = TraceFormat::detect(" \n\t\n", "blank").unwrap_err();
    assert_eq!(e.to_string(), "blank: empty file: no requests");
}

#[test]
fn bytes_are_checked_before_parsing() {
    use disagg_trace::read_bytes;
    let e = read_bytes(b"", "e.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::NoRequests);
    assert_eq!(e.to_string(), "e.csv: empty file: no requests");
    let e = read_bytes(b"TIMESTAMP\xff\n", "e.csv", &opts()).unwrap_err();
    assert_eq!(e.kind(), TraceErrorKind::Io);
    let csv = format!("{AZ_HEADER}2023-11-16 18:17:03,10,1\n");
    let t = read_bytes(csv.as_bytes(), "e.csv", &opts()).unwrap();
    assert_eq!((t.rows.len(), t.rows[0].prompt_len), (1, 10));
}

/// A number too large for an f64 is a JSON error (serde_json's "number out of range"), not a bad
/// row: it fails even with `skip_bad_lines`, at the number's last character (column 7 of
/// `[[1e999, 1, 2]]`).
#[test]
fn reference_number_out_of_range_is_a_syntax_error() {
    let text = "[[1e999, 1, 2], [0.5, 1, 1]]";
    for skip in [false, true] {
        let o = with(|o| o.skip_bad_lines = skip);
        let e = read_str(text, "r.json", &o).unwrap_err();
        assert_eq!(e.kind(), TraceErrorKind::Malformed);
        assert_eq!(
            e.to_string(),
            "r.json:1: expected a JSON array of [arrival_seconds, prompt_len, output_len] rows \
             (number out of range at column 7), got \"[[1e999, 1, 2], [0.5, 1, 1]]\""
        );
    }
}
