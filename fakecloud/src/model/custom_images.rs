//! Custom images (`/v1/custom-images`) and their imports (`/v1/custom-images/import`).
//!
//! An image is only ever made by an import, whose UUID it shares. The import is
//! `in_progress` for `IMPORT_S` virtual seconds, then `success` or `failed`; the image exists
//! (is listed, answers GET, PATCH, DELETE) from the moment of success on. Both records are
//! written at the import's POST with the instant of that transition, and readers compare it
//! with the clock: nothing runs in the background. The download is simulated: how a URL
//! answers is declared through `/_fake/downloads` (default: HTTP 200), and size and checksums
//! are derived from the URL. Rules: fakecloud/MODEL.md, "Custom images".

use crate::catalogue::find_image;
use crate::clock::{Time, delta_from_secs};
use crate::error::{ApiError, ApiResult};
use crate::model::servers::ZoneStub;
use crate::model::store::{Ctx, Href, NamedStub, State, Tags, TimeText};
use md5::{Digest, Md5};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;
use uuid::Uuid;

/// Virtual seconds an import is `in_progress` [INF: clients wait 75 s and more].
pub const IMPORT_S: f64 = 3.0;
/// The values of `user_data_handling`.
pub const USER_DATA_HANDLINGS: [&str; 2] = ["pass-through", "extend-cloud-config"];
/// The values of `source_format` (`raw` when omitted).
pub const SOURCE_FORMATS: [&str; 3] = ["raw", "qcow2", "iso"];
/// The values of `firmware_type` (`bios` when omitted).
pub const FIRMWARE_TYPES: [&str; 2] = ["bios", "uefi"];
/// How a server's `image` names a custom image by its slug.
pub const CUSTOM_PREFIX: &str = "custom:";

/// How a URL answers the simulated download (`/_fake/downloads`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Download {
    pub url: String,
    /// The HTTP status the URL answers with; anything but 200 fails the import.
    pub status: u16,
    /// The image's size once converted to raw; `None`: derived from the URL.
    #[serde(default)]
    pub size_gb: Option<i64>,
}

/// `md5` and `sha256` of the image after its conversion to raw, lower-case hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksums {
    pub md5: String,
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CustomImageImport {
    /// Also the UUID of the image it makes.
    pub uuid: Uuid,
    pub url: String,
    /// The name the image was imported under (the import's `custom_image.name`).
    pub name: String,
    pub source_format: String,
    pub tags: Tags,
    pub created_at: Time,
    /// `in_progress` until then, `success` or `failed` after.
    pub done_at: Time,
    /// Why the import fails (`None`: it succeeds).
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CustomImage {
    pub uuid: Uuid,
    pub name: String,
    pub slug: Option<String>,
    pub size_gb: i64,
    pub checksums: Checksums,
    pub user_data_handling: String,
    pub firmware_type: String,
    /// Zone slugs, as imported; never changed.
    pub zones: Vec<String>,
    pub tags: Tags,
    /// When its import succeeds: the image does not exist before.
    pub created_at: Time,
}

/// What a server shows of the custom image it was created from (taken at create).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerImage {
    pub uuid: Uuid,
    /// `custom:<slug>`; `None` for an image without a slug.
    pub slug: Option<String>,
    pub name: String,
}

#[derive(Serialize)]
pub struct ImportView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub custom_image: NamedStub<'a>,
    pub url: &'a str,
    pub status: &'static str,
    pub error_message: &'a str,
    pub tags: &'a Tags,
}

#[derive(Serialize)]
pub struct CustomImageView<'a> {
    pub href: Href<'a, Uuid>,
    pub uuid: Uuid,
    pub name: &'a str,
    pub slug: Option<&'a str>,
    pub size_gb: i64,
    pub checksums: &'a Checksums,
    pub user_data_handling: &'a str,
    pub firmware_type: &'a str,
    pub zones: Vec<ZoneStub<'a>>,
    pub tags: &'a Tags,
    pub created_at: TimeText,
}

impl CustomImageImport {
    /// Never `started`: the public clients wait only while `in_progress`.
    pub fn status(&self, now: Time) -> &'static str {
        if now < self.done_at {
            "in_progress"
        } else if self.error.is_some() {
            "failed"
        } else {
            "success"
        }
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> ImportView<'a> {
        let status = self.status(ctx.now);
        ImportView {
            href: ctx.href_of("custom-images/import", self.uuid),
            uuid: self.uuid,
            custom_image: NamedStub {
                href: ctx.href_of("custom-images", self.uuid),
                uuid: self.uuid,
                name: &self.name,
            },
            url: &self.url,
            status,
            error_message: match (status, &self.error) {
                ("failed", Some(e)) => e,
                _ => "",
            },
            tags: &self.tags,
        }
    }

    pub fn render(&self, ctx: &Ctx) -> Value {
        serde_json::to_value(self.view(ctx)).unwrap_or(Value::Null)
    }
}

impl CustomImage {
    /// Whether the image exists at `now` (its import has succeeded).
    pub fn visible(&self, now: Time) -> bool {
        now >= self.created_at
    }

    pub fn view<'a>(&'a self, ctx: &'a Ctx) -> CustomImageView<'a> {
        CustomImageView {
            href: ctx.href_of("custom-images", self.uuid),
            uuid: self.uuid,
            name: &self.name,
            slug: self.slug.as_deref(),
            size_gb: self.size_gb,
            checksums: &self.checksums,
            user_data_handling: &self.user_data_handling,
            firmware_type: &self.firmware_type,
            zones: self.zones.iter().map(|z| ZoneStub { slug: z }).collect(),
            tags: &self.tags,
            created_at: ctx.stamp(self.created_at),
        }
    }
}

/// A hyphenated UUID (what the API hands out), as a server's `image` may give it.
fn parse_uuid(s: &str) -> Option<Uuid> {
    if s.len() == 36 {
        Uuid::parse_str(s).ok()
    } else {
        None
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The size of an undeclared URL's image: 1 to 10 GiB, fixed by the URL.
pub fn default_size_gb(url: &str) -> i64 {
    let digest = Sha256::digest(url.as_bytes());
    1 + i64::from(digest[0] % 10)
}

/// The checksums of the image behind `url`: hashes of a pseudo-content made of the URL and
/// the size, so one URL always gives the same image whatever `source_format` says.
pub fn checksums(url: &str, size_gb: i64) -> Checksums {
    let content = format!("fakecloud raw image\nurl: {url}\nsize_gb: {size_gb}\n");
    Checksums {
        md5: hex(&Md5::digest(content.as_bytes())),
        sha256: hex(&Sha256::digest(content.as_bytes())),
    }
}

/// What a client asks an import for (fields already validated).
#[derive(Debug, Clone)]
pub struct NewImport {
    pub url: String,
    pub name: String,
    pub slug: Option<String>,
    pub user_data_handling: String,
    pub zones: Vec<String>,
    pub source_format: String,
    pub firmware_type: String,
    pub tags: Tags,
    /// The image's size; `None` (what the API sends): as declared for the URL, else derived
    /// from it.
    pub size_gb: Option<i64>,
    /// `true`: imported already (seed files): `success` and the image visible at once,
    /// whatever `/_fake/downloads` declares for the URL; `false`: `in_progress` first.
    pub settled: bool,
}

/// Whether `url` is one an import accepts: `http://` or `https://`, something after it and
/// no whitespace (fakecloud/MODEL.md, "Custom images").
pub fn is_import_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.contains(char::is_whitespace))
}

/// `POST /v1/custom-images/import`: the import, and (unless the URL answers anything but
/// 200) the image it makes, both settled at `now + IMPORT_S` (at `now` if `new.settled`).
/// The outcome is fixed by the declarations in force at the POST.
pub fn import_custom_image(st: &mut State, now: Time, new: NewImport) -> Uuid {
    let mut uuid = st.ids.new_uuid();
    while st.custom_image_imports.contains_key(&uuid) || st.custom_images.contains_key(&uuid) {
        uuid = st.ids.new_uuid();
    }
    let declared = st.downloads.get(&new.url);
    let status = match declared {
        Some(d) if !new.settled => d.status,
        _ => 200,
    };
    let size_gb = new
        .size_gb
        .or_else(|| declared.and_then(|d| d.size_gb))
        .unwrap_or_else(|| default_size_gb(&new.url));
    let done_at = if new.settled {
        now
    } else {
        now + delta_from_secs(IMPORT_S)
    };
    let error = (status != 200).then(|| format!("Expected HTTP 200, got HTTP {status}"));
    if error.is_none() {
        st.custom_images.insert(
            uuid,
            CustomImage {
                uuid,
                name: new.name.clone(),
                slug: new.slug,
                size_gb,
                checksums: checksums(&new.url, size_gb),
                user_data_handling: new.user_data_handling,
                firmware_type: new.firmware_type,
                zones: new.zones,
                tags: new.tags.clone(),
                created_at: done_at,
            },
        );
    }
    st.custom_image_imports.insert(
        uuid,
        CustomImageImport {
            uuid,
            url: new.url,
            name: new.name,
            source_format: new.source_format,
            tags: new.tags,
            created_at: now,
            done_at,
            error,
        },
    );
    uuid
}

/// The changeable fields of an image (`None`: unchanged; `slug: Some(None)` removes it).
#[derive(Debug, Default)]
pub struct CustomImagePatch {
    pub name: Option<String>,
    pub slug: Option<Option<String>>,
    pub user_data_handling: Option<String>,
    pub tags: Option<Tags>,
}

/// `PATCH /v1/custom-images/{uuid}`: several fields at once are fine.
pub fn update_custom_image(
    st: &mut State,
    id: Uuid,
    now: Time,
    patch: CustomImagePatch,
) -> ApiResult<()> {
    let img = st
        .custom_images
        .get_mut(&id)
        .filter(|i| i.visible(now))
        .ok_or(ApiError::NotFound)?;
    if let Some(n) = patch.name {
        img.name = n;
    }
    if let Some(s) = patch.slug {
        img.slug = s;
    }
    if let Some(u) = patch.user_data_handling {
        img.user_data_handling = u;
    }
    if let Some(t) = patch.tags {
        img.tags = t;
    }
    Ok(())
}

/// `DELETE /v1/custom-images/{uuid}`: also while servers use it (they keep their stub).
pub fn delete_custom_image(st: &mut State, id: Uuid, now: Time) -> ApiResult<()> {
    if !st.custom_images.get(&id).is_some_and(|i| i.visible(now)) {
        return Err(ApiError::NotFound);
    }
    st.custom_images.shift_remove(&id);
    Ok(())
}

/// Whether a server's `image` may name a custom image (a UUID or `custom:<slug>`), to be
/// resolved against the store.
pub fn may_name_custom_image(image: &str) -> bool {
    image.starts_with(CUSTOM_PREFIX) || parse_uuid(image).is_some()
}

/// Resolves a server's `image` in `zone`: `None` for a catalogue image, the stub of a custom
/// image named by its UUID or `custom:<slug>`, else a 400 under `image`. Several images
/// with that slug: the last imported one available in the zone [INF].
pub(in crate::model) fn server_image(
    st: &State,
    now: Time,
    image: &str,
    zone: &str,
) -> ApiResult<Option<ServerImage>> {
    if find_image(image).is_some() {
        return Ok(None);
    }
    let candidates: Vec<&CustomImage> = match image.strip_prefix(CUSTOM_PREFIX) {
        Some(slug) => st
            .custom_images
            .values()
            .filter(|i| i.visible(now) && i.slug.as_deref() == Some(slug))
            .collect(),
        None => parse_uuid(image)
            .and_then(|id| st.custom_images.get(&id))
            .filter(|i| i.visible(now))
            .into_iter()
            .collect(),
    };
    if candidates.is_empty() {
        return Err(ApiError::field(
            "image",
            format!("\"{image}\" is not a valid choice."),
        ));
    }
    let Some(img) = candidates
        .iter()
        .rev()
        .find(|i| i.zones.iter().any(|z| z == zone))
    else {
        return Err(ApiError::field(
            "image",
            format!("Custom image \"{image}\" is not available in zone {zone}."),
        ));
    };
    Ok(Some(ServerImage {
        uuid: img.uuid,
        slug: img.slug.as_ref().map(|s| format!("{CUSTOM_PREFIX}{s}")),
        name: img.name.clone(),
    }))
}

/// Declares how `download.url` answers from now on (replacing an earlier declaration).
pub fn declare_download(st: &mut State, download: Download) {
    st.downloads.insert(download.url.clone(), download);
}

/// Forgets every declaration: every URL answers 200 again.
pub fn clear_downloads(st: &mut State) {
    st.downloads.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::store::Ids;

    fn new_import(url: &str, slug: Option<&str>, zones: &[&str]) -> NewImport {
        NewImport {
            url: url.into(),
            name: "img".into(),
            slug: slug.map(str::to_string),
            user_data_handling: "pass-through".into(),
            zones: zones.iter().map(|z| z.to_string()).collect(),
            source_format: "raw".into(),
            firmware_type: "bios".into(),
            tags: Tags::new(),
            size_gb: None,
            settled: false,
        }
    }

    #[test]
    fn checksums_are_lower_hex_and_follow_url_and_size() {
        let a = checksums("https://example.com/a.raw", 1);
        assert_eq!(a.md5.len(), 32);
        assert_eq!(a.sha256.len(), 64);
        for h in [&a.md5, &a.sha256] {
            assert!(h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')));
        }
        assert_eq!(a, checksums("https://example.com/a.raw", 1));
        assert_ne!(a, checksums("https://example.com/b.raw", 1));
        assert_ne!(a, checksums("https://example.com/a.raw", 2));
        let size = default_size_gb("https://example.com/a.raw");
        assert!((1..=10).contains(&size));
    }

    #[test]
    fn image_appears_at_success_and_failures_make_none() {
        let mut st = State::empty_with_ids(Ids::seeded(1));
        let now = Time::default();
        declare_download(
            &mut st,
            Download {
                url: "https://x/missing".into(),
                status: 404,
                size_gb: None,
            },
        );
        let ok = import_custom_image(&mut st, now, new_import("https://x/ok", None, &["rma1"]));
        let bad = import_custom_image(&mut st, now, new_import("https://x/missing", None, &[]));
        let done = now + delta_from_secs(IMPORT_S);
        assert_eq!(st.custom_image_imports[&ok].status(now), "in_progress");
        assert!(!st.custom_images[&ok].visible(now));
        assert_eq!(st.custom_image_imports[&ok].status(done), "success");
        assert!(st.custom_images[&ok].visible(done));
        assert_eq!(st.custom_image_imports[&bad].status(done), "failed");
        assert!(!st.custom_images.contains_key(&bad));
    }

    #[test]
    fn server_image_resolves_uuid_and_slug_in_the_zone() {
        let mut st = State::empty_with_ids(Ids::seeded(2));
        let now = Time::default();
        let id = import_custom_image(
            &mut st,
            now,
            new_import("https://x/a", Some("a"), &["lpg1"]),
        );
        let later = now + delta_from_secs(IMPORT_S);
        assert!(
            server_image(&st, now, "custom:a", "lpg1").is_err(),
            "not yet"
        );
        let by_slug = server_image(&st, later, "custom:a", "lpg1").expect("found");
        let by_uuid = server_image(&st, later, &id.to_string(), "lpg1").expect("found");
        assert_eq!(by_slug, by_uuid);
        assert_eq!(by_slug.map(|s| s.slug), Some(Some("custom:a".to_string())));
        assert!(
            server_image(&st, later, "custom:a", "rma1").is_err(),
            "other zone"
        );
        assert_eq!(server_image(&st, later, "debian-12", "rma1"), Ok(None));
    }
}
