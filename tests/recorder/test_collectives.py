"""The hub's arithmetic: each collective's result as NCCL defines it, and the
pairs of calls that are not one collective."""

import unittest

import torch

from seam_recorder import collectives as C


def t(*rows):
    return torch.tensor(rows, dtype=torch.float32)


class PointToPoint(unittest.TestCase):
    def test_a_recv_takes_the_senders_tensor_into_its_own_shape(self):
        out = C.complete([C.Call("send", t(1.0, 2.0, 3.0, 4.0)), C.Call("recv", torch.zeros(2, 2))])
        self.assertIsNone(out[0])
        self.assertTrue(torch.equal(out[1], t([1.0, 2.0], [3.0, 4.0])))

    def test_a_recv_buffer_of_another_size_does_not_pair(self):
        with self.assertRaises(C.Mismatch):
            C.complete([C.Call("send", t(1.0, 2.0)), C.Call("recv", torch.zeros(3))])


class CollectivesComputeWhatNcclDefines(unittest.TestCase):
    def test_an_all_reduce_gives_every_member_the_sum(self):
        out = C.complete([C.Call("all_reduce", t([1.0, 2.0])), C.Call("all_reduce", t([10.0, 20.0]))])
        for o in out:
            self.assertTrue(torch.equal(o, t([11.0, 22.0])))

    def test_a_reduce_scatter_gives_each_member_its_chunk_of_the_sum(self):
        a, b = t([1.0], [2.0]), t([10.0], [20.0])
        out = C.complete([C.Call("reduce_scatter_tensor", a), C.Call("reduce_scatter_tensor", b)])
        self.assertTrue(torch.equal(out[0], t([11.0])))
        self.assertTrue(torch.equal(out[1], t([22.0])))

    def test_an_all_gather_concatenates_in_group_order(self):
        out = C.complete([C.Call("all_gather_into_tensor", t([1.0])), C.Call("all_gather_into_tensor", t([2.0]))])
        self.assertTrue(torch.equal(out[1], t([1.0], [2.0])))

    def test_v_collectives_follow_their_sizes(self):
        a = t([1.0], [2.0], [3.0])
        out = C.complete([C.Call("reduce_scatterv", a, sizes=[1, 2]), C.Call("reduce_scatterv", a, sizes=[1, 2])])
        self.assertEqual([o.shape[0] for o in out], [1, 2])
        g = C.complete([C.Call("all_gatherv", t([1.0]), sizes=[1, 2]), C.Call("all_gatherv", t([2.0], [3.0]), sizes=[1, 2])])
        self.assertEqual(g[0].shape[0], 3)

    def test_an_all_to_all_sends_each_member_its_chunk(self):
        out = C.complete([C.Call("all_to_all_single", t([1.0], [2.0])), C.Call("all_to_all_single", t([3.0], [4.0]))])
        self.assertTrue(torch.equal(out[0], t([1.0], [3.0])))
        self.assertTrue(torch.equal(out[1], t([2.0], [4.0])))

    def test_a_packed_tensor_comes_back_bit_for_bit(self):
        x = torch.randn(3, 5).to(torch.bfloat16)
        self.assertTrue(torch.equal(C.unpack(C.pack(x)), x))


class CallsThatDoNotPairAreMismatches(unittest.TestCase):
    def test_different_collectives_on_one_group(self):
        with self.assertRaises(C.Mismatch):
            C.complete([C.Call("all_reduce", t([1.0])), C.Call("all_gather_into_tensor", t([1.0]))])

    def test_an_all_reduce_of_different_shapes(self):
        with self.assertRaises(C.Mismatch):
            C.complete([C.Call("all_reduce", t([1.0])), C.Call("all_reduce", t([1.0], [2.0]))])

    def test_a_reduce_scatter_that_does_not_split_evenly(self):
        with self.assertRaises(C.Mismatch):
            C.complete([C.Call("reduce_scatter_tensor", t([1.0], [2.0], [3.0]))] * 2)


if __name__ == "__main__":
    unittest.main()
