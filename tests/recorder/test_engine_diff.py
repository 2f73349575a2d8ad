"""`seam diff --engine-src PARENT --against-engine-src CHANGE` on SGLang
trees made here from the pinned release (test_engine_src.py's copies): an
unedited copy keeps every case identical, a copy without one all-reduce
changes the values of exactly the cases that reach it, a copy that raises
under DP attention fails exactly there. Needs the seam binary ($SEAM_BIN)."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

from test_engine_src import REMOVED, tree_with

SEAM = os.environ.get("SEAM_BIN", "")
# Nemotron-H layers M-M*-E. At tp 4 dp 2 each FFN layer all-reduces over
# attention TP (2 ranks) before its DP gather (communicator.py
# _gather_hidden_states_and_residual, 0.5.20); at tp 4 alone it does not
# gather, so the removed all-reduce is not on its path.
DP_CASE = ["--pattern", "M-M*-E", "--tp", "4", "--dp", "2", "--tokens", "3,2"]
TP_CASE = ["--pattern", "M-M*-E", "--tp", "4", "--tokens", "3"]


def diff(*args):
    run = subprocess.run([SEAM, "diff", *args], capture_output=True, text=True, timeout=900)
    return run.returncode, run.stdout + run.stderr


@unittest.skipUnless(SEAM, "SEAM_BIN names the seam binary")
class EngineTreesDiffed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="seam-engine-diff-")
        cls.recordings = os.path.join(cls.dir, "recordings")
        cls.unedited = tree_with()
        cls.dropped = tree_with("srt/layers/communicator.py", lambda t: t.replace(REMOVED, "                    pass\n", 1))
        cls.raising = tree_with(
            "srt/layers/communicator.py",
            lambda t: t.replace(
                "        if context.attn_dp_size != 1:\n",
                "        if context.attn_dp_size != 1:\n            assert context.attn_tp_size == 1, 'planted'\n",
                1,
            ),
        )

    @classmethod
    def tearDownClass(cls):
        for d in (cls.dir, cls.unedited, cls.dropped, cls.raising):
            shutil.rmtree(d, ignore_errors=True)

    def against(self, change, case):
        return diff(*case, "--engine", "sglang", "--against-engine-src", change, "--keep-recordings", self.recordings)

    def test_an_unedited_copy_is_identical_on_every_case_of_a_space(self):
        summary = os.path.join(self.dir, "unedited.md")
        code, out = diff("--pattern", "M*", "--world", "2", "--engine", "sglang", "--against-engine-src",
                         self.unedited, "--keep-recordings", self.recordings, "--summary", summary)
        self.assertEqual(code, 0, out)
        first = out.splitlines()[0]
        self.assertRegex(first, r"^seam diff: the pinned sglang release -> .*, (\d+) cases$")
        cases = int(first.rsplit(", ", 1)[1].split()[0])
        self.assertGreater(cases, 10)
        # Every case identical, but those both trees' argument checks refuse alike.
        counts = {m[0]: int(m[1]) for m in re.findall(r"^  ([a-z-]+): (\d+) cases", out, re.M)}
        self.assertEqual(set(counts) - {"identical", "both-fail"}, set(), out)
        self.assertEqual(sum(counts.values()), cases, out)
        for line in re.findall(r"^  both-fail: .*\n    (.*)$", out, re.M):
            self.assertTrue(line.startswith("both refused: "), line)
        self.assertIn("fixed: 0, broken: 0", out)
        text = open(summary).read()
        self.assertTrue(text.startswith("## seam diff: "), text[:200])
        self.assertIn(f"**the change keeps every value the parent computed ({cases} cases)**", text)

    def test_a_dropped_all_reduce_changes_the_values_of_a_case_that_reaches_it(self):
        code, out = self.against(self.dropped, DP_CASE)
        self.assertEqual(code, 1, out)
        self.assertIn("values-differ: 1 cases", out)
        # The first divergence names both trees' calls and the parent's site.
        self.assertRegex(out, r"rank 0, call \d+: parent all_reduce \[0,1,\].*at sglang/srt/layers/communicator.py:\d+:_gather_hidden_states_and_residual; change ")
        # The legacy plan (seam diff's default --policy) is what the release
        # runs here; the change's run no longer bears it out.
        self.assertIn("fixed: 0, broken: 1 (each tree's run against the legacy plan)", out)

    def test_a_dropped_all_reduce_off_a_cases_path_keeps_it_identical(self):
        code, out = self.against(self.dropped, TP_CASE)
        self.assertEqual(code, 0, out)
        self.assertIn("identical: 1 cases", out)

    def test_a_change_that_raises_under_dp_attention_fails_there_with_its_site(self):
        code, out = self.against(self.raising, DP_CASE)
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"change-fails: 1 cases.*\n    change raised at sglang/srt/layers/communicator.py:\d+:_gather_hidden_states_and_residual: AssertionError: planted")
        code, out = self.against(self.raising, TP_CASE)
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
