//! [`Identity`]: who a configuration sends its requests as, and to which apiserver, so
//! that what one identity learned (a kept preflight) is never taken for another's. It
//! holds no secret: the credentials are a digest.

use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use ring::digest::{SHA256, digest};

/// Who sends the requests of a configuration, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The apiserver's URL.
    pub server: String,
    /// The kubeconfig context; empty for the in-cluster configuration.
    pub context: String,
    /// The kubeconfig user the context names; empty in-cluster or when it names none.
    pub user: String,
    /// The SHA-256, in hex, of the credentials the configuration sends: the user's
    /// entry as the kubeconfig gives it (token, client certificate and key, exec or
    /// auth-provider command, impersonation), and the contents of the client
    /// certificate and token files it names.
    pub credentials: String,
}

/// The context and user names `options` select in `file`: the context asked for, else
/// the file's current one, and the user that context names.
pub(crate) fn names(file: &Kubeconfig, options: &KubeConfigOptions) -> (String, String) {
    let context = options.context.clone().or_else(|| file.current_context.clone());
    let context = context.unwrap_or_default();
    let user = file
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref()?.user.clone())
        .unwrap_or_default();
    (context, user)
}

/// The digest of the credentials `auth` sends (see [`Identity::credentials`]). A file
/// it names that cannot be read counts by its path alone: the request would fail anyway.
pub(crate) fn credentials(auth: &AuthInfo) -> String {
    // serde_json's maps are sorted, so the same entry always gives the same text.
    let mut bytes = serde_json::to_value(auth).map(|v| v.to_string()).unwrap_or_default();
    for file in [&auth.client_certificate, &auth.token_file].into_iter().flatten() {
        bytes.push('\n');
        if let Ok(content) = std::fs::read(file) {
            bytes.push_str(&String::from_utf8_lossy(&content));
        }
    }
    hex(digest(&SHA256, bytes.as_bytes()).as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig() -> Kubeconfig {
        Kubeconfig::from_yaml(
            r#"
apiVersion: v1
kind: Config
current-context: alice
clusters: [{name: c, cluster: {server: "https://a:6443"}}]
contexts:
- {name: alice, context: {cluster: c, user: alice}}
- {name: bob, context: {cluster: c, user: bob}}
users:
- {name: alice, user: {token: alice-secret}}
- {name: bob, user: {token: bob-secret}}
"#,
        )
        .unwrap()
    }

    #[test]
    fn names_follow_the_context_asked_for_else_the_current_one() {
        let file = kubeconfig();
        let current = KubeConfigOptions::default();
        assert_eq!(names(&file, &current), ("alice".into(), "alice".into()));
        let bob = KubeConfigOptions { context: Some("bob".into()), ..Default::default() };
        assert_eq!(names(&file, &bob), ("bob".into(), "bob".into()));
    }

    #[test]
    fn credentials_are_a_digest_that_differs_by_user_and_holds_no_secret() {
        let file = kubeconfig();
        let auth = |i: usize| file.auth_infos[i].auth_info.clone().unwrap();
        let (alice, bob) = (credentials(&auth(0)), credentials(&auth(1)));
        assert_ne!(alice, bob);
        assert_eq!(alice, credentials(&auth(0)), "the same entry, the same digest");
        assert_eq!(alice.len(), 64);
        assert!(!alice.contains("secret") && alice.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
