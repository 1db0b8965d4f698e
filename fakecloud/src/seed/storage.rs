//! Seed entries for custom images, volumes and volume snapshots (fakecloud/README.md,
//! "Seed files"). The model checks them as it checks API requests; what the API handlers
//! check on the request body (choices, URLs, blank names) is checked here.

use super::{SeedSummary, bad, entry, find_by_ref, in_entry, known_zone, server_by_ref};
use crate::catalogue::zone_exists;
use crate::clock::Time;
use crate::error::ApiResult;
use crate::model::custom_images::{
    FIRMWARE_TYPES, NewImport, SOURCE_FORMATS, USER_DATA_HANDLINGS, import_custom_image,
    is_import_url,
};
use crate::model::store::{State, Tags};
use crate::model::volume_snapshots::{NewSnapshot, create_snapshot};
use crate::model::volumes::{VolumeSource, check_attach, create_volume};
use serde::Deserialize;

fn ssd() -> String {
    "ssd".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedVolume {
    pub name: String,
    pub size_gb: i64,
    /// `ssd` (default) or `bulk`.
    #[serde(rename = "type", default = "ssd")]
    pub kind: String,
    /// Default: the zone of `server`, else `--default-zone`.
    pub zone: Option<String>,
    /// Server name or UUID: the volume is attached to it.
    pub server: Option<String>,
    #[serde(default)]
    pub tags: Tags,
}

/// A snapshot, `available` at once.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedVolumeSnapshot {
    pub name: String,
    /// Volume name or UUID (a server's root volume is called `<server>-root`).
    pub volume: String,
    #[serde(default)]
    pub tags: Tags,
}

/// A custom image, imported already: its import is `success` and the image is listed at once.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedCustomImage {
    pub name: String,
    pub slug: Option<String>,
    pub url: String,
    pub zones: Vec<String>,
    pub user_data_handling: String,
    /// `raw` (default), `qcow2` or `iso`.
    pub source_format: Option<String>,
    /// `bios` (default) or `uefi`.
    pub firmware_type: Option<String>,
    /// Default: as `/_fake/downloads` declares for the URL, else derived from the URL.
    pub size_gb: Option<i64>,
    #[serde(default)]
    pub tags: Tags,
}

fn not_empty(key: &str, value: &str) -> ApiResult<()> {
    if value.is_empty() {
        return Err(bad(key, "must not be empty"));
    }
    Ok(())
}

/// `value` (or `default` when absent) if it is one of `allowed`.
fn one_of(key: &str, value: Option<&str>, default: &str, allowed: &[&str]) -> ApiResult<String> {
    let value = value.unwrap_or(default);
    if allowed.contains(&value) {
        Ok(value.to_string())
    } else {
        Err(bad(
            key,
            format!("\"{value}\" is not one of {}", allowed.join(", ")),
        ))
    }
}

/// The import a seeded custom image makes: the checks of `POST /v1/custom-images/import`
/// (fakecloud/MODEL.md, "Custom images"), plus a `size_gb` of at least 1.
fn new_import(c: &SeedCustomImage) -> ApiResult<NewImport> {
    not_empty("name", &c.name)?;
    if !is_import_url(&c.url) {
        return Err(bad(
            "url",
            format!("\"{}\" is no http:// or https:// URL", c.url),
        ));
    }
    if c.slug.as_deref() == Some("") {
        return Err(bad("slug", "must not be empty"));
    }
    if c.zones.is_empty() {
        return Err(bad("zones", "must not be empty"));
    }
    let mut zones: Vec<String> = Vec::with_capacity(c.zones.len());
    for z in &c.zones {
        if !zone_exists(z) {
            return Err(bad("zones", format!("\"{z}\" is not a valid zone")));
        }
        if !zones.contains(z) {
            zones.push(z.clone());
        }
    }
    if let Some(size) = c.size_gb
        && size < 1
    {
        return Err(bad("size_gb", "must be at least 1"));
    }
    let udh = Some(c.user_data_handling.as_str());
    Ok(NewImport {
        url: c.url.clone(),
        name: c.name.clone(),
        slug: c.slug.clone(),
        user_data_handling: one_of("user_data_handling", udh, "", &USER_DATA_HANDLINGS)?,
        zones,
        source_format: one_of(
            "source_format",
            c.source_format.as_deref(),
            "raw",
            &SOURCE_FORMATS,
        )?,
        firmware_type: one_of(
            "firmware_type",
            c.firmware_type.as_deref(),
            "bios",
            &FIRMWARE_TYPES,
        )?,
        tags: c.tags.clone(),
        size_gb: c.size_gb,
        settled: true,
    })
}

/// Adds the seed's custom images to `work`, imported already.
pub(super) fn add_custom_images(
    work: &mut State,
    now: Time,
    images: &[SeedCustomImage],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for (i, c) in images.iter().enumerate() {
        let new = new_import(c).map_err(|e| in_entry(&entry("custom_images", i, &c.name), e))?;
        import_custom_image(work, now, new);
        summary.custom_images += 1;
    }
    Ok(())
}

fn add_volume(st: &mut State, now: Time, default_zone: &str, v: &SeedVolume) -> ApiResult<()> {
    not_empty("name", &v.name)?;
    let server = match &v.server {
        None => None,
        Some(r) => Some(server_by_ref(st, r).map_err(|m| bad("server", m))?),
    };
    let zone = match (&v.zone, server.and_then(|s| st.servers().get(&s))) {
        (Some(z), _) => z.clone(),
        (None, Some(s)) => s.zone.clone(),
        (None, None) => default_zone.to_string(),
    };
    let zone = known_zone(zone)?;
    // Zone and the 128-volume limit, under the seed's key (fakecloud/MODEL.md, "Volumes").
    if let Some(s) = server {
        check_attach(st, s, &zone, "server")?;
    }
    let source = VolumeSource::Empty {
        size_gb: v.size_gb,
        kind: v.kind.clone(),
        zone,
        server,
    };
    create_volume(st, now, v.name.clone(), v.tags.clone(), source)?;
    Ok(())
}

/// Adds the seed's volumes to `work`, attached where they name a server.
pub(super) fn add_volumes(
    work: &mut State,
    now: Time,
    default_zone: &str,
    volumes: &[SeedVolume],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for (i, v) in volumes.iter().enumerate() {
        add_volume(work, now, default_zone, v)
            .map_err(|e| in_entry(&entry("volumes", i, &v.name), e))?;
        summary.volumes += 1;
    }
    Ok(())
}

fn add_volume_snapshot(st: &mut State, now: Time, s: &SeedVolumeSnapshot) -> ApiResult<()> {
    not_empty("name", &s.name)?;
    let volumes = st.volumes().values().map(|v| (v.uuid, v.name.as_str()));
    let volume = find_by_ref("volume", &s.volume, volumes).map_err(|m| bad("volume", m))?;
    let new = NewSnapshot {
        name: s.name.clone(),
        source_volume: volume,
        tags: s.tags.clone(),
        settled: true,
    };
    create_snapshot(st, now, new)?;
    Ok(())
}

/// Adds the seed's volume snapshots to `work`, `available` at once.
pub(super) fn add_volume_snapshots(
    work: &mut State,
    now: Time,
    snapshots: &[SeedVolumeSnapshot],
    summary: &mut SeedSummary,
) -> ApiResult<()> {
    for (i, s) in snapshots.iter().enumerate() {
        add_volume_snapshot(work, now, s)
            .map_err(|e| in_entry(&entry("volume_snapshots", i, &s.name), e))?;
        summary.volume_snapshots += 1;
    }
    Ok(())
}
