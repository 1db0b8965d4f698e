//! The API client and fakecloud set up alike by the client's tests.

use ccm::cloudscale::*;
use ccm::secret::{Token, TokenSource};
use fakecloud::{Config, FakeCloud, FaultRule};
use std::sync::Arc;
use std::time::Duration;

pub const TOKEN: &str = "test-token";

pub async fn start(config: Config) -> FakeCloud {
    FakeCloud::start(config).await.expect("start fakecloud")
}

/// A fast retry policy for tests: tiny backoff, short settle.
pub fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
        max_retry_after: Duration::from_secs(5),
        settle_before_lookup: Duration::from_millis(50),
    }
}

pub fn config(fc: &FakeCloud, token: &str) -> ClientConfig {
    let mut c = ClientConfig::new(
        fc.base_url(),
        Arc::new(TokenSource::Static(Token::new(token).expect("token"))),
    );
    c.timeout = Duration::from_secs(5);
    c.retry = fast_retry();
    c.rate_limit = None;
    c
}

pub fn fault(fc: &FakeCloud, rule: FaultRule) {
    fc.faults().add(rule).expect("add fault");
}

pub fn new_lb(name: &str) -> CreateLoadBalancer {
    CreateLoadBalancer {
        name: name.to_string(),
        flavor: "lb-standard".to_string(),
        vip_addresses: vec![],
        zone: Some("rma1".to_string()),
        tags: Tags::from([("ccm/service".to_string(), "default/web".to_string())]),
    }
}

pub fn new_pool(lb: uuid::Uuid, name: &str) -> CreatePool {
    CreatePool {
        name: name.to_string(),
        load_balancer: lb,
        algorithm: PoolAlgorithm::RoundRobin,
        protocol: PoolProtocol::Tcp,
        tags: Tags::from([("ccm/port".to_string(), "80".to_string())]),
    }
}

pub fn random_uuid() -> uuid::Uuid {
    uuid::Uuid::new_v4()
}
