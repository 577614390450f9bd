//! Protocol semantics over event streams: verification, applying events to a
//! conversation, chunk expansion, compaction and interrupts. All sans-io.
