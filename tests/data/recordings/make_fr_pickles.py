#!/usr/bin/env python3
"""Builds tests/data/recordings/fr_pickle/ from the JSON dumps beside it (BUILT, not
recorded: no PyTorch here). A Flight Recorder's default dump (_dump_nccl_trace, the file
TORCH_NCCL_DEBUG_INFO_TEMP_FILE names) is not JSON but the same dict pickled by
torch::jit::Pickler (pickle_str in torch/csrc/distributed/c10d/TraceUtils.h and
FlightRecorder: Pickler(writer, ..., tag_aggregates_with_types=false), protocol(),
pushIValue(dict), stop()). This script writes what that pickler writes for such a dict,
following the rules of torch/csrc/jit/serialization/pickler.cpp (read through the index):

  - PROTO 2 first, STOP last;
  - a generic dict (new_dict()): EMPTY_DICT, MARK, key, value, ..., SETITEMS;
  - a generic list (new_list()): EMPTY_LIST, MARK, items, APPENDS;
  - a tuple (process_group's (name, desc)): MARK, items, TUPLE;
  - a string: BINUNICODE (4-byte length), memoized by content (BINGET when seen again);
  - an int: BININT1 for 0..255, BININT for 32 bits, else LONG1 with 8 bytes;
  - a float: BINFLOAT (big-endian); None: NONE; bools: NEWTRUE / NEWFALSE;
  - every pointer-typed value (string, list, dict, tuple) gets BINPUT once pushed, and a
    value pushed again (the same frame dict shared by several entries) is a BINGET.

Pickled dumps carry stack frames (FlightRecorder.hpp leaves them out of JSON only), so
each entry gets two frames shared between entries, as the recorder shares one frame dict
per distinct frame: the SGLang function that issues the call, then the model forward.

Also written: correct_py4, the same dicts through CPython's own pickle at protocol 4
(FRAME, MEMOIZE, SHORT_BINUNICODE, TUPLE2, ...), for a dump re-saved from Python.
Run: python3 tests/data/recordings/make_fr_pickles.py (rewrites fr_pickle/).
"""
import json
import os
import pickle
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = ["correct", "extra_allreduce"]


class JitPickler:
    """torch::jit::Pickler's output for the plain values of a Flight Recorder dict."""

    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo_next = 0
        self.strings = {}
        self.objects = {}

    def put(self):
        self.out += b"q" + bytes([self.memo_next]) if self.memo_next < 256 else (
            b"r" + struct.pack("<I", self.memo_next))
        self.memo_next += 1
        return self.memo_next - 1

    def get(self, memo_id):
        self.out += b"h" + bytes([memo_id]) if memo_id < 256 else (
            b"j" + struct.pack("<I", memo_id))

    def push(self, v):
        shared = isinstance(v, (dict, list, Tuple)) and id(v) in self.objects
        if shared:
            return self.get(self.objects[id(v)])
        if isinstance(v, bool):
            self.out += b"\x88" if v else b"\x89"
        elif v is None:
            self.out += b"N"
        elif isinstance(v, int):
            if 0 <= v <= 255:
                self.out += b"K" + bytes([v])
            elif -2**31 <= v < 2**31:
                self.out += b"J" + struct.pack("<i", v)
            else:
                self.out += b"\x8a\x08" + struct.pack("<q", v)
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            if v in self.strings:
                self.get(self.strings[v])
            else:
                data = v.encode()
                self.out += b"X" + struct.pack("<I", len(data)) + data
                self.strings[v] = self.put()
            self.put()  # pushIValue memoizes the string IValue too
        elif isinstance(v, Tuple):
            self.out += b"("
            for item in v.items:
                self.push(item)
            self.out += b"t"
            self.objects[id(v)] = self.put()
        elif isinstance(v, list):
            self.out += b"]("
            for item in v:
                self.push(item)
            self.out += b"e"
            self.objects[id(v)] = self.put()
        elif isinstance(v, dict):
            self.out += b"}("
            for k, item in v.items():
                self.push(k)
                self.push(item)
            self.out += b"u"
            self.objects[id(v)] = self.put()
        else:
            raise TypeError(type(v))

    def dump(self, v):
        self.push(v)
        self.out += b"."
        return bytes(self.out)


class Tuple:
    def __init__(self, items):
        self.items = items


FRAMES = {}


def frame(name, filename, line):
    key = (name, filename, line)
    if key not in FRAMES:
        FRAMES[key] = {"name": name, "filename": filename, "line": line}
    return FRAMES[key]


def issuer(profiling_name):
    if "all_reduce" in profiling_name:
        return frame("all_reduce", "sglang/srt/distributed/parallel_state.py", 0)
    if "reduce_scatter" in profiling_name:
        return frame("reduce_scatter_tensor", "sglang/srt/distributed/parallel_state.py", 0)
    return frame("all_gather_into_tensor", "sglang/srt/distributed/parallel_state.py", 0)


def with_frames(dump, tuples):
    for e in dump["entries"]:
        if not e.get("frames"):  # the planted dumps' own frame is kept
            e["frames"] = [issuer(e["profiling_name"]),
                           frame("forward", "sglang/srt/models/nemotron_h.py", 0)]
        if tuples:
            e["process_group"] = Tuple(e["process_group"])
    return dump


def main():
    out_root = os.path.join(HERE, "fr_pickle")
    shutil.rmtree(out_root, ignore_errors=True)
    for source in SOURCES:
        src = os.path.join(HERE, "fr", source)
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name)) as f:
                dump = json.load(f)
            os.makedirs(os.path.join(out_root, source), exist_ok=True)
            with open(os.path.join(out_root, source, name), "wb") as f:
                f.write(JitPickler().dump(with_frames(dump, tuples=True)))
            if source == "correct":
                with open(os.path.join(src, name)) as f:
                    plain = with_frames(json.load(f), tuples=False)
                os.makedirs(os.path.join(out_root, "correct_py4"), exist_ok=True)
                with open(os.path.join(out_root, "correct_py4", name), "wb") as f:
                    pickle.dump(plain, f, protocol=4)


if __name__ == "__main__":
    main()
