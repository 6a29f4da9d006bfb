//! `disagg`: what it costs to move the KV cache in prefill/decode-disaggregated LLM serving.
//! The command line lives in the library (`src/lib.rs`); this is its entry point.

fn main() -> std::process::ExitCode {
    disagg_cli::main()
}
