"""A notebook-style tour of the stratasim Python module.

Run from the repository root after ./scripts/test.sh or ./scripts/main_job.sh (which build it):

    PYTHONPATH=build/python python3 docs/python_example.py

Every call returns plain dicts in SI units (seconds, bytes, FLOP/s), the JSON the CLI's --json
writes; search results also come as columns for pandas.
"""
import stratasim

scenario = "scenarios/gpt3_175b_1024_a100.json"

# 1. One strategy, the analytical engine (microseconds).
r = stratasim.evaluate(scenario)
p = r["prediction"]
print(f"{r['scenario']}: {p['iteration_s']:.3f} s per iteration, MFU {100 * p['mfu']:.1f}%, "
      f"peak memory {p['peak_memory_B'] / 2**30:.1f} GiB")

# 2. What-if: the same scenario with overrides (the CLI's --set), or a dict built in Python.
for mb in (1, 2, 4):
    q = stratasim.evaluate(scenario, sets={"strategy.micro_batch": mb})["prediction"]
    print(f"  micro-batch {mb}: {q['iteration_s']:.3f} s, bubble {100 * q['bubble_fraction']:.1f}%")

# 3. Every variant of the scenario.
for v in stratasim.compare(scenario)["variants"]:
    if v["feasible"]:
        print(f"  {v['variant']:<28} {v['prediction']['iteration_s']:8.3f} s")
    else:
        print(f"  {v['variant']:<28} cannot run: {v['reason']}")

# 4. A search: the top candidates, as a table.
s = stratasim.search(scenario, top=10)
print(f"searched {s['points']} points, {s['feasible']} feasible")
try:
    import pandas
    df = pandas.DataFrame(s["columns"])
    print(df[["tp", "pp", "dp", "micro_batch", "schedule", "recompute", "iteration_s", "mfu"]])
except ImportError:
    for row in s["top"][:5]:
        st = row["strategy"]
        print(f"  tp {st['tp']} pp {st['pp']} mb {st['micro_batch']} {st['schedule']}: {row['iteration_s']:.3f} s")

# 5. Bad input raises stratasim.InputError (a ValueError) with the CLI's message.
try:
    stratasim.evaluate(scenario, sets=["strategy.tp=7"])
except stratasim.InputError as e:
    print("refused:", e)
