//! The per-user cache key (`$APSI_HOME/cache.key`, `APSI_HOME` defaulting to
//! `~/.apsi`): 32 random bytes, created mode 0600 on first use, and the
//! HMAC-SHA256 tags made with it. A cache entry is only decoded after its
//! tag verifies, so a file written by someone without the key is never
//! loaded. The key itself lives in apsi-cache, which the compile cache
//! shares.

use apsi_core::api::ErrorKind;
use apsi_core::api::{err, VResult};

pub use apsi_cache::key::{apsi_home, hex_digest, tag, verify, KEY_LEN};

/// The key (apsi-cache's, shared with the compile cache), created on first use.
pub fn cache_key() -> VResult<[u8; KEY_LEN]> {
    apsi_cache::key::cache_key().map_err(|e| err(ErrorKind::IOError, e))
}
