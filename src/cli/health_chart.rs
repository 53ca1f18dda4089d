//! `earshot health --chart [--ascii]`: each subscription's events over the
//! window as a sparkline under the board (`history::sparkline`), with the
//! time it has been failing since marked under its line; in `--json`, the
//! buckets themselves.

use clap::Args;

use earshot_core::clock_text::utc_minute;
use earshot_core::duration_text;
use earshot_core::history::report::SubscriptionHealth;
use earshot_core::history::sparkline::{self, Glyphs};
use earshot_core::store::postgres::{PgError, PgStore};
use earshot_core::store::timeline::{Timeline, timeline, timeline_postgres};
use earshot_core::store::{Store, StoreError};

/// How many buckets a line has at most.
const COLUMNS: usize = 60;

#[derive(Args, Debug)]
pub(crate) struct ChartArgs {
    /// Print each subscription's events over the window as a sparkline
    /// (one character per time bucket) under the board; with --json, the
    /// buckets
    #[arg(long)]
    pub(crate) chart: bool,
    /// Draw the sparklines in plain ASCII instead of Unicode blocks
    #[arg(long, requires = "chart")]
    pub(crate) ascii: bool,
}

impl ChartArgs {
    /// The window's buckets, when a chart is asked for.
    pub(crate) fn read(
        &self,
        store: &Store,
        since_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Timeline>, StoreError> {
        self.chart
            .then(|| timeline(store, since_ms, now_ms, COLUMNS))
            .transpose()
            .map_err(StoreError::from)
    }

    /// [`ChartArgs::read`] on a PostgreSQL store: the same buckets from
    /// the same counts.
    pub(crate) async fn read_postgres(
        &self,
        store: &PgStore,
        since_ms: i64,
        now_ms: i64,
    ) -> Result<Option<Timeline>, PgError> {
        if !self.chart {
            return Ok(None);
        }
        Ok(Some(
            timeline_postgres(store, since_ms, now_ms, COLUMNS).await?,
        ))
    }

    fn glyphs(&self) -> Glyphs {
        if self.ascii {
            Glyphs::Ascii
        } else {
            Glyphs::Unicode
        }
    }

    /// The chart under the board: a heading with the bucket size, the
    /// window and the legend, then a line per subscription of `board`.
    pub(crate) fn text(&self, timeline: &Timeline, board: &[SubscriptionHealth]) -> String {
        let glyphs = self.glyphs();
        let end_ms = timeline.start_ms + timeline.bucket_ms * timeline.columns as i64;
        let mut text = format!(
            "\nevents per {} from {} to {} UTC, one character each: {}\n",
            duration_text::of_millis(timeline.bucket_ms as f64),
            utc_minute(timeline.start_ms),
            utc_minute(end_ms),
            glyphs.legend()
        );
        for row in board {
            let buckets = timeline.buckets_of(&row.id);
            text.push_str(&format!(
                "{:<8}  {}\n",
                earshot_core::api::short_id(&row.id),
                sparkline::line(&buckets, glyphs)
            ));
            let mark = row.failing_since_ms().and_then(|at| {
                let said = format!("failing since {}", utc_minute(at));
                // Since before the chart's first column: said under it.
                sparkline::mark_under(timeline, at, &said).or_else(|| {
                    (at < timeline.start_ms).then(|| format!("^ {said}, before the first column"))
                })
            });
            if let Some(mark) = mark {
                text.push_str(&format!("{:<8}  {mark}\n", ""));
            }
        }
        text
    }
}
