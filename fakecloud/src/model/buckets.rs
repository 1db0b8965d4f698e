//! Object storage buckets. They are not part of API v1 (clients create them through S3):
//! fakecloud learns of them through the admin API (`/_fake/buckets`) and seed files, and
//! reports synthetic usage for them under `GET /v1/metrics/buckets`
//! (`model::bucket_metrics`). Rules: fakecloud/MODEL.md, "Bucket metrics".

use crate::clock::{Time, format_time};
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Keyed, State};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bucket {
    /// Unique among all buckets, as S3 bucket names are.
    pub name: String,
    /// The `id` of the objects user owning it.
    pub objects_user_id: String,
    /// Usage is reported from the Europe/Zurich day of this instant on.
    pub created_at: Time,
}

impl Keyed for Bucket {
    type Key = String;
    fn key(&self) -> String {
        self.name.clone()
    }
}

impl Bucket {
    /// The admin API's representation (virtual time, like every `/_fake` answer).
    pub fn render(&self) -> Value {
        json!({
            "name": self.name,
            "objects_user_id": self.objects_user_id,
            "created_at": format_time(self.created_at),
        })
    }
}

/// Why `name` is no valid S3 bucket name: 3 to 63 lower-case letters, digits, dots and
/// hyphens, starting and ending with a letter or digit, no two dots in a row, not an IPv4
/// address.
pub fn bucket_name_error(name: &str) -> Option<&'static str> {
    let edge_ok = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&name.len()) {
        Some("A bucket name has 3 to 63 characters.")
    } else if !name
        .bytes()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
    {
        Some("A bucket name has only lower-case letters, digits, dots and hyphens.")
    } else if !edge_ok(name.bytes().next()) || !edge_ok(name.bytes().last()) {
        Some("A bucket name starts and ends with a letter or digit.")
    } else if name.contains("..") || name.parse::<std::net::Ipv4Addr>().is_ok() {
        Some("A bucket name is no IP address and has no two dots in a row.")
    } else {
        None
    }
}

/// What a bucket is registered from (admin API or seed).
#[derive(Debug, Clone)]
pub struct NewBucket {
    pub name: String,
    pub objects_user_id: String,
    /// `None`: now.
    pub created_at: Option<Time>,
}

/// A creation time as admin requests and seeds give it: RFC 3339, or `YYYY-MM-DD` for
/// midnight Europe/Zurich at the start of that day.
pub fn parse_created_at(s: &str) -> Option<Time> {
    crate::model::bucket_metrics::parse_day(s)
        .map(crate::model::bucket_metrics::zurich_midnight)
        .or_else(|| crate::clock::parse_time(s))
}

/// Registers a bucket of an existing objects user; nothing changes on error.
pub fn create_bucket(st: &mut State, now: Time, new: NewBucket) -> ApiResult<()> {
    if let Some(msg) = bucket_name_error(&new.name) {
        return Err(ApiError::field("name", msg));
    }
    if st.buckets.contains_key(&new.name) {
        return Err(ApiError::field(
            "name",
            format!("A bucket named \"{}\" already exists.", new.name),
        ));
    }
    if !st.objects_users.contains_key(&new.objects_user_id) {
        return Err(ApiError::field(
            "objects_user_id",
            format!(
                "Invalid pk \"{}\" - object does not exist.",
                new.objects_user_id
            ),
        ));
    }
    st.buckets.insert(
        new.name.clone(),
        Bucket {
            name: new.name,
            objects_user_id: new.objects_user_id,
            created_at: new.created_at.unwrap_or(now),
        },
    );
    Ok(())
}

pub fn delete_bucket(st: &mut State, name: &str) -> ApiResult<()> {
    st.buckets
        .shift_remove(name)
        .map(|_| ())
        .ok_or(ApiError::NotFound)
}

/// Forgets the buckets of an objects user that is being deleted.
pub(in crate::model) fn drop_buckets_of(st: &mut State, objects_user_id: &str) {
    st.buckets
        .retain(|_, b| b.objects_user_id != objects_user_id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_follow_the_s3_rules() {
        for ok in ["abc", "my-bucket.v2", "0backup9", &"a".repeat(63)] {
            assert_eq!(bucket_name_error(ok), None, "{ok}");
        }
        for bad in [
            "ab",
            &"a".repeat(64),
            "Upper",
            "under_score",
            "-abc",
            "abc.",
            "a..b",
            "192.168.1.1",
        ] {
            assert!(bucket_name_error(bad).is_some(), "{bad}");
        }
    }
}
