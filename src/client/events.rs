//! Reading the coordinator's live event stream (`GET /v1/events`, server-sent events): the
//! frames as they arrive, whatever the chunking of the connection.

/// One event: its sequence number (`id:`), kind (`event:`) and data (`data:` lines joined).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    pub id: Option<i64>,
    pub event: String,
    pub data: String,
}

/// Collects a stream's bytes into [`SseFrame`]s.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: String,
    frame: SseFrame,
}

impl SseParser {
    /// Take in the next chunk; the frames it completed, in order. A frame without an event
    /// name (a keep-alive comment's empty line) comes back with `event` empty.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseFrame> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut done = Vec::new();
        while let Some(end) = self.buffer.find('\n') {
            let line: String = self.buffer.drain(..=end).collect();
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                done.push(std::mem::take(&mut self.frame));
            } else if let Some(v) = line.strip_prefix("id:") {
                self.frame.id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("event:") {
                self.frame.event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                if !self.frame.data.is_empty() {
                    self.frame.data.push('\n');
                }
                self.frame.data.push_str(v.trim_start());
            }
        }
        done
    }

    /// Bytes held for a frame not yet complete.
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_come_whole_whatever_the_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"id: 7\nevent: int").is_empty());
        let frames = p.push(b"ent\ndata: {\"a\":\ndata: 1}\n\n: keep-alive\n\n");
        assert_eq!(
            frames[0],
            SseFrame {
                id: Some(7),
                event: "intent".into(),
                data: "{\"a\":\n1}".into()
            }
        );
        assert_eq!(frames[1].event, "", "a comment ends an empty frame");
        assert_eq!(p.buffered(), 0);
    }
}
