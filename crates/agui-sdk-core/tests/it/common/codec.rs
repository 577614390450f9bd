//! Helpers for the encoding tests: chunked decoding, JavaScript's view of numbers,
//! property runs on a large stack, and reproducible generated events.

use agui_sdk_core::encoding::{DecodeError, Encoding, EventDecoder};
use agui_sdk_core::Event;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// Decodes `bytes` pushed in chunks of the given sizes (cycled; empty: one chunk).
pub(crate) fn decode_split(
    encoding: Encoding,
    bytes: &[u8],
    sizes: &[usize],
) -> Result<Vec<Event>, DecodeError> {
    let mut dec = EventDecoder::new(encoding);
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(rest.len());
        let n = n.clamp(1, rest.len());
        i += 1;
        dec.push(&rest[..n]);
        rest = &rest[n..];
        while let Some(ev) = dec.next() {
            out.push(ev?);
        }
    }
    dec.finish();
    while let Some(ev) = dec.next() {
        out.push(ev?);
    }
    Ok(out)
}

#[allow(unused_imports)]
pub(crate) use super::js_numbers::{js_view, renumber};

/// Runs `f` on a thread with a large stack: generating values of the full event strategy
/// nests deeply enough to overflow a default test thread in debug builds.
pub(crate) fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Runs a property `cases` times (on a large stack).
pub(crate) fn check<S, F>(cases: u32, strategy: impl FnOnce() -> S + Send + 'static, test: F)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
    F: Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
{
    on_big_stack(move || {
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        if let Err(e) = runner.run(&strategy(), test) {
            panic!("{e}");
        }
    })
}

/// `n` events from the full event strategy, the same ones on every run (`seed`).
pub(crate) fn generated_events(seed: u8, n: usize) -> Vec<Event> {
    on_big_stack(move || {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]);
        let mut runner = TestRunner::new_with_rng(Config::default(), rng);
        let strategy = super::arb::event();
        (0..n)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect()
    })
}

/// The event as protocol 1.0 has it: every `encryptedValueType` (new in 1.1) removed.
/// What a 1.0 peer (the reference packages the interop tests run) reads of it.
pub(crate) fn as_1_0(ev: &Event) -> Event {
    use agui_sdk_core::types::Message;
    fn message(m: &mut Message) {
        match m {
            Message::Developer(x) => x.encrypted_value_type = None,
            Message::System(x) => x.encrypted_value_type = None,
            Message::Assistant(x) => {
                x.encrypted_value_type = None;
                for tc in x.tool_calls.iter_mut().flatten() {
                    tc.encrypted_value_type = None;
                }
            }
            Message::User(x) => x.encrypted_value_type = None,
            Message::Tool(x) => x.encrypted_value_type = None,
            Message::Reasoning(x) => x.encrypted_value_type = None,
            Message::Activity(_) => {}
        }
    }
    let mut ev = ev.clone();
    match &mut ev {
        Event::ReasoningEncryptedValue(e) => e.encrypted_value_type = None,
        Event::MessagesSnapshot(e) => e.messages.iter_mut().for_each(message),
        Event::RunStarted(e) => {
            if let Some(input) = &mut e.input {
                input.messages.iter_mut().for_each(message);
            }
        }
        _ => {}
    }
    ev
}
