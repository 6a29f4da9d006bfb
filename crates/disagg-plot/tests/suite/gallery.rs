//! The gallery example writes valid, overlap-free SVGs, the same bytes every time.

#[allow(dead_code)]
#[path = "../../examples/gallery.rs"]
mod example;

#[test]
fn gallery_is_valid_and_deterministic() {
    let base = std::env::temp_dir().join(format!("disagg-plot-gallery-{}", std::process::id()));
    let a = example::write_gallery(&base.join("a")).unwrap();
    let b = example::write_gallery(&base.join("b")).unwrap();
    assert_eq!(a.len(), 8);
    for (pa, pb) in a.iter().zip(&b) {
        let sa = std::fs::read_to_string(pa).unwrap();
        assert_eq!(
            sa,
            std::fs::read_to_string(pb).unwrap(),
            "{} differs between runs",
            pa.display()
        );
        let doc = crate::common::parse(&sa);
        crate::common::assert_no_text_overlap(&doc);
        assert!(sa.len() < 150_000, "{} is {} bytes", pa.display(), sa.len());
    }
    std::fs::remove_dir_all(&base).unwrap();
}
