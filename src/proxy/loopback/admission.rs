//! Admissions: which of the connections on the host's loopback the call's proxy serves (see
//! the parent module's "The proxy serves only the helper's connections"). The helper admits the
//! address of each connection it made to the proxy's listener, for [`ADMISSION`] at most; the
//! proxy serves a connection only once its peer's address (from `accept` itself) is admitted,
//! and takes the admission as it does, so each serves once.
//!
//! Trusted with: that no other local process uses the call's proxy. What it trusts: loopback's
//! address and port uniqueness, and the helper's admitting only its own connections.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{ADMISSION, Loopback, canonical, lock};

impl Loopback {
    /// Whether the proxy may serve a connection from `peer` (one the helper made, admitted
    /// less than [`ADMISSION`] ago), once; waits up to `wait` for its admission.
    pub fn accepts(&self, peer: SocketAddr, wait: Duration) -> bool {
        let peer = SocketAddr::new(canonical(peer.ip()), peer.port());
        let until = Instant::now() + wait;
        let mut admitted = lock(&self.admitted);
        loop {
            if let Some(at) = admitted.remove(&peer) {
                return at.elapsed() < ADMISSION;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            admitted = match self.admission.wait_timeout(admitted, until - now) {
                Ok((guard, _)) => guard,
                Err(e) => e.into_inner().0,
            };
        }
    }
}

/// An admitted address, withdrawn again unless its connection was made (a stale admission
/// would let whoever binds that port next use the proxy).
pub(super) struct Admission<'a> {
    loopback: &'a Loopback,
    address: SocketAddr,
    kept: bool,
}

impl<'a> Admission<'a> {
    pub(super) fn new(loopback: &'a Loopback, address: SocketAddr) -> Admission<'a> {
        let address = SocketAddr::new(canonical(address.ip()), address.port());
        let mut admitted = lock(&loopback.admitted);
        // Those never accepted in time go: they will not be served.
        admitted.retain(|_, at| at.elapsed() < ADMISSION);
        admitted.insert(address, Instant::now());
        loopback.admission.notify_all();
        Admission { loopback, address, kept: false }
    }

    pub(super) fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if !self.kept {
            lock(&self.loopback.admitted).remove(&self.address);
        }
    }
}
