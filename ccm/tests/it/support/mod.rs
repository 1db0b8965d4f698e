//! Helpers shared by the test binaries that run against fakecloud.

use fakecloud::FakeCloud;

pub mod client;

/// A request to fakecloud's admin API that must succeed.
pub async fn admin(
    fc: &FakeCloud,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    ccm::cloudscale::install_crypto_provider();
    fc.admin(method, path, body)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}
