//! Wire encodings of event streams: Server-Sent Events and length-prefixed protobuf,
//! and the choice between them from an HTTP `Accept` header.
