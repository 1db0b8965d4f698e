//! Objects users (`/v1/objects-users`): S3 credentials of the object storage. Unlike the
//! other resources they are identified by `id` (64 lower-case hex characters), not `uuid`,
//! and carry one access/secret key pair, fixed at create. Rules: fakecloud/MODEL.md,
//! "Objects users".

use crate::clock::Time;
use crate::error::{ApiError, ApiResult};
use crate::model::store::{Ctx, Href, Ids, State, Tags, TimeText};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Length of an access key (upper-case letters and digits).
pub const ACCESS_KEY_LEN: usize = 20;
/// Length of a secret key (characters of the base64 alphabet).
pub const SECRET_KEY_LEN: usize = 40;

const ACCESS_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const SECRET_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// One S3 key pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPair {
    pub access_key: String,
    pub secret_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectsUser {
    /// 64 lower-case hex characters.
    pub id: String,
    pub display_name: String,
    /// Exactly one pair [INF: the public clients read `keys[0]`].
    pub keys: Vec<KeyPair>,
    pub tags: Tags,
    pub created_at: Time,
}

#[derive(Serialize)]
pub struct ObjectsUserView<'a> {
    pub href: Href<'a, &'a str>,
    pub id: &'a str,
    pub display_name: &'a str,
    pub keys: &'a [KeyPair],
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

impl ObjectsUser {
    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> ObjectsUserView<'a> {
        ObjectsUserView {
            href: ctx.href_of("objects-users", self.id.as_str()),
            id: &self.id,
            display_name: &self.display_name,
            keys: &self.keys,
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

/// `n` random bytes drawn from the state's ID source (seeded runs repeat them).
fn draw_bytes(ids: &mut Ids, n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(ids.new_uuid().as_bytes());
    }
    out.truncate(n);
    out
}

fn text_from(ids: &mut Ids, len: usize, alphabet: &[u8]) -> String {
    draw_bytes(ids, len)
        .into_iter()
        .map(|b| char::from(alphabet[usize::from(b) % alphabet.len()]))
        .collect()
}

/// A new user id: 64 lower-case hex characters.
fn new_id(ids: &mut Ids) -> String {
    draw_bytes(ids, 32)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new key pair: 20 upper-case letters and digits, 40 characters of base64.
fn new_key_pair(ids: &mut Ids) -> KeyPair {
    KeyPair {
        access_key: text_from(ids, ACCESS_KEY_LEN, ACCESS_ALPHABET),
        secret_key: text_from(ids, SECRET_KEY_LEN, SECRET_ALPHABET),
    }
}

/// `POST /v1/objects-users`: a new user with a fresh key pair. Display names need not be
/// unique.
pub fn create_objects_user(st: &mut State, now: Time, display_name: String, tags: Tags) -> String {
    let mut id = new_id(&mut st.ids);
    while st.objects_users.contains_key(&id) {
        id = new_id(&mut st.ids);
    }
    let keys = vec![new_key_pair(&mut st.ids)];
    st.objects_users.insert(
        id.clone(),
        ObjectsUser {
            id: id.clone(),
            display_name,
            keys,
            tags,
            created_at: now,
        },
    );
    id
}

/// The changeable fields of a user (`None`: unchanged).
#[derive(Debug, Default)]
pub struct ObjectsUserPatch {
    pub display_name: Option<String>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/objects-users/{id}`: display name and tags; the keys never change.
pub fn update_objects_user(st: &mut State, id: &str, patch: ObjectsUserPatch) -> ApiResult<()> {
    let u = st.objects_users.get_mut(id).ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.display_name {
        u.display_name = n;
    }
    if let Some(t) = patch.tags {
        u.tags = t;
    }
    Ok(())
}

/// `DELETE /v1/objects-users/{id}`: its buckets go with it (fakecloud/MODEL.md, "Bucket
/// metrics").
pub fn delete_objects_user(st: &mut State, id: &str) -> ApiResult<()> {
    st.objects_users
        .shift_remove(id)
        .ok_or(ApiError::NotFound)?;
    crate::model::buckets::drop_buckets_of(st, id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_keys_have_their_shapes_and_follow_the_seed() {
        let make = || {
            let mut st = State::empty_with_ids(Ids::seeded(7));
            let now = Time::default();
            let a = create_objects_user(&mut st, now, "a".into(), Tags::new());
            let b = create_objects_user(&mut st, now, "a".into(), Tags::new());
            (st, a, b)
        };
        let (st, a, b) = make();
        assert_ne!(a, b);
        for id in [&a, &b] {
            assert_eq!(id.len(), 64);
            assert!(id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
            let u = &st.objects_users[id.as_str()];
            assert_eq!(u.keys.len(), 1);
            let k = &u.keys[0];
            assert_eq!(k.access_key.len(), ACCESS_KEY_LEN);
            assert!(k.access_key.bytes().all(|c| ACCESS_ALPHABET.contains(&c)));
            assert_eq!(k.secret_key.len(), SECRET_KEY_LEN);
            assert!(k.secret_key.bytes().all(|c| SECRET_ALPHABET.contains(&c)));
        }
        let (st2, a2, b2) = make();
        assert_eq!((a2.as_str(), b2.as_str()), (a.as_str(), b.as_str()));
        assert_eq!(st2.objects_users[&a].keys, st.objects_users[&a].keys);
    }
}
