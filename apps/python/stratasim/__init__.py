"""stratasim from Python: predict, simulate, search and compare training strategies.

Every function takes a scenario as a path to a scenario file or as a dict (the same JSON
document, see docs/scenario.md), optional ``sets`` overrides as the CLI's ``--set``
("strategy.tp=4"), and returns plain dicts (the JSON the CLI's ``--json`` writes, with SI
units: seconds, bytes, FLOP/s). Bad input raises ``stratasim.InputError`` (a ValueError)
carrying the CLI's message: the file, the JSON path, the value and the rule.

    import stratasim, pandas
    r = stratasim.search("scenarios/gpt3_175b_1024_a100.json", top=20)
    df = pandas.DataFrame(r["columns"])      # one row per top candidate
    best = r["top"][0]["strategy"]
"""
import json as _json

from . import _stratasim

InputError = _stratasim.InputError
has_simgrid = _stratasim.has_simgrid

__all__ = ["evaluate", "simulate", "search", "compare", "columns", "InputError", "has_simgrid"]


def _scenario(scenario):
    """(path, text): a file path as is; a dict as JSON text named '<dict>'."""
    if isinstance(scenario, dict):
        return "<dict>", _json.dumps(scenario)
    if isinstance(scenario, (str, bytes)) or hasattr(scenario, "__fspath__"):
        import os
        return os.fsdecode(scenario), ""
    raise TypeError("scenario must be a path or a dict, not " + type(scenario).__name__)


def _sets(sets):
    if sets is None:
        return []
    if isinstance(sets, dict):
        return ["%s=%s" % (k, _json.dumps(v) if not isinstance(v, str) else v) for k, v in sets.items()]
    return [str(s) for s in sets]


def evaluate(scenario, sets=None, variant=None, timeline=False):
    """The analytical engine's prediction of one strategy (the scenario's, or a variant's)."""
    path, text = _scenario(scenario)
    return _json.loads(_stratasim.evaluate(path, text, _sets(sets), variant or "", bool(timeline)))


def simulate(scenario, sets=None, variant=None):
    """The SimGrid engine's prediction (contention-aware); needs a build with SimGrid."""
    path, text = _scenario(scenario)
    return _json.loads(_stratasim.simulate(path, text, _sets(sets), variant or ""))


def columns(candidates):
    """Candidates (search 'top' or 'pareto' rows) as columns: {name: [values]} for pandas."""
    rows = []
    for c in candidates:
        row = {}
        for k, v in c.items():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    if not isinstance(v2, (dict, list)):
                        row[k2 if k2 not in row else k + "." + k2] = v2
            elif not isinstance(v, list):
                row[k] = v
        rows.append(row)
    names = []
    for row in rows:
        for k in row:
            if k not in names:
                names.append(k)
    return {k: [row.get(k) for row in rows] for k in names}


def search(scenario, sets=None, top=10, objective="throughput", threads=0, train_tokens=0.0, price=0.0):
    """Search the scenario's space (or the one derived from its model and cluster): the top
    candidates by the objective, the Pareto front, counts, and 'columns' (the top candidates
    as {name: [values]}, ready for pandas.DataFrame)."""
    path, text = _scenario(scenario)
    r = _json.loads(_stratasim.search(path, text, _sets(sets), int(top), str(objective), int(threads),
                                      float(train_tokens), float(price)))
    r["columns"] = columns(r.get("top", []))
    return r


def compare(scenario, sets=None):
    """Every variant of the scenario, base first: strategy and prediction, or why it cannot run."""
    path, text = _scenario(scenario)
    return _json.loads(_stratasim.compare(path, text, _sets(sets)))
