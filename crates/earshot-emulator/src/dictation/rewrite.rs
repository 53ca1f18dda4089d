//! The emulated rewrite of a dictation: fillers dropped, "X, no, Y"
//! self-corrections resolved, sentence case, and the `llm_instruction`
//! applied visibly ([`rewrite`]).

/// Words the default rewrite drops.
const FILLERS: [&str; 10] = [
    "um", "umm", "uh", "uhm", "er", "erm", "ah", "hmm", "mm", "mhm",
];

/// The default cleanup (self-corrections resolved, fillers dropped,
/// sentence case, a final full stop), then the instruction: one that
/// mentions a list or bullets puts each sentence on a `- ` line; one that
/// mentions upper case or capitals upper-cases the text. Any other
/// instruction leaves the cleanup as it is.
pub(crate) fn rewrite(text: &str, instruction: Option<&str>) -> String {
    let mut tokens: Vec<String> = text.split_whitespace().map(str::to_owned).collect();
    resolve_corrections(&mut tokens);
    tokens.retain(|token| !FILLERS.contains(&normalise(token).as_str()));
    let cleaned = sentence_case(&tokens.join(" "));
    let instruction = instruction.unwrap_or("").to_ascii_lowercase();
    let mut out = cleaned;
    if instruction.contains("list") || instruction.contains("bullet") {
        out = out
            .split_inclusive(['.', '!', '?'])
            .map(|sentence| sentence.trim().trim_end_matches(['.', '!', '?']).trim())
            .filter(|sentence| !sentence.is_empty())
            .map(|sentence| format!("- {sentence}"))
            .collect::<Vec<_>>()
            .join("\n");
    }
    if instruction.contains("uppercase")
        || instruction.contains("upper case")
        || instruction.contains("capital")
    {
        out = out.to_uppercase();
    }
    out
}

/// A token without surrounding punctuation, lower-cased.
fn normalise(token: &str) -> String {
    token
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
}

/// "… on Tuesday, no, Wednesday …" → "… on Wednesday …": the correction
/// replaces the word before ", no," or, when the correction starts with a
/// word said shortly before ("at three, no, at four"), everything from
/// that word on.
fn resolve_corrections(tokens: &mut Vec<String>) {
    // One pass: `kept` is what survives so far, so each correction only
    // cuts the end of it (the earlier scan-and-drain loop was quadratic).
    let mut kept: Vec<String> = Vec::with_capacity(tokens.len());
    let mut rest = std::mem::take(tokens).into_iter().peekable();
    while let Some(token) = rest.next() {
        let correction = token.eq_ignore_ascii_case("no,")
            && kept.last().is_some_and(|last| last.ends_with(','))
            && rest.peek().is_some();
        if !correction {
            kept.push(token);
            continue;
        }
        let corrected = kept.len() - 1;
        let first = rest.peek().map(|next| normalise(next)).unwrap_or_default();
        let start = (corrected.saturating_sub(3)..=corrected)
            .rev()
            .find(|&at| normalise(&kept[at]) == first)
            .unwrap_or(corrected);
        kept.truncate(start);
    }
    *tokens = kept;
}

/// Capital after each sentence end, `i` as `I`, a final full stop.
fn sentence_case(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut capital = true;
    for word in text.split(' ').filter(|word| !word.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        let word = if word == "i" || word.starts_with("i'") {
            format!("I{}", &word[1..])
        } else {
            word.to_owned()
        };
        let mut chars = word.chars();
        if capital && let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        } else {
            out.push_str(&word);
        }
        capital = word.ends_with(['.', '!', '?']);
    }
    let trimmed = out.trim_end_matches([',', ';', ':']).len();
    out.truncate(trimmed);
    if !out.is_empty() && !out.ends_with(['.', '!', '?']) {
        out.push('.');
    }
    out
}
