#!/usr/bin/env python3
"""Re-sets each validation group's gate from its measured error (after a deliberate model change).

    build/apps/stratasim validate --published --json /tmp/v.json
    scripts/validation_tolerances.py /tmp/v.json "after <what changed>" [GROUP ...]

For every group in validate/data/rules.json (or only the GROUPs named, so that the others keep
the reason their gate was last set for): MAPE gate = max(3%, 1.2 x measured MAPE), max gate =
max(gate, 1.15 x measured max), both rounded up to 0.5%; its `why` (or `memory_why` for the
group's memory metric) records the measured values and the change. The test requires each gate
to stay within 1.5x the measured MAPE, so the gate fails when the model regresses. Read the diff
before committing it.
"""
import json
import math
import re
import sys

RULES = "validate/data/rules.json"


def up(x):  # round up to 0.5%
    return math.ceil(x * 200 - 1e-9) / 200


def gate(measured):
    mape = up(max(0.03, 1.2 * measured["mape"]))
    return {"mape": mape, "max": max(mape, up(1.15 * measured["max_abs_error"]))}


def why(measured, change):
    return (f"measured MAPE {100 * measured['mape']:.1f}%, max {100 * measured['max_abs_error']:.1f}%, "
            f"mean {100 * measured['mean_signed_error']:+.1f}%: {change}; the gate sits about 1.2x "
            "above, so a regression fails it")


def main():
    report, change, only = json.load(open(sys.argv[1])), sys.argv[2], set(sys.argv[3:])
    measured = {g["name"]: g for g in report["groups"]}
    text = open(RULES).read()
    rules = json.loads(text)
    for g in rules["groups"]:
        name = g["group"]
        if only and name not in only:
            continue
        if name in measured and "tolerance" in g:
            g["tolerance"] = gate(measured[name])
            g["why"] = why(measured[name], change)
        if name + ":memory" in measured and "memory_tolerance" in g:
            g["memory_tolerance"] = gate(measured[name + ":memory"])
            g["memory_why"] = why(measured[name + ":memory"], change)
    out = json.dumps(rules, indent=2, ensure_ascii=False) + "\n"
    open(RULES, "w").write(out)


if __name__ == "__main__":
    main()
