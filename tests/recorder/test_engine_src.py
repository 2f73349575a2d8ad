"""`seam check --engine-src` on SGLang trees made here from the pinned
release: an unedited copy, a copy with one all-reduce removed from the
communicator, and a copy that raises for one configuration. Needs the seam
binary ($SEAM_BIN)."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import sglang

SEAM = os.environ.get("SEAM_BIN", "")
RELEASE = os.path.dirname(os.path.realpath(sglang.__file__))
# The case: Nemotron-H layers M-M*-E at tp 4, dp 2, decode 3,2. Each FFN
# layer all-reduces over attention TP before its DP gather (communicator.py
# _gather_hidden_states_and_residual), as the legacy plan owes.
CASE = ["--pattern", "M-M*-E", "--tp", "4", "--dp", "2", "--tokens", "3,2", "--policy", "legacy"]
REMOVED = (
    "                    hidden_states = attention_tensor_model_parallel_all_reduce(\n"
    "                        hidden_states\n"
    "                    )\n"
)


def tree_with(edit_path=None, edit=None):
    """A copy of the release as a checkout (python/sglang), files hard-linked
    but the edited one."""
    root = tempfile.mkdtemp(prefix="seam-sglang-tree-")
    shutil.copytree(RELEASE, os.path.join(root, "python", "sglang"), copy_function=os.link,
                    ignore=shutil.ignore_patterns("__pycache__"))
    if edit_path:
        path = os.path.join(root, "python", "sglang", edit_path)
        text = open(path).read()
        os.unlink(path)
        new = edit(text)
        assert new != text, "the edit changed nothing"
        open(path, "w").write(new)
    return root


def seam(*args):
    run = subprocess.run([SEAM, "check", *args], capture_output=True, text=True, timeout=600)
    return run.returncode, run.stdout + run.stderr


@unittest.skipUnless(SEAM, "SEAM_BIN names the seam binary")
class EngineSourceTrees(unittest.TestCase):
    def tearDown(self):
        for d in getattr(self, "trees", []):
            shutil.rmtree(d, ignore_errors=True)

    def tree(self, *args):
        t = tree_with(*args)
        self.trees = getattr(self, "trees", []) + [t]
        return t

    def test_an_unedited_copy_runs_as_the_legacy_plan_says(self):
        code, out = seam(*CASE, "--engine-src", self.tree())
        self.assertIn("engine: sglang 0.5.20", out)
        self.assertIn("engine verdict: RAN", out)
        self.assertIn("RECORDING HOLDS", out)
        self.assertEqual(code, 0, out)

    def test_an_all_reduce_removed_from_the_communicator_is_missing_where_the_engine_went_on(self):
        tree = self.tree("srt/layers/communicator.py", lambda t: t.replace(REMOVED, "                    pass\n", 1))
        code, out = seam(*CASE, "--engine-src", tree)
        self.assertEqual(code, 1, out)
        self.assertIn("engine verdict: RAN", out)
        self.assertRegex(out, r"missing-call on rank 0: never recorded: layer \d+ stage \d+ entry all_reduce over attn_tp")
        # The removal moved the lines below it: the frame is the edited file's.
        self.assertRegex(out, r"\(the engine's next call\) .*dp_gather_replicate < sglang/srt/layers/communicator.py:\d+:_gather_hidden_states_and_residual")

    def test_a_tree_that_raises_is_a_result_with_its_site(self):
        tree = self.tree(
            "srt/layers/communicator.py",
            lambda t: t.replace(
                "        if context.attn_dp_size != 1:\n",
                "        if context.attn_dp_size != 1:\n            assert context.attn_tp_size == 1, 'planted'\n",
                1,
            ),
        )
        code, out = seam(*CASE, "--engine-src", tree)
        self.assertEqual(code, 1, out)
        self.assertIn("engine verdict: RAISED", out)
        self.assertRegex(out, r"rank 0 raised at sglang/srt/layers/communicator.py:\d+:_gather_hidden_states_and_residual: AssertionError: planted")

    def test_a_tree_whose_communicator_does_not_import_is_bad_input_naming_it(self):
        tree = self.tree("srt/layers/communicator.py", lambda t: t + "\ndef broken(:\n")
        code, out = seam(*CASE, "--engine-src", tree)
        self.assertEqual(code, 2, out)
        self.assertRegex(out.strip(), r"^seam: recorder: importing SGLang failed: SyntaxError: .*communicator.py, line \d+\)$")

    def test_a_folder_that_is_no_sglang_tree_is_bad_input(self):
        empty = tempfile.mkdtemp()
        self.trees = [empty]
        code, out = seam(*CASE, "--engine-src", empty)
        self.assertEqual(code, 2)
        self.assertIn("not an SGLang tree", out)
        self.assertEqual(len(out.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(SEAM, "SEAM_BIN names the seam binary")
class EngineSweep(unittest.TestCase):
    def test_a_world_2_sweep_puts_every_case_the_engine_runs_in_a_class(self):
        run = subprocess.run([SEAM, "sweep", "--engine", "sglang", "--pattern", "M*E", "--world", "2"],
                             capture_output=True, text=True, timeout=600)
        out = run.stdout + run.stderr
        self.assertIn("pattern M*E world 2: 66 cases in 48 engine runs", out)
        self.assertIn("300 left out (the DeepEP all-to-all)", out)
        # SGLang 0.5.20 refuses moe_dp 2 without attention CP 2 in its own
        # argument checks (server_args resolution); seam plans those cases.
        self.assertIn("tp+moe_dp: 4 | engine-refused 4 || engine-refused 4", out)
        self.assertIn("tp: 4 | agrees 4 || agrees 4", out)
        self.assertEqual(run.returncode, 0, out)

    def test_an_engine_sweep_refuses_the_store_options(self):
        run = subprocess.run([SEAM, "sweep", "--engine", "sglang", "--world", "2", "--db", "x.db"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 2)
        self.assertIn("--db applies to a sweep without --engine", run.stderr)
