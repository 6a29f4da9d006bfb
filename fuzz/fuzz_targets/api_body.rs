#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    disagg_fuzz::api_body(data);
});
