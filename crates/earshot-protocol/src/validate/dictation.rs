//! The dictation `config` rules (spec parts 2 A and 8 A): languages from
//! the listed set, the length limits, and what raw PCM must state.
//! Checked by the client before sending and by the emulator on arrival.

use super::ValidationError;
use crate::types::dictation::{
    AudioFormat, DictationConfig, KEYTERMS_MAX_CHARS, KEYTERMS_MAX_ITEMS, LANGUAGE_CODES,
    LLM_INSTRUCTION_MAX_CHARS, STT_PROMPT_MAX_CHARS,
};

impl DictationConfig {
    /// Every rule, for audio of `format`: the field rules, then the PCM one.
    pub fn validate(&self, format: AudioFormat) -> Result<(), ValidationError> {
        self.validate_fields()?;
        self.validate_for(format)
    }

    /// The rules that do not depend on the audio: languages from the listed
    /// set, and the length limits.
    pub fn validate_fields(&self) -> Result<(), ValidationError> {
        if let Some(rate) = self.sample_rate {
            positive("sample_rate", u64::from(rate))?;
        }
        if let Some(channels) = self.channels {
            positive("channels", u64::from(channels))?;
        }
        if let Some(codes) = &self.language_codes {
            language_codes("language_codes", codes)?;
        }
        if let Some(prompt) = &self.stt_prompt {
            stt_prompt("stt_prompt", prompt)?;
        }
        if let Some(terms) = &self.keyterms_prompt {
            keyterms("keyterms_prompt", terms)?;
        }
        if let Some(instruction) = &self.llm_instruction {
            llm_instruction(instruction)?;
        }
        Ok(())
    }

    /// `audio/pcm` has no header: `sample_rate` and `channels` must say
    /// what the bytes are.
    pub fn validate_for(&self, format: AudioFormat) -> Result<(), ValidationError> {
        if format == AudioFormat::Pcm {
            for (field, given) in [
                ("sample_rate", self.sample_rate.is_some()),
                ("channels", self.channels.is_some()),
            ] {
                if !given {
                    return Err(ValidationError::new(
                        field,
                        "is required when the audio is audio/pcm (raw PCM has no header to say it)",
                    ));
                }
            }
        }
        Ok(())
    }
}

fn positive(field: &'static str, value: u64) -> Result<(), ValidationError> {
    if value == 0 {
        return Err(ValidationError::new(field, "must be at least 1"));
    }
    Ok(())
}

/// Each code one of [`LANGUAGE_CODES`].
pub fn language_codes(field: &'static str, codes: &[String]) -> Result<(), ValidationError> {
    for code in codes {
        if !LANGUAGE_CODES.contains(&code.as_str()) {
            return Err(ValidationError::new(
                field,
                format!(
                    "{code:?} is not a supported language code; use one of: {}",
                    LANGUAGE_CODES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// At most [`STT_PROMPT_MAX_CHARS`] characters (`field` is `stt_prompt` or
/// its alias `prompt`).
pub fn stt_prompt(field: &'static str, prompt: &str) -> Result<(), ValidationError> {
    let chars = prompt.chars().count();
    if chars > STT_PROMPT_MAX_CHARS {
        return Err(ValidationError::new(
            field,
            format!("must be at most {STT_PROMPT_MAX_CHARS} characters (got {chars})"),
        ));
    }
    Ok(())
}

/// At most [`KEYTERMS_MAX_ITEMS`] items and [`KEYTERMS_MAX_CHARS`]
/// characters in total (`field` is `keyterms_prompt` or a legacy alias).
pub fn keyterms(field: &'static str, terms: &[String]) -> Result<(), ValidationError> {
    if terms.len() > KEYTERMS_MAX_ITEMS {
        return Err(ValidationError::new(
            field,
            format!(
                "must have at most {KEYTERMS_MAX_ITEMS} items (got {})",
                terms.len()
            ),
        ));
    }
    let chars: usize = terms.iter().map(|term| term.chars().count()).sum();
    if chars > KEYTERMS_MAX_CHARS {
        return Err(ValidationError::new(
            field,
            format!("must have at most {KEYTERMS_MAX_CHARS} characters in total (got {chars})"),
        ));
    }
    Ok(())
}

/// At most [`LLM_INSTRUCTION_MAX_CHARS`] characters.
pub fn llm_instruction(instruction: &str) -> Result<(), ValidationError> {
    let chars = instruction.chars().count();
    if chars > LLM_INSTRUCTION_MAX_CHARS {
        return Err(ValidationError::new(
            "llm_instruction",
            format!("must be at most {LLM_INSTRUCTION_MAX_CHARS} characters (got {chars})"),
        ));
    }
    Ok(())
}
