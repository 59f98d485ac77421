//! What the drawing asks of the model for the visible range, already aggregated to the
//! pixel: marks merged into clusters, and attempts counted per pixel column.

use super::model::{Lane, Mark, MarkKind, Outcome};

/// Marks of one kind drawn as one: where they fall within a few pixels of each other.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cluster {
    /// Position in pixels from the left of the plot.
    pub x: f32,
    pub kind: MarkKind,
    pub count: usize,
    /// The first mark of the cluster (by index into the slice given).
    pub first: usize,
}

/// The visible marks of `marks` (sorted by time) merged per kind where they are closer than
/// `gap_px`. `to_x` maps a time to pixels; `t0..t1` is the visible range.
pub fn clusters(
    marks: &[Mark],
    t0: f64,
    t1: f64,
    gap_px: f32,
    to_x: impl Fn(f64) -> f32,
) -> Vec<Cluster> {
    let start = marks.partition_point(|m| (m.at_ms as f64) < t0);
    let end = marks.partition_point(|m| (m.at_ms as f64) <= t1);
    let mut out: Vec<Cluster> = Vec::new();
    // The last open cluster of each kind.
    let mut open: [Option<usize>; MarkKind::ALL.len()] = [None; MarkKind::ALL.len()];
    for (i, m) in marks.iter().enumerate().take(end).skip(start) {
        let x = to_x(m.at_ms as f64);
        let slot = m.kind as usize;
        match open[slot] {
            Some(c) if x - out[c].x < gap_px => out[c].count += 1,
            _ => {
                open[slot] = Some(out.len());
                out.push(Cluster {
                    x,
                    kind: m.kind,
                    count: 1,
                    first: i,
                });
            }
        }
    }
    out
}

/// How many attempts are active in each of `columns` pixel columns over `t0..t1`, per
/// [`Outcome::class`]: the overview strip. One pass over the lanes plus one over the columns.
pub fn density(lanes: &[Lane], t0: f64, t1: f64, columns: usize) -> Vec<[u32; Outcome::CLASSES]> {
    let mut diff = vec![[0i64; Outcome::CLASSES]; columns + 1];
    if columns == 0 || t1 <= t0 {
        return Vec::new();
    }
    let scale = columns as f64 / (t1 - t0);
    let column = |t: f64| ((t - t0) * scale).floor();
    for lane in lanes {
        let a = column(lane.start_ms as f64);
        let b = column(lane.end_ms as f64);
        if b < 0.0 || a >= columns as f64 {
            continue;
        }
        let a = a.max(0.0) as usize;
        let b = (b.min(columns as f64 - 1.0) as usize).max(a);
        let class = lane.outcome.class();
        diff[a][class] += 1;
        diff[b + 1][class] -= 1;
    }
    let mut out = Vec::with_capacity(columns);
    let mut running = [0i64; Outcome::CLASSES];
    for d in diff.iter().take(columns) {
        for k in 0..Outcome::CLASSES {
            running[k] += d[k];
        }
        out.push(running.map(|v| v.max(0) as u32));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_closer_than_the_gap_become_one_cluster_per_kind() {
        let marks: Vec<Mark> = (0..10_000)
            .map(|i| Mark {
                at_ms: i,
                kind: MarkKind::Command,
                source: i as usize,
            })
            .collect();
        // 10,000 marks over 100 px: one cluster per 4 px at most.
        let c = clusters(&marks, 0.0, 10_000.0, 4.0, |t| (t / 100.0) as f32);
        assert!(c.len() <= 26, "{}", c.len());
        assert_eq!(c.iter().map(|c| c.count).sum::<usize>(), 10_000);
    }
}
