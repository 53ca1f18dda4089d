//! The README's "Use the emulator in your own tests" example is the crate
//! documentation's (a doc test that runs), line for line, and fits in 40
//! lines.

const README: &str = include_str!("../../../../README.md");
const CRATE_SOURCE: &str = include_str!("../../src/lib.rs");

/// The first ```` ```rust ```` block after the line `heading` in `text`.
fn rust_block_after(text: &str, heading: &str) -> Vec<String> {
    text.lines()
        .skip_while(|line| *line != heading)
        .skip_while(|line| *line != "```rust")
        .skip(1)
        .take_while(|line| *line != "```")
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readme_shows_the_crate_docs_example_of_at_most_40_lines() {
    let readme = rust_block_after(README, "### Use the emulator in your own tests");
    let crate_docs: Vec<&str> = CRATE_SOURCE
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let docs = rust_block_after(&crate_docs.join("\n"), "# A clock you move");
    assert!(
        readme.iter().any(|line| line.contains(".manual_clock()")),
        "{readme:#?}"
    );
    assert_eq!(readme, docs);
    assert!(readme.len() <= 40, "{} lines", readme.len());
}
