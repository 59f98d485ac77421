//! What a click on the dashboard shows: the intents table's filters narrowed to the
//! intents behind the bar or point.

use crate::console::filters::Filters;
use crate::console::views::charts::Hit;
use crate::console::views::charts::cells::ChartId;
use crate::wire::{ALL_GROUP, GroupBy};

/// The filters that show the intents behind a click.
pub fn filters_for_hit(
    current: &Filters,
    group_by: GroupBy,
    chart: ChartId,
    hit: &Hit,
    bucket_ms: u64,
) -> Filters {
    let mut f = current.clone();
    if hit.group != ALL_GROUP {
        let value = vec![hit.group.clone()];
        match group_by {
            GroupBy::None => {}
            GroupBy::Tenant => f.tenants = value,
            GroupBy::Provider => f.providers = value,
            GroupBy::Release => f.releases = value,
            GroupBy::Tool => f.tools = value,
            GroupBy::Operation => f.operations = value,
            GroupBy::Locale => f.locales = value,
            GroupBy::Tier => f.tiers = value,
        }
    }
    match chart {
        ChartId::Histogram => {
            f.min_attempts = Some(hit.x.max(0.0) as u32);
            f.sort = "attempts".into();
        }
        ChartId::Indeterminate | ChartId::Age => {
            f.states = vec!["indeterminate".into()];
            f.sort = "indeterminate_since".into();
        }
        other => {
            let start = hit.x.max(0.0) as u64;
            f.since_ms = Some(start);
            f.until_ms = Some(start + bucket_ms);
            if matches!(other, ChartId::Goodput | ChartId::GoodputPerAttempt) {
                f.states = vec!["committed".into()];
            }
            if other == ChartId::Amplification {
                f.sort = "-attempts".into();
            }
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(group: &str, x: f64) -> Hit {
        Hit {
            group: group.into(),
            x,
            value: 1.0,
        }
    }

    #[test]
    fn a_bar_filters_to_its_group_and_bucket() {
        let f = filters_for_hit(
            &Filters::default(),
            GroupBy::Provider,
            ChartId::Attempts,
            &hit("openai", 60_000.0),
            60_000,
        );
        assert_eq!(f.providers, ["openai"]);
        assert_eq!((f.since_ms, f.until_ms), (Some(60_000), Some(120_000)));
    }

    #[test]
    fn an_indeterminate_point_filters_to_indeterminate_intents_oldest_first() {
        let start = Filters {
            tenants: vec!["acme".into()],
            ..Filters::default()
        };
        let f = filters_for_hit(
            &start,
            GroupBy::Tier,
            ChartId::Age,
            &hit("write", 5.0),
            60_000,
        );
        assert_eq!(f.tenants, ["acme"]);
        assert_eq!(f.tiers, ["write"]);
        assert_eq!(f.states, ["indeterminate"]);
        assert_eq!(f.sort, "indeterminate_since");
        assert_eq!(f.since_ms, None);
    }

    #[test]
    fn a_histogram_bar_filters_to_at_least_its_attempts() {
        let f = filters_for_hit(
            &Filters::default(),
            GroupBy::None,
            ChartId::Histogram,
            &hit(ALL_GROUP, 4.0),
            0,
        );
        assert_eq!(f.min_attempts, Some(4));
        assert!(f.providers.is_empty());
    }
}
