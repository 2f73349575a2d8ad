"""The forked world and its hub: every rank runs to its end, a raise is a
result with its site, and a mismatch, a deadlock or a timeout is named
instead of hanging."""

import time
import unittest

import torch

from seam_recorder import collectives as C
from seam_recorder.world import run_world


def reduce(comm, group, value, op="all_reduce"):
    return comm.collective(tuple(group), "g", C.Call(op, torch.full((2, 4), float(value))), {"op": op})


class TheWorldRunsEveryRank(unittest.TestCase):
    def test_ranks_that_reduce_together_all_get_the_sum(self):
        res = run_world(3, lambda r, comm: float(reduce(comm, [0, 1, 2], r)[0, 0]), 20)
        self.assertEqual([o.status for o in res.outcomes], ["ok"] * 3)
        self.assertEqual([o.result for o in res.outcomes], [3.0] * 3)
        self.assertEqual([len(c) for c in res.calls], [1, 1, 1])
        self.assertEqual(res.failure, "")

    def test_a_rank_that_raises_is_recorded_with_its_message(self):
        def main(r, comm):
            if r == 1:
                raise AssertionError("rank one refuses")
            return 0

        res = run_world(2, main, 20)
        self.assertEqual(res.outcomes[1].status, "raised")
        self.assertIn("rank one refuses", res.outcomes[1].error)
        self.assertEqual(res.outcomes[0].status, "ok")


class AWorldThatCannotFinishIsNamed(unittest.TestCase):
    def test_members_issuing_different_collectives_are_a_mismatch(self):
        res = run_world(2, lambda r, comm: reduce(comm, [0, 1], r, "all_reduce" if r == 0 else "all_gather_into_tensor"), 20)
        self.assertEqual(res.failure_kind, "mismatch")
        self.assertIn("different collectives", res.failure)
        self.assertEqual({o.status for o in res.outcomes}, {"aborted"})

    def test_a_rank_waiting_on_a_member_that_finished_is_a_deadlock(self):
        def main(r, comm):
            if r == 0:
                reduce(comm, [0, 1], 1)
            return r

        res = run_world(2, main, 20)
        self.assertEqual(res.failure_kind, "deadlock")
        self.assertEqual(res.outcomes[0].status, "aborted")
        self.assertEqual(res.outcomes[1].status, "ok")

    def test_a_rank_that_never_returns_is_stopped_at_the_timeout(self):
        def main(r, comm):
            if r == 1:
                time.sleep(60)
            return r

        start = time.monotonic()
        res = run_world(2, main, 1.0)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(res.failure_kind, "timeout")
        self.assertEqual(res.outcomes[1].status, "hung")


if __name__ == "__main__":
    unittest.main()


class ARaiseInsideTheRecorderIsTheRecordersOwn(unittest.TestCase):
    def test_an_error_in_the_recorders_code_is_never_the_engines(self):
        def main(r, comm):
            return C.unpack(C.Packed("float32", [2], b"x"))  # three bytes short of one float

        res = run_world(1, main, 20)
        self.assertEqual(res.outcomes[0].status, "recorder-error")
        self.assertTrue(res.outcomes[0].where.startswith("collectives.py:"), res.outcomes[0].where)
