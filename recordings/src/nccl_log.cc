// NCCL's own log under NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL, as
// NVIDIA/nccl formats it (read at 5067397c, v2.30): every line starts
// "[timestamp] host:pid:tid [cudaDev] NCCL INFO " (src/debug.cc); a call is
// "<Op>: opCount %lx sendbuff %p recvbuff %p count %zu datatype %d op %d root
// %d comm %p [nranks=%d] stream %p" (src/enqueue.cc, ncclEnqueueCheck); a
// communicator is "<fn> comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId
// %lx commId 0x%llx - Init COMPLETE", or "... parent %p childCount %d color
// %d key %d - Init COMPLETE" for a split (src/init.cc). The call line names
// no rank: a process's global rank is its rank in the communicator that
// spans every process, and a communicator's members come from the Init lines
// of every process that shares its commId (or its parent and color).
#include <map>
#include <sstream>

#include "readers.h"
#include "seam/reports/input_file.h"

namespace seam::recordings {

namespace {

/// Bounds that keep count * nranks within 64 bits (2^48 elements is far
/// past any GPU's memory; 2^20 ranks past any job).
constexpr std::int64_t kMaxCount = std::int64_t{1} << 40;
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;

struct Comm {
  std::string key;  ///< "0x<commId>" or "split(<parent key>,<color>)"
  int nranks = 0;
  std::map<int, int> members;  ///< rank in the communicator -> process index
};

struct PendingCall {
  RecordedCall call;
  std::string comm_key;
  int nranks = 0;
  std::int64_t root = -1;  ///< Broadcast, Reduce: the root's rank in the communicator
};

struct Process {
  std::string name;                              ///< host:pid
  std::map<std::string, std::string> comms;      ///< comm pointer -> key (latest Init)
  std::map<std::string, std::int64_t> calls_on;  ///< communicator key -> calls issued on it
  std::vector<PendingCall> calls;
};

struct LogState {
  std::vector<Process> procs;
  std::map<std::string, int> proc_of;
  std::map<std::string, Comm> comms;
};

struct LineError {
  const std::string& path;
  int line;
  Status operator()(const std::string& what) const {
    return Status::invalid(fileLabel("log", path) + ", line " + std::to_string(line) + ": " + what);
  }
};

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// The value after `key` among `w` ("" when absent), a trailing '-' cut
/// (NCCL's split line prints "key %d- Init").
std::string after(const std::vector<std::string>& w, const std::string& key) {
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    if (w[i] == key) {
      std::string v = w[i + 1];
      if (!v.empty() && v.back() == '-') v.pop_back();
      return v;
    }
  }
  return "";
}

bool toInt(const std::string& s, std::int64_t* out, int base = 10) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, base);
  if (errno != 0 || end == nullptr || *end != '\0') return false;
  *out = v;
  return true;
}

CallKind kindOf(const std::string& op) {
  if (op == "AllReduce") return CallKind::kAllReduce;
  if (op == "AllGather") return CallKind::kAllGather;
  if (op == "ReduceScatter") return CallKind::kReduceScatter;
  if (op == "AlltoAll") return CallKind::kAllToAll;
  if (op == "Send") return CallKind::kSend;
  if (op == "Recv") return CallKind::kRecv;
  return CallKind::kOther;
}

constexpr const char* kNcclOps[] = {
    "AllGather",     "AllReduce", "AlltoAll", "Broadcast", "Gather",    "Recv",   "Reduce",
    "ReduceScatter", "Scatter",   "SendRecv", "Send",      "PutSignal", "Signal", "WaitSignal"};

Status readInit(const std::vector<std::string>& w, Process& proc, LogState& st,
                const LineError& err) {
  std::int64_t rank = 0, nranks = 0;
  const std::string ptr = after(w, "comm");
  if (ptr.empty() || !toInt(after(w, "rank"), &rank) || !toInt(after(w, "nranks"), &nranks) ||
      rank < 0 || nranks < 1 || rank >= nranks || nranks > kMaxRanks)
    return err("a communicator line without comm, rank and nranks");
  std::string key = after(w, "commId");
  if (key.empty()) {
    const std::string parent = after(w, "parent");
    const auto it = proc.comms.find(parent);
    if (parent.empty() || it == proc.comms.end())
      return err("communicator " + ptr +
                 " has neither a commId nor a parent initialised before it");
    key = "split(" + it->second + "," + after(w, "color") + ")";
  }
  Comm& comm = st.comms[key];
  comm.key = key;
  if (comm.nranks != 0 && comm.nranks != nranks)
    return err("communicator " + key + " has " + std::to_string(nranks) + " ranks here, " +
               std::to_string(comm.nranks) + " before");
  comm.nranks = static_cast<int>(nranks);
  comm.members[static_cast<int>(rank)] = st.proc_of[proc.name];
  proc.comms[ptr] = key;
  return Status::ok();
}

Status readCall(const std::string& op, const std::vector<std::string>& w, Process& proc,
                const LineError& err) {
  std::int64_t count = 0, dtype = 0, root = 0, nranks = 0, seq = 0;
  std::string ranks;
  for (const auto& x : w)
    if (x.rfind("[nranks=", 0) == 0) ranks = x.substr(8, x.size() - 9);
  if (!toInt(after(w, "count"), &count) || !toInt(after(w, "datatype"), &dtype) ||
      !toInt(after(w, "root"), &root) || !toInt(ranks, &nranks) ||
      !toInt(after(w, "opCount"), &seq, 16) || after(w, "comm").empty())
    return err("the " + op + " line lacks one of opCount, count, datatype, root, comm, [nranks=N]");
  if (count < 0 || count > kMaxCount || nranks < 1 || nranks > kMaxRanks)
    return err("count " + std::to_string(count) + " or nranks " + std::to_string(nranks) +
               " is out of range");
  const auto it = proc.comms.find(after(w, "comm"));
  if (it == proc.comms.end())
    return err("comm " + after(w, "comm") +
               " has no Init COMPLETE line before it (log with "
               "NCCL_DEBUG_SUBSYS=INIT,COLL from the start)");
  PendingCall p;
  p.comm_key = it->second;
  // The call's position on its communicator, not opCount: NCCL 2.28 prints
  // opCount 0 for every call of a one-rank communicator.
  seq = proc.calls_on[it->second]++;
  p.nranks = static_cast<int>(nranks);
  RecordedCall& c = p.call;
  c.op = op;
  c.kind = kindOf(op);
  c.seq = seq;
  c.dtype = canonicalDtype(std::to_string(dtype));
  c.in_elems = c.out_elems = count;
  if (c.kind == CallKind::kAllGather) c.out_elems = count * nranks;
  if (c.kind == CallKind::kReduceScatter) c.in_elems = count * nranks;
  if (c.kind == CallKind::kAllToAll) c.in_elems = c.out_elems = count * nranks;
  if (c.kind == CallKind::kSend || c.kind == CallKind::kRecv) c.peer = static_cast<int>(root);
  if (op == "Broadcast" || op == "Reduce") p.root = root;
  c.where =
      err.path.empty() ? "" : fileLabel("log", err.path) + ", line " + std::to_string(err.line);
  proc.calls.push_back(std::move(p));
  return Status::ok();
}

/// One line: a call, a communicator, or anything else (skipped).
Status readLine(const std::string& text, LogState& st, const LineError& err, int* nccl_lines) {
  static const std::string kInfo = " NCCL INFO ";
  const auto at = text.find(kInfo);
  if (at == std::string::npos) return Status::ok();
  ++*nccl_lines;
  const std::vector<std::string> head = words(text.substr(0, at));
  if (head.size() < 2 || head.back().front() != '[')
    return err("an NCCL INFO line without \"host:pid:tid [cudaDev]\" before it");
  const std::string& hpt = head[head.size() - 2];
  const auto tid = hpt.rfind(':');
  if (tid == std::string::npos || tid == 0)
    return err("\"" + hpt.substr(0, 60) + "\" is not host:pid:tid");
  const std::string name = hpt.substr(0, tid);
  if (st.proc_of.find(name) == st.proc_of.end()) {
    st.proc_of[name] = static_cast<int>(st.procs.size());
    st.procs.push_back(Process{name, {}, {}, {}});
  }
  Process& proc = st.procs[st.proc_of[name]];
  const std::string msg = text.substr(at + kInfo.size());
  const std::vector<std::string> w = words(msg);
  if (w.empty()) return Status::ok();
  const auto colon = w[0].find(':');
  if (colon != std::string::npos && w.size() > 1 && w[1] == "opCount") {
    const std::string op = w[0].substr(0, colon);
    for (const char* known : kNcclOps)
      if (op == known) return readCall(op, w, proc, err);
    return err("\"" + op.substr(0, 40) + "\" is not an NCCL collective");
  }
  if (msg.find("Init COMPLETE") != std::string::npos && w.size() > 2 && w[1] == "comm")
    return readInit(w, proc, st, err);
  return Status::ok();
}

}  // namespace

namespace {

/// Whether calls[i, i + 2n) are one grouped all-to-all on one communicator
/// of n ranks: a Send to and a Recv from every member, itself included, as
/// ProcessGroupNCCL runs all_to_all_single without ncclAlltoAll.
bool groupedAllToAll(const std::vector<PendingCall>& calls, std::size_t i) {
  const int n = calls[i].nranks;
  if (n < 2 || i + 2 * static_cast<std::size_t>(n) > calls.size()) return false;
  std::vector<int> sends(n, 0), recvs(n, 0);
  for (std::size_t k = i; k < i + 2 * static_cast<std::size_t>(n); ++k) {
    const RecordedCall& c = calls[k].call;
    if (calls[k].comm_key != calls[i].comm_key || c.peer < 0 || c.peer >= n) return false;
    if (c.kind == CallKind::kSend)
      ++sends[c.peer];
    else if (c.kind == CallKind::kRecv)
      ++recvs[c.peer];
    else
      return false;
  }
  for (int p = 0; p < n; ++p)
    if (sends[p] != 1 || recvs[p] != 1) return false;
  return true;
}

/// Grouped all-to-alls folded into one call each: in, the elements sent;
/// out, the elements received (the splits are in the log, per peer).
void foldAllToAlls(std::vector<PendingCall>* calls) {
  std::vector<PendingCall> out;
  for (std::size_t i = 0; i < calls->size();) {
    if (!groupedAllToAll(*calls, i)) {
      out.push_back(std::move((*calls)[i++]));
      continue;
    }
    PendingCall a = (*calls)[i];
    const std::size_t n = static_cast<std::size_t>(a.nranks);
    a.call.kind = CallKind::kAllToAll;
    a.call.op = "Send/Recv x " + std::to_string(n) + " (grouped)";
    a.call.in_elems = a.call.out_elems = 0;
    a.call.peer = -1;
    for (std::size_t k = i; k < i + 2 * n; ++k) {
      const RecordedCall& c = (*calls)[k].call;
      (c.kind == CallKind::kSend ? a.call.in_elems : a.call.out_elems) += c.in_elems;
    }
    out.push_back(std::move(a));
    i += 2 * n;
  }
  *calls = std::move(out);
}

/// Whether calls[i, i + n) are one grouped v-collective on one communicator
/// of n ranks: n calls of one rooted op, rooted once at every member, as
/// SGLang's pynccl communicator issues `all_gather` (ncclBroadcast) and
/// `reduce_scatter` (ncclReduce) with per-member sizes (pynccl.py
/// @06c48ca8; NCCL logs every call of a group, a zero count included).
bool groupedRooted(const std::vector<PendingCall>& calls, std::size_t i) {
  const int n = calls[i].nranks;
  const std::string& op = calls[i].call.op;
  if (calls[i].root < 0 || n < 2 || i + static_cast<std::size_t>(n) > calls.size()) return false;
  std::vector<int> roots(n, 0);
  for (std::size_t k = i; k < i + static_cast<std::size_t>(n); ++k) {
    const PendingCall& c = calls[k];
    if (c.comm_key != calls[i].comm_key || c.call.op != op || c.root < 0 || c.root >= n ||
        roots[c.root]++ > 0)
      return false;
  }
  return true;
}

/// Grouped Broadcasts folded into one all_gatherv (in: this rank's own
/// slice, the call rooted at it; out: every slice) and grouped Reduces into
/// one reduce_scatterv (in: every chunk; out: this rank's). `rank_in`: this
/// process's rank in each communicator.
void foldVCollectives(std::vector<PendingCall>* calls, const std::map<std::string, int>& rank_in) {
  std::vector<PendingCall> out;
  for (std::size_t i = 0; i < calls->size();) {
    const auto me = rank_in.find((*calls)[i].comm_key);
    if (me == rank_in.end() || !groupedRooted(*calls, i)) {
      out.push_back(std::move((*calls)[i++]));
      continue;
    }
    PendingCall v = (*calls)[i];
    const std::size_t n = static_cast<std::size_t>(v.nranks);
    const bool gather = v.call.op == "Broadcast";
    std::int64_t all = 0, mine = 0;
    for (std::size_t k = i; k < i + n; ++k) {
      all += (*calls)[k].call.in_elems;
      if ((*calls)[k].root == me->second) mine = (*calls)[k].call.in_elems;
    }
    v.call.kind = gather ? CallKind::kAllGatherv : CallKind::kReduceScatterv;
    v.call.op = v.call.op + " x " + std::to_string(n) +
                (gather ? " (grouped all_gatherv)" : " (grouped reduce_scatterv)");
    v.call.in_elems = gather ? mine : all;
    v.call.out_elems = gather ? all : mine;
    v.root = -1;
    out.push_back(std::move(v));
    i += n;
  }
  *calls = std::move(out);
}

/// The world: the communicator with the most ranks; each process's global
/// rank is its rank there.
Expected<Recording> assemble(const std::string& source, LogState& st) {
  const Comm* world = nullptr;
  for (const auto& [key, comm] : st.comms)
    if (world == nullptr || comm.nranks > world->nranks) world = &comm;
  if (world == nullptr)
    return Status::invalid(fileLabel("log", source) +
                           ": no \"Init COMPLETE\" line: log with NCCL_DEBUG=INFO "
                           "NCCL_DEBUG_SUBSYS=INIT,COLL");
  std::vector<int> global(st.procs.size(), -1);
  for (const auto& [rank, proc] : world->members) global[proc] = rank;
  for (std::size_t p = 0; p < st.procs.size(); ++p) {
    if (global[p] < 0)
      return Status::invalid(fileLabel("log", source) + ": process " +
                             st.procs[p].name.substr(0, 80) + " is not in communicator " +
                             world->key +
                             ", the one that spans the world: its global rank is unknown");
  }
  Recording rec;
  rec.format = "nccl-log";
  rec.source = source;
  rec.ranks.resize(world->nranks);
  rec.present.assign(world->nranks, false);
  rec.lost_front.assign(world->nranks, false);
  std::map<std::string, int> group_of;
  for (const auto& [key, comm] : st.comms) {
    RecordedGroup g;
    g.name = "comm " + key;
    g.members.assign(comm.nranks, -1);
    for (const auto& [rank, proc] : comm.members) g.members[rank] = global[proc];
    group_of[key] = static_cast<int>(rec.groups.size());
    rec.groups.push_back(std::move(g));
  }
  for (std::size_t p = 0; p < st.procs.size(); ++p) {
    std::map<std::string, int> rank_in;
    for (const auto& [key, comm] : st.comms)
      for (const auto& [rank, proc] : comm.members)
        if (proc == static_cast<int>(p)) rank_in[key] = rank;
    foldAllToAlls(&st.procs[p].calls);
    foldVCollectives(&st.procs[p].calls, rank_in);
    rec.present[global[p]] = true;
    for (PendingCall& c : st.procs[p].calls) {
      c.call.group = group_of[c.comm_key];
      rec.ranks[global[p]].push_back(std::move(c.call));
    }
  }
  for (int r = 0; r < world->nranks; ++r) {
    if (!rec.present[r])
      rec.partial.push_back({r, "no log of rank " + std::to_string(r) + " (communicator " +
                                    world->key + " has " + std::to_string(world->nranks) +
                                    " ranks)"});
  }
  return rec;
}

}  // namespace

Expected<Recording> readNcclLogs(const std::vector<std::string>& paths) {
  LogState st;
  for (const std::string& path : paths) {
    auto reader =
        reports::LineReader::open(fileLabel("log", path), path, kMaxLogBytes, kMaxLogLineBytes);
    if (!reader) return reader.status();
    std::string text;
    int nccl_lines = 0;
    for (;;) {
      auto more = reader->next(&text);
      if (!more) return more.status();
      if (!*more) break;
      if (Status s = readLine(text, st, LineError{path, reader->lineNumber()}, &nccl_lines); !s)
        return s;
    }
    if (nccl_lines == 0)
      return Status::invalid(fileLabel("log", path) +
                             ": no \"NCCL INFO\" line: not an NCCL log (NCCL_DEBUG=INFO)");
  }
  return assemble(paths.size() == 1 ? paths[0] : paths[0].substr(0, paths[0].rfind('/')), st);
}

}  // namespace seam::recordings
