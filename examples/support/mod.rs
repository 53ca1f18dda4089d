//! Helpers shared by the benchmark examples: finding the release binary and
//! reading a process's peak memory. Each example uses a subset.
#![allow(dead_code)]

use std::path::PathBuf;

/// `target/release/earshot`, next to the running example's directory.
pub fn release_binary() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let exe = std::env::current_exe()?;
    let binary = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|dir| dir.join("earshot"))
        .ok_or("cannot locate the target directory")?;
    if !binary.exists() {
        return Err(format!(
            "{} not found: run `cargo build --release` first",
            binary.display()
        )
        .into());
    }
    Ok(binary)
}

/// Peak resident memory (`VmHWM`, kB) of `process` ("self" or a pid), from
/// /proc (Linux); `None` where it cannot be read.
pub fn vm_hwm_kb(process: &str) -> Option<u64> {
    proc_status_kb(process, "VmHWM:")
}

/// Current resident memory (`VmRSS`, kB) of `process`, like [`vm_hwm_kb`].
pub fn vm_rss_kb(process: &str) -> Option<u64> {
    proc_status_kb(process, "VmRSS:")
}

/// One `kB` field of `/proc/<process>/status`.
fn proc_status_kb(process: &str, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{process}/status"))
        .ok()?
        .lines()
        .find(|line| line.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
