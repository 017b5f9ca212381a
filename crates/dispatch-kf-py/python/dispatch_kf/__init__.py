"""Why a Kubeflow TrainJob stopped: dispatch-kf's classifier, in Python.

``classify`` reads what ``kubectl get ... -o json`` prints (or the same objects as the
``kubernetes`` client gives them, made plain with
``ApiClient().sanitize_for_serialization``) and returns one observation per TrainJob
and per orphan, each a dict of exactly the shape ``dispatch-kf classify -o json``
prints. It reads nothing but its argument (and the clock when ``now`` is not given).
"""

import datetime as _datetime
import json as _json

from dispatch_kf._native import classify_json as _classify_json

__all__ = ["classify"]

_MODES = ("plain", "kueue")


def classify(document, *, mode="plain", nodes_readable=None, now=None):
    """The observations of the objects in ``document``.

    ``document`` is a Kubernetes object or List as plain dicts, or a list of objects.
    ``mode`` is ``"plain"`` (no Kueue: the gate and holds are ``spec.suspend``) or
    ``"kueue"`` (Kueue admits the TrainJobs). ``nodes_readable=False`` never judges a
    pod node-lost from its Node's state; ``True`` says the document holds every Node
    there is; when omitted, it is decided as ``dispatch-kf classify`` decides it: a
    document that holds no Node is read as without permission to read Nodes. ``now``
    is the time of the observation, an RFC 3339 string or a timezone-aware
    ``datetime``; the current time when omitted.

    Objects are read as leniently as ``dispatch-kf classify`` reads them; what is not a
    document raises ``ValueError`` in its words. The classification runs without the
    GIL; a fault in the classifier itself raises ``RuntimeError``.
    """
    if mode not in _MODES:
        raise ValueError(f"mode {mode!r} is not 'plain' or 'kueue'")
    if nodes_readable is not None and not isinstance(nodes_readable, bool):
        raise ValueError(f"nodes_readable {nodes_readable!r} is not True, False or None")
    if isinstance(now, _datetime.datetime):
        if now.tzinfo is None or now.utcoffset() is None:
            raise ValueError(f"now {now!r} has no timezone: give an aware datetime")
        now = now.isoformat()
    elif now is not None and not isinstance(now, str):
        raise ValueError(f"now {now!r} is not an RFC 3339 string or a datetime")
    if isinstance(document, (list, tuple)):
        document = {"apiVersion": "v1", "kind": "List", "items": list(document)}
    try:
        text = _json.dumps(document, allow_nan=False, default=_plain)
    except (TypeError, ValueError) as e:
        raise ValueError(f"document is not JSON: {e}: give plain dicts, as "
                         "ApiClient().sanitize_for_serialization makes them") from None
    except RecursionError:
        raise ValueError("document is nested too deeply to be a Kubernetes object") from None
    return _json.loads(_classify_json(text, mode, nodes_readable, now))


def _plain(value):
    """A date or time inside a document, as Kubernetes writes it (RFC 3339)."""
    if isinstance(value, (_datetime.datetime, _datetime.date)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} {value!r} is not a JSON value")
