//! Resident memory read from `/proc/PID/status`: what the memory checks of
//! the hardening tests compare with generous limits (never a timing).

/// A field of `/proc/{pid}/status` in KiB (`VmRSS`, `VmHWM`), for `pid`
/// a number or `self`; `None` when the process or the field is gone.
pub fn status_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let value = line.strip_prefix(field)?.strip_prefix(':')?;
        value.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// The most this test process has ever held resident, in MiB (`VmHWM`).
pub fn peak_mib_of_self() -> u64 {
    status_kib("self", "VmHWM").expect("/proc/self/status has VmHWM") / 1024
}

/// The most a child process has held resident so far, in MiB (`VmHWM`):
/// read it before the child is reaped.
pub fn peak_mib_of(pid: u32) -> u64 {
    status_kib(&pid.to_string(), "VmHWM").expect("the child's status has VmHWM") / 1024
}
