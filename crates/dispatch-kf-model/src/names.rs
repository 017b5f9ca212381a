//! Object names: `dj-<jobid lowercase>-s<N>`, made and parsed in one place.

use dispatch_core::JobId;

/// The largest submission number.
pub const MAX_SUBMISSION: u32 = 999_999;

/// The longest name [`make`] returns: `dj-` + 26 + `-s` + 6 digits.
pub const MAX_LEN: usize = 37;

/// A name [`make`] writes that is as long as any: for checks that must hold for every
/// job and submission.
pub const LONGEST: &str = "dj-00000000000000000000000000-s999999";

/// The name of submission `submission` of `job`'s TrainJob and runtime copy.
///
/// A valid RFC 1035 label of at most [`MAX_LEN`] characters for every submission in
/// 1 to [`MAX_SUBMISSION`].
pub fn make(job: &JobId, submission: u32) -> String {
    format!("dj-{}-s{submission}", job.to_lowercase())
}

/// The job and submission a name encodes, or `None` when [`make`] would never write it
/// (total and exact: `parse(&make(j, n)) == Some((j, n))`).
pub fn parse(name: &str) -> Option<(JobId, u32)> {
    let rest = name.strip_prefix("dj-")?;
    let (id, n) = rest.split_at_checked(JobId::LEN)?;
    let digits = n.strip_prefix("-s")?;
    if id.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let job = JobId::parse_owned(id.to_ascii_uppercase()).ok()?;
    let submission = parse_canonical_decimal(digits)?;
    let submission = u32::try_from(submission).ok().filter(|n| (1..=MAX_SUBMISSION).contains(n))?;
    Some((job, submission))
}

/// Whether an object named `name` whose job-id label is `job_label` belongs to `job`:
/// its name is one [`make`] writes for `job`, or its label names `job`. Either alone is
/// enough, so a stripped label hides nothing and a renamed object is still found.
pub fn is_of_job(job: &JobId, name: &str, job_label: Option<&str>) -> bool {
    parse(name).is_some_and(|(of, _)| of == *job) || job_label == Some(job.as_str())
}

/// The jobs an object named `name` whose job-id label is `job_label` belongs to, by
/// [`is_of_job`]'s rule: the job its name encodes and the job its label names (one when
/// they agree, none for an object of no job). An index by job is built from this:
/// `is_of_job(j, name, label)` holds exactly for the jobs it gives.
pub fn jobs_of(name: &str, job_label: Option<&str>) -> Vec<JobId> {
    let by_name = parse(name).map(|(job, _)| job);
    let by_label = job_label.and_then(|l| JobId::parse(l).ok());
    let mut jobs: Vec<JobId> = by_name.into_iter().chain(by_label).collect();
    jobs.dedup();
    jobs
}

/// The job and submission of an object whose name begins with one [`make`] writes,
/// followed by `-` and more (the JobSet's pods: `<name>-<job>-<i>-<j>-<suffix>`).
pub fn parse_prefix(name: &str) -> Option<(JobId, u32)> {
    let head = name.get(..3 + JobId::LEN + 2)?;
    let rest = &name[head.len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (own, tail) = name.split_at(head.len() + digits);
    if !tail.starts_with('-') {
        return None;
    }
    parse(own)
}

/// A decimal of 1 or more written without sign or leading zero, as dispatch writes
/// counters and hold instances; `None` for anything else.
pub fn parse_canonical_decimal(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let canonical = !bytes.is_empty()
        && bytes.len() <= 19
        && bytes[0] != b'0'
        && bytes.iter().all(u8::is_ascii_digit);
    if canonical { text.parse().ok() } else { None }
}

/// A `d/submission` label's value as a submission number: a canonical decimal that
/// fits a `u32` (read as written: no range is asked of a label).
pub(crate) fn parse_submission_label(text: &str) -> Option<u32> {
    u32::try_from(parse_canonical_decimal(text)?).ok()
}

/// Whether `name` is an RFC 1035 label: at most 63 lower-case letters, digits and `-`,
/// starting with a letter and ending with a letter or digit.
pub fn is_rfc1035_label(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn job() -> JobId {
        JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CE").unwrap()
    }

    #[test]
    fn the_longest_name_is_one_make_writes_at_the_greatest_length() {
        assert_eq!(LONGEST.len(), MAX_LEN);
        assert_eq!(parse(LONGEST).map(|(_, n)| n), Some(MAX_SUBMISSION));
    }

    #[test]
    fn an_object_is_the_jobs_by_its_name_or_its_label() {
        let other = JobId::parse("01JDQ4V8Z6K3M0B7X2N5R9T1CF").unwrap();
        assert!(is_of_job(&job(), &make(&job(), 3), None));
        assert!(is_of_job(&job(), "renamed", Some(job().as_str())));
        assert!(is_of_job(&job(), &make(&job(), 1), Some(other.as_str())));
        assert!(!is_of_job(&job(), &make(&other, 1), None));
        assert!(!is_of_job(&job(), &format!("{}-extra", make(&job(), 1)), None));
        assert!(!is_of_job(&job(), "renamed", Some("01jdq4v8z6k3m0b7x2n5r9t1ce")));
    }

    #[test]
    fn names_look_like_this() {
        assert_eq!(make(&job(), 1), "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1");
        assert_eq!(make(&job(), MAX_SUBMISSION).len(), MAX_LEN);
    }

    #[test]
    fn parse_refuses_what_make_never_writes() {
        for bad in [
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s0",
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s01",
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1000000",
            "dj-01JDQ4V8Z6K3M0B7X2N5R9T1CE-s1",
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s",
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s+1",
            "dj-91jdq4v8z6k3m0b7x2n5r9t1ce-s1",
            "xj-01jdq4v8z6k3m0b7x2n5r9t1ce-s1",
            "dj-01jdq4v8z6k3m0b7x2n5r9t1ce",
            "dj-é1jdq4v8z6k3m0b7x2n5r9t1c-s1",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn pod_names_give_their_job_and_submission() {
        let pod = "dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s12-node-0-3-x7k2p";
        assert_eq!(parse_prefix(pod), Some((job(), 12)));
        assert_eq!(parse_prefix("dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s12"), None);
        assert_eq!(parse_prefix("dj-01jdq4v8z6k3m0b7x2n5r9t1ce-s012-node"), None);
        assert_eq!(parse_prefix("dj-01jdq4v8z6k3m0b7x2n5r9"), None);
    }

    #[test]
    fn canonical_decimals_only() {
        assert_eq!(parse_canonical_decimal("1"), Some(1));
        assert_eq!(parse_canonical_decimal("42"), Some(42));
        for bad in ["", "0", "01", "+1", "-1", "1.0", " 1", "1e3", "99999999999999999999"] {
            assert_eq!(parse_canonical_decimal(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn names_are_short_rfc1035_labels_and_round_trip(
            id in "[0-7][0-9A-HJKMNP-TV-Z]{25}",
            n in 1..=MAX_SUBMISSION,
        ) {
            let job = JobId::parse(&id).unwrap();
            let name = make(&job, n);
            prop_assert!(name.len() <= MAX_LEN);
            prop_assert!(is_rfc1035_label(&name), "{}", name);
            prop_assert_eq!(parse(&name), Some((job, n)));
        }

        #[test]
        fn jobs_of_gives_exactly_the_jobs_is_of_job_accepts(
            id in "[0-7][0-9A-HJKMNP-TV-Z]{25}",
            other in "[0-7][0-9A-HJKMNP-TV-Z]{25}",
            n in 1..=MAX_SUBMISSION,
            by_name in any::<bool>(),
            label in prop_oneof![Just(None), Just(Some(0)), Just(Some(1)), Just(Some(2))],
        ) {
            let (job, other) = (JobId::parse(&id).unwrap(), JobId::parse(&other).unwrap());
            let name = if by_name { make(&job, n) } else { format!("x-{n}") };
            let label = label.map(|l| match l { 0 => job.to_string(), 1 => other.to_string(), _ => "x".into() });
            let jobs = jobs_of(&name, label.as_deref());
            for j in [&job, &other] {
                prop_assert_eq!(jobs.contains(j), is_of_job(j, &name, label.as_deref()), "{} {:?}", name, label);
            }
            prop_assert!(jobs.len() <= 2);
        }

        #[test]
        fn parse_is_total_and_exact(name in "\\PC{0,48}") {
            if let Some((job, n)) = parse(&name) {
                prop_assert_eq!(make(&job, n), name);
            }
        }
    }
}
