//! A subscription's timeline as one line of characters, readable without
//! colour: a bucket whose events were all delivered is a bar as high as
//! their number (against the row's busiest bucket), and a bucket with an
//! event in another state is that state's symbol, worst first: missed,
//! recovered (missed, then re-sent), pending, unknown. So a row reads
//! "fine, fine, failing since 22:17, recovered at 22:40" at a glance, in a
//! terminal, a chat message or a ticket (`--ascii` where Unicode is not
//! safe).

use crate::store::outcomes::EventTotals;
use crate::store::timeline::Timeline;

/// Which characters a sparkline is drawn with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Glyphs {
    /// Block elements and symbols: `▁▂▃▄▅▆▇█ ✗ ↺ ~ ? ·`.
    Unicode,
    /// Plain ASCII: `_-=# x r ~ ? .`.
    Ascii,
}

/// What one bucket shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// No event in the bucket.
    Empty,
    /// Every event delivered: a bar of height 1 to `levels` (the glyph set's).
    Delivered(usize),
    Missed,
    Recovered,
    Pending,
    Unknown,
}

impl Glyphs {
    fn bars(self) -> &'static [char] {
        match self {
            Glyphs::Unicode => &['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'],
            Glyphs::Ascii => &['_', '-', '=', '#'],
        }
    }

    /// The character of `mark`.
    pub fn of(self, mark: Mark) -> char {
        let unicode = self == Glyphs::Unicode;
        match mark {
            Mark::Empty => {
                if unicode {
                    '·'
                } else {
                    '.'
                }
            }
            Mark::Delivered(level) => {
                let bars = self.bars();
                bars[level.clamp(1, bars.len()) - 1]
            }
            Mark::Missed => {
                if unicode {
                    '✗'
                } else {
                    'x'
                }
            }
            Mark::Recovered => {
                if unicode {
                    '↺'
                } else {
                    'r'
                }
            }
            Mark::Pending => '~',
            Mark::Unknown => '?',
        }
    }

    /// What each character means, for a legend line.
    pub fn legend(self) -> String {
        let bars: String = self.bars().iter().collect();
        format!(
            "{bars} delivered (height: how many), {} missed, {} recovered, ~ pending, ? unknown, {} none",
            self.of(Mark::Missed),
            self.of(Mark::Recovered),
            self.of(Mark::Empty)
        )
    }
}

/// The marks of `buckets`, bars scaled to the busiest bucket of the row.
pub fn marks(buckets: &[EventTotals], levels: usize) -> Vec<Mark> {
    let busiest = buckets
        .iter()
        .map(EventTotals::total)
        .max()
        .unwrap_or(0)
        .max(1);
    buckets
        .iter()
        .map(|bucket| {
            if bucket.total() == 0 {
                Mark::Empty
            } else if bucket.missed > 0 {
                Mark::Missed
            } else if bucket.recovered > 0 {
                Mark::Recovered
            } else if bucket.pending > 0 {
                Mark::Pending
            } else if bucket.unknown > 0 {
                Mark::Unknown
            } else {
                let levels = i64::try_from(levels.max(1)).unwrap_or(1);
                // Rounded up: one event is never an empty-looking bar.
                let level = (bucket.delivered * levels + busiest - 1) / busiest;
                Mark::Delivered(usize::try_from(level.max(1)).unwrap_or(1))
            }
        })
        .collect()
}

/// `buckets` as one line of `glyphs`.
pub fn line(buckets: &[EventTotals], glyphs: Glyphs) -> String {
    marks(buckets, glyphs.bars().len())
        .into_iter()
        .map(|mark| glyphs.of(mark))
        .collect()
}

/// `buckets` merged into at most `cells` cells of equal runs of buckets
/// (the last run may be shorter), oldest first, so a narrow sparkline
/// still covers the whole window; and how many buckets a cell holds.
pub fn merged(buckets: &[EventTotals], cells: usize) -> (Vec<EventTotals>, usize) {
    let per_cell = buckets.len().div_ceil(cells.max(1)).max(1);
    let merged = buckets
        .chunks(per_cell)
        .map(|run| {
            let mut cell = EventTotals::default();
            for bucket in run {
                cell.absorb(bucket);
            }
            cell
        })
        .collect();
    (merged, per_cell)
}

/// A line under a sparkline with `^` under the bucket of `at_ms` and
/// `label` after it; `None` when `at_ms` is outside the timeline.
pub fn mark_under(timeline: &Timeline, at_ms: i64, label: &str) -> Option<String> {
    let column = timeline.column_of(at_ms)?;
    Some(format!("{}^ {label}", " ".repeat(column)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivered(n: i64) -> EventTotals {
        EventTotals {
            delivered: n,
            ..EventTotals::default()
        }
    }

    #[test]
    fn merged_cells_cover_every_bucket_and_keep_a_failure_seen() {
        let mut buckets = vec![delivered(1); 48];
        buckets[30].missed = 2;
        let (cells, per_cell) = merged(&buckets, 24);
        assert_eq!((cells.len(), per_cell), (24, 2));
        assert_eq!(cells[0].delivered, 2);
        assert_eq!(cells[15].missed, 2, "bucket 30 is in cell 15");
        let (cells, per_cell) = merged(&buckets, 7);
        assert_eq!((cells.len(), per_cell), (7, 7));
        assert_eq!(cells.iter().map(EventTotals::total).sum::<i64>(), 48 + 2);
        assert_eq!(merged(&buckets, 0).0.len(), 1, "at least one cell");
    }

    /// Twenty buckets fine, then failing, then re-sent, then fine again.
    #[test]
    fn a_row_reads_fine_failing_recovered() {
        let mut buckets = vec![delivered(4); 5];
        buckets.push(EventTotals {
            delivered: 1,
            missed: 3,
            ..EventTotals::default()
        });
        buckets.push(EventTotals {
            recovered: 2,
            ..EventTotals::default()
        });
        buckets.push(EventTotals {
            pending: 1,
            delivered: 2,
            ..EventTotals::default()
        });
        buckets.push(EventTotals::default());
        buckets.push(delivered(1));
        buckets.push(delivered(8));
        assert_eq!(line(&buckets, Glyphs::Unicode), "▄▄▄▄▄✗↺~·▁█");
        assert_eq!(line(&buckets, Glyphs::Ascii), "-----xr~._#");
    }

    #[test]
    fn the_legend_names_every_glyph_of_its_set() {
        assert!(Glyphs::Unicode.legend().contains("✗ missed"));
        assert!(Glyphs::Ascii.legend().contains("x missed"));
        assert!(Glyphs::Ascii.legend().is_ascii());
    }
}
