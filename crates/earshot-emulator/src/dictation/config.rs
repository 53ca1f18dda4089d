//! The `config` part (spec parts 2 A and 7 A): [`parse_config`] reads it
//! with the client's own rules plus what only a server sees.

use serde_json::Value;

use super::Refuse;
use crate::problem::Problem;
use earshot_protocol::types::dictation::DictationConfig;
use earshot_protocol::validate::dictation as rules;

/// The config fields part 2 A accepts, aliases included.
const CONFIG_FIELDS: [&str; 9] = [
    "sample_rate",
    "channels",
    "language_codes",
    "stt_prompt",
    "prompt",
    "keyterms_prompt",
    "keyterms",
    "word_boost",
    "llm_instruction",
];

/// Reads a well-formed config object with the client's own rules
/// ([`DictationConfig::validate_fields`]) plus what only a server sees:
/// unknown fields, aliases sent together, wrong JSON types. `null` means
/// "not given" for every field.
pub(super) fn parse_config(value: Value) -> Result<DictationConfig, Refuse> {
    let Value::Object(map) = value else {
        return Err(
            Problem::bad_request("`config`: must be a JSON object ({} for the defaults)").into(),
        );
    };
    if let Some(unknown) = map
        .keys()
        .find(|key| !CONFIG_FIELDS.contains(&key.as_str()))
    {
        return Err(Problem::bad_request(format!(
            "`config`: unknown field `{unknown}`; accepted: sample_rate, channels, language_codes, stt_prompt (alias prompt), keyterms_prompt (legacy keyterms, word_boost), llm_instruction"
        ))
        .into());
    }
    if map.contains_key("stt_prompt") && map.contains_key("prompt") {
        return Err(
            Problem::bad_request("`stt_prompt`: send it or its alias `prompt`, not both").into(),
        );
    }
    let keyterm_names: Vec<&str> = ["keyterms_prompt", "keyterms", "word_boost"]
        .into_iter()
        .filter(|name| map.contains_key(*name))
        .collect();
    if keyterm_names.len() > 1 {
        return Err(Problem::bad_request(format!(
            "`keyterms_prompt`: send at most one of keyterms_prompt, keyterms, word_boost (the last two are legacy aliases); got {}",
            keyterm_names.join(" and ")
        ))
        .into());
    }
    let given = |name: &str| map.get(name).filter(|value| !value.is_null());
    let mut config = DictationConfig {
        sample_rate: match given("sample_rate") {
            None => None,
            Some(value) => Some(integer(value, "sample_rate", u64::from(u32::MAX))? as u32),
        },
        channels: match given("channels") {
            None => None,
            Some(value) => Some(integer(value, "channels", u64::from(u16::MAX))? as u16),
        },
        language_codes: match given("language_codes") {
            None => None,
            Some(value) => {
                let codes = strings(value, "language_codes")?;
                rules::language_codes("language_codes", &codes)?;
                Some(codes)
            }
        },
        ..DictationConfig::default()
    };
    for name in ["stt_prompt", "prompt"] {
        if let Some(value) = given(name) {
            let prompt = string(value, name)?;
            rules::stt_prompt(name, &prompt)?;
            config.stt_prompt = Some(prompt);
        }
    }
    for name in ["keyterms_prompt", "keyterms", "word_boost"] {
        if let Some(value) = given(name) {
            let terms = strings(value, name)?;
            rules::keyterms(name, &terms)?;
            config.keyterms_prompt = Some(terms);
        }
    }
    if let Some(value) = given("llm_instruction") {
        config.llm_instruction = Some(string(value, "llm_instruction")?);
    }
    config.validate_fields()?;
    Ok(config)
}

fn integer(value: &Value, name: &str, max: u64) -> Result<u64, Problem> {
    value
        .as_u64()
        .filter(|number| (1..=max).contains(number))
        .ok_or_else(|| {
            Problem::bad_request(format!("`{name}`: must be an integer from 1 to {max}"))
        })
}

fn string(value: &Value, name: &str) -> Result<String, Problem> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| Problem::bad_request(format!("`{name}`: must be a string")))
}

fn strings(value: &Value, name: &str) -> Result<Vec<String>, Problem> {
    let items = value
        .as_array()
        .ok_or_else(|| Problem::bad_request(format!("`{name}`: must be an array of strings")))?;
    items
        .iter()
        .map(|item| {
            item.as_str().map(str::to_owned).ok_or_else(|| {
                Problem::bad_request(format!("`{name}`: must be an array of strings"))
            })
        })
        .collect()
}
