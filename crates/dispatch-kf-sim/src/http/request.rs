//! Reading a request: the URL path into (resource, namespace, name, subresource), the
//! query string into parameters, and the HTTP method into a Kubernetes verb.

use std::collections::BTreeMap;

use crate::plain::resources::{self, ResId};

/// A resource request, after routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiReq {
    pub(crate) res: ResId,
    pub(crate) ns: String,
    pub(crate) name: String,
    pub(crate) sub: String,
    pub(crate) verb: &'static str,
}

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `/api`, `/apis`, `/api/v1`, `/apis/<g>/<v>`, `/version`.
    Discovery(String),
    /// `/openapi/v3` and the documents it names.
    OpenApi(String),
    /// A resource path.
    Api(ApiReq),
    /// Not served: `404 page not found`.
    NotFound,
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Percent-decodes a query component (`+` is a space).
pub(crate) fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a query string into decoded parameters (the last value wins).
pub(crate) fn query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn verb(method: &str, named: bool, watch: bool) -> Option<&'static str> {
    Some(match (method, named) {
        ("GET", _) if watch => "watch",
        ("GET", true) => "get",
        ("GET", false) => "list",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => return None,
    })
}

/// Routes a path. `served(group_version)` says whether a group-version is served.
pub(crate) fn route(
    method: &str,
    path: &str,
    watch: bool,
    served: impl Fn(&str) -> bool,
) -> Option<Route> {
    let segs: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["version"] | ["api"] | ["apis"] => return Some(Route::Discovery(path.into())),
        ["openapi", "v3", ..] if method == "GET" => return Some(Route::OpenApi(path.into())),
        ["api", v, rest @ ..] => ("", *v, rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Some(Route::NotFound),
    };
    let gv = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    let known = resources::RESOURCES.iter().any(|r| r.group_version() == gv);
    if !known || !served(&gv) {
        return Some(Route::NotFound);
    }
    if rest.is_empty() {
        return Some(Route::Discovery(path.into()));
    }
    let find = |plural: &str| resources::find(group, version, plural);
    let (ns, plural, tail): (&str, &str, &[&str]) = match rest {
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some() => (ns, plural, tail),
        [plural, tail @ ..] => ("", plural, tail),
        [] => return Some(Route::NotFound),
    };
    let res = find(plural)?;
    let r = &resources::RESOURCES[res];
    if r.namespaced == ns.is_empty() && !(ns.is_empty() && tail.is_empty()) {
        return Some(Route::NotFound);
    }
    let (name, sub) = match tail {
        [] => ("", ""),
        [name] => (*name, ""),
        [name, sub] => (*name, *sub),
        _ => return Some(Route::NotFound),
    };
    let verb = verb(method, !name.is_empty(), watch)?;
    Some(Route::Api(ApiReq {
        res,
        ns: ns.to_string(),
        name: name.to_string(),
        sub: sub.to_string(),
        verb,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_route_to_resources() {
        let all = |_: &str| true;
        let Some(Route::Api(a)) = route(
            "GET",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/a/trainjobs/x",
            false,
            all,
        ) else {
            panic!("not routed")
        };
        assert_eq!((a.ns.as_str(), a.name.as_str(), a.verb), ("a", "x", "get"));
        let Some(Route::Api(a)) = route("GET", "/api/v1/namespaces/a", false, all) else {
            panic!("not routed")
        };
        assert_eq!((resources::RESOURCES[a.res].plural, a.name.as_str()), ("namespaces", "a"));
        let Some(Route::Api(a)) = route("GET", "/api/v1/namespaces/a/pods/p/log", false, all)
        else {
            panic!("not routed")
        };
        assert_eq!(a.sub, "log");
        assert_eq!(route("GET", "/apis/nope/v1/things", false, all), Some(Route::NotFound));
    }

    #[test]
    fn query_values_are_decoded() {
        let q = query("labelSelector=a%3Db%2Cc+in+%28x%29&watch=true");
        assert_eq!(q["labelSelector"], "a=b,c in (x)");
        assert_eq!(q["watch"], "true");
    }
}
