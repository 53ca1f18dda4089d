//! `earshot dictate FILE|-`: one dictation request, streamed from a file
//! or standard input; prints the verbatim text and the rewrite, or why
//! there is no rewrite (a failed rewrite is not a failed request).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::output::{emit, print_json};
use super::{Connection, GlobalOptions, report};
use earshot_core::api::dictation::{AudioSource, DictationError, DictationPath, DictationRequest};
use earshot_core::api::types::dictation::{AudioFormat, Dictation, DictationConfig, Rewrite};
use earshot_core::api::{ApiError, Client, Region};
use earshot_core::config::resolve;
use earshot_core::duration_text;

#[derive(Args, Debug)]
pub(crate) struct DictateArgs {
    /// WAV file to send, or `-` to stream standard input (a WAV, or raw
    /// PCM with --pcm) as it is captured.
    #[arg(value_name = "FILE|-")]
    pub(crate) input: String,
    /// The audio is raw 16-bit little-endian PCM (give --sample-rate and
    /// --channels).
    #[arg(long)]
    pub(crate) pcm: bool,
    /// Sample rate of raw PCM, in Hz.
    #[arg(long, value_name = "HZ")]
    pub(crate) sample_rate: Option<u32>,
    /// Channels of raw PCM.
    #[arg(long, value_name = "N")]
    pub(crate) channels: Option<u16>,
    /// A language code of the audio; repeat or separate with commas
    /// (default: en).
    #[arg(long = "language", value_name = "CODE", value_delimiter = ',')]
    pub(crate) languages: Vec<String>,
    /// The situation of the audio, to help transcription (`stt_prompt`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) prompt: Option<String>,
    /// A name or term to bias transcription toward; repeat for more.
    #[arg(long = "keyterm", value_name = "TERM")]
    pub(crate) keyterms: Vec<String>,
    /// Replace the default cleanup with this instruction (`llm_instruction`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) instruction: Option<String>,
    /// Region to send to (default: the profile's).
    #[arg(long, value_enum, value_name = "REGION")]
    pub(crate) region: Option<Region>,
    /// Path to use: live (/v1/transcribe/live) or stream (/v1/transcribe/stream).
    #[arg(long, value_enum, default_value = "live", value_name = "PATH")]
    pub(crate) endpoint: DictationPath,
    /// Print the server's answer as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    #[command(flatten)]
    pub(crate) connection: Connection,
}

pub(crate) async fn run(args: DictateArgs, global: &GlobalOptions) -> color_eyre::Result<ExitCode> {
    let result = async {
        let (client, profile_region) = connect(&args.connection, global)?;
        let request = DictationRequest {
            config: DictationConfig {
                sample_rate: args.sample_rate,
                channels: args.channels,
                language_codes: (!args.languages.is_empty()).then(|| args.languages.clone()),
                stt_prompt: args.prompt.clone(),
                keyterms_prompt: (!args.keyterms.is_empty()).then(|| args.keyterms.clone()),
                llm_instruction: args.instruction.clone(),
            },
            format: if args.pcm {
                AudioFormat::Pcm
            } else {
                AudioFormat::Wav
            },
            region: args.region.unwrap_or(profile_region),
            path: args.endpoint,
            ..DictationRequest::default()
        };
        let audio = if args.input == "-" {
            // The rules first: bad flags are named before waiting for audio.
            request
                .config
                .validate(request.format)
                .map_err(|invalid| DictationError::Api(ApiError::Invalid(invalid)))?;
            match first_of_stdin().await {
                Ok(audio) => audio,
                Err(message) => {
                    eprintln!("earshot dictate: {message}");
                    return Ok(ExitCode::from(2));
                }
            }
        } else {
            AudioSource::file(PathBuf::from(&args.input))
        };
        let answer = client.dictate(&request, audio).await?;
        if args.json {
            print_json(&answer)?;
        } else {
            emit(&render(&answer))?;
        }
        Ok(ExitCode::SUCCESS)
    }
    .await;
    result.or_else(report_dictation)
}

/// Standard input as the audio, once its first bytes have arrived: an
/// empty input or one that cannot be read (a directory, a closed
/// descriptor) is bad input, said as such, rather than a server's refusal
/// or an unreachable server.
async fn first_of_stdin() -> Result<AudioSource, String> {
    use tokio::io::AsyncReadExt;
    let mut stdin = tokio::io::stdin();
    let mut first = vec![0; STDIN_FIRST_READ];
    let read = stdin
        .read(&mut first)
        .await
        .map_err(|error| format!("cannot read the audio from standard input: {error}"))?;
    if read == 0 {
        return Err(
            "standard input is empty: pipe the audio in, e.g. `arecord -f S16_LE -r 16000 -t wav \
             | earshot dictate -`, or give a file"
                .to_owned(),
        );
    }
    first.truncate(read);
    Ok(AudioSource::reader(
        std::io::Cursor::new(first).chain(stdin),
    ))
}

/// The largest first read of standard input (the rest streams after it).
const STDIN_FIRST_READ: usize = 64 * 1024;

/// A client for the resolved profile and the profile's region.
pub(super) fn connect(
    connection: &Connection,
    global: &GlobalOptions,
) -> color_eyre::Result<(Client, Region)> {
    let resolved = resolve(&connection.resolve_options(global))?;
    let key = resolved.require_api_key()?.clone();
    Ok((Client::new(resolved.endpoints, key)?, resolved.region))
}

/// Bad input found before sending exits 2 with the rule broken, as for
/// every command; other failures print their cause (exit 1).
pub(super) fn report_dictation(error: color_eyre::Report) -> color_eyre::Result<ExitCode> {
    if let Some(invalid) = error
        .downcast_ref::<DictationError>()
        .and_then(DictationError::invalid)
    {
        eprintln!("error: invalid request: {invalid}");
        return Ok(ExitCode::from(2));
    }
    report(error)
}

/// The text, the rewrite (or why there is none), and one line of details.
pub(crate) fn render(answer: &Dictation) -> String {
    let mut out = format!("text:    {}\n", answer.text);
    match answer.rewrite() {
        Rewrite::Done(rewrite) => {
            let indented = rewrite.replace('\n', "\n         ");
            out.push_str(&format!("rewrite: {indented}\n"));
        }
        Rewrite::TimedOut => out.push_str(
            "rewrite: none — the rewrite timed out (past its 5 s deadline); use the text above\n",
        ),
        Rewrite::Failed(why) => out.push_str(&format!(
            "rewrite: none — the rewrite failed (llm_error {why:?}); use the text above\n"
        )),
        Rewrite::Missing => {
            out.push_str("rewrite: none — the server sent no rewrite; use the text above\n");
        }
    }
    let mut details = format!(
        "session {} · {} of audio · confidence {:.2}",
        answer.session_id,
        duration_text::of_millis(answer.audio_duration_ms),
        answer.confidence
    );
    if let Some(total) = answer.request_time_ms {
        details.push_str(&format!(" · server {}", duration_text::of_millis(total)));
        let parts: Vec<String> = [
            ("auth", answer.auth_time_ms),
            ("transcription", answer.sync_time_ms),
        ]
        .into_iter()
        .filter_map(|(name, value)| {
            value.map(|ms| format!("{name} {}", duration_text::of_millis(ms)))
        })
        .collect();
        if !parts.is_empty() {
            details.push_str(&format!(" ({})", parts.join(", ")));
        }
    }
    out.push_str(&details);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_rewrite_says_why_and_keeps_the_text() {
        let answer: Dictation = serde_json::from_value(serde_json::json!({
            "text": "um hello", "words": [], "confidence": 0.9,
            "llm_response": null, "llm_error": "timeout",
            "audio_duration_ms": 1500, "session_id": "abc",
            "request_time_ms": 12.5, "auth_time_ms": 0.1, "sync_time_ms": 10.0
        }))
        .unwrap();
        let text = render(&answer);
        assert!(text.starts_with("text:    um hello\n"), "{text}");
        assert!(text.contains("rewrite timed out"), "{text}");
        assert!(text.contains("1.5 s of audio"), "{text}");
        assert!(
            text.contains("server 12 ms (auth 0.1 ms, transcription 10 ms)"),
            "{text}"
        );
    }
}
