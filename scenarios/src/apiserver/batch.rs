//! `batch/v1` Jobs and CronJobs as the real API server treats them: defaulting
//! (`SetDefaults_Job`, `SetDefaults_CronJob`, the pod template's `SetDefaults_PodSpec`), the
//! Job's generated selector (`pkg/registry/batch/job/strategy.go`: without `manualSelector:
//! true` the server labels the template with the Job's uid and name and selects that uid) and
//! validation (`pkg/apis/batch/validation`): a restart policy of `OnFailure` or `Never`, a
//! parseable schedule, the fields that may not change. See
//! https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/job-v1/ and
//! https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/.

use super::apps::{
    cause, default_pod_spec, go_string_map, selector_matches, selector_string, set_default,
    validate_pod_template,
};
use super::server::meta_str;
use super::status::{ApiError, ApiResult, Cause};
use serde_json::{Value, json};

/// The labels of a Job's pods (`batch.kubernetes.io/…` from 1.27 on, beside the legacy ones).
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";

/// The restart policies a Job's pods may have.
const JOB_RESTART: &[&str] = &["OnFailure", "Never"];

/// A CronJob's name is at most 52 characters: its Jobs add an 11-character suffix and must
/// stay valid label values (`ValidateCronJobCreate`).
const CRONJOB_NAME_MAX: usize = 52;

fn ensure_object(v: &mut Value, key: &str) {
    if !v.get(key).is_some_and(Value::is_object) {
        v[key] = json!({});
    }
}

fn invalid(kind: &str, obj: &Value, causes: Vec<Cause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::Invalid {
        kind: super::registry::qualify(kind, "batch"),
        name: meta_str(obj, "name").unwrap_or_default().to_string(),
        causes,
    })
}

/// Defaults, labels and validates a Job (`new`), against `old` on updates.
pub fn prepare_job(new: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    ensure_object(new, "spec");
    default_job_spec(&mut new["spec"]);
    if old.is_none() {
        generate_selector(new);
    }
    // `SetDefaults_Job`: a Job without labels carries its template's (on every read of the
    // stored object, so also the generated ones).
    let template_labels = new.pointer("/spec/template/metadata/labels").cloned();
    if let Some(labels) = template_labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        && new
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty())
    {
        new["metadata"]["labels"] = labels;
    }
    let mut causes = validate_job_spec(&new["spec"], "spec");
    causes.extend(validate_generated_selector(new));
    if let Some(old) = old {
        causes.extend(validate_job_update(&new["spec"], &old["spec"]));
    }
    invalid("Job", new, causes)
}

/// `SetDefaults_Job` (and `SetDefaults_PodSpec` below it).
fn default_job_spec(spec: &mut Value) {
    let unset = |spec: &Value, k: &str| spec.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec["completions"] = json!(1);
    }
    set_default(spec, "parallelism", json!(1));
    let per_index = !unset(spec, "backoffLimitPerIndex");
    // With a per-index limit, the overall one is effectively off (math.MaxInt32).
    set_default(
        spec,
        "backoffLimit",
        json!(if per_index { i64::from(i32::MAX) } else { 6 }),
    );
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    let failure_policy = !unset(spec, "podFailurePolicy");
    set_default(
        spec,
        "podReplacementPolicy",
        json!(if failure_policy {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    default_template(spec);
}

fn default_template(spec: &mut Value) {
    if let Some(pod_spec) = spec.pointer_mut("/template/spec").filter(|s| s.is_object()) {
        default_pod_spec(pod_spec);
    }
}

/// `generateSelector`: unless the client manages the selector, the template is labelled with
/// the Job's uid and name, and the selector selects the uid.
fn generate_selector(job: &mut Value) {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return;
    }
    let uid = meta_str(job, "uid").unwrap_or_default().to_string();
    let name = meta_str(job, "name").unwrap_or_default().to_string();
    let spec = &mut job["spec"];
    ensure_object(spec, "template");
    ensure_object(&mut spec["template"], "metadata");
    ensure_object(&mut spec["template"]["metadata"], "labels");
    let labels = &mut spec["template"]["metadata"]["labels"];
    labels[LEGACY_CONTROLLER_UID] = json!(uid);
    labels[CONTROLLER_UID] = json!(uid);
    labels[LEGACY_JOB_NAME] = json!(name);
    labels[JOB_NAME] = json!(name);
    ensure_object(spec, "selector");
    ensure_object(&mut spec["selector"], "matchLabels");
    let match_labels = &mut spec["selector"]["matchLabels"];
    if match_labels.get(CONTROLLER_UID).is_none() {
        match_labels[CONTROLLER_UID] = json!(uid);
    }
}

fn non_negative(spec: &Value, path: &str, field: &str) -> Option<Cause> {
    let n = spec.get(field).and_then(Value::as_i64)?;
    (n < 0).then(|| {
        cause(
            "FieldValueInvalid",
            format!("{path}.{field}"),
            format!("Invalid value: {n}: must be greater than or equal to 0"),
        )
    })
}

/// `ValidateJobSpec`'s checks that clients meet (`path` is `spec` or `spec.jobTemplate.spec`).
fn validate_job_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut out: Vec<Cause> = ["parallelism", "completions", "backoffLimit"]
        .iter()
        .filter_map(|f| non_negative(spec, path, f))
        .collect();
    if let Some(n) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64)
        && n <= 0
    {
        out.push(cause(
            "FieldValueInvalid",
            format!("{path}.activeDeadlineSeconds"),
            format!("Invalid value: {n}: must be greater than 0"),
        ));
    }
    match spec
        .get("completionMode")
        .and_then(Value::as_str)
        .unwrap_or("NonIndexed")
    {
        "NonIndexed" | "Indexed" => {}
        other => out.push(cause(
            "FieldValueNotSupported",
            format!("{path}.completionMode"),
            format!(
                "Unsupported value: \"{other}\": supported values: \"NonIndexed\", \"Indexed\""
            ),
        )),
    }
    if spec.get("manualSelector") == Some(&json!(true)) {
        out.extend(validate_manual_selector(spec, path));
    }
    out.extend(validate_pod_template(
        &spec["template"],
        &format!("{path}.template"),
        JOB_RESTART,
    ));
    out
}

fn validate_manual_selector(spec: &Value, path: &str) -> Option<Cause> {
    let Some(selector) = spec.get("selector").filter(|s| s.is_object()) else {
        return Some(cause(
            "FieldValueRequired",
            format!("{path}.selector"),
            "Required value",
        ));
    };
    let labels = spec.pointer("/template/metadata/labels");
    (!selector_matches(selector, labels)).then(|| {
        cause(
            "FieldValueInvalid",
            format!("{path}.template.metadata.labels"),
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
        )
    })
}

/// `validateGeneratedSelector`: a generated selector must select the Job's own uid.
fn validate_generated_selector(job: &Value) -> Option<Cause> {
    if job.pointer("/spec/manualSelector") == Some(&json!(true)) {
        return None;
    }
    let uid = meta_str(job, "uid").unwrap_or_default();
    let Some(selector) = job.pointer("/spec/selector").filter(|s| s.is_object()) else {
        return Some(cause(
            "FieldValueRequired",
            "spec.selector",
            "Required value",
        ));
    };
    let expected = json!({ CONTROLLER_UID: uid });
    if !selector_matches(selector, Some(&expected)) {
        return Some(cause(
            "FieldValueInvalid",
            "spec.selector",
            format!(
                "Invalid value: \"{}\": `selector` not auto-generated",
                selector_string(selector).unwrap_or_default()
            ),
        ));
    }
    let labels = job.pointer("/spec/template/metadata/labels");
    (!selector_matches(selector, labels)).then(|| {
        cause(
            "FieldValueInvalid",
            "spec.template.metadata.labels",
            format!(
                "Invalid value: {}: `selector` does not match template `labels`",
                go_string_map(labels)
            ),
        )
    })
}

/// `ValidateJobSpecUpdate`: what a running Job may not change.
fn validate_job_update(new: &Value, old: &Value) -> Vec<Cause> {
    [
        "selector",
        "template",
        "completions",
        "completionMode",
        "podFailurePolicy",
    ]
    .iter()
    .filter(|f| new.get(**f) != old.get(**f))
    .map(|f| {
        let value = new.get(*f).cloned().unwrap_or(Value::Null);
        cause(
            "FieldValueInvalid",
            format!("spec.{f}"),
            format!("Invalid value: {value}: field is immutable"),
        )
    })
    .collect()
}

/// Defaults and validates a CronJob (`new`).
pub fn prepare_cron_job(new: &mut Value) -> ApiResult<()> {
    ensure_object(new, "spec");
    let spec = &mut new["spec"];
    // `SetDefaults_CronJob`.
    set_default(spec, "concurrencyPolicy", json!("Allow"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "successfulJobsHistoryLimit", json!(3));
    set_default(spec, "failedJobsHistoryLimit", json!(1));
    ensure_object(spec, "jobTemplate");
    ensure_object(&mut spec["jobTemplate"], "spec");
    default_template(&mut spec["jobTemplate"]["spec"]);
    let causes = validate_cron_job(new);
    invalid("CronJob", new, causes)
}

fn validate_cron_job(cj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = meta_str(cj, "name").unwrap_or_default();
    if name.len() > CRONJOB_NAME_MAX {
        out.push(cause(
            "FieldValueInvalid",
            "metadata.name",
            format!(
                "Invalid value: \"{name}\": must be no more than {CRONJOB_NAME_MAX} characters"
            ),
        ));
    }
    let spec = &cj["spec"];
    let schedule = spec
        .get("schedule")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schedule.is_empty() {
        out.push(cause(
            "FieldValueRequired",
            "spec.schedule",
            "Required value",
        ));
    } else {
        if let Err(e) = super::cron::parse_standard(schedule) {
            out.push(cause(
                "FieldValueInvalid",
                "spec.schedule",
                format!("Invalid value: \"{schedule}\": {e}"),
            ));
        }
        if schedule.contains("TZ") {
            out.push(cause(
                "FieldValueInvalid",
                "spec.schedule",
                format!("Invalid value: \"{schedule}\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
            ));
        }
    }
    match spec
        .get("concurrencyPolicy")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "Allow" | "Forbid" | "Replace" => {}
        other => out.push(cause(
            "FieldValueNotSupported",
            "spec.concurrencyPolicy",
            format!(
                "Unsupported value: \"{other}\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ),
        )),
    }
    out.extend(
        [
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ]
        .iter()
        .filter_map(|f| non_negative(spec, "spec", f)),
    );
    out.extend(validate_job_spec(
        &spec["jobTemplate"]["spec"],
        "spec.jobTemplate.spec",
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Job as `kubectl create job pi --image=perl` sends it, with the uid the server gave.
    fn job(restart: Option<&str>) -> Value {
        let mut j = json!({
            "metadata": {"name": "pi", "uid": "u-1"},
            "spec": {"template": {"metadata": {},
                "spec": {"containers": [{"name": "pi", "image": "perl"}]}}}
        });
        if let Some(r) = restart {
            j["spec"]["template"]["spec"]["restartPolicy"] = json!(r);
        }
        j
    }

    #[test]
    fn a_job_gets_the_real_defaults_and_a_generated_selector() {
        let mut j = job(Some("Never"));
        prepare_job(&mut j, None).expect("valid");
        let spec = &j["spec"];
        assert_eq!(spec["completions"], 1);
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert!(spec.get("manualSelector").is_none());
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}})
        );
        let labels = json!({"batch.kubernetes.io/controller-uid": "u-1",
            "batch.kubernetes.io/job-name": "pi", "controller-uid": "u-1", "job-name": "pi"});
        assert_eq!(spec["template"]["metadata"]["labels"], labels);
        assert_eq!(j["metadata"]["labels"], labels);
        assert_eq!(
            spec["template"]["spec"]["terminationGracePeriodSeconds"],
            30
        );
    }

    #[test]
    fn parallelism_alone_leaves_completions_unset() {
        let mut j = job(Some("OnFailure"));
        j["spec"]["parallelism"] = json!(3);
        prepare_job(&mut j, None).expect("valid");
        assert!(j["spec"].get("completions").is_none());
        assert_eq!(j["spec"]["parallelism"], 3);
    }

    #[test]
    fn a_job_must_not_restart_always() {
        for restart in [None, Some("Always")] {
            let mut j = job(restart);
            let err = prepare_job(&mut j, None).expect_err("invalid");
            assert_eq!(
                err.to_string(),
                "Job.batch \"pi\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            );
        }
    }

    #[test]
    fn a_manual_selector_must_match_and_a_foreign_one_is_refused() {
        let mut j = job(Some("Never"));
        j["spec"]["manualSelector"] = json!(true);
        j["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        let err = prepare_job(&mut j, None).expect_err("labels do not match");
        assert!(err.to_string().contains(
            "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template `labels`"
        ));
        let mut j = job(Some("Never"));
        j["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        let err = prepare_job(&mut j, None).expect_err("not generated");
        assert!(err.to_string().contains("`selector` not auto-generated"));
    }

    #[test]
    fn a_jobs_template_is_immutable_but_parallelism_is_not() {
        let mut old = job(Some("Never"));
        prepare_job(&mut old, None).expect("valid");
        let mut new = old.clone();
        new["spec"]["parallelism"] = json!(2);
        prepare_job(&mut new, Some(&old)).expect("parallelism may change");
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5");
        let err = prepare_job(&mut new, Some(&old)).expect_err("immutable");
        assert!(err.to_string().contains("spec.template: Invalid value: "));
        assert!(err.to_string().ends_with("field is immutable"));
    }

    fn cron_job(schedule: &str) -> Value {
        json!({"metadata": {"name": "tick"}, "spec": {"schedule": schedule,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "tick", "image": "busybox"}]}}}}}})
    }

    #[test]
    fn a_cron_job_gets_the_real_defaults() {
        let mut cj = cron_job("*/5 * * * *");
        prepare_cron_job(&mut cj).expect("valid");
        let spec = &cj["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        // The template's Job spec is not a Job: no completions or backoffLimit defaults.
        assert!(spec["jobTemplate"]["spec"].get("backoffLimit").is_none());
        assert_eq!(
            spec["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
            "ClusterFirst"
        );
    }

    #[test]
    fn a_cron_job_needs_a_parseable_schedule_and_a_job_restart_policy() {
        let mut cj = cron_job("");
        let err = prepare_cron_job(&mut cj).expect_err("no schedule");
        assert_eq!(
            err.to_string(),
            "CronJob.batch \"tick\" is invalid: spec.schedule: Required value"
        );
        let mut cj = cron_job("every minute");
        let err = prepare_cron_job(&mut cj).expect_err("bad schedule");
        assert!(err.to_string().contains(
            "spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"
        ));
        let mut cj = cron_job("@hourly");
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        let err = prepare_cron_job(&mut cj).expect_err("restart policy");
        assert!(err.to_string().contains(
            "spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: \"Always\""
        ));
        let mut cj = cron_job("@hourly");
        cj["metadata"]["name"] = json!("x".repeat(53));
        let err = prepare_cron_job(&mut cj).expect_err("long name");
        assert!(
            err.to_string()
                .contains("must be no more than 52 characters")
        );
    }
}
