"""dispatch_kf.classify against the built `dispatch-kf classify` (docs/python.md).

Every dump under fixtures/dumps/ classified through Python gives, dict for dict, the
JSON the command prints for it with the same options. `cargo xtask test` runs these
with the package installed from its wheel into a fresh venv, and DISPATCH_KF_BIN
naming the command it built.
"""

import datetime
import json
import os
import pathlib
import subprocess

import pytest

import dispatch_kf

ROOT = pathlib.Path(__file__).resolve().parents[3]
DUMPS = sorted((ROOT / "fixtures" / "dumps").glob("*.json"))
NOW = "2026-11-29T12:00:00Z"
BIN = os.environ.get("DISPATCH_KF_BIN", "")


def options(name):
    """The mode and Node permission a dump's name asks for, as the Rust snapshot tests
    read it: `kueue-` is Kueue mode, `-no-nodes.json` without Nodes."""
    rest = name
    for prefix in ("real-", "cluster-"):
        if name.startswith(prefix):
            rest = name[len(prefix):]
    mode = "kueue" if rest.startswith("kueue-") else "plain"
    return mode, not name.endswith("-no-nodes.json")


def cli(*args, stdin=None):
    """The built command's run with `args`."""
    assert BIN and pathlib.Path(BIN).exists(), f"DISPATCH_KF_BIN {BIN!r} names no command"
    return subprocess.run([BIN, *args], input=stdin, capture_output=True)


def cli_classify(path, mode, nodes_readable):
    flag = "--nodes-readable=" + ("true" if nodes_readable else "false")
    done = cli("classify", "-o", "json", "--now", NOW, "--mode", mode, flag, str(path))
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def test_there_are_fixture_dumps():
    assert len(DUMPS) > 50


@pytest.mark.parametrize("dump", DUMPS, ids=lambda p: p.name)
def test_each_fixture_dump_classifies_as_the_cli_classifies_it(dump):
    mode, nodes_readable = options(dump.name)
    document = json.loads(dump.read_text())
    got = dispatch_kf.classify(document, mode=mode, nodes_readable=nodes_readable, now=NOW)
    assert got == cli_classify(dump, mode, nodes_readable)


def test_a_list_of_objects_reads_as_the_list_holding_them():
    dump = ROOT / "fixtures" / "dumps" / "complete.json"
    document = json.loads(dump.read_text())
    assert document["kind"] == "List"
    assert dispatch_kf.classify(document["items"], now=NOW) == dispatch_kf.classify(document, now=NOW)
    assert dispatch_kf.classify([], now=NOW) == []


def test_now_is_an_rfc_3339_string_or_an_aware_datetime_and_else_the_current_time():
    document = json.loads((ROOT / "fixtures" / "dumps" / "complete.json").read_text())
    aware = datetime.datetime(2026, 11, 29, 13, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))
    assert dispatch_kf.classify(document, now=aware) == dispatch_kf.classify(document, now=NOW)
    with pytest.raises(ValueError, match="has no timezone"):
        dispatch_kf.classify(document, now=datetime.datetime(2026, 11, 29, 12, 0))
    with pytest.raises(ValueError, match="is not an RFC 3339 time"):
        dispatch_kf.classify(document, now="yesterday")
    before = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    seen = dispatch_kf.classify(document)[0]["seenAt"]
    assert seen.endswith("Z") and seen[:19] >= before, (seen, before)


def test_what_is_not_a_document_is_a_value_error_in_the_clis_words(tmp_path):
    for value, text in [(42, "42"), ("text", '"text"'), ({"a": 1}, '{"a": 1}')]:
        path = tmp_path / "document"
        path.write_text(text)
        done = cli("classify", "--now", NOW, str(path))
        assert done.returncode == 3, done.stderr
        words = done.stderr.decode().strip().removeprefix("dispatch-kf: invalid: ")
        words = words.replace(str(path), "document")
        with pytest.raises(ValueError) as raised:
            dispatch_kf.classify(value, now=NOW)
        assert str(raised.value) == words


def test_bad_options_and_values_that_are_not_json_are_value_errors():
    with pytest.raises(ValueError, match="mode 'gke' is not"):
        dispatch_kf.classify([], mode="gke")
    with pytest.raises(ValueError, match="nodes_readable"):
        dispatch_kf.classify([], nodes_readable="yes")
    deep = {"apiVersion": "v1", "kind": "Pod", "metadata": {}}
    for _ in range(100_000):
        deep = {"apiVersion": "v1", "kind": "List", "items": [deep]}
    with pytest.raises(ValueError, match="nested too deeply"):
        dispatch_kf.classify(deep, now=NOW)
    shallow_in_python = "[" * 10_000 + "]" * 10_000
    with pytest.raises(ValueError):
        dispatch_kf._native.classify_json(shallow_in_python, "plain", None, NOW)
    with pytest.raises(ValueError, match="document is not JSON"):
        dispatch_kf.classify({"apiVersion": "v1", "kind": "Pod", "metadata": {"x": object()}})
    with pytest.raises(TypeError):
        dispatch_kf.classify([], "kueue")


def test_datetimes_inside_a_document_read_as_kubernetes_writes_them():
    dump = json.loads((ROOT / "fixtures" / "dumps" / "complete.json").read_text())
    with_datetimes = json.loads(json.dumps(dump))
    for item in with_datetimes["items"]:
        stamp = item.get("metadata", {}).get("creationTimestamp")
        if stamp:
            item["metadata"]["creationTimestamp"] = datetime.datetime.fromisoformat(
                stamp.replace("Z", "+00:00"))
    assert dispatch_kf.classify(with_datetimes, now=NOW) == dispatch_kf.classify(dump, now=NOW)


def test_without_nodes_readable_a_document_is_read_as_the_cli_reads_it():
    """A TrainJob and its pods without any Node (what a TrainerClient user has at
    hand): as the command without --nodes-readable, no pod is judged node-lost."""
    for dump in DUMPS:
        document = json.loads(dump.read_text())
        mode, _ = options(dump.name)
        done = cli("classify", "-o", "json", "--now", NOW, "--mode", mode, str(dump))
        assert done.returncode == 0, done.stderr.decode()
        assert dispatch_kf.classify(document, mode=mode, now=NOW) == json.loads(done.stdout), dump.name
    no_nodes = [o for o in DUMPS if o.name.endswith("-no-nodes.json")]
    assert no_nodes, "some dumps hold no Node"


def test_the_gil_is_released_while_a_large_document_is_classified():
    """Another Python thread runs while one thread classifies a large document: it
    stamps the time in a loop, and some stamps fall well inside the call. The document
    grows until a call lasts long enough to tell."""
    import threading
    import time
    items = json.loads((ROOT / "fixtures" / "dumps" / "complete.json").read_text())["items"]
    margin = 0.05
    copies = 16
    while True:
        text = json.dumps({"apiVersion": "v1", "kind": "List", "items": items * copies})
        stamps = []
        done = threading.Event()

        def tick():
            while not done.is_set():
                stamps.append(time.perf_counter())

        ticker = threading.Thread(target=tick)
        ticker.start()
        try:
            start = time.perf_counter()
            dispatch_kf._native.classify_json(text, "plain", None, NOW)
            end = time.perf_counter()
        finally:
            done.set()
            ticker.join()
        if end - start > 4 * margin or copies >= 4096:
            break
        copies *= 2
    assert end - start > 4 * margin, f"even {copies} copies classify too fast to tell"
    inside = [t for t in stamps if start + margin < t < end - margin]
    assert inside, "the other thread never ran while classifying"
