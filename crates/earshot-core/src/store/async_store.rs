//! [`AsyncStore`]: how async code reaches the store. A SQLite call blocks
//! (a statement may wait up to the busy timeout for another process's
//! lock, a commit for the disk), so every call runs on tokio's blocking
//! pool, never on a runtime thread that other tasks share. The connection
//! is kept between calls, and calls take turns.
//!
//! The sweep, recover and the rotation watch take one, so no store call
//! sits between two awaits; the console opens one for each piece of work.
//! (The observer's writes go through its writer thread, [`super::writer`],
//! which batches them; that is a writer, not a way for a task to read.)

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::{Store, StoreError};

/// A store for async code: each [`AsyncStore::run`] runs on the blocking
/// pool. Clones share the connection.
#[derive(Clone)]
pub struct AsyncStore {
    store: Arc<Mutex<Store>>,
}

impl std::fmt::Debug for AsyncStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AsyncStore")
    }
}

impl AsyncStore {
    /// A store opened already (e.g. by synchronous code before it awaits).
    pub fn new(store: Store) -> AsyncStore {
        AsyncStore {
            store: Arc::new(Mutex::new(store)),
        }
    }

    /// Opens (creating and migrating it if needed) the store at `path` on
    /// the blocking pool: the open reads and checks the file.
    pub async fn open(path: PathBuf) -> Result<AsyncStore, StoreError> {
        tokio::task::spawn_blocking(move || Store::open(&path))
            .await
            .map_err(|error| StoreError::Task(error.to_string()))?
            .map(AsyncStore::new)
    }

    /// Runs `work` with the store on the blocking pool, after any call
    /// still running; its result. A call that panicked is an error (the
    /// connection stays usable: an open transaction rolled back as it
    /// unwound).
    pub async fn run<T, E>(
        &self,
        work: impl FnOnce(&mut Store) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<StoreError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        tokio::task::spawn_blocking(move || {
            let mut store = store.lock().unwrap_or_else(PoisonError::into_inner);
            work(&mut store)
        })
        .await
        .map_err(|error| E::from(StoreError::Task(error.to_string())))?
    }

    /// The plain store again, for synchronous code, once no clone and no
    /// call holds it; otherwise this handle back.
    pub fn into_inner(self) -> Result<Store, AsyncStore> {
        match Arc::try_unwrap(self.store) {
            Ok(store) => Ok(store.into_inner().unwrap_or_else(PoisonError::into_inner)),
            Err(store) => Err(AsyncStore { store }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_this_thread() -> std::thread::ThreadId {
        std::thread::current().id()
    }

    #[tokio::test]
    async fn calls_run_off_the_runtime_thread_and_share_the_connection() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = AsyncStore::open(dir.path().join("earshot.db"))
            .await
            .expect("opens");
        let runtime_thread = on_this_thread();
        let ran_on = store
            .run(|_| Ok::<_, StoreError>(on_this_thread()))
            .await
            .expect("runs");
        assert_ne!(ran_on, runtime_thread, "the call ran on the runtime thread");
        // A temporary table lives on one connection only: a second call
        // sees what the first made.
        store
            .run(|store| {
                store
                    .conn
                    .execute_batch(
                        "CREATE TEMP TABLE marks (n INTEGER); INSERT INTO marks VALUES (7);",
                    )
                    .map_err(StoreError::from)
            })
            .await
            .expect("creates");
        let clone = store.clone();
        let marked: i64 = clone
            .run(|store| {
                store
                    .conn
                    .query_row("SELECT n FROM marks", [], |row| row.get(0))
                    .map_err(StoreError::from)
            })
            .await
            .expect("reads");
        assert_eq!(marked, 7);
        drop(clone);
        assert!(store.into_inner().is_ok(), "no one else holds it");
    }

    #[tokio::test]
    async fn a_call_that_panics_is_an_error_and_the_store_still_works() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = AsyncStore::open(dir.path().join("earshot.db"))
            .await
            .expect("opens");
        let failed = store
            .run(|_| -> Result<(), StoreError> { panic!("a bug in a store call") })
            .await;
        assert!(matches!(failed, Err(StoreError::Task(_))), "{failed:?}");
        let answer = store
            .run(|store| {
                store
                    .conn
                    .query_row("SELECT 1 + 1", [], |row| row.get::<_, i64>(0))
                    .map_err(StoreError::from)
            })
            .await;
        assert_eq!(answer.ok(), Some(2));
    }

    #[tokio::test]
    async fn a_store_that_cannot_open_says_why() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A directory is no store file.
        let opened = AsyncStore::open(dir.path().to_path_buf()).await;
        assert!(
            matches!(opened, Err(StoreError::NotAFile { .. })),
            "{opened:?}"
        );
    }
}
