//! One write of a plan: a short dispatch over the action kinds, each write settling first
//! (when asked to wait between writes), making one API call with a body from
//! [`super::bodies`], and recording what it did to the account-wide lists.

use super::Run;
use super::bodies;
use crate::cloudscale::Idempotency::NaturalKey;
use crate::service::cloud::cloud_error::{ApplyError, api_err, invalid};
use crate::service::cloud::fetch::Edit;
use crate::service::pure::model::{Listener, Member, Monitor};
use crate::service::pure::plan::{Action, PoolRef};
use uuid::Uuid;

impl Run<'_> {
    /// One write (barriers are checked by [`Run::barrier`]).
    pub(super) async fn step(&mut self, action: &Action, what: &str) -> Result<(), ApplyError> {
        match action {
            Action::CreateLb { name, flavor, zone } => {
                self.create_lb((name, flavor, zone.as_deref()), what).await
            }
            Action::WaitLbReady | Action::WaitMembersUp { .. } => Ok(()),
            Action::RenameLb { uuid, to, .. } => {
                self.settle(what).await?;
                self.update_lb(*uuid, &bodies::rename_lb(to), what).await
            }
            Action::TagLb { uuid, tags } => {
                self.update_lb(*uuid, &bodies::tag_lb(tags), what).await
            }
            Action::CreatePool {
                new,
                name,
                algorithm,
                protocol,
                besides,
            } => {
                let pool = (name.as_str(), algorithm, protocol);
                self.create_pool(*new, pool, besides, what).await
            }
            Action::RenamePool { uuid, to, .. } => self.rename_pool(*uuid, to, what).await,
            Action::DeletePool { uuid, .. } => self.delete_pool(*uuid, what).await,
            Action::CreateMember { pool, member } => self.create_member(pool, member, what).await,
            Action::EnableMember { pool, uuid, .. } => {
                self.update_member((*pool, *uuid), None, what).await
            }
            Action::RenameMember { pool, uuid, to, .. } => {
                self.update_member((*pool, *uuid), Some(to), what).await
            }
            Action::DeleteMember { pool, uuid, .. } => {
                self.delete_member((*pool, *uuid), what).await
            }
            Action::CreateListener { pool, listener } => {
                self.create_listener(pool, listener, what).await
            }
            Action::UpdateListener { changes, .. } if changes.is_empty() => Ok(()),
            Action::UpdateListener { uuid, changes, .. } => {
                let body = bodies::update_listener(what, changes)?;
                self.update_listener(*uuid, &body, what).await
            }
            Action::DeleteListener { uuid, .. } => self.delete_listener(*uuid, what).await,
            Action::CreateMonitor { pool, monitor } => {
                self.create_monitor(pool, monitor, what).await
            }
            Action::UpdateMonitor { changes, .. } if changes.is_empty() => Ok(()),
            Action::UpdateMonitor {
                uuid,
                from,
                changes,
            } => {
                let body = bodies::update_monitor(what, from, changes)?;
                self.update_monitor(*uuid, &body, what).await
            }
            Action::DeleteMonitor { uuid, .. } => self.delete_monitor(*uuid, what).await,
            Action::AssignFloatingIp { network, .. } => {
                self.assign_floating_ip(network.addr(), what).await
            }
        }
    }

    async fn rename_pool(&mut self, uuid: Uuid, to: &str, what: &str) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let body = bodies::rename_pool(to);
        let c = &self.client;
        c.update_pool(uuid, &body).await.map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn delete_pool(&mut self, uuid: Uuid, what: &str) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.delete_pool(uuid).await.map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn delete_member(
        &mut self,
        (pool, uuid): (Uuid, Uuid),
        what: &str,
    ) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.delete_pool_member(pool, uuid)
            .await
            .map_err(api_err(what))?;
        self.wrote_members();
        Ok(())
    }

    async fn update_listener(
        &mut self,
        uuid: Uuid,
        body: &crate::cloudscale::UpdateListener,
        what: &str,
    ) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.update_listener(uuid, body).await.map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn delete_listener(&mut self, uuid: Uuid, what: &str) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.delete_listener(uuid).await.map_err(api_err(what))?;
        self.wrote(Some(Edit::ListenerDeleted(uuid)));
        Ok(())
    }

    async fn update_monitor(
        &mut self,
        uuid: Uuid,
        body: &crate::cloudscale::UpdateHealthMonitor,
        what: &str,
    ) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.update_health_monitor(uuid, body)
            .await
            .map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn delete_monitor(&mut self, uuid: Uuid, what: &str) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let c = &self.client;
        c.delete_health_monitor(uuid).await.map_err(api_err(what))?;
        self.wrote(Some(Edit::MonitorDeleted(uuid)));
        Ok(())
    }

    /// Points the floating IP at the load balancer.
    async fn assign_floating_ip(
        &mut self,
        address: std::net::IpAddr,
        what: &str,
    ) -> Result<(), ApplyError> {
        let lb = self.lb(what)?;
        let c = &self.client;
        c.assign_floating_ip_to_load_balancer(&address.to_string(), lb)
            .await
            .map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn create_lb(
        &mut self,
        lb: (&str, &str, Option<&str>),
        what: &str,
    ) -> Result<(), ApplyError> {
        let body = bodies::create_lb(self.desired, lb, self.tags);
        let c = &self.client;
        let lb = c
            .create_load_balancer(&body, NaturalKey)
            .await
            .map_err(api_err(what))?;
        self.lb = Some(lb.uuid);
        self.wrote(Some(Edit::LoadBalancer(lb)));
        Ok(())
    }

    async fn update_lb(
        &mut self,
        uuid: Uuid,
        body: &crate::cloudscale::UpdateLoadBalancer,
        what: &str,
    ) -> Result<(), ApplyError> {
        let c = &self.client;
        c.update_load_balancer(uuid, body)
            .await
            .map_err(api_err(what))?;
        self.wrote(None);
        Ok(())
    }

    async fn create_pool(
        &mut self,
        new: usize,
        pool: (
            &str,
            &crate::service::pure::model::PoolAlgorithm,
            &crate::service::pure::model::PoolProtocol,
        ),
        besides: &[Uuid],
        what: &str,
    ) -> Result<(), ApplyError> {
        let lb = self.lb(what)?;
        if new >= self.new_pools.len() {
            return Err(invalid(what, format!("no desired pool #{new}")));
        }
        self.settle(what).await?;
        let body = bodies::create_pool(lb, pool, self.tags);
        let c = &self.client;
        let pool = c
            .create_pool(&body, NaturalKey, besides)
            .await
            .map_err(api_err(what))?;
        self.new_pools[new] = Some(pool.uuid);
        self.wrote(Some(Edit::Pool(pool)));
        Ok(())
    }

    async fn create_member(
        &mut self,
        pool: &PoolRef,
        member: &Member,
        what: &str,
    ) -> Result<(), ApplyError> {
        let pool = self.pool(what, pool)?;
        self.settle(what).await?;
        let body = bodies::create_member(member, self.tags);
        let c = &self.client;
        c.create_pool_member(pool, &body, NaturalKey)
            .await
            .map_err(api_err(what))?;
        self.wrote_members();
        Ok(())
    }

    /// Renames the member to `to`, or (`None`) enables it again.
    async fn update_member(
        &mut self,
        (pool, uuid): (Uuid, Uuid),
        to: Option<&str>,
        what: &str,
    ) -> Result<(), ApplyError> {
        self.settle(what).await?;
        let body = bodies::update_member(to);
        let c = &self.client;
        c.update_pool_member(pool, uuid, &body)
            .await
            .map_err(api_err(what))?;
        self.wrote_members();
        Ok(())
    }

    async fn create_listener(
        &mut self,
        pool: &PoolRef,
        listener: &Listener,
        what: &str,
    ) -> Result<(), ApplyError> {
        let pool = self.pool(what, pool)?;
        let body = bodies::create_listener(what, pool, listener, self.tags)?;
        self.settle(what).await?;
        let c = &self.client;
        let listener = c
            .create_listener(&body, NaturalKey)
            .await
            .map_err(api_err(what))?;
        self.wrote(Some(Edit::Listener(listener)));
        Ok(())
    }

    async fn create_monitor(
        &mut self,
        pool: &PoolRef,
        monitor: &Monitor,
        what: &str,
    ) -> Result<(), ApplyError> {
        let pool = self.pool(what, pool)?;
        let body = bodies::create_monitor(what, pool, monitor, self.tags)?;
        self.settle(what).await?;
        let c = &self.client;
        let monitor = c
            .create_health_monitor(&body, NaturalKey)
            .await
            .map_err(api_err(what))?;
        self.wrote(Some(Edit::Monitor(monitor)));
        Ok(())
    }
}
