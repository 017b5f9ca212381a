//! The console of `sim serve`: one line typed on standard input makes one thing happen
//! in the simulated cluster, so a user can watch the adapter see it.

use dispatch_core::{Error, Result, Timespan};
use dispatch_kf_sim::Sim;
use serde_json::Value;

/// The help the console prints.
pub(crate) const HELP: &str = "\
commands (NS/POD, NS/WORKLOAD, NODE as kubectl shows them):
  pods                         list pods: namespace/name, phase, node
  preempt NS/POD               the scheduler preempts the pod (DisruptionTarget)
  evict NS/POD                 the Eviction API evicts the pod
  oom NS/POD                   the pod's containers are OOM-killed
  exit NS/POD CODE             the pod's containers exit with CODE
  lose-node NODE               the node stops reporting (Ready=Unknown)
  out-of-service NODE          taint the node node.kubernetes.io/out-of-service
  delete-node NODE             delete the Node object
  kueue-preempt NS/WORKLOAD    Kueue preempts the Workload for a higher-priority one
  advance DURATION             move the virtual clock (90s, 5m)
  help";

/// One console command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Command {
    Pods,
    Preempt(String, String),
    Evict(String, String),
    Oom(String, String),
    Exit(String, String, i64),
    LoseNode(String),
    OutOfService(String),
    DeleteNode(String),
    KueuePreempt(String, String),
    Advance(Timespan),
    Help,
}

fn namespaced(arg: Option<&str>) -> Result<(String, String)> {
    let text = arg.ok_or_else(|| Error::invalid("missing NS/NAME"))?;
    let (ns, name) =
        text.split_once('/').ok_or_else(|| Error::invalid(format!("{text} is not NS/NAME")))?;
    Ok((ns.to_owned(), name.to_owned()))
}

fn single(arg: Option<&str>) -> Result<String> {
    arg.map(str::to_owned).ok_or_else(|| Error::invalid("missing NODE"))
}

/// Reads one line; `None` for a blank one.
pub(crate) fn parse(line: &str) -> Result<Option<Command>> {
    let mut words = line.split_whitespace();
    let Some(verb) = words.next() else { return Ok(None) };
    let arg = words.next();
    let command = match verb {
        "pods" => Command::Pods,
        "preempt" => namespaced(arg).map(|(n, p)| Command::Preempt(n, p))?,
        "evict" => namespaced(arg).map(|(n, p)| Command::Evict(n, p))?,
        "oom" => namespaced(arg).map(|(n, p)| Command::Oom(n, p))?,
        "exit" => {
            let (ns, pod) = namespaced(arg)?;
            let code = words.next().and_then(|c| c.parse().ok());
            Command::Exit(ns, pod, code.ok_or_else(|| Error::invalid("exit needs a CODE"))?)
        }
        "lose-node" => Command::LoseNode(single(arg)?),
        "out-of-service" => Command::OutOfService(single(arg)?),
        "delete-node" => Command::DeleteNode(single(arg)?),
        "kueue-preempt" => namespaced(arg).map(|(n, w)| Command::KueuePreempt(n, w))?,
        "advance" => Command::Advance(Timespan::parse(arg.unwrap_or(""))?),
        "help" => Command::Help,
        other => return Err(Error::invalid(format!("unknown command {other:?}: type help"))),
    };
    Ok(Some(command))
}

/// Carries out `command`; returns what to print.
pub(crate) fn run(sim: &Sim, command: Command) -> String {
    let found =
        |ok: bool, what: &str| if ok { "done".to_owned() } else { format!("no such {what}") };
    match command {
        Command::Pods => pods(sim),
        Command::Preempt(ns, pod) => found(sim.preempt(&ns, &pod), "pod"),
        Command::Evict(ns, pod) => found(sim.evict(&ns, &pod), "pod"),
        Command::Oom(ns, pod) => found(sim.oom(&ns, &pod), "pod"),
        Command::Exit(ns, pod, code) => found(sim.exit(&ns, &pod, code), "pod"),
        Command::LoseNode(node) => found(sim.lose_node(&node), "node"),
        Command::OutOfService(node) => found(sim.taint_out_of_service(&node), "node"),
        Command::DeleteNode(node) => found(sim.delete_node(&node), "node"),
        Command::KueuePreempt(ns, wl) => found(sim.kueue_preempt(&ns, &wl), "workload"),
        Command::Advance(span) => match span.to_std() {
            Some(d) => {
                sim.advance(d);
                format!("the virtual clock is at {}", sim.now())
            }
            None => "advance needs a positive duration".to_owned(),
        },
        Command::Help => HELP.to_owned(),
    }
}

fn pods(sim: &Sim) -> String {
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("-").to_owned();
    let mut lines: Vec<String> = sim
        .list("pods", "")
        .iter()
        .map(|p| {
            format!(
                "{}/{}  {}  {}",
                text(p, "/metadata/namespace"),
                text(p, "/metadata/name"),
                text(p, "/status/phase"),
                text(p, "/spec/nodeName")
            )
        })
        .collect();
    lines.sort();
    if lines.is_empty() { "no pods".to_owned() } else { lines.join("\n") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_commands() {
        assert_eq!(parse("  ").unwrap(), None);
        assert_eq!(
            parse("preempt default/dj-x-s1-node-0-1-abcde").unwrap(),
            Some(Command::Preempt("default".into(), "dj-x-s1-node-0-1-abcde".into()))
        );
        assert_eq!(parse("exit ns/p 3").unwrap(), Some(Command::Exit("ns".into(), "p".into(), 3)));
        assert_eq!(parse("lose-node gpu-1").unwrap(), Some(Command::LoseNode("gpu-1".into())));
        assert_eq!(parse("advance 5m").unwrap(), Some(Command::Advance(Timespan::from_secs(300))));
        for bad in ["preempt", "preempt podonly", "exit ns/p", "advance soon", "dance"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
