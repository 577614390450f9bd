//! Byte mutations of JSON text for the decoders' property tests (test builds only).

use proptest::prelude::*;

/// A mutation: overwrite, insert or delete bytes at a position, or cut the input.
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Cut(usize),
}

/// A mutation whose overwritten byte is mostly one of `likely` (JSON's punctuation, say).
pub(crate) fn edit(likely: &'static [u8]) -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![
        4 => prop::sample::select(likely.to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        (any::<usize>(), byte).prop_map(|(i, b)| Edit::Set(i, b)),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..4))
            .prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<usize>(), 1usize..8).prop_map(|(i, n)| Edit::Delete(i, n)),
        any::<usize>().prop_map(Edit::Cut),
    ]
}

/// `bytes` with `edits` applied in order (positions wrap around the current length).
pub(crate) fn apply(mut bytes: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
        match e {
            Edit::Set(i, b) if !bytes.is_empty() => {
                let i = at(*i, bytes.len());
                bytes[i] = *b;
            }
            Edit::Insert(i, b) => {
                let i = at(*i, bytes.len() + 1);
                bytes.splice(i..i, b.iter().copied());
            }
            Edit::Delete(i, n) if !bytes.is_empty() => {
                let i = at(*i, bytes.len());
                let end = (i + n).min(bytes.len());
                bytes.drain(i..end);
            }
            Edit::Cut(i) => {
                let i = at(*i, bytes.len() + 1);
                bytes.truncate(i);
            }
            _ => {}
        }
    }
    bytes
}
