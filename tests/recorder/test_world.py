"""The forked world and its hub: every rank runs to its end, a raise is a
result with its site, and a mismatch, a deadlock or a timeout is named
instead of hanging."""

import time
import unittest

import torch

from seam_recorder import collectives as C
from seam_recorder.world import run_world, run_world_steps


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



class ARaiseInsideTheRecorderIsTheRecordersOwn(unittest.TestCase):
    def test_an_error_in_the_recorders_code_is_never_the_engines(self):
        def main(r, comm):
            return C.unpack(C.Packed("float32", [2], b"x"))  # three bytes short of one float

        res = run_world(1, main, 20)
        self.assertEqual(res.outcomes[0].status, "recorder-error")
        self.assertTrue(res.outcomes[0].where.startswith("collectives.py:"), res.outcomes[0].where)


class AWorldRunsItsStepsOneAfterAnother(unittest.TestCase):
    """run_world_steps: a server's forwards in sequence, each its own result."""

    def test_each_step_has_its_own_calls_counted_from_zero(self):
        def steps(r, comm):
            for value in (1, 10):
                yield float(reduce(comm, [0, 1], value * (r + 1))[0, 0])

        res = run_world_steps(2, steps, 2, 20)
        self.assertEqual([[o.result for o in step.outcomes] for step in res], [[3.0, 3.0], [30.0, 30.0]])
        self.assertEqual([[c["group_seq"] for c in step.calls[0]] for step in res], [[0], [0]])

    def test_a_raise_in_a_step_is_the_last_step_run(self):
        ran = []

        def steps(r, comm):
            yield r
            if r == 1:
                raise AssertionError("second forward refused")
            yield r
            ran.append(r)

        res = run_world_steps(2, steps, 3, 20)
        self.assertEqual(len(res), 2)
        self.assertEqual(res[1].outcomes[1].status, "raised")
        self.assertEqual(res[1].outcomes[0].status, "ok")

    def test_a_rank_that_issues_fewer_calls_in_a_step_is_a_deadlock_of_that_step(self):
        def steps(r, comm):
            yield r
            if r == 0:
                reduce(comm, [0, 1], 1)
            yield r

        res = run_world_steps(2, steps, 3, 20)
        self.assertEqual(len(res), 2)
        self.assertEqual(res[1].failure_kind, "deadlock")
        self.assertEqual(res[1].outcomes[0].status, "aborted")

    def test_each_step_has_the_whole_timeout(self):
        # Three steps of 2 s each under a 5 s limit: the limit is a step's.
        def steps(r, comm):
            for _ in range(3):
                time.sleep(2.0)
                yield r

        res = run_world_steps(2, steps, 3, 5.0)
        self.assertEqual([step.failure_kind for step in res], ["", "", ""])


class ARanksUnwrittenMemoryIsTheSameOnEveryRun(unittest.TestCase):
    def test_an_allocation_the_rank_does_not_write_reads_as_nan(self):
        res = run_world(1, lambda r, comm: bool(torch.isnan(torch.empty(64)).all()), 20)
        self.assertEqual(res.outcomes[0].result, True)


if __name__ == "__main__":
    unittest.main()
