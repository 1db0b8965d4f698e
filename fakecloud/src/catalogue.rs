//! Read-only catalogue: regions, zones, server flavors, images, load-balancer flavors.

use serde_json::{Value, json};

/// Zones and the region each belongs to (the region slug is the zone slug without digits).
pub const ZONES: &[(&str, &str)] = &[("lpg1", "lpg"), ("rma1", "rma")];

pub fn zone_exists(slug: &str) -> bool {
    ZONES.iter().any(|(z, _)| *z == slug)
}

pub fn region_exists(slug: &str) -> bool {
    ZONES.iter().any(|(_, r)| *r == slug)
}

pub fn region_of_zone(zone: &str) -> &'static str {
    ZONES
        .iter()
        .find(|(z, _)| *z == zone)
        .map(|(_, r)| *r)
        .unwrap_or("rma")
}

pub fn zone_choices() -> String {
    ZONES
        .iter()
        .map(|(z, _)| format!("\"{z}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn regions_json() -> Value {
    let mut regions: Vec<(&str, Vec<&str>)> = Vec::new();
    for (zone, region) in ZONES {
        match regions.iter_mut().find(|(r, _)| r == region) {
            Some((_, zones)) => zones.push(zone),
            None => regions.push((region, vec![zone])),
        }
    }
    Value::Array(
        regions
            .into_iter()
            .map(|(r, zones)| {
                json!({"slug": r, "zones": zones.iter().map(|z| json!({"slug": z})).collect::<Vec<_>>()})
            })
            .collect(),
    )
}

pub struct Flavor {
    pub slug: &'static str,
    pub name: &'static str,
    pub vcpu_count: u32,
    pub memory_gb: u32,
    /// (name, count, vram per GPU in GB)
    pub gpu: Option<(&'static str, u32, u32)>,
    pub zones: &'static [&'static str],
}

const ALL_ZONES: &[&str] = &["lpg1", "rma1"];

pub const FLAVORS: &[Flavor] = &[
    flavor("flex-4-1", "Flex-4-1", 1, 4),
    flavor("flex-4-2", "Flex-4-2", 2, 4),
    flavor("flex-4-4", "Flex-4-4", 4, 4),
    flavor("flex-8-2", "Flex-8-2", 2, 8),
    flavor("flex-8-4", "Flex-8-4", 4, 8),
    flavor("flex-16-4", "Flex-16-4", 4, 16),
    flavor("flex-16-8", "Flex-16-8", 8, 16),
    flavor("flex-32-8", "Flex-32-8", 8, 32),
    flavor("flex-32-16", "Flex-32-16", 16, 32),
    flavor("flex-64-16", "Flex-64-16", 16, 64),
    flavor("plus-32-8", "Plus-32-8", 8, 32),
    flavor("plus-64-16", "Plus-64-16", 16, 64),
    flavor("plus-128-32", "Plus-128-32", 32, 128),
    flavor("plus-192-96", "Plus-192-96", 96, 192),
    Flavor {
        slug: "gpu2-128-16-1-200",
        name: "GPU2-128-16-1-200",
        vcpu_count: 16,
        memory_gb: 128,
        gpu: Some(("NVIDIA L40S", 1, 48)),
        zones: &["rma1"],
    },
];

const fn flavor(slug: &'static str, name: &'static str, vcpu: u32, mem: u32) -> Flavor {
    Flavor {
        slug,
        name,
        vcpu_count: vcpu,
        memory_gb: mem,
        gpu: None,
        zones: ALL_ZONES,
    }
}

pub fn find_flavor(slug: &str) -> Option<&'static Flavor> {
    FLAVORS.iter().find(|f| f.slug == slug)
}

impl Flavor {
    pub fn stub(&self) -> Value {
        json!({"slug": self.slug, "name": self.name, "vcpu_count": self.vcpu_count, "memory_gb": self.memory_gb})
    }

    pub fn to_json(&self) -> Value {
        json!({
            "slug": self.slug,
            "name": self.name,
            "vcpu_count": self.vcpu_count,
            "memory_gb": self.memory_gb,
            "gpu": self.gpu.map(|(name, count, vram)| json!({"name": name, "count": count, "vram_per_gpu_gb": vram})),
            "zones": self.zones.iter().map(|z| json!({"slug": z})).collect::<Vec<_>>(),
        })
    }
}

pub struct Image {
    pub slug: &'static str,
    pub name: &'static str,
    pub operating_system: &'static str,
    pub default_username: &'static str,
}

pub const IMAGES: &[Image] = &[
    image("debian-11", "Debian 11 (2021-08-14)", "Debian", "debian"),
    image("debian-12", "Debian 12 (2023-06-10)", "Debian", "debian"),
    image("debian-13", "Debian 13 (2025-08-09)", "Debian", "debian"),
    image("ubuntu-22.04", "Ubuntu 22.04 LTS", "Ubuntu", "ubuntu"),
    image("ubuntu-24.04", "Ubuntu 24.04 LTS", "Ubuntu", "ubuntu"),
    image("rocky-9", "Rocky Linux 9", "Rocky Linux", "rocky"),
    image(
        "flatcar-stable",
        "Flatcar Container Linux (stable)",
        "Flatcar",
        "core",
    ),
];

const fn image(
    slug: &'static str,
    name: &'static str,
    operating_system: &'static str,
    default_username: &'static str,
) -> Image {
    Image {
        slug,
        name,
        operating_system,
        default_username,
    }
}

pub fn find_image(slug: &str) -> Option<&'static Image> {
    IMAGES.iter().find(|i| i.slug == slug)
}

impl Image {
    pub fn stub(&self) -> Value {
        json!({"slug": self.slug, "name": self.name, "operating_system": self.operating_system, "default_username": self.default_username})
    }

    pub fn to_json(&self) -> Value {
        let mut v = self.stub();
        v["zones"] = Value::Array(ALL_ZONES.iter().map(|z| json!({"slug": z})).collect());
        v
    }
}

pub const LB_FLAVOR_SLUG: &str = "lb-standard";
pub const LB_FLAVOR_NAME: &str = "LB-Standard";

pub fn lb_flavors_json() -> Value {
    json!([{"slug": LB_FLAVOR_SLUG, "name": LB_FLAVOR_NAME,
            "zones": ALL_ZONES.iter().map(|z| json!({"slug": z})).collect::<Vec<_>>()}])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavor_slugs_match_memory_and_vcpus() {
        for f in FLAVORS.iter().filter(|f| f.gpu.is_none()) {
            let parts: Vec<&str> = f.slug.split('-').collect();
            assert_eq!(parts[1], f.memory_gb.to_string(), "{}", f.slug);
            assert_eq!(parts[2], f.vcpu_count.to_string(), "{}", f.slug);
        }
    }

    #[test]
    fn region_is_zone_without_digits() {
        for (zone, region) in ZONES {
            assert_eq!(zone.trim_end_matches(|c: char| c.is_ascii_digit()), *region);
        }
    }
}
