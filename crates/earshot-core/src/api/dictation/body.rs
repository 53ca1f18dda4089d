//! The hand-built `multipart/form-data` body of a dictation or sync
//! request: [`Envelope`], the fixed bytes around the audio (`config` first,
//! then the `audio` part), with the audio streamed in between as it is
//! read.

use futures_util::StreamExt;
use tokio::io::AsyncRead;
use tokio_util::bytes::Bytes;

/// Bytes read from the audio source per chunk of the body, at most.
const AUDIO_CHUNK: usize = 16 * 1024;

/// The fixed bytes around the audio: part headers, the config, the close.
pub(crate) struct Envelope {
    pub boundary: String,
    pub head: Bytes,
    pub tail: Bytes,
}

impl Envelope {
    /// `config` first (when given), then the `audio` part's headers.
    pub fn new(config: Option<&[u8]>, audio_type: &str, filename: &str) -> Envelope {
        let boundary = format!("earshot-{}", uuid::Uuid::new_v4().simple());
        let mut head = Vec::new();
        if let Some(config) = config {
            head.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"config\"\r\n\
                     Content-Type: application/json\r\n\r\n"
                )
                .as_bytes(),
            );
            head.extend_from_slice(config);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"{filename}\"\r\n\
                 Content-Type: {audio_type}\r\n\r\n"
            )
            .as_bytes(),
        );
        let tail = Bytes::from(format!("\r\n--{boundary}--\r\n"));
        Envelope {
            boundary,
            head: Bytes::from(head),
            tail,
        }
    }

    pub fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    /// The whole body as a stream: head, the audio as it is read, tail.
    /// Each read of the source goes out as soon as it returns.
    pub fn body(&self, audio: impl AsyncRead + Send + 'static) -> reqwest::Body {
        let head = futures_util::stream::once(std::future::ready(Ok::<_, std::io::Error>(
            self.head.clone(),
        )));
        let tail = futures_util::stream::once(std::future::ready(Ok(self.tail.clone())));
        let audio = tokio_util::io::ReaderStream::with_capacity(audio, AUDIO_CHUNK);
        reqwest::Body::wrap_stream(head.chain(audio).chain(tail))
    }

    /// Body length for audio of `audio_len` bytes.
    pub fn len(&self, audio_len: u64) -> u64 {
        self.head.len() as u64 + audio_len + self.tail.len() as u64
    }
}
