//! `/v1/floating-ips/{ip}` handlers, addressed by IP (IPv6 colons in the path).

use super::common::{
    choice, created, existing_ref, list_answer, no_content, parse_body, show_answer,
};
use crate::app::{App, Base};
use crate::catalogue::{region_exists, region_of_zone};
use crate::error::{ApiError, ApiResult};
use crate::model::floating_ips::{
    FloatingIpPatch, NewFloatingIp, delete_floating_ip, insert_floating_ip, target_error,
    update_floating_ip,
};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use std::net::IpAddr;

/// Parses the `{ip}` path segment: an address, optionally with a prefix the CLI strips
/// anyway (`192.0.2.1%2F32`).
fn path_ip(raw: &str) -> ApiResult<IpAddr> {
    let addr = raw.split('/').next().unwrap_or(raw);
    addr.parse().map_err(|_| ApiError::NotFound)
}

pub fn routes() -> Router<App> {
    Router::new()
        .route("/floating-ips", get(list).post(create))
        .route("/floating-ips/{ip}", get(show).patch(update).delete(delete))
}

async fn list(AxState(app): AxState<App>, Base(base): Base, RawQuery(q): RawQuery) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.floating_ips().values(), q.as_deref(), |r| {
            r.render(ctx)
        })
    })
}

async fn show(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_ip(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.floating_ips().get(&id).map(|r| r.render(ctx)))
    })
}

async fn create(AxState(app): AxState<App>, Base(base): Base, bytes: Bytes) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let default_region = region_of_zone(&app.config().default_zone).to_string();
    let ip = app.write(|st, now| {
        let version = match body.int("ip_version", true) {
            Some(v @ (4 | 6)) => Some(v as u8),
            Some(v) => {
                body.error("ip_version", format!("\"{v}\" is not a valid choice."));
                None
            }
            None => None,
        };
        let prefix = body.int("prefix_length", false);
        let kind = choice(&mut body, "type", false, &["regional", "global"])
            .unwrap_or_else(|| "regional".into());
        let region = body.string("region", false);
        let server = existing_ref(&mut body, "server", false, |s| {
            st.servers().contains_key(&s)
        });
        let lb = existing_ref(&mut body, "load_balancer", false, |l| {
            st.load_balancers().contains_key(&l)
        });
        let reverse_ptr = body.string("reverse_ptr", false);
        let tags = body.tags().unwrap_or_default();
        let Some(version) = version else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        let prefix = match (version, prefix) {
            (_, None) => None,
            (4, Some(32)) => Some(32),
            (6, Some(p @ (56 | 128))) => Some(p as u8),
            (_, Some(p)) => {
                body.error(
                    "prefix_length",
                    format!("\"{p}\" is not a valid prefix length for IPv{version}."),
                );
                None
            }
        };
        let global = kind == "global";
        let region = match (global, region) {
            (true, Some(_)) => {
                body.error("region", "A global Floating IP has no region.");
                None
            }
            (true, None) => None,
            (false, Some(r)) if region_exists(&r) => Some(r),
            (false, Some(r)) => {
                body.error("region", format!("\"{r}\" is not a valid choice."));
                None
            }
            (false, None) => Some(default_region.clone()),
        };
        if server.is_some() && lb.is_some() {
            body.error(
                "load_balancer",
                "Assign either a server or a load balancer, not both.",
            );
        }
        if prefix == Some(56) && reverse_ptr.is_some() {
            body.error(
                "reverse_ptr",
                "A reverse pointer can only be set on single addresses.",
            );
        }
        if body.ok_so_far()
            && let Some((key, msg)) = target_error(st, version, region.as_deref(), server, lb)
        {
            body.error(key, msg);
        }
        body.finish()?;
        insert_floating_ip(
            st,
            now,
            NewFloatingIp {
                ip_version: version,
                prefix_length: prefix,
                global,
                region,
                server,
                load_balancer: lb,
                reverse_ptr,
                tags,
                address: None,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st
            .floating_ips()
            .get(&ip)
            .map(|f| created(f.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

async fn update(
    AxState(app): AxState<App>,
    Path(ip): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let ip = path_ip(&ip)?;
    let mut body = parse_body(&bytes)?;
    app.write(|st, now| {
        let fip = st.floating_ips().get(&ip).ok_or(ApiError::NotFound)?;
        body.immutable("ip_version", &json!(fip.version()));
        body.immutable("prefix_length", &json!(fip.network.prefix_len()));
        body.immutable("type", &json!(fip.kind));
        body.immutable(
            "region",
            &fip.region
                .as_ref()
                .map(|r| json!({"slug": r}))
                .unwrap_or(Value::Null),
        );
        body.immutable("network", &json!(fip.network.to_string()));
        // `null` is refused: the API cannot unassign (the API has no unassignment).
        let server = existing_ref(&mut body, "server", false, |s| {
            st.servers().contains_key(&s)
        });
        let lb = existing_ref(&mut body, "load_balancer", false, |l| {
            st.load_balancers().contains_key(&l)
        });
        let reverse_ptr = body.string("reverse_ptr", false);
        let tags = body.tags();
        if server.is_some() && lb.is_some() {
            body.error(
                "load_balancer",
                "Assign either a server or a load balancer, not both.",
            );
        }
        if reverse_ptr.is_some() && fip.network.prefix_len() == 56 {
            body.error(
                "reverse_ptr",
                "A reverse pointer can only be set on single addresses.",
            );
        }
        if body.ok_so_far()
            && (server.is_some() || lb.is_some())
            && let Some((key, msg)) =
                target_error(st, fip.version(), fip.region.as_deref(), server, lb)
        {
            body.error(key, msg);
        }
        body.finish()?;
        update_floating_ip(
            st,
            ip,
            now,
            FloatingIpPatch {
                server,
                load_balancer: lb,
                reverse_ptr,
                tags,
            },
        )?;
        Ok(no_content())
    })
}

async fn delete(AxState(app): AxState<App>, Path(ip): Path<String>) -> ApiResult<Response> {
    let ip = path_ip(&ip)?;
    app.write(|st, now| {
        delete_floating_ip(st, ip, now)?;
        Ok(no_content())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_accepts_ipv6_and_a_stripped_prefix() {
        assert_eq!(
            path_ip("2001:db8::cafe").ok(),
            "2001:db8::cafe".parse().ok()
        );
        assert_eq!(path_ip("192.0.2.1/32").ok(), "192.0.2.1".parse().ok());
        assert_eq!(path_ip("not-an-ip"), Err(ApiError::NotFound));
    }
}
