//! Identities and RBAC-lite: each identity has a bearer token and a list of allowed
//! (verb, group, resource, subresource, namespace) rules; a request no rule allows is
//! 403 Forbidden, and SelfSubjectAccessReview answers from the same rules.

/// One allow rule. An empty list (or `"*"` inside it) allows anything on that axis.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    /// Verbs: get, list, watch, create, update, patch, delete, deletecollection.
    pub verbs: Vec<String>,
    /// API groups (`""` for core).
    pub groups: Vec<String>,
    /// Resources, `plural` or `plural/subresource` (`pods/log`, `trainjobs/status`).
    pub resources: Vec<String>,
    /// Namespaces; empty means every namespace and cluster-scoped resources.
    pub namespaces: Vec<String>,
}

fn allows(list: &[String], v: &str) -> bool {
    list.is_empty() || list.iter().any(|x| x == "*" || x == v)
}

impl Rule {
    /// Allows everything.
    pub fn all() -> Self {
        Self::default()
    }

    /// Allows these verbs on these `group` + `resource` pairs (resource may carry a
    /// subresource, `pods/log`), in every namespace.
    pub fn new(verbs: &[&str], group: &str, resources: &[&str]) -> Self {
        Self {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            groups: vec![group.to_string()],
            resources: resources.iter().map(|s| s.to_string()).collect(),
            namespaces: Vec::new(),
        }
    }

    /// Restricts the rule to one namespace.
    pub fn in_namespace(mut self, ns: &str) -> Self {
        self.namespaces.push(ns.to_string());
        self
    }

    /// Whether the rule allows an access.
    pub fn allows(&self, a: &Access<'_>) -> bool {
        let resource = if a.sub.is_empty() {
            a.resource.to_string()
        } else {
            format!("{}/{}", a.resource, a.sub)
        };
        let ns_ok =
            self.namespaces.is_empty() || (!a.ns.is_empty() && allows(&self.namespaces, a.ns));
        allows(&self.verbs, a.verb)
            && allows(&self.groups, a.group)
            && (allows(&self.resources, &resource)
                || self.resources.iter().any(|r| r == &format!("{}/*", a.resource)))
            && ns_ok
    }
}

/// One access to decide.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    /// The verb.
    pub verb: &'a str,
    /// API group.
    pub group: &'a str,
    /// Plural resource.
    pub resource: &'a str,
    /// Subresource, or empty.
    pub sub: &'a str,
    /// Namespace, or empty for cluster scope.
    pub ns: &'a str,
}

/// A user the simulated apiserver knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// User name, as RBAC messages show it.
    pub user: String,
    /// Bearer token (not a secret: a fixed string derived from the user name).
    pub token: String,
    /// What this user may do.
    pub rules: Vec<Rule>,
}

impl Identity {
    /// A user with no permission yet.
    pub fn new(user: &str) -> Self {
        Self { user: user.to_string(), token: format!("sim-token-{user}"), rules: Vec::new() }
    }

    /// A user allowed everything.
    pub fn admin(user: &str) -> Self {
        Self::new(user).allow(Rule::all())
    }

    /// Adds an allow rule.
    pub fn allow(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Whether any rule allows the access.
    pub fn may(&self, a: &Access<'_>) -> bool {
        self.rules.iter().any(|r| r.allows(a))
    }
}

/// A kubeconfig for one identity that `kube::Config` and `kubectl` accept; `ca_pem`
/// is the CA that signed an HTTPS server's certificate.
pub(crate) fn kubeconfig_yaml(server: &str, ca_pem: Option<&str>, id: &Identity) -> String {
    use base64::Engine as _;
    let ca = ca_pem.map_or(String::new(), |pem| {
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        format!("    certificate-authority-data: {data}\n")
    });
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {server}\n{ca}contexts:\n- name: {user}@sim\n  context:\n    cluster: sim\n    user: {user}\n    namespace: default\ncurrent-context: {user}@sim\nusers:\n- name: {user}\n  user:\n    token: {token}\npreferences: {{}}\n",
        user = id.user,
        token = id.token,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access<'a>(verb: &'a str, resource: &'a str, sub: &'a str, ns: &'a str) -> Access<'a> {
        Access { verb, group: "", resource, sub, ns }
    }

    #[test]
    fn rules_match_verb_resource_subresource_and_namespace() {
        let r = Rule::new(&["get"], "", &["pods/log"]).in_namespace("a");
        assert!(r.allows(&access("get", "pods", "log", "a")));
        assert!(!r.allows(&access("get", "pods", "", "a")));
        assert!(!r.allows(&access("get", "pods", "log", "b")));
        assert!(!r.allows(&access("list", "pods", "log", "a")));
        assert!(Rule::all().allows(&access("delete", "nodes", "", "")));
    }
}
