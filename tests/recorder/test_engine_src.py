"""`seam check --engine-src` on SGLang trees made here from the pinned
release: an unedited copy, a copy with one all-reduce removed from the
communicator, and a copy that raises for one configuration. Needs the seam
binary ($SEAM_BIN)."""

import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
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


def sweep(*args, timeout=600):
    run = subprocess.run([SEAM, "sweep", "--engine", "sglang", *args], capture_output=True, text=True,
                         timeout=timeout)
    return run.returncode, run.stdout + run.stderr


@unittest.skipUnless(SEAM, "SEAM_BIN names the seam binary")
class EngineSweep(unittest.TestCase):
    """One world 2 sweep of the pattern M*E recorded once (setUpClass); the
    other tests reuse its recordings, found by name in the kept folder."""

    SPACE = ["--pattern", "M*E", "--world", "2"]

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="seam-engine-sweep-")
        cls.recordings = os.path.join(cls.dir, "recordings")
        cls.code, cls.out = sweep(*cls.SPACE, "--db", os.path.join(cls.dir, "whole.db"),
                                  "--keep-recordings", cls.recordings)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_a_world_2_sweep_puts_every_case_the_engine_runs_in_a_class(self):
        out = self.out
        self.assertIn("pattern M*E world 2, shard 0/1: 96 cases in 78 engine runs (78 recorded now", out)
        self.assertIn("316 left out (the DeepEP all-to-all)", out)
        self.assertIn("engine: sglang 0.5.20 (pypi, single-file)", out)
        # SGLang 0.5.20 refuses moe_dp 2 without attention CP 2 in its own
        # argument checks (server_args resolution); seam plans those cases.
        self.assertIn("pattern M*E tp+moe_dp: 4 | engine-refused 4 | engine-refused 4", out)
        self.assertIn("pattern M*E tp: 4 | agrees 4 | agrees 4", out)
        # SGLang 0.5.20 runs a Nemotron-H decode under --enable-prefill-cp;
        # seam's models refuse Nemotron-H with attention CP: not judged.
        self.assertIn("pattern M*E tp+cp: 4 | plan-refused 4 | plan-refused 4", out)
        self.assertIn("96 cases given to the engine (28 refused by its argument checks); 0 where its run "
                      "does not bear out the declared plan; 12 not judged", out)
        self.assertEqual(self.code, 0, out)

    def test_the_store_has_a_row_per_case_and_policy_and_the_report_draws_the_table(self):
        db = os.path.join(self.dir, "whole.db")
        rows = sqlite3.connect(db).execute(
            "SELECT policy, agreement, count(*) FROM engine_cases GROUP BY policy, agreement").fetchall()
        self.assertEqual(sorted(rows), [("declared", "agrees", 24), ("declared", "engine-refused", 28),
                                        ("declared", "other-padding", 32), ("declared", "plan-refused", 12),
                                        ("legacy", "agrees", 24), ("legacy", "engine-refused", 28),
                                        ("legacy", "other-padding", 32), ("legacy", "plan-refused", 12)])
        report = os.path.join(self.dir, "r.md")
        subprocess.run([SEAM, "report", "--db", db, "-o", report], check=True, capture_output=True)
        text = open(report).read()
        self.assertIn("**Verdict: holds.** 96 cases run on sglang 0.5.20 (pypi, single-file), 0 not bearing out "
                      "the declared plan, 12 not judged", text)
        self.assertIn("| pattern M\\*E | tp+moe_dp | 4 | engine-refused 4 | engine-refused 4 |", text)

    def test_two_shards_split_the_space_and_reuse_the_kept_recordings(self):
        counts = []
        for shard in ("0/2", "1/2"):
            code, out = sweep(*self.SPACE, "--shard", shard, "--format", "json", "--db",
                              os.path.join(self.dir, "shards.db"), "--keep-recordings", self.recordings)
            self.assertEqual(code, 0, out)
            doc = json.loads(out)
            self.assertEqual(doc["engine"], "sglang 0.5.20 (pypi, single-file)")
            counts.append(doc["counts"]["cases"])
        self.assertEqual(sum(counts), 96)
        self.assertTrue(all(c > 0 for c in counts), counts)

    def test_an_interrupted_sweep_resumes_its_run_recording_only_what_is_missing(self):
        db = os.path.join(self.dir, "resume.db")
        kept = os.path.join(self.dir, "half")
        os.makedirs(kept)
        names = sorted(n for n in os.listdir(self.recordings) if n.endswith(".jsonl") and not n.startswith("cases"))
        for n in names[: len(names) // 2]:
            shutil.copy(os.path.join(self.recordings, n), kept)
        first = subprocess.Popen([SEAM, "sweep", "--engine", "sglang", *self.SPACE, "--db", db,
                                  "--keep-recordings", kept], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # Killed once it has recorded one of the missing half (its recorder
        # processes die with it).
        deadline = time.monotonic() + 120
        def recorded():
            return [n for n in os.listdir(kept) if n.endswith(".jsonl") and not n.startswith("cases")]

        while len(recorded()) <= len(names) // 2:
            self.assertLess(time.monotonic(), deadline, "the first sweep recorded nothing")
            time.sleep(0.2)
        first.kill()
        first.wait()
        code, out = sweep(*self.SPACE, "--db", db, "--keep-recordings", kept, "--resume")
        self.assertEqual(code, 0, out)
        recorded = int(re.search(r"\((\d+) recorded now", out).group(1))
        self.assertLess(recorded, 39, out)
        self.assertIn("store: " + db + ", run 1", out)
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("SELECT count(*) FROM runs").fetchone()[0], 1)
        self.assertEqual(con.execute("SELECT count(*) FROM engine_cases").fetchone()[0], 192)

    def test_an_engine_sweep_refuses_options_it_does_not_take(self):
        for option in (["--junit", "x.xml"], ["--policy", "legacy"], ["--family", "training"]):
            code, out = sweep("--world", "2", *option, timeout=60)
            self.assertEqual(code, 2, out)
            self.assertIn(option[0] + " applies to a sweep without --engine", out)
            self.assertEqual(len(out.strip().splitlines()), 1, out)


@unittest.skipUnless(SEAM, "SEAM_BIN names the seam binary")
class EngineSweepBaseline(unittest.TestCase):
    """An engine sweep narrowed by its flags and judged against a baseline,
    on a tree that raises wherever attention DP gathers: the fused cases'
    failures are the baseline, the unfused ones' are new."""

    def test_an_engine_sweep_narrowed_by_flags_fails_only_on_findings_outside_its_baseline(self):
        tree = tree_with(
            "srt/layers/communicator.py",
            lambda t: t.replace(
                "        if context.attn_dp_size != 1:\n",
                "        if context.attn_dp_size != 1:\n            assert False, 'planted'\n",
                1,
            ),
        )
        work = tempfile.mkdtemp(prefix="seam-engine-baseline-")
        self.addCleanup(shutil.rmtree, tree, True)
        self.addCleanup(shutil.rmtree, work, True)
        space = ["--pattern", "M*E", "--world", "2", "--dp", "2", "--ep", "1", "--moe-dp", "1",
                 "--mode", "decode", "--dp-padding", "max_len", "--engine-src", tree,
                 "--keep-recordings", os.path.join(work, "recordings")]

        def run(*args):
            done = subprocess.run([SEAM, "sweep", *space, *args], capture_output=True, text=True,
                                  timeout=600)
            return done.returncode, done.stdout + done.stderr

        def rows(db, where="1"):
            # Declared rows of the store's one run: what the filters kept, and the findings.
            return sqlite3.connect(db).execute(
                "SELECT count(*) FROM engine_cases WHERE policy = 'declared' AND " + where).fetchone()[0]

        fused, baseline = os.path.join(work, "fused.db"), os.path.join(work, "baseline.json")
        code, out = run("--fusion", "on", "--db", fused, "--write-baseline", baseline)
        self.assertEqual(code, 1, out)
        failed = "agreement = 'engine-failed'"
        known = rows(fused, failed)
        self.assertGreater(known, 0, out)
        self.assertEqual(rows(fused, "flags LIKE '%fusion=off%'"), 0, "--fusion on keeps no unfused case")
        self.assertEqual(rows(fused, "flags NOT LIKE '%padding=max_len%'"), 0)
        self.assertIn(f'wrote baseline "{baseline}": {known} findings', out)

        both = os.path.join(work, "both.db")
        code, out = run("--fusion", "on,off", "--db", both, "--baseline", baseline)
        self.assertEqual(code, 1, out)
        total = rows(both, failed)
        self.assertEqual(rows(both, "flags LIKE '%fusion=off%'"), rows(fused))
        self.assertIn(f'baseline "{baseline}": {total} findings, {known} baselined, {total - known} new',
                      out)
        self.assertIn("NEW FINDING: engine-failed: raised at "
                      "sglang/srt/layers/communicator.py:_gather_hidden_states_and_residual: "
                      "AssertionError: planted", out)

        # The baseline's own space against its store: nothing new, exit 0.
        code, out = run("--fusion", "on", "--db", os.path.join(work, "again.db"), "--baseline", fused)
        self.assertEqual(code, 0, out)
        self.assertIn(f'baseline "{fused}": {known} findings, {known} baselined, 0 new', out)


if __name__ == "__main__":
    unittest.main()
