//! Asking for one subject's data with at most one request on its way, so an older answer
//! never lands after a newer one.

use std::time::{Duration, Instant};

/// Asking for the same thing again and again with at most one request on its way: the
/// worker answers requests concurrently, so answers to overlapping requests could land out
/// of order and leave an older answer on screen. Each request carries a ticket; only the
/// answer to the ticket on its way is taken, so an answer to a request made before the
/// tracker was restarted (the intent opened again) is recognised as stale.
#[derive(Debug, Clone, Default)]
pub struct OneInFlight {
    /// The ticket on its way, and when it left.
    on_its_way: Option<(u64, Instant)>,
    again: bool,
    last_ticket: u64,
}

/// A request unanswered this long is taken as lost (the client gives up after 15 s, so only
/// a failed worker task leaves one unanswered); the next ask sends again.
const LOST_AFTER: Duration = Duration::from_secs(30);

impl OneInFlight {
    /// The ticket for a request to send now, or `None` while one is on its way: another is
    /// then owed once its answer lands.
    pub fn ask(&mut self) -> Option<u64> {
        self.ask_at(Instant::now())
    }

    fn ask_at(&mut self, now: Instant) -> Option<u64> {
        if self
            .on_its_way
            .is_some_and(|(_, left)| now.duration_since(left) < LOST_AFTER)
        {
            self.again = true;
            return None;
        }
        self.last_ticket += 1;
        Some(self.last_ticket)
    }

    /// Whether the worker took the request with `ticket` ([`super::Worker::send`]); if its queue
    /// was full, the request stays owed.
    pub fn sent(&mut self, ticket: u64, taken: bool) {
        self.on_its_way = taken.then_some((ticket, Instant::now()));
        self.again = !taken;
    }

    /// The answer to `ticket` landed: whether it answers the request on its way (if not,
    /// it is stale and must not be shown).
    pub fn landed(&mut self, ticket: u64) -> bool {
        let current = self.on_its_way.is_some_and(|(t, _)| t == ticket);
        if current {
            self.on_its_way = None;
        }
        current
    }

    /// Forget what is on its way and owed (another subject); tickets keep counting, so
    /// answers to earlier requests stay stale.
    pub fn restart(&mut self) {
        self.on_its_way = None;
        self.again = false;
    }

    /// A request is owed (asked for meanwhile, or not taken) and none is on its way.
    pub fn owed(&self) -> bool {
        self.again && self.on_its_way.is_none()
    }

    /// Nothing on its way and nothing owed.
    pub fn settled(&self) -> bool {
        self.on_its_way.is_none() && !self.again
    }
}

#[cfg(test)]
mod tests {
    use super::OneInFlight;

    #[test]
    fn one_request_at_a_time_and_one_more_for_everything_asked_meanwhile() {
        let mut r = OneInFlight::default();
        let first = r.ask().expect("nothing on its way: send");
        r.sent(first, true);
        assert_eq!(r.ask(), None, "one on its way: wait");
        assert_eq!(r.ask(), None, "asked twice meanwhile: still one owed");
        assert!(!r.owed(), "owed only once the answer lands");
        assert!(r.landed(first));
        assert!(r.owed());
        let second = r.ask().expect("the owed request");
        assert_ne!(first, second);
        r.sent(second, true);
        assert!(!r.owed());
        assert!(r.landed(second));
        assert!(r.settled());
    }

    #[test]
    fn a_request_the_full_queue_refused_stays_owed() {
        let mut r = OneInFlight::default();
        let ticket = r.ask().expect("send");
        r.sent(ticket, false);
        assert!(r.owed());
        let again = r.ask().expect("send again");
        r.sent(again, true);
        assert!(!r.owed() && !r.settled());
        assert!(r.landed(again));
        assert!(r.settled());
    }

    #[test]
    fn a_request_never_answered_is_sent_again_after_a_while() {
        let mut r = OneInFlight::default();
        let lost = r.ask().expect("send");
        r.sent(lost, true);
        let now = std::time::Instant::now();
        assert_eq!(r.ask_at(now), None, "on its way");
        let later = now + super::LOST_AFTER + std::time::Duration::from_secs(1);
        let again = r.ask_at(later).expect("taken as lost: send again");
        r.sent(again, true);
        assert!(
            !r.landed(lost),
            "a late answer to the lost request is stale"
        );
        assert!(r.landed(again));
    }

    #[test]
    fn an_answer_from_before_a_restart_is_stale() {
        let mut r = OneInFlight::default();
        let old = r.ask().expect("send");
        r.sent(old, true);
        r.restart();
        let new = r.ask().expect("a fresh request after the restart");
        r.sent(new, true);
        assert!(!r.landed(old), "the old answer is not taken");
        assert!(!r.settled(), "and the new request is still on its way");
        assert!(r.landed(new));
        assert!(r.settled());
    }
}
