"""The stratasim Python module (issue 17), run by ctest with PYTHONPATH=build/python.

Its results are checked against the CLI's --json output for the same scenario (a second path
through the same engine), and its errors against the CLI's messages."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import stratasim

SRC = os.environ["STRATASIM_SOURCE_DIR"]
BIN = os.environ["STRATASIM_BINARY"]
TINY = os.path.join(SRC, "scenarios", "tiny_2gpu_1layer.json")
GPT3 = os.path.join(SRC, "scenarios", "gpt3_175b_1024_a100.json")


def cli_json(*args):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        subprocess.run([BIN, *args, "--json", out], check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


class Evaluate(unittest.TestCase):
    def test_same_prediction_as_the_cli(self):
        r = stratasim.evaluate(GPT3, sets=["strategy.micro_batch=2"])
        cli = cli_json("evaluate", GPT3, "--set", "strategy.micro_batch=2")
        self.assertEqual(r["prediction"]["iteration_s"], cli["prediction"]["iteration_s"])
        self.assertEqual(r["prediction"]["peak_memory_B"], cli["prediction"]["peak_memory_B"])
        self.assertEqual(r["strategy"]["micro_batch"], 2)
        self.assertEqual(r["devices"], 1024)

    def test_a_dict_is_the_same_scenario_as_its_file(self):
        with open(TINY) as f:
            doc = json.load(f)
        self.assertEqual(stratasim.evaluate(doc)["prediction"], stratasim.evaluate(TINY)["prediction"])
        # dict-valued sets: {"strategy.tp": 1} is the CLI's --set strategy.tp=1
        self.assertEqual(stratasim.evaluate(doc, sets={"strategy.tp": 1, "strategy.sequence_parallel": False})
                         ["strategy"]["tp"], 1)

    def test_a_variant(self):
        compared = stratasim.compare(TINY)
        names = [v["variant"] for v in compared["variants"]]
        self.assertEqual(names[0], "base")
        second = compared["variants"][1]
        r = stratasim.evaluate(TINY, variant=second["variant"])
        self.assertEqual(r["prediction"]["iteration_s"], second["prediction"]["iteration_s"])


class Errors(unittest.TestCase):
    def test_an_unknown_key_names_the_path_and_the_closest_key(self):
        with open(TINY) as f:
            doc = json.load(f)
        doc["strategy"]["tpp"] = 2
        with self.assertRaises(ValueError) as e:
            stratasim.evaluate(doc)
        self.assertIsInstance(e.exception, stratasim.InputError)
        self.assertIn("<dict>: strategy.tpp", str(e.exception))
        self.assertIn("did you mean", str(e.exception))

    def test_an_infeasible_strategy_says_why(self):
        with self.assertRaises(stratasim.InputError) as e:
            stratasim.evaluate(TINY, sets=["strategy.tp=3"])
        self.assertIn("does not divide", str(e.exception))

    def test_a_missing_file_and_a_bad_objective(self):
        with self.assertRaises(stratasim.InputError):
            stratasim.evaluate("/nonexistent/scenario.json")
        with self.assertRaises(stratasim.InputError) as e:
            stratasim.search(TINY, objective="speed")
        self.assertIn("is not one of: throughput", str(e.exception))
        with self.assertRaises(TypeError):
            stratasim.evaluate(42)


class Search(unittest.TestCase):
    def test_columns_hold_the_top_candidates(self):
        r = stratasim.search(TINY, top=3, threads=1)
        cli = cli_json("search", TINY, "--top", "3", "--threads", "1")
        self.assertEqual(r["points"], cli["points"])
        self.assertEqual([c["iteration_s"] for c in r["top"]], [c["iteration_s"] for c in cli["top"]])
        cols = r["columns"]
        self.assertEqual(len(cols["iteration_s"]), len(r["top"]))
        self.assertEqual(cols["tp"], [c["strategy"]["tp"] for c in r["top"]])
        self.assertTrue(r["derived_space"])

    def test_pandas_reads_the_columns(self):
        try:
            import pandas
        except ImportError:
            self.skipTest("pandas is not installed")
        r = stratasim.search(TINY, top=4, threads=1)
        df = pandas.DataFrame(r["columns"])
        self.assertEqual(len(df), len(r["top"]))
        self.assertAlmostEqual(df["iteration_s"].min(), r["top"][0]["iteration_s"])


@unittest.skipUnless(stratasim.has_simgrid, "built without SimGrid")
class Simulate(unittest.TestCase):
    def test_simgrid_agrees_with_the_analytical_engine_on_the_tiny_scenario(self):
        a = stratasim.evaluate(TINY)["prediction"]["iteration_s"]
        s = stratasim.simulate(TINY)["prediction"]["iteration_s"]
        self.assertAlmostEqual(s / a, 1.0, delta=0.005)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
