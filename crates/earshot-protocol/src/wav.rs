//! The one RIFF/WAVE reader: format, channels, sample rate, bit depth, how
//! much audio is present (hence its duration) and the `LIST/INFO` `ICMT`
//! comment, which a fixture may use to carry its own transcript (DESIGN.md
//! §5). Also finds the `data` chunk in the first bytes of a stream
//! ([`locate_data`]) and measures a file from its first bytes and its
//! length ([`duration_of_prefix`]), and writes 16-bit PCM fixtures.
//!
//! Pure and shared: the client checks a dictation file before sending
//! (`api::dictation`), the emulated services read what they receive
//! (`emulator::prerecorded`, `emulator::dictation`). It never panics on odd
//! input: a file that cannot be read gives a [`WavError`] saying why.
//! Chunks are walked by their declared sizes, padded to even lengths; a
//! `data` chunk whose declared size runs past the end of the file (a
//! truncated or still-streaming recording, or the `0xFFFFFFFF`
//! placeholder) counts the bytes actually present.

use std::time::Duration;

/// `WAVE_FORMAT_PCM`.
pub(crate) const FORMAT_PCM: u16 = 0x0001;
/// `WAVE_FORMAT_IEEE_FLOAT`.
pub(crate) const FORMAT_FLOAT: u16 = 0x0003;
/// `WAVE_FORMAT_ALAW`.
pub(crate) const FORMAT_ALAW: u16 = 0x0006;
/// `WAVE_FORMAT_MULAW`.
pub(crate) const FORMAT_MULAW: u16 = 0x0007;
/// `WAVE_FORMAT_EXTENSIBLE`: the real format is in the sub-format GUID.
const FORMAT_EXTENSIBLE: u16 = 0xFFFE;

/// What a WAV header says about its audio.
#[derive(Clone, Debug, PartialEq)]
pub struct WavInfo {
    /// The format tag (the sub-format's, for `WAVE_FORMAT_EXTENSIBLE`).
    pub format: u16,
    pub channels: u16,
    pub sample_rate: u32,
    pub bits_per_sample: u16,
    /// Bytes per second as declared in the `fmt ` chunk.
    pub byte_rate: u32,
    /// Bytes per frame (all channels of one sample) as declared.
    pub block_align: u16,
    /// Audio bytes present: the `data` chunk's declared size, or fewer when
    /// the file ends early.
    pub data_len: u64,
    /// True when the file ends before the declared end of `data`.
    pub truncated: bool,
    /// The `LIST/INFO` `ICMT` text (trimmed), when present and not empty.
    pub comment: Option<String>,
}

/// Why bytes are not a WAV file this reader understands.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    #[error("not a WAV file (no RIFF/WAVE header)")]
    NotWav,
    #[error("the WAV file ends inside its {0}")]
    Truncated(&'static str),
    #[error("the WAV file has no `fmt ` chunk before its audio data")]
    NoFormat,
    #[error("the WAV file has no `data` chunk")]
    NoData,
    #[error("the WAV format is invalid: {0}")]
    BadFormat(String),
}

impl WavInfo {
    /// Whether samples are plain linear or companded values whose frame
    /// size follows from channels × bytes per sample.
    fn is_uncompressed(&self) -> bool {
        matches!(
            self.format,
            FORMAT_PCM | FORMAT_FLOAT | FORMAT_ALAW | FORMAT_MULAW
        )
    }

    /// Bytes per frame: computed for uncompressed formats (headers written
    /// by hand often get `block_align` wrong), declared otherwise.
    pub(crate) fn frame_len(&self) -> u64 {
        if self.is_uncompressed() {
            u64::from(self.channels) * u64::from(self.bits_per_sample.div_ceil(8))
        } else {
            u64::from(self.block_align)
        }
    }

    /// How long the audio present lasts. Uncompressed: whole frames over
    /// the sample rate; compressed: bytes over the declared byte rate.
    pub fn duration(&self) -> Duration {
        let frame = self.frame_len();
        if self.is_uncompressed() && frame > 0 && self.sample_rate > 0 {
            let frames = self.data_len / frame;
            return Duration::from_secs_f64(frames as f64 / f64::from(self.sample_rate));
        }
        if self.byte_rate > 0 {
            return Duration::from_secs_f64(self.data_len as f64 / f64::from(self.byte_rate));
        }
        Duration::ZERO
    }
}

/// Little-endian reads that fail instead of panicking.
fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    let raw = bytes.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([raw[0], raw[1]]))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let raw = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]))
}

/// The fields of a `fmt ` chunk's body.
struct Format {
    format: u16,
    channels: u16,
    sample_rate: u32,
    byte_rate: u32,
    block_align: u16,
    bits_per_sample: u16,
}

fn parse_format(body: &[u8]) -> Result<Format, WavError> {
    let field = |value: Option<u16>| value.ok_or(WavError::Truncated("`fmt ` chunk"));
    let field32 = |value: Option<u32>| value.ok_or(WavError::Truncated("`fmt ` chunk"));
    let mut format = field(u16_at(body, 0))?;
    let channels = field(u16_at(body, 2))?;
    let sample_rate = field32(u32_at(body, 4))?;
    let byte_rate = field32(u32_at(body, 8))?;
    let block_align = field(u16_at(body, 12))?;
    // `bits_per_sample` is absent from some very old 14-byte headers.
    let bits_per_sample = u16_at(body, 14).unwrap_or(0);
    if format == FORMAT_EXTENSIBLE {
        // cbSize (16), valid bits (18), channel mask (20), GUID (24..40):
        // the GUID's first two bytes are the real format tag.
        format = u16_at(body, 24).ok_or(WavError::Truncated("extensible `fmt ` chunk"))?;
    }
    if channels == 0 {
        return Err(WavError::BadFormat("0 channels".into()));
    }
    if sample_rate == 0 {
        return Err(WavError::BadFormat("a sample rate of 0 Hz".into()));
    }
    let uncompressed = matches!(
        format,
        FORMAT_PCM | FORMAT_FLOAT | FORMAT_ALAW | FORMAT_MULAW
    );
    if uncompressed && bits_per_sample == 0 {
        return Err(WavError::BadFormat("0 bits per sample".into()));
    }
    if !uncompressed && byte_rate == 0 && block_align == 0 {
        return Err(WavError::BadFormat(format!(
            "format {format:#06x} declares neither a byte rate nor a block size"
        )));
    }
    Ok(Format {
        format,
        channels,
        sample_rate,
        byte_rate,
        block_align,
        bits_per_sample,
    })
}

/// The most of an `ICMT` comment taken as the transcript, in bytes: a
/// fixture's sentence fits many times over; a megabyte comment costs no
/// more than this (the rest is ignored).
pub(crate) const COMMENT_MAX: usize = 64 * 1024;

/// The `ICMT` entry of a `LIST` chunk body of form `INFO`, if any (at most
/// [`COMMENT_MAX`] bytes of it).
fn info_comment(body: &[u8]) -> Option<String> {
    if body.get(0..4)? != b"INFO" {
        return None;
    }
    let mut at = 4usize;
    while at < body.len() {
        let (Some(id), Some(len)) = (body.get(at..at + 4), u32_at(body, at + 4)) else {
            break;
        };
        let start = at + 8;
        let len = usize::try_from(len).ok()?;
        // A sub-chunk running past its LIST keeps what is there.
        let end = start.saturating_add(len).min(body.len());
        if id == b"ICMT" {
            let raw = body.get(start..end)?;
            let raw = &raw[..raw.len().min(COMMENT_MAX)];
            let text = String::from_utf8_lossy(raw);
            // A cut through a character leaves a replacement mark: drop it.
            let text = text.trim_matches(|c: char| {
                c == '\0' || c.is_whitespace() || (raw.len() == COMMENT_MAX && c == '\u{fffd}')
            });
            return (!text.is_empty()).then(|| text.to_owned());
        }
        at = start.saturating_add(len).saturating_add(len % 2);
    }
    None
}

/// Reads the header of a WAV file held in memory.
pub fn parse(bytes: &[u8]) -> Result<WavInfo, WavError> {
    if bytes.get(0..4) != Some(b"RIFF") || bytes.get(8..12) != Some(b"WAVE") {
        return Err(
            if bytes.len() < 12 && b"RIFF".starts_with(&bytes[..bytes.len().min(4)]) {
                WavError::Truncated("RIFF header")
            } else {
                WavError::NotWav
            },
        );
    }
    let mut format: Option<Format> = None;
    let mut data: Option<(u64, bool)> = None;
    let mut comment = None;
    let mut at = 12usize;
    while at < bytes.len() {
        let (Some(id), Some(declared)) = (bytes.get(at..at + 4), u32_at(bytes, at + 4)) else {
            // A few stray bytes after the last chunk: ignore them.
            break;
        };
        let start = at + 8;
        let available = bytes.len() - start;
        let declared = usize::try_from(declared).unwrap_or(usize::MAX);
        let fits = declared <= available;
        let body = &bytes[start..start + declared.min(available)];
        match id {
            b"fmt " => {
                if !fits {
                    return Err(WavError::Truncated("`fmt ` chunk"));
                }
                format = Some(parse_format(body)?);
            }
            b"data" => {
                if format.is_none() {
                    return Err(WavError::NoFormat);
                }
                if data.is_none() {
                    data = Some((body.len() as u64, !fits));
                }
            }
            b"LIST" if comment.is_none() => comment = info_comment(body),
            _ => {}
        }
        if !fits {
            break;
        }
        // Chunks are padded to an even size; a missing pad byte at the
        // very end is tolerated.
        at = start + declared + declared % 2;
    }
    let format = format.ok_or(WavError::NoFormat)?;
    let (data_len, truncated) = data.ok_or(WavError::NoData)?;
    Ok(WavInfo {
        format: format.format,
        channels: format.channels,
        sample_rate: format.sample_rate,
        bits_per_sample: format.bits_per_sample,
        byte_rate: format.byte_rate,
        block_align: format.block_align,
        data_len,
        truncated,
        comment,
    })
}

/// Declared `data` sizes of 0, or from here up, are streaming
/// placeholders: the audio runs to the end of the stream.
pub(crate) const PLACEHOLDER_SIZE: u64 = 0x7FFF_F000;

/// The `data` chunk's declared size, unless it is a streaming placeholder.
pub fn declared_data_len(declared: u32) -> Option<u64> {
    let declared = u64::from(declared);
    (declared != 0 && declared < PLACEHOLDER_SIZE).then_some(declared)
}

/// Where the `data` chunk is in the first bytes of a WAV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataChunk {
    /// Its header ends at `header_end` (the audio starts there).
    At { header_end: usize, declared: u32 },
    /// Not among the bytes so far.
    NeedMore,
}

/// Finds the `data` chunk's header by walking the chunks before it.
/// Fewer than 12 bytes are not judged yet ([`DataChunk::NeedMore`]).
pub fn locate_data(bytes: &[u8]) -> Result<DataChunk, WavError> {
    if bytes.len() >= 12 && (&bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE") {
        return Err(WavError::NotWav);
    }
    let mut at = 12usize;
    loop {
        let (Some(id), Some(size)) = (bytes.get(at..at.saturating_add(4)), u32_at(bytes, at + 4))
        else {
            return Ok(DataChunk::NeedMore);
        };
        if id == b"data" {
            return Ok(DataChunk::At {
                header_end: at + 8,
                declared: size,
            });
        }
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        at = at
            .saturating_add(8)
            .saturating_add(size)
            .saturating_add(size % 2);
    }
}

/// Reads the header from the bytes before the `data` chunk's header
/// (format, and a `LIST` placed before the audio), with no audio.
pub fn parse_head(before_data: &[u8]) -> Result<WavInfo, WavError> {
    let mut probe = before_data.to_vec();
    probe.extend_from_slice(b"data\0\0\0\0");
    parse(&probe)
}

/// Why [`duration_of_prefix`] cannot measure a file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    #[error(transparent)]
    Wav(#[from] WavError),
    /// The `data` chunk starts after the bytes read.
    #[error("no `data` chunk in the first {0} bytes")]
    NoDataYet(usize),
}

/// How long a WAV file of `file_len` bytes lasts, from its first bytes:
/// the `data` chunk's declared size, or what the file holds when that
/// size is a placeholder or runs past the end.
pub fn duration_of_prefix(prefix: &[u8], file_len: u64) -> Result<Duration, PrefixError> {
    if prefix.get(0..4) != Some(b"RIFF") || prefix.get(8..12) != Some(b"WAVE") {
        return Err(WavError::NotWav.into());
    }
    let DataChunk::At {
        header_end,
        declared,
    } = locate_data(prefix)?
    else {
        return Err(PrefixError::NoDataYet(prefix.len()));
    };
    let info = parse_head(&prefix[..header_end - 8])?;
    let present = file_len.saturating_sub(header_end as u64);
    let data_len = declared_data_len(declared).map_or(present, |declared| declared.min(present));
    Ok(WavInfo { data_len, ..info }.duration())
}

/// A 16-bit PCM WAV of `samples` (little-endian, `channels` interleaved),
/// with `comment` in a `LIST/INFO/ICMT` chunk: the emulator's convention for
/// a fixture's transcript.
pub fn encode_pcm16(rate: u32, channels: u16, samples: &[u8], comment: Option<&str>) -> Vec<u8> {
    let mut chunks = vec![chunk(b"fmt ", &fmt_body(FORMAT_PCM, channels, rate, 16))];
    if let Some(text) = comment {
        let mut text = text.as_bytes().to_vec();
        text.push(0);
        let mut info = b"INFO".to_vec();
        info.extend_from_slice(&chunk(b"ICMT", &text));
        chunks.push(chunk(b"LIST", &info));
    }
    chunks.push(chunk(b"data", samples));
    riff(&chunks)
}

/// A chunk: id, little-endian size, body, pad byte when odd.
fn chunk(id: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = id.to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(body);
    if body.len() % 2 == 1 {
        out.push(0);
    }
    out
}

/// A `fmt ` chunk body.
fn fmt_body(format: u16, channels: u16, rate: u32, bits: u16) -> Vec<u8> {
    let align = channels * bits.div_ceil(8);
    let mut body = Vec::new();
    body.extend_from_slice(&format.to_le_bytes());
    body.extend_from_slice(&channels.to_le_bytes());
    body.extend_from_slice(&rate.to_le_bytes());
    body.extend_from_slice(&(rate * u32::from(align)).to_le_bytes());
    body.extend_from_slice(&align.to_le_bytes());
    body.extend_from_slice(&bits.to_le_bytes());
    body
}

/// `RIFF` + size + `WAVE` around `chunks`.
fn riff(chunks: &[Vec<u8>]) -> Vec<u8> {
    let inner: Vec<u8> = chunks.concat();
    let mut out = b"RIFF".to_vec();
    out.extend_from_slice(&(4 + inner.len() as u32).to_le_bytes());
    out.extend_from_slice(b"WAVE");
    out.extend_from_slice(&inner);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn list_info(comment: &[u8]) -> Vec<u8> {
        let mut body = b"INFO".to_vec();
        body.extend_from_slice(&chunk(b"ISFT", b"earshot test\0"));
        body.extend_from_slice(&chunk(b"ICMT", comment));
        chunk(b"LIST", &body)
    }

    /// 16-bit PCM silence: `seconds` at `rate` Hz, `channels` channels.
    pub(crate) fn pcm_wav(
        rate: u32,
        channels: u16,
        seconds: f64,
        comment: Option<&str>,
    ) -> Vec<u8> {
        let frames = (f64::from(rate) * seconds) as usize;
        let data = vec![0u8; frames * usize::from(channels) * 2];
        let mut chunks = vec![chunk(b"fmt ", &fmt_body(FORMAT_PCM, channels, rate, 16))];
        if let Some(text) = comment {
            let mut text = text.as_bytes().to_vec();
            text.push(0);
            chunks.push(list_info(&text));
        }
        chunks.push(chunk(b"data", &data));
        riff(&chunks)
    }

    #[test]
    fn reads_format_and_duration_of_pcm() {
        let wav = pcm_wav(8000, 1, 3.0, None);
        let info = parse(&wav).unwrap();
        assert_eq!(info.format, FORMAT_PCM);
        assert_eq!(
            (info.channels, info.sample_rate, info.bits_per_sample),
            (1, 8000, 16)
        );
        assert_eq!(info.data_len, 48_000);
        assert!(!info.truncated);
        assert_eq!(info.duration(), Duration::from_secs(3));
        assert_eq!(info.comment, None);

        let stereo = parse(&pcm_wav(44_100, 2, 0.5, None)).unwrap();
        assert_eq!(stereo.frame_len(), 4);
        assert_eq!(stereo.duration(), Duration::from_millis(500));
    }

    #[test]
    fn reads_the_icmt_comment_before_or_after_the_data() {
        let wav = pcm_wav(16_000, 1, 1.0, Some("  hello from the fixture "));
        let info = parse(&wav).unwrap();
        assert_eq!(info.comment.as_deref(), Some("hello from the fixture"));

        // LIST after data, with an odd-sized comment (pad byte).
        let data = chunk(b"data", &[0u8; 16_000]);
        let wav = riff(&[
            chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16)),
            data,
            list_info(b"odd"),
        ]);
        let info = parse(&wav).unwrap();
        assert_eq!(info.comment.as_deref(), Some("odd"));
        assert_eq!(info.duration(), Duration::from_secs(1));
    }

    #[test]
    fn unknown_and_odd_sized_chunks_are_skipped_by_their_padding() {
        let wav = riff(&[
            chunk(b"JUNK", &[1, 2, 3]),
            chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 8)),
            chunk(b"fact", &[9]),
            chunk(b"data", &[0u8; 4000]),
        ]);
        let info = parse(&wav).unwrap();
        assert_eq!(info.bits_per_sample, 8);
        assert_eq!(info.duration(), Duration::from_millis(500));
    }

    #[test]
    fn truncated_data_counts_the_bytes_present() {
        let mut wav = pcm_wav(8000, 1, 2.0, None);
        wav.truncate(wav.len() - 16_000);
        let info = parse(&wav).unwrap();
        assert!(info.truncated);
        assert_eq!(info.duration(), Duration::from_secs(1));

        // A streaming header: data size 0xFFFFFFFF, audio to the end.
        let mut streaming = riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16))]);
        streaming.extend_from_slice(b"data");
        streaming.extend_from_slice(&u32::MAX.to_le_bytes());
        streaming.extend_from_slice(&[0u8; 8000]);
        assert_eq!(
            parse(&streaming).unwrap().duration(),
            Duration::from_millis(500)
        );
    }

    #[test]
    fn extensible_format_uses_the_sub_format() {
        let mut body = fmt_body(FORMAT_EXTENSIBLE, 2, 48_000, 24);
        body.extend_from_slice(&22u16.to_le_bytes()); // cbSize
        body.extend_from_slice(&24u16.to_le_bytes()); // valid bits
        body.extend_from_slice(&3u32.to_le_bytes()); // channel mask
        body.extend_from_slice(&FORMAT_PCM.to_le_bytes());
        body.extend_from_slice(&[0u8; 14]); // rest of the GUID
        let wav = riff(&[chunk(b"fmt ", &body), chunk(b"data", &[0u8; 48_000 * 6])]);
        let info = parse(&wav).unwrap();
        assert_eq!(info.format, FORMAT_PCM);
        assert_eq!(info.duration(), Duration::from_secs(1));
    }

    #[test]
    fn compressed_formats_use_the_byte_rate() {
        let mut body = fmt_body(0x0011, 1, 8000, 4); // IMA ADPCM
        body[8..12].copy_from_slice(&4055u32.to_le_bytes());
        body[12..14].copy_from_slice(&256u16.to_le_bytes());
        let wav = riff(&[chunk(b"fmt ", &body), chunk(b"data", &[0u8; 8110])]);
        assert_eq!(parse(&wav).unwrap().duration(), Duration::from_secs(2));
    }

    #[test]
    fn locate_data_walks_the_chunks_before_the_audio() {
        let wav = pcm_wav(8000, 1, 1.0, Some("hi"));
        let DataChunk::At {
            header_end,
            declared,
        } = locate_data(&wav).unwrap()
        else {
            panic!("no data chunk");
        };
        assert_eq!(declared, 16_000);
        assert_eq!(wav.len() - header_end, 16_000);
        assert_eq!(locate_data(&wav[..header_end - 1]), Ok(DataChunk::NeedMore));
        assert_eq!(locate_data(&wav[..5]), Ok(DataChunk::NeedMore));
        assert_eq!(
            locate_data(b"hello world, not audio"),
            Err(WavError::NotWav)
        );
        let head = parse_head(&wav[..header_end - 8]).unwrap();
        assert_eq!((head.data_len, head.comment.as_deref()), (0, Some("hi")));
    }

    #[test]
    fn duration_of_prefix_reads_the_declared_size_or_what_is_there() {
        // Declares 121 s of 8 kHz mono 16-bit; the file holds what it holds.
        let mut wav = riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16))]);
        wav.extend_from_slice(b"data");
        wav.extend_from_slice(&(121 * 16000u32).to_le_bytes());
        let header = wav.len() as u64;
        let seconds = |len: u64| duration_of_prefix(&wav, len).unwrap().as_secs_f64();
        assert!((seconds(header + 121 * 16000) - 121.0).abs() < 1e-9);
        assert!((seconds(header + 16000) - 1.0).abs() < 1e-9);
        assert_eq!(
            duration_of_prefix(b"not a wav at all", 100),
            Err(PrefixError::Wav(WavError::NotWav))
        );
        let cut = &wav[..20];
        assert_eq!(
            duration_of_prefix(cut, 1000),
            Err(PrefixError::NoDataYet(20))
        );
        // A placeholder size: the audio runs to the end of the file.
        let mut streaming = riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16))]);
        streaming.extend_from_slice(b"data");
        streaming.extend_from_slice(&u32::MAX.to_le_bytes());
        let header = streaming.len() as u64;
        assert_eq!(
            duration_of_prefix(&streaming, header + 8000),
            Ok(Duration::from_millis(500))
        );
    }

    #[test]
    fn broken_files_are_errors_never_panics() {
        let good = pcm_wav(8000, 1, 0.1, Some("text"));
        // Every prefix of a good file either parses or is an error.
        for len in 0..good.len() {
            let _ = parse(&good[..len]);
        }
        assert_eq!(parse(b""), Err(WavError::Truncated("RIFF header")));
        assert_eq!(
            parse(b"RIFF\x10\0"),
            Err(WavError::Truncated("RIFF header"))
        );
        assert_eq!(parse(b"ID3\x03\0\0\0\0\0\0\0\0"), Err(WavError::NotWav));
        assert_eq!(parse(b"hello world, not audio"), Err(WavError::NotWav));
        assert_eq!(parse(&good[..20]), Err(WavError::Truncated("`fmt ` chunk")));
        assert_eq!(parse(&riff(&[])), Err(WavError::NoFormat));
        assert_eq!(
            parse(&riff(&[chunk(b"data", &[0; 4])])),
            Err(WavError::NoFormat)
        );
        assert_eq!(
            parse(&riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16))])),
            Err(WavError::NoData)
        );
        assert!(matches!(
            parse(&riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 0, 8000, 16))])),
            Err(WavError::BadFormat(_))
        ));
        assert!(matches!(
            parse(&riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 0, 16))])),
            Err(WavError::BadFormat(_))
        ));
        // Huge declared sizes do not overflow.
        let mut huge = riff(&[chunk(b"fmt ", &fmt_body(FORMAT_PCM, 1, 8000, 16))]);
        huge.extend_from_slice(b"LIST");
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(b"INFOICMT\xff\xff\xff\xffabc");
        assert_eq!(parse(&huge), Err(WavError::NoData));
    }
}
