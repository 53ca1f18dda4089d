//! One row mapping for both backends: [`Cells`] reads a column of a
//! SQLite row (`rusqlite::Row`) or a PostgreSQL one
//! (`tokio_postgres::Row`) by index, so a stored record (an attempt, an
//! outcome row) is built from its columns by one function whichever
//! backend returned it. PostgreSQL keeps every integer as `bigint`, as
//! SQLite's `INTEGER` is, so both read `i64` and narrow it here.

use super::postgres::PgError;

/// A result row, read by column index.
pub(crate) trait Cells {
    type Error;
    fn text(&self, index: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, index: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, index: usize) -> Result<i64, Self::Error>;
    fn maybe_int(&self, index: usize) -> Result<Option<i64>, Self::Error>;
    /// A value that does not fit the type it is read as.
    fn out_of_range(&self, index: usize, value: i64) -> Self::Error;

    /// An integer narrowed to `T` (an attempt count, a status code).
    fn small<T: TryFrom<i64>>(&self, index: usize) -> Result<T, Self::Error> {
        let value = self.int(index)?;
        T::try_from(value).map_err(|_| self.out_of_range(index, value))
    }

    /// [`Cells::small`] of a column that may be NULL.
    fn maybe_small<T: TryFrom<i64>>(&self, index: usize) -> Result<Option<T>, Self::Error> {
        match self.maybe_int(index)? {
            Some(value) => T::try_from(value)
                .map(Some)
                .map_err(|_| self.out_of_range(index, value)),
            None => Ok(None),
        }
    }
}

impl Cells for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, index: usize) -> rusqlite::Result<String> {
        self.get(index)
    }
    fn maybe_text(&self, index: usize) -> rusqlite::Result<Option<String>> {
        self.get(index)
    }
    fn int(&self, index: usize) -> rusqlite::Result<i64> {
        self.get(index)
    }
    fn maybe_int(&self, index: usize) -> rusqlite::Result<Option<i64>> {
        self.get(index)
    }
    fn out_of_range(&self, index: usize, value: i64) -> rusqlite::Error {
        rusqlite::Error::IntegralValueOutOfRange(index, value)
    }
}

impl Cells for tokio_postgres::Row {
    type Error = PgError;
    fn text(&self, index: usize) -> Result<String, PgError> {
        Ok(self.try_get(index)?)
    }
    fn maybe_text(&self, index: usize) -> Result<Option<String>, PgError> {
        Ok(self.try_get(index)?)
    }
    fn int(&self, index: usize) -> Result<i64, PgError> {
        Ok(self.try_get(index)?)
    }
    fn maybe_int(&self, index: usize) -> Result<Option<i64>, PgError> {
        Ok(self.try_get(index)?)
    }
    fn out_of_range(&self, index: usize, value: i64) -> PgError {
        PgError::Unreadable(format!("column {index} holds {value}, out of its range"))
    }
}
