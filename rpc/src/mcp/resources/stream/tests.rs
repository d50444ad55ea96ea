use super::SplicedStream;
use crate::http::{Body, BodyPoll};
use crate::jsonrpc::Id;
use crate::mcp::resources::catalog::{ResourceContents, Streamed};
use crate::mcp::wire::reply;
use crate::mcp::{Content, ContentSource, SourcePoll, StreamKind, ToolError};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;
use serde_json::{Value, json};

/// Hands out `data` a few bytes per read, saying Pending (no bytes) between pieces, as a
/// capture does while deflate holds its output; counts its reads and a cancel.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    idle: bool,
    reads: Rc<RefCell<(u32, bool)>>,
}

impl ContentSource<()> for Pieces {
    fn read(&mut self, _: &mut (), buf: &mut [u8]) -> Result<(usize, SourcePoll), ToolError> {
        self.reads.borrow_mut().0 += 1;
        self.idle = !self.idle;
        if self.idle {
            return Ok((0, SourcePoll::Pending));
        }
        let n = (self.data.len() - self.at).min(buf.len()).min(5);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok((
            n,
            if self.at == self.data.len() {
                SourcePoll::End
            } else {
                SourcePoll::Data
            },
        ))
    }

    fn cancel(&mut self, _: &mut ()) {
        self.reads.borrow_mut().1 = true;
    }
}

fn streamed(kind: StreamKind, data: &[u8]) -> (Streamed<()>, Rc<RefCell<(u32, bool)>>) {
    let reads = Rc::new(RefCell::new((0, false)));
    let source = Pieces {
        data: data.to_vec(),
        at: 0,
        idle: false,
        reads: reads.clone(),
    };
    let s = Streamed::of(Content::stream(kind, Box::new(source))).unwrap();
    (s, reads)
}

/// The answer a stream of `item` gives, polled with at most `max` bytes per poll: its
/// bytes and the number of polls.
fn spliced(item: Streamed<()>, max: usize) -> (Vec<u8>, usize) {
    let id = Id::from_value(&json!(42)).unwrap();
    let result = json!({"contents": [item.item.clone()], "ttlMs": 5});
    let resp = reply::result(&id, &result);
    let mut r = SplicedStream::response(Rc::new(RefCell::new(())), resp, item, 3);
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream");
    };
    let (mut out, mut polls) = (Vec::new(), 0);
    loop {
        polls += 1;
        let before = out.len();
        let p = src.poll(&mut out, max, 0);
        assert!(out.len() - before <= max);
        if p == BodyPoll::End {
            return (out, polls);
        }
        assert!(polls < 10_000);
    }
}

#[test]
fn a_streamed_resource_answers_the_same_bytes_as_a_complete_one() {
    let png: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
    let kind = StreamKind::ResourceBlob {
        uri: "irix7://screen".into(),
        mime_type: "image/png".into(),
    };
    let (item, reads) = streamed(kind, &png);
    let (bytes, polls) = spliced(item, 64);
    let whole = ResourceContents::Blob {
        uri: "irix7://screen".into(),
        mime_type: Some("image/png".into()),
        data: png,
    };
    let id = Id::from_value(&json!(42)).unwrap();
    let want =
        crate::jsonrpc::result_response(&id, &json!({"contents": [whole.to_json()], "ttlMs": 5}));
    assert_eq!(
        String::from_utf8(bytes).unwrap(),
        String::from_utf8(want).unwrap()
    );
    // A read of at most 3 bytes (the chunk) per step and one idle read per poll: the
    // source was drained over many polls, not in one.
    assert!(polls > 300, "{polls} polls");
    assert!(reads.borrow().0 > 600);
}

#[test]
fn streamed_text_is_escaped_like_a_complete_answer() {
    let text = "line \"one\"\n\u{e9}t\u{e9} \u{1F5A5}\n".repeat(20);
    let kind = StreamKind::ResourceText {
        uri: "irix7://log".into(),
        mime_type: "text/plain".into(),
    };
    let (item, _) = streamed(kind, text.as_bytes());
    let (bytes, _) = spliced(item, 7);
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        v["result"]["contents"][0],
        json!({"uri": "irix7://log", "mimeType": "text/plain", "text": text})
    );
}

#[test]
fn a_cancelled_stream_lets_its_source_go() {
    let kind = StreamKind::ResourceBlob {
        uri: "irix7://screen".into(),
        mime_type: "image/png".into(),
    };
    let (item, reads) = streamed(kind, &[1; 100]);
    let id = Id::from_value(&json!(1)).unwrap();
    let resp = reply::result(&id, &json!({"contents": [item.item.clone()]}));
    let mut r = SplicedStream::response(Rc::new(RefCell::new(())), resp, item, 3);
    let Body::Stream(src) = &mut r.body else {
        panic!("expected a stream");
    };
    let mut out = Vec::new();
    src.poll(&mut out, 40, 0);
    assert!(!reads.borrow().1);
    src.cancel();
    assert!(reads.borrow().1, "the source was told");
}

#[test]
fn only_streamed_resource_items_splice() {
    assert!(Streamed::<()>::of(Content::text("x")).is_none());
    let kind = StreamKind::Text;
    let (src, _) = (
        Pieces {
            data: Vec::new(),
            at: 0,
            idle: false,
            reads: Rc::default(),
        },
        (),
    );
    assert!(Streamed::of(Content::stream(kind, Box::new(src))).is_none());
}
