//! Failures as the apiserver sends them: a `Status` object with the code, reason and
//! message a real apiserver uses (k8s.io/apimachinery `pkg/api/errors`).

use serde_json::{Value, json};

use crate::plain::resources::Resource;

/// A failed request, rendered as a `metav1.Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `StatusReason` (`NotFound`, `Conflict`, ...).
    pub reason: String,
    /// Human-readable message, as the real apiserver words it.
    pub message: String,
    /// `details`, when the real apiserver fills it.
    pub details: Option<Value>,
}

/// One cause of a 422 Invalid: `(reason, field, message)`.
pub(crate) type Cause = (&'static str, String, String);

impl ApiError {
    /// Any status with a reason and message, without details.
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self { code, reason: reason.to_string(), message: message.into(), details: None }
    }

    fn with_details(mut self, res: &Resource, name: &str) -> Self {
        let mut d = json!({"group": res.group, "kind": res.plural});
        if !name.is_empty() {
            d["name"] = json!(name);
        }
        self.details = Some(d);
        self
    }

    /// 404: `<plural>.<group> "<name>" not found`.
    pub(crate) fn not_found(res: &Resource, name: &str) -> Self {
        Self::new(404, "NotFound", format!("{} \"{name}\" not found", res.qualified()))
            .with_details(res, name)
    }

    /// 409 AlreadyExists.
    pub(crate) fn already_exists(res: &Resource, name: &str) -> Self {
        Self::new(409, "AlreadyExists", format!("{} \"{name}\" already exists", res.qualified()))
            .with_details(res, name)
    }

    /// 409 Conflict with the optimistic-concurrency message.
    pub(crate) fn conflict(res: &Resource, name: &str) -> Self {
        Self::conflict_because(
            res,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with a given explanation (preconditions).
    pub(crate) fn conflict_because(res: &Resource, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {} \"{name}\": {why}", res.qualified()),
        )
        .with_details(res, name)
    }

    /// 410 Expired: `too old resource version: <asked> (<oldest kept>)`.
    pub(crate) fn expired(asked: u64, oldest: u64) -> Self {
        Self::new(410, "Expired", format!("too old resource version: {asked} ({oldest})"))
    }

    /// 422 Invalid with `details.causes`.
    pub(crate) fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> Self {
        let parts: Vec<String> = causes.iter().map(|(_, _, m)| m.clone()).collect();
        let joined =
            if parts.len() == 1 { parts[0].clone() } else { format!("[{}]", parts.join(", ")) };
        let message = format!("{} \"{name}\" is invalid: {joined}", res.qualified_kind());
        let causes: Vec<Value> = causes
            .into_iter()
            .map(|(reason, field, message)| {
                let short = message.strip_prefix(&format!("{field}: ")).unwrap_or(&message);
                json!({"reason": reason, "message": short, "field": field})
            })
            .collect();
        let mut e = Self::new(422, "Invalid", message);
        e.details =
            Some(json!({"name": name, "group": res.group, "kind": res.kind, "causes": causes}));
        e
    }

    /// 422 for a request option the apiserver does not know a value of: `verb` is
    /// `create`, `update` or `patch`, whose options kind names the message.
    pub(crate) fn unsupported_option(
        verb: &str,
        option: &str,
        value: &str,
        values: &[&str],
    ) -> Self {
        let kind = match verb {
            "create" => "CreateOptions",
            "update" => "UpdateOptions",
            _ => "PatchOptions",
        };
        let supported: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
        let short =
            format!("Unsupported value: \"{value}\": supported values: {}", supported.join(", "));
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{kind}.meta.k8s.io \"\" is invalid: {option}: {short}"),
        );
        e.details = Some(json!({"group": "meta.k8s.io", "kind": kind,
            "causes": [{"reason": "FieldValueNotSupported", "message": short, "field": option}]}));
        e
    }

    /// 403 from a validating admission webhook that denied the request.
    pub(crate) fn webhook_denied(webhook: &str, message: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!("admission webhook \"{webhook}\" denied the request: {message}"),
        )
    }

    /// 403 from RBAC, with the authorizer's message.
    pub(crate) fn forbidden(
        res: &Resource,
        sub: &str,
        name: &str,
        user: &str,
        verb: &str,
        ns: &str,
    ) -> Self {
        let what = if name.is_empty() {
            res.qualified()
        } else {
            format!("{} \"{name}\"", res.qualified())
        };
        let resource =
            if sub.is_empty() { res.plural.to_string() } else { format!("{}/{sub}", res.plural) };
        let scope = if ns.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{ns}\"")
        };
        Self::new(
            403,
            "Forbidden",
            format!(
                "{what} is forbidden: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{}\" {scope}",
                res.group
            ),
        )
        .with_details(res, name)
    }

    /// 401 Unauthorized.
    pub(crate) fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 400 BadRequest.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 405 MethodNotAllowed.
    pub(crate) fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}
