//! The integration tests of `agui-sdk-redis`, in one binary (one link instead of one per file).

mod common;

mod redis_lists;
mod redis_store;
mod redis_threads;
