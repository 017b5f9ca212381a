//! Read-back: compare the TrainJob render wrote with what the apiserver holds (Start
//! step 8; `docs/render.md#read-back`). A TrainJob changed since it was written is
//! *rejected*, naming the difference (`docs/errors.md#the-adapters-own-refusals`).
//!
//! Keys others added are fine; the `time` the Trainer's webhook stamps on a runtime
//! patch and other managers' patch entries are ignored. Every difference is named by
//! its field path.

use dispatch_core::Error;
use serde_json::{Map, Value};

use crate::Mode;
use crate::keys;

/// Every difference between `written` (render's TrainJob) and `held` (the apiserver's),
/// named by field path, in a fixed order: labels, annotations, runtimeRef, trainer,
/// activeDeadlineSeconds, dispatch's runtime patch, managedBy, suspend.
pub fn differences(written: &Value, held: &Value, mode: Mode) -> Vec<String> {
    let mut found = Vec::new();
    for map in ["labels", "annotations"] {
        let held_map = held.pointer(&format!("/metadata/{map}"));
        for (key, want) in object(written.pointer(&format!("/metadata/{map}"))) {
            let got = held_map.and_then(|m| m.get(key));
            same(&mut found, &format!("metadata.{map}[{key:?}]"), want, got);
        }
    }
    let field = |v: &'_ Value, key: &str| v.get("spec").and_then(|s| s.get(key)).cloned();
    same_opt(
        &mut found,
        "spec.runtimeRef",
        field(written, "runtimeRef"),
        field(held, "runtimeRef"),
    );
    let (w_trainer, h_trainer) = (field(written, "trainer"), field(held, "trainer"));
    match (&w_trainer, &h_trainer) {
        (Some(Value::Object(w)), Some(Value::Object(h))) => {
            let mut keys: Vec<&String> = w.keys().chain(h.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                same_opt(
                    &mut found,
                    &format!("spec.trainer.{key}"),
                    w.get(key).cloned(),
                    h.get(key).cloned(),
                );
            }
        }
        _ => same_opt(&mut found, "spec.trainer", w_trainer, h_trainer),
    }
    let deadline = "activeDeadlineSeconds";
    same_opt(
        &mut found,
        &format!("spec.{deadline}"),
        field(written, deadline),
        field(held, deadline),
    );
    let path = format!("spec.runtimePatches[manager={:?}]", keys::RUNTIME_PATCH_MANAGER);
    same_opt(&mut found, &path, own_patch(written), own_patch(held));
    match held.pointer("/spec/managedBy") {
        None => {}
        Some(Value::String(m)) if m == keys::TRAINER_CONTROLLER => {}
        Some(other) => found
            .push(format!("spec.managedBy is {other}: want none or {}", keys::TRAINER_CONTROLLER)),
    }
    if mode == Mode::Plain && held.pointer("/spec/suspend") != Some(&Value::Bool(true)) {
        found.push(format!("spec.suspend is {}: want true", shown(held.pointer("/spec/suspend"))));
    }
    found
}

/// [`differences`] as a result: `Rejected` naming every difference.
pub fn compare(written: &Value, held: &Value, mode: Mode) -> Result<(), Error> {
    let found = differences(written, held, mode);
    if found.is_empty() {
        return Ok(());
    }
    let name = written.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?");
    Err(Error::rejected(format!(
        "trainjob {name} changed since it was written: {}",
        found.join("; ")
    )))
}

/// dispatch's own runtime patch entry, without the `time` the webhook stamps.
fn own_patch(trainjob: &Value) -> Option<Value> {
    let patches = trainjob.pointer("/spec/runtimePatches")?.as_array()?;
    let mut own = patches
        .iter()
        .find(|p| p.get("manager").and_then(Value::as_str) == Some(keys::RUNTIME_PATCH_MANAGER))?
        .clone();
    if let Value::Object(map) = &mut own {
        map.remove("time");
    }
    Some(own)
}

fn object(value: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    value.and_then(Value::as_object).into_iter().flat_map(Map::iter)
}

fn same(found: &mut Vec<String>, path: &str, want: &Value, got: Option<&Value>) {
    same_opt(found, path, Some(want.clone()), got.cloned());
}

fn same_opt(found: &mut Vec<String>, path: &str, want: Option<Value>, got: Option<Value>) {
    if want != got {
        let want = want.map_or_else(|| "absent".to_owned(), |w| w.to_string());
        found.push(format!("{path} is {}: want {want}", shown(got.as_ref())));
    }
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "missing".to_owned(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written() -> Value {
        json!({"metadata": {"name": "dj-x-s1", "labels": {"a": "1"}, "annotations": {"b": "2"}},
               "spec": {"runtimeRef": {"name": "dj-x-s1"}, "trainer": {"numNodes": 2, "image": "i"},
                        "suspend": true,
                        "runtimePatches": [{"manager": keys::RUNTIME_PATCH_MANAGER, "x": 1}]}})
    }

    #[test]
    fn additions_by_others_and_patch_time_are_fine() {
        let mut held = written();
        held["metadata"]["labels"]["kueue"] = json!("y");
        held["spec"]["runtimePatches"][0]["time"] = json!("2026-11-29T10:00:00Z");
        held["spec"]["runtimePatches"]
            .as_array_mut()
            .unwrap()
            .push(json!({"manager": "kueue.x-k8s.io/manager"}));
        held["spec"]["managedBy"] = json!(keys::TRAINER_CONTROLLER);
        assert_eq!(differences(&written(), &held, Mode::Plain), Vec::<String>::new());
    }

    #[test]
    fn every_difference_is_named_by_its_field_path() {
        let mut held = written();
        held["metadata"]["labels"]["a"] = json!("9");
        held["metadata"]["annotations"].as_object_mut().unwrap().remove("b");
        held["spec"]["trainer"]["numNodes"] = json!(3);
        held["spec"]["activeDeadlineSeconds"] = json!(60);
        held["spec"]["runtimePatches"][0]["x"] = json!(2);
        held["spec"]["managedBy"] = json!("kueue.x-k8s.io/multikueue");
        held["spec"]["suspend"] = json!(false);
        let err = compare(&written(), &held, Mode::Plain).unwrap_err();
        assert!(err.is(dispatch_core::Kind::Rejected));
        assert_eq!(
            err.message(),
            "trainjob dj-x-s1 changed since it was written: \
            metadata.labels[\"a\"] is \"9\": want \"1\"; \
            metadata.annotations[\"b\"] is missing: want \"2\"; \
            spec.trainer.numNodes is 3: want 2; \
            spec.activeDeadlineSeconds is 60: want absent; \
            spec.runtimePatches[manager=\"dispatch.phpboyscout.uk/adapter\"] is {\"manager\":\"dispatch.phpboyscout.uk/adapter\",\"x\":2}: want {\"manager\":\"dispatch.phpboyscout.uk/adapter\",\"x\":1}; \
            spec.managedBy is \"kueue.x-k8s.io/multikueue\": want none or trainer.kubeflow.org/trainjob-controller; \
            spec.suspend is false: want true"
        );
    }

    #[test]
    fn kueue_mode_does_not_ask_for_suspend() {
        let mut held = written();
        held["spec"]["suspend"] = json!(false);
        assert!(differences(&written(), &held, Mode::Kueue).is_empty());
    }
}
