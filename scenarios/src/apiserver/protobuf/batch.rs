//! `batch/v1` Job and CronJob protobuf bodies: what kubectl 1.32 and 1.33 send for `kubectl
//! create job NAME --image=… [-- COMMAND]`, `kubectl create job NAME --from=cronjob/CJ` (the
//! CronJob's job template as stored, so with the server's pod defaults) and `kubectl create
//! cronjob NAME --image=… --schedule=… [--restart=…]`. The pod template is decoded as for
//! Deployments (`protobuf/apps.rs`); a pod failure or success policy is refused with its
//! field's name rather than dropped.

use super::apps::{label_selector, not_decoded, pod_template};
use super::{Obj, ProtobufError, object_meta};
use k8s_pb::api::batch::v1 as batch;
use serde_json::{Map, Value};

pub(super) fn job(j: &batch::Job) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&j.metadata)?);
    o.set("spec", job_spec(&j.spec)?);
    // Status is the server's: a client's is dropped on create anyway.
    o.set("status", Obj::new().done());
    Ok(o.0)
}

/// A `JobSpec`: every field but the template is a pointer in Go, so present exactly when set.
fn job_spec(s: &Option<batch::JobSpec>) -> Result<Value, ProtobufError> {
    let mut spec = Obj::new();
    let Some(s) = s else {
        spec.set("template", pod_template(&None)?);
        return Ok(spec.done());
    };
    if s.pod_failure_policy.is_some() {
        return Err(not_decoded("spec.podFailurePolicy"));
    }
    if s.success_policy.is_some() {
        return Err(not_decoded("spec.successPolicy"));
    }
    spec.int_ptr("parallelism", s.parallelism)
        .int_ptr("completions", s.completions)
        .int_ptr("activeDeadlineSeconds", s.active_deadline_seconds)
        .int_ptr("backoffLimit", s.backoff_limit)
        .int_ptr("backoffLimitPerIndex", s.backoff_limit_per_index)
        .int_ptr("maxFailedIndexes", s.max_failed_indexes);
    if let Some(sel) = &s.selector {
        spec.set("selector", label_selector(sel));
    }
    spec.bool_ptr("manualSelector", s.manual_selector)
        .set("template", pod_template(&s.template)?)
        .int_ptr("ttlSecondsAfterFinished", s.ttl_seconds_after_finished)
        .string_ptr("completionMode", &s.completion_mode)
        .bool_ptr("suspend", s.suspend)
        .string_ptr("podReplacementPolicy", &s.pod_replacement_policy)
        .string_ptr("managedBy", &s.managed_by);
    Ok(spec.done())
}

pub(super) fn cron_job(c: &batch::CronJob) -> Result<Map<String, Value>, ProtobufError> {
    let mut o = Obj::new();
    o.set("metadata", object_meta(&c.metadata)?);
    let mut spec = Obj::new();
    let s = c.spec.clone().unwrap_or_default();
    let template = s.job_template.unwrap_or_default();
    let mut job_template = Obj::new();
    job_template
        .set("metadata", object_meta(&template.metadata)?)
        .set("spec", job_spec(&template.spec)?);
    // `schedule` has no omitempty in Go; `concurrencyPolicy` is a value with omitempty.
    spec.set(
        "schedule",
        Value::String(s.schedule.clone().unwrap_or_default()),
    )
    .string_ptr("timeZone", &s.time_zone)
    .int_ptr("startingDeadlineSeconds", s.starting_deadline_seconds)
    .string("concurrencyPolicy", &s.concurrency_policy)
    .bool_ptr("suspend", s.suspend)
    .set("jobTemplate", job_template.done())
    .int_ptr(
        "successfulJobsHistoryLimit",
        s.successful_jobs_history_limit,
    )
    .int_ptr("failedJobsHistoryLimit", s.failed_jobs_history_limit);
    o.set("spec", spec.done());
    o.set("status", Obj::new().done());
    Ok(o.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use prost::Message;
    use serde_json::json;

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    fn template(name: &str, restart: &str) -> core::PodTemplateSpec {
        core::PodTemplateSpec {
            metadata: Some(meta::ObjectMeta::default()),
            spec: Some(core::PodSpec {
                containers: vec![core::Container {
                    name: s(name),
                    image: s("busybox"),
                    command: vec!["date".into()],
                    resources: Some(core::ResourceRequirements::default()),
                    ..Default::default()
                }],
                restart_policy: s(restart),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_kubectl_job_decodes_to_its_json() {
        // `kubectl create job once --image=busybox -- date`
        let j = batch::Job {
            metadata: Some(meta::ObjectMeta {
                name: s("once"),
                ..Default::default()
            }),
            spec: Some(batch::JobSpec {
                template: Some(template("once", "Never")),
                ..Default::default()
            }),
            status: Some(batch::JobStatus::default()),
        };
        let raw = j.encode_to_vec();
        let decoded = batch::Job::decode(raw.as_slice()).expect("decodes");
        assert_eq!(
            Value::Object(job(&decoded).expect("converts")),
            json!({"metadata": {"name": "once"},
                "spec": {"template": {"metadata": {}, "spec": {"containers": [
                    {"name": "once", "image": "busybox", "command": ["date"], "resources": {}}],
                    "restartPolicy": "Never"}}},
                "status": {}})
        );
    }

    #[test]
    fn a_kubectl_cron_job_decodes_to_its_json() {
        // `kubectl create cronjob tick --image=busybox --schedule='*/5 * * * *' -- date`
        let c = batch::CronJob {
            metadata: Some(meta::ObjectMeta {
                name: s("tick"),
                ..Default::default()
            }),
            spec: Some(batch::CronJobSpec {
                schedule: s("*/5 * * * *"),
                concurrency_policy: s(""),
                job_template: Some(batch::JobTemplateSpec {
                    metadata: Some(meta::ObjectMeta {
                        name: s("tick"),
                        ..Default::default()
                    }),
                    spec: Some(batch::JobSpec {
                        template: Some(template("tick", "OnFailure")),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }),
            status: None,
        };
        assert_eq!(
            Value::Object(cron_job(&c).expect("converts")),
            json!({"metadata": {"name": "tick"},
                "spec": {"schedule": "*/5 * * * *", "jobTemplate": {
                    "metadata": {"name": "tick"},
                    "spec": {"template": {"metadata": {}, "spec": {"containers": [
                        {"name": "tick", "image": "busybox", "command": ["date"], "resources": {}}],
                        "restartPolicy": "OnFailure"}}}}},
                "status": {}})
        );
    }

    #[test]
    fn a_pod_failure_policy_is_refused_not_dropped() {
        let j = batch::Job {
            spec: Some(batch::JobSpec {
                pod_failure_policy: Some(batch::PodFailurePolicy::default()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let err = job(&j).expect_err("refused");
        assert!(err.to_string().contains("spec.podFailurePolicy"), "{err}");
    }
}
