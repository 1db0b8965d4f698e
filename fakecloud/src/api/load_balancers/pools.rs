//! `/v1/load-balancers/pools`.

use crate::api::common::{
    choice, created, existing_ref, list_answer, no_content, parse_body, path_uuid, show_answer,
};
use crate::app::{App, Base};
use crate::error::{ApiError, ApiResult};
use crate::model::load_balancers as lbm;
use crate::model::load_balancers::pools::{NewPool, PoolPatch};
use crate::model::load_balancers::{ALGORITHMS, POOL_PROTOCOLS};
use axum::body::Bytes;
use axum::extract::State as AxState;
use axum::extract::{Path, RawQuery};
use axum::response::Response;
use serde_json::json;

pub(super) async fn list_pools(
    AxState(app): AxState<App>,
    Base(base): Base,
    RawQuery(q): RawQuery,
) -> Response {
    app.read(&base, |ctx| {
        list_answer(ctx.st.pools().values(), q.as_deref(), |r| r.view(ctx))
    })
}

pub(super) async fn show_pool(
    AxState(app): AxState<App>,
    Base(base): Base,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    app.read(&base, |ctx| {
        show_answer(ctx.st.pools().get(&id).map(|r| r.view(ctx)))
    })
}

pub(super) async fn create_pool(
    AxState(app): AxState<App>,
    Base(base): Base,
    bytes: Bytes,
) -> ApiResult<Response> {
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    let id = app.write(|st, now| {
        let name = body.string("name", true);
        let lb = existing_ref(&mut body, "load_balancer", true, |l| {
            st.load_balancers().contains_key(&l)
        });
        let algorithm = choice(&mut body, "algorithm", true, ALGORITHMS);
        let protocol = choice(&mut body, "protocol", true, POOL_PROTOCOLS);
        let tags = body.tags().unwrap_or_default();
        let (Some(name), Some(lb), Some(algorithm), Some(protocol)) =
            (name, lb, algorithm, protocol)
        else {
            return Err(body
                .finish()
                .err()
                .unwrap_or_else(|| ApiError::detail("invalid request")));
        };
        body.finish()?;
        lbm::pools::create_pool(
            st,
            now,
            &timing,
            NewPool {
                name,
                load_balancer: lb,
                algorithm,
                protocol,
                tags,
            },
        )
    })?;
    app.read(&base, |ctx| {
        ctx.st.pools().get(&id).map(|p| created(p.render(ctx)))
    })
    .ok_or(ApiError::NotFound)
}

pub(super) async fn update_pool(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
    bytes: Bytes,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let mut body = parse_body(&bytes)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| {
        let pool = st.pools().get(&id).ok_or(ApiError::NotFound)?;
        body.immutable("algorithm", &json!(pool.algorithm));
        body.immutable("protocol", &json!(pool.protocol));
        body.immutable(
            "load_balancer",
            &json!({"uuid": pool.load_balancer.to_string()}),
        );
        let name = body.string("name", false);
        let tags = body.tags();
        body.finish()?;
        lbm::pools::update_pool(st, id, now, &timing, PoolPatch { name, tags })?;
        Ok(no_content())
    })
}

pub(super) async fn delete_pool_handler(
    AxState(app): AxState<App>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = path_uuid(&id)?;
    let timing = app.config().timing.clone();
    app.write(|st, now| lbm::pools::delete_pool(st, id, now, &timing))?;
    Ok(no_content())
}
