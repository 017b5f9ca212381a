//! In-flight marks: a TrainJob create that went unanswered may still commit until its
//! call bound passes, so Find reports the job InFlight until then. The marks live in
//! this Backend's memory only: another process, or this one restarted, has none. Every
//! look at the marks forgets all the expired ones, so they hold no more memory than
//! the creates of the last call bound.

use std::collections::HashMap;
use std::sync::Mutex;

use dispatch_core::{InFlight, JobId, Timespan};
use jiff::{SignedDuration, Timestamp};

/// The unanswered creates of one Backend, by job.
#[derive(Default)]
pub(crate) struct InFlightMarks {
    marks: Mutex<HashMap<JobId, InFlight>>,
}

impl InFlightMarks {
    /// Marks submission `submission` of `job` in flight: its create was sent at `sent`
    /// and may take effect until `sent + call_bound`.
    pub(crate) fn mark(&self, job: &JobId, submission: u32, sent: Timestamp, call_bound: Timespan) {
        let until = sent
            .checked_add(SignedDuration::from_nanos(call_bound.as_nanos()))
            .unwrap_or(Timestamp::MAX);
        let mut marks = self.lock();
        marks.retain(|_, mark| mark.until > sent);
        marks.insert(job.clone(), InFlight { submission, until });
    }

    /// The job's mark, while its bound has not passed at `now`.
    pub(crate) fn get(&self, job: &JobId, now: Timestamp) -> Option<InFlight> {
        let mut marks = self.lock();
        marks.retain(|_, mark| mark.until > now);
        marks.get(job).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<JobId, InFlight>> {
        // A panic elsewhere while holding the lock leaves the map whole: keep using it.
        self.marks.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_lasts_until_the_call_bound_passes() {
        let marks = InFlightMarks::default();
        let job = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").unwrap();
        let sent: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        marks.mark(&job, 3, sent, Timespan::from_secs(90));
        let at = |s: i64| sent.checked_add(SignedDuration::from_secs(s)).unwrap();
        assert_eq!(marks.get(&job, at(89)).map(|m| m.submission), Some(3));
        assert_eq!(marks.get(&job, at(90)), None);
        assert_eq!(marks.get(&job, at(10)), None, "an expired mark is forgotten");
    }

    #[test]
    fn expired_marks_of_other_jobs_are_forgotten_too() {
        let marks = InFlightMarks::default();
        let sent: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap();
        let at = |s: i64| sent.checked_add(SignedDuration::from_secs(s)).unwrap();
        for i in 0..100u128 {
            let job = JobId::from_parts(1, i);
            marks.mark(&job, 1, at(i as i64), Timespan::from_secs(90));
        }
        assert_eq!(marks.lock().len(), 90, "those sent more than 90 s before the last are gone");
        marks.get(&JobId::from_parts(1, 0), at(1000));
        assert!(marks.lock().is_empty(), "a look long after forgets every mark");
    }
}
