//! The Lease on the apiserver: read it, write what [`crate::election`] says, and give
//! it up on shutdown. A write that loses a race (409) means someone else leads.

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::election::{self, Sighting, Step};

/// Whether this replica leads after a campaign.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Campaign {
    /// It holds the Lease, renewed now.
    Leading,
    /// Another replica holds it (its identity, when known).
    Following(Option<String>),
}

/// One replica's handle on the Lease.
pub(crate) struct LeaseLock {
    pub(crate) api: Api<Lease>,
    pub(crate) name: String,
    pub(crate) identity: String,
    pub(crate) duration_secs: i32,
    /// What this replica last saw of the Lease, and since when.
    pub(crate) seen: Option<Sighting>,
}

fn lost_race(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 409)
}

impl LeaseLock {
    /// Acquires, renews or follows, at `now`.
    pub(crate) async fn campaign(&mut self, now: Timestamp) -> Result<Campaign, kube::Error> {
        let current = self.api.get_opt(&self.name).await?;
        let spec = current.as_ref().and_then(|l| l.spec.as_ref());
        let sighting = Sighting::after(self.seen.take(), spec, now);
        let seen = self.seen.insert(sighting);
        let write = match election::next(spec, seen, &self.identity, now, self.duration_secs) {
            Step::Follow { holder } => return Ok(Campaign::Following(Some(holder))),
            Step::Write(spec) => spec,
        };
        let result = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                    spec: Some(write),
                };
                self.api.create(&PostParams::default(), &lease).await
            }
            Some(mut lease) => {
                lease.spec = Some(write);
                self.api.replace(&self.name, &PostParams::default(), &lease).await
            }
        };
        match result {
            Ok(_) => Ok(Campaign::Leading),
            Err(e) if lost_race(&e) => Ok(Campaign::Following(None)),
            Err(e) => Err(e),
        }
    }

    /// Gives the Lease up if this replica still holds it.
    pub(crate) async fn step_down(&self, now: Timestamp) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else { return Ok(()) };
        let Some(spec) = &lease.spec else { return Ok(()) };
        if spec.holder_identity.as_deref() != Some(&self.identity) {
            return Ok(());
        }
        lease.spec = Some(election::step_down(spec, now));
        match self.api.replace(&self.name, &PostParams::default(), &lease).await {
            Err(e) if !lost_race(&e) => Err(e),
            _ => Ok(()),
        }
    }
}
