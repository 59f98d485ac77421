//! Min/max downsampling: a series is cut into one slice per pixel column and each slice
//! keeps only its lowest and highest point, in their order. A line through what is left
//! covers exactly the pixels the full line would (every spike stays), and a chart draws at
//! most two points per column however long the series is.

/// Downsample `points` (sorted by x) for `columns` pixel columns spanning `x_min..=x_max`.
///
/// Points outside the span are dropped except the nearest one on each side, so a line still
/// runs to the edges. When there are already at most two points per column, the points in
/// the span are returned as they are.
pub fn min_max(points: &[[f64; 2]], x_min: f64, x_max: f64, columns: usize) -> Vec<[f64; 2]> {
    let start = points.partition_point(|p| p[0] < x_min);
    let end = points.partition_point(|p| p[0] <= x_max);
    let first = start.saturating_sub(1);
    let last = (end + 1).min(points.len());
    let inside = &points[start..end];
    let columns = columns.max(1);
    if inside.len() <= 2 * columns || x_max <= x_min {
        return points[first..last].to_vec();
    }
    let mut out = Vec::with_capacity(2 * columns + 2);
    if first < start {
        out.push(points[first]);
    }
    let width = (x_max - x_min) / columns as f64;
    let column_of = |x: f64| (((x - x_min) / width) as usize).min(columns - 1);
    let mut i = 0;
    while i < inside.len() {
        let column = column_of(inside[i][0]);
        let (mut lo, mut hi) = (i, i);
        let mut j = i + 1;
        while j < inside.len() && column_of(inside[j][0]) == column {
            if inside[j][1] < inside[lo][1] {
                lo = j;
            }
            if inside[j][1] > inside[hi][1] {
                hi = j;
            }
            j += 1;
        }
        let (a, b) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        out.push(inside[a]);
        if b != a {
            out.push(inside[b]);
        }
        i = j;
    }
    if end < last {
        out.push(points[end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::min_max;

    fn wave(n: usize) -> Vec<[f64; 2]> {
        (0..n)
            .map(|i| [i as f64, ((i * 7919) % 1000) as f64])
            .collect()
    }

    #[test]
    fn at_most_two_points_per_column() {
        let points = wave(10_000);
        let out = min_max(&points, 0.0, 9_999.0, 500);
        assert!(out.len() <= 1_000, "{}", out.len());
        assert!(out.len() >= 500);
    }

    #[test]
    fn every_column_keeps_its_extremes() {
        let mut points = wave(10_000);
        points[4_321][1] = 1e6;
        points[8_765][1] = -1e6;
        let out = min_max(&points, 0.0, 9_999.0, 300);
        assert!(out.contains(&[4_321.0, 1e6]));
        assert!(out.contains(&[8_765.0, -1e6]));
        // Each column's min and max are those of its slice of the input.
        let width = 9_999.0 / 300.0;
        for c in 0..300 {
            let in_column = |p: &&[f64; 2]| ((p[0] / width) as usize).min(299) == c;
            let want_max = points
                .iter()
                .filter(in_column)
                .map(|p| p[1])
                .fold(f64::MIN, f64::max);
            let got_max = out
                .iter()
                .filter(in_column)
                .map(|p| p[1])
                .fold(f64::MIN, f64::max);
            assert_eq!(want_max, got_max, "column {c}");
        }
    }

    #[test]
    fn order_is_kept() {
        let out = min_max(&wave(5_000), 0.0, 4_999.0, 100);
        assert!(out.windows(2).all(|w| w[0][0] < w[1][0]));
    }

    #[test]
    fn a_short_series_is_unchanged() {
        let points = wave(50);
        assert_eq!(min_max(&points, 0.0, 49.0, 100), points);
    }

    #[test]
    fn only_the_visible_span_and_one_neighbour_each_side_remain() {
        let points = wave(10_000);
        let out = min_max(&points, 1_000.0, 1_999.0, 100);
        assert_eq!(out.first(), Some(&points[999]));
        assert_eq!(out.last(), Some(&points[2_000]));
        assert!(out.len() <= 202);
    }

    #[test]
    fn empty_and_degenerate_inputs() {
        assert!(min_max(&[], 0.0, 1.0, 10).is_empty());
        let one = [[5.0, 1.0]];
        assert_eq!(min_max(&one, 0.0, 10.0, 0), one.to_vec());
    }
}
