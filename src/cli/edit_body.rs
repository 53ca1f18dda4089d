//! A body edited in the operator's editor before it is sent (`earshot
//! events resend --edit`): written to a private temporary file, opened
//! with `$VISUAL`, else `$EDITOR`, else `vi`, read back within a bound,
//! and the change said as lines taken out and put in.

use std::process::Command;

use earshot_core::bounded_file::{self, Limit};

/// The largest body read back (the platform's own deliveries are far
/// smaller).
const EDITED: Limit = Limit {
    what: "edited body",
    max: 10 * 1024 * 1024,
};

/// `body` as the operator left it in the editor; why not, when the editor
/// failed or the file cannot be read back.
pub(super) fn edit(body: &[u8]) -> Result<Vec<u8>, String> {
    let dir = tempfile::tempdir().map_err(|error| format!("no temporary directory: {error}"))?;
    let path = dir.path().join("event.json");
    std::fs::write(&path, body)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_owned());
    // Through the shell, so an editor given with its flags (`code -w`) runs.
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("earshot-edit")
        .arg(&path)
        .status()
        .map_err(|error| format!("cannot run the editor `{editor}`: {error}"))?;
    if !status.success() {
        return Err(format!(
            "the editor `{editor}` exited with {status}: nothing sent"
        ));
    }
    bounded_file::read(&path, EDITED).map_err(|error| error.to_string())
}

/// What changed from `before` to `after`, line by line: the lines both
/// share at the start and the end left out, then `- ` for each line taken
/// out and `+ ` for each put in. Empty when nothing changed.
pub(super) fn diff(before: &[u8], after: &[u8]) -> String {
    let before: Vec<&str> = std::str::from_utf8(before)
        .unwrap_or_default()
        .lines()
        .collect();
    let after_text = String::from_utf8_lossy(after);
    let after: Vec<&str> = after_text.lines().collect();
    let head = before
        .iter()
        .zip(&after)
        .take_while(|(a, b)| a == b)
        .count();
    let tail = before[head..]
        .iter()
        .rev()
        .zip(after[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let taken = &before[head..before.len() - tail];
    let put = &after[head..after.len() - tail];
    taken
        .iter()
        .map(|line| format!("- {line}\n"))
        .chain(put.iter().map(|line| format!("+ {line}\n")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn only_the_changed_lines_are_said() {
        assert_eq!(diff(b"a\nb\nc\n", b"a\nB\nc\n"), "- b\n+ B\n");
        assert_eq!(
            diff(b"{\"x\":1}", b"{\"x\":2}"),
            "- {\"x\":1}\n+ {\"x\":2}\n"
        );
        assert_eq!(diff(b"a\nb\n", b"a\nb\n"), "");
        assert_eq!(diff(b"a\n", b"a\nnew\n"), "+ new\n");
    }
}
