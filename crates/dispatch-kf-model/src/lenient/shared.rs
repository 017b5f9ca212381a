//! [`Shared`]: text held by every view that reads the same string near where it was
//! read before, for a reader that keeps a whole dump ([`crate::dump::Reader`]). In a
//! dump the same namespace, label values, phases, condition types, reasons and times
//! stand in thousands of objects, most of them next to the last: each run of them is
//! kept once, and a view holds a counted pointer to it.
//!
//! While a reader reads, it lends its [`Interner`] to the thread ([`Interner::lend`]),
//! and every `Shared` read on that thread comes from it; read with none lent, a
//! `Shared` is a string of its own. The interner remembers the strings it met last, no
//! more, and leaves with the reader.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::{FromJson, Str};

/// Text that views of one reader share: a counted pointer to one copy of the string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shared(Rc<str>);

impl Default for Shared {
    fn default() -> Self {
        Shared(Rc::from(""))
    }
}

impl AsRef<str> for Shared {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Str for Shared {}

impl FromJson for Shared {
    fn from_json(s: &str) -> Self {
        intern(s)
    }

    fn from_json_once(s: &str) -> Self {
        Shared(Rc::from(s))
    }
}

/// The strings one reader met last, a slot each, the slot chosen by the string's
/// [`Glance`]: a dump repeats most strings near where they last stood (a job's objects
/// together, one namespace throughout), and a string met again there is kept once. One
/// met again far away (a Node's name, a job-id label in the pods' part of a List after
/// the TrainJobs') is kept again: a table of every string read would keep it once, but
/// looking each string up in it cost a tenth of the read of a large dump, for some 4%
/// of the memory.
pub(crate) struct Interner {
    recent: Vec<Option<(Glance, Rc<str>)>>,
}

impl Default for Interner {
    fn default() -> Self {
        Interner { recent: vec![None; RECENT] }
    }
}

/// How many strings the interner remembers: few enough that their slots stay where the
/// processor looks fastest.
const RECENT: usize = 1 << 10;

impl Interner {
    fn intern(&mut self, s: &str) -> Shared {
        let glance = Glance::of(s.as_bytes());
        let recent = &mut self.recent[glance.slot()];
        if let Some((_, kept)) = recent.as_ref().filter(|(at, kept)| glance.sees(*at, s, kept)) {
            return Shared(Rc::clone(kept));
        }
        let kept: Rc<str> = Rc::from(s);
        *recent = Some((glance, Rc::clone(&kept)));
        Shared(kept)
    }
}

/// A string's length and its first and last eight bytes: cheaper than a hash of every
/// byte, it picks a string's recent slot, and it is the whole of a string of at most
/// sixteen bytes, which thus compares equal by its glance alone.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Glance {
    len: usize,
    head: u64,
    tail: u64,
}

impl Glance {
    fn of(s: &[u8]) -> Glance {
        // Eight bytes in one load; fewer (a string shorter than eight) byte by byte.
        let word = |b: &[u8]| match <[u8; 8]>::try_from(b) {
            Ok(eight) => u64::from_le_bytes(eight),
            Err(_) => b.iter().fold(0u64, |w, &x| w << 8 | u64::from(x)),
        };
        let len = s.len();
        Glance { len, head: word(&s[..len.min(8)]), tail: word(&s[len.saturating_sub(8)..]) }
    }

    fn slot(self) -> usize {
        let mixed = (self.head ^ self.tail.rotate_left(29) ^ self.len as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (mixed >> (64 - RECENT.trailing_zeros())) as usize
    }

    /// Whether `s`, of this glance, is `kept`, of glance `at`.
    fn sees(self, at: Glance, s: &str, kept: &str) -> bool {
        self == at && (self.len <= 16 || s.as_bytes()[8..] == kept.as_bytes()[8..])
    }
}

thread_local! {
    /// The interner lent to this thread, while a reader reads.
    static LENT: RefCell<Option<Interner>> = const { RefCell::new(None) };
}

impl Interner {
    /// Runs `read` with this interner answering for every [`Shared`] read on this
    /// thread, and takes it back after (also when `read` panics). A reader lent one
    /// while another's is lent (a reader read from within a read) puts the other's back.
    pub(crate) fn lend<R>(&mut self, read: impl FnOnce() -> R) -> R {
        struct TakeBack<'a> {
            owner: &'a mut Interner,
            outer: Option<Interner>,
        }
        impl Drop for TakeBack<'_> {
            fn drop(&mut self) {
                let outer = self.outer.take();
                let mine = LENT.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), outer));
                *self.owner = mine.unwrap_or_default();
            }
        }
        let mine = std::mem::take(self);
        let outer = LENT.with(|slot| slot.borrow_mut().replace(mine));
        let _take_back = TakeBack { owner: self, outer };
        read()
    }
}

fn intern(s: &str) -> Shared {
    LENT.with(|slot| match slot.borrow_mut().as_mut() {
        Some(interner) => interner.intern(s),
        None => Shared(Rc::from(s)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_read_while_an_interner_is_lent_is_kept_once() {
        let mut interner = Interner::default();
        let (a, b) = interner.lend(|| (Shared::from_json("team-a"), Shared::from_json("team-a")));
        assert!(Rc::ptr_eq(&a.0, &b.0));
        assert_eq!(a.as_ref(), "team-a");
        // Lent again, the same interner answers; lent to none, a string is its own.
        let c = interner.lend(|| Shared::from_json("team-a"));
        assert!(Rc::ptr_eq(&a.0, &c.0));
        let d = Shared::from_json("team-a");
        assert!(!Rc::ptr_eq(&a.0, &d.0) && a == d);
    }

    #[test]
    fn strings_alike_at_both_ends_are_told_apart_by_their_middle() {
        let mut interner = Interner::default();
        let texts = ["aaaaaaaaXbbbbbbbb", "aaaaaaaaYbbbbbbbb", "aaaaaaaabbbbbbbb", "aaaaaaa"];
        let read = interner.lend(|| texts.map(Shared::from_json));
        for (text, shared) in texts.iter().zip(&read) {
            assert_eq!(shared.as_ref(), *text);
        }
        let again = interner.lend(|| Shared::from_json(texts[1]));
        assert!(Rc::ptr_eq(&again.0, &read[1].0));
    }

    #[test]
    fn a_reader_lent_within_another_puts_the_outer_interner_back() {
        let (mut outer, mut inner) = (Interner::default(), Interner::default());
        let (x, y, z) = outer.lend(|| {
            let x = Shared::from_json("x");
            let y = inner.lend(|| Shared::from_json("x"));
            (x, y, Shared::from_json("x"))
        });
        assert!(!Rc::ptr_eq(&x.0, &y.0) && Rc::ptr_eq(&x.0, &z.0));
        let remembered = |i: &Interner| i.recent.iter().flatten().count();
        assert_eq!((remembered(&outer), remembered(&inner)), (1, 1));
        assert!(LENT.with(|slot| slot.borrow().is_none()));
    }
}
