// A pickle reader for Flight Recorder dumps, without Python. What it reads:
// the opcodes torch::jit::Pickler emits for the plain values a dump holds
// (pickle_str in torch/csrc/distributed/c10d/TraceUtils.h / FlightRecorder:
// protocol 2; EMPTY_DICT + MARK + SETITEMS for new_dict(), EMPTY_LIST + MARK +
// APPENDS for new_list(), MARK + TUPLE for the (name, desc) pair, BINUNICODE
// strings, BININT1 / BININT / LONG1 ints, BINFLOAT, NONE, NEWTRUE / NEWFALSE,
// and the BINPUT / BINGET memo that shares repeated strings and frame dicts),
// the typed-list wrappers torch.jit._pickle.build_{int,double,bool}list and
// restore_type_tag (GLOBAL + REDUCE around the list), and the protocol 3-5
// opcodes CPython's pickle writes for the same values (FRAME, MEMOIZE,
// SHORT_BINUNICODE, BINUNICODE8, BININT2, LONG4, TUPLE1-3, EMPTY_TUPLE,
// STACK_GLOBAL, APPEND, SETITEM). Anything else (tensors, objects, byte
// strings) is refused with the opcode and its offset.
#include "pickle.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

namespace seam::recordings {

namespace {

using nlohmann::json;

/// A value as pickle shares it: the memo and every container hold the same
/// node, so a list memoized before its items were appended (CPython's order)
/// reads back filled, as Python's unpickler gives it.
struct Node {
  enum class Kind { kScalar, kList, kDict, kGlobal } kind = Kind::kScalar;
  json scalar;                               ///< kScalar; kGlobal: "module.name"
  std::vector<std::shared_ptr<Node>> items;  ///< kList (tuples too)
  std::vector<std::pair<std::string, std::shared_ptr<Node>>> entries;  ///< kDict
};
using Ref = std::shared_ptr<Node>;

/// The key a value gets in a JSON object (pickle dicts may key by int).
std::string keyOf(const Node& k) {
  if (k.kind == Node::Kind::kScalar && k.scalar.is_string()) return k.scalar.get<std::string>();
  if (k.kind == Node::Kind::kScalar && k.scalar.is_number_integer())
    return std::to_string(k.scalar.get<std::int64_t>());
  return "?";
}

/// Deep enough for a dump (dict > entries > entry > frames > frame); a
/// deeper or self-containing value is refused rather than followed.
constexpr int kMaxDepth = 32;

bool toJson(const Node& n, int depth, json* out) {
  if (depth > kMaxDepth) return false;
  switch (n.kind) {
    case Node::Kind::kScalar:
      *out = n.scalar;
      return true;
    case Node::Kind::kGlobal:
      *out = json{{"$pickle_global", n.scalar}};
      return true;
    case Node::Kind::kList:
      *out = json::array();
      for (const Ref& item : n.items) {
        json v;
        if (!toJson(*item, depth + 1, &v)) return false;
        out->push_back(std::move(v));
      }
      return true;
    case Node::Kind::kDict:
      *out = json::object();
      for (const auto& [key, value] : n.entries) {
        json v;
        if (!toJson(*value, depth + 1, &v)) return false;
        (*out)[key] = std::move(v);
      }
      return true;
  }
  return false;
}

class Unpickler {
 public:
  Unpickler(const std::string& bytes, std::string label) : b_(bytes), label_(std::move(label)) {}
  Unpickler(const Unpickler&) = delete;
  Unpickler& operator=(const Unpickler&) = delete;
  /// A value may hold itself (a list appended to itself through the memo):
  /// unlink every node so that no cycle of shared pointers outlives the read.
  ~Unpickler() {
    for (const Ref& n : all_) {
      n->items.clear();
      n->entries.clear();
    }
  }

  Expected<json> run() {
    while (at_ < b_.size()) {
      const std::size_t op_at = at_;
      const auto op = static_cast<unsigned char>(b_[at_++]);
      if (op == '.') return stop(op_at);
      if (Status s = step(op, op_at); !s) return s;
    }
    return fail(at_, "the pickle ends before STOP (truncated)");
  }

 private:
  Expected<json> stop(std::size_t op_at) const {
    if (stack_.size() != 1 || !marks_.empty()) return fail(op_at, "STOP with an unbalanced stack");
    json out;
    if (!toJson(*stack_.back(), 0, &out))
      return fail(op_at, "a value nested deeper than " + std::to_string(kMaxDepth) +
                             " (or containing itself)");
    return out;
  }

  Status fail(std::size_t offset, const std::string& why) const {
    return Status::invalid(label_ + ": pickle byte " + std::to_string(offset) + ": " + why);
  }

  /// Reads n bytes little-endian into an unsigned value; false past the end.
  bool readUnsigned(std::size_t n, std::uint64_t* out) {
    if (b_.size() - at_ < n) return false;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b_[at_ + i])) << (8 * i);
    at_ += n;
    *out = v;
    return true;
  }

  bool readBytes(std::uint64_t n, std::string* out) {
    if (b_.size() - at_ < n) return false;
    out->assign(b_, at_, n);
    at_ += n;
    return true;
  }

  bool readLine(std::string* out) {
    const auto end = b_.find('\n', at_);
    if (end == std::string::npos) return false;
    out->assign(b_, at_, end - at_);
    at_ = end + 1;
    return true;
  }

  /// LONG1 / LONG4 payload: little-endian two's complement of n bytes.
  Status pushLong(std::uint64_t n, std::size_t op_at) {
    if (n > 8) return fail(op_at, "an integer of " + std::to_string(n) + " bytes (over 64 bits)");
    std::uint64_t v = 0;
    if (!readUnsigned(n, &v)) return fail(op_at, "truncated integer");
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) != 0) v |= ~std::uint64_t{0} << (8 * n);
    stack_.push_back(scalar(static_cast<std::int64_t>(v)));
    return Status::ok();
  }

  /// Pops the items above the last MARK.
  std::optional<std::vector<Ref>> popMark() {
    if (marks_.empty()) return std::nullopt;
    const auto from = static_cast<long>(marks_.back());
    marks_.pop_back();
    std::vector<Ref> items(stack_.begin() + from, stack_.end());
    stack_.resize(static_cast<std::size_t>(from));
    return items;
  }

  /// Whether n items lie above the last MARK.
  bool has(std::size_t n) const {
    const std::size_t floor = marks_.empty() ? 0 : marks_.back();
    return stack_.size() >= floor + n;
  }

  Ref scalar(json v) {
    Ref n = container(Node::Kind::kScalar);
    n->scalar = std::move(v);
    return n;
  }
  Ref container(Node::Kind kind) {
    all_.push_back(std::make_shared<Node>());
    all_.back()->kind = kind;
    return all_.back();
  }

  bool topIs(Node::Kind kind) const { return !stack_.empty() && stack_.back()->kind == kind; }

  Status step(unsigned char op, std::size_t op_at);
  Status stepMemo(unsigned char op, std::size_t op_at);
  Status stepContainer(unsigned char op, std::size_t op_at);
  Status stepItems(unsigned char op, std::size_t op_at);
  Status stepGlobal(unsigned char op, std::size_t op_at);

  const std::string& b_;
  std::string label_;
  std::size_t at_ = 0;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::map<std::uint64_t, Ref> memo_;
  std::vector<Ref> all_;  ///< every node made, unlinked at the end
};

Status Unpickler::step(unsigned char op, std::size_t op_at) {
  std::uint64_t n = 0;
  std::string s;
  switch (op) {
    case 0x80:  // PROTO
      if (!readUnsigned(1, &n) || n < 2 || n > 5)
        return fail(op_at, "protocol " + std::to_string(n) + " (2 to 5 are read)");
      return Status::ok();
    case 0x95:  // FRAME: an 8-byte length, framing only
      if (!readUnsigned(8, &n)) return fail(op_at, "truncated FRAME");
      return Status::ok();
    case 'K':  // BININT1
    case 'M':  // BININT2
      if (!readUnsigned(op == 'K' ? 1 : 2, &n)) return fail(op_at, "truncated integer");
      stack_.push_back(scalar(static_cast<std::int64_t>(n)));
      return Status::ok();
    case 'J':  // BININT: signed 32-bit
      if (!readUnsigned(4, &n)) return fail(op_at, "truncated integer");
      stack_.push_back(scalar(static_cast<std::int64_t>(static_cast<std::int32_t>(n))));
      return Status::ok();
    case 0x8a:  // LONG1
    case 0x8b:  // LONG4
      if (!readUnsigned(op == 0x8a ? 1 : 4, &n)) return fail(op_at, "truncated integer");
      return pushLong(n, op_at);
    case 'G': {  // BINFLOAT: big-endian double
      if (!readUnsigned(8, &n)) return fail(op_at, "truncated float");
      std::uint64_t be = 0;
      for (int i = 0; i < 8; ++i) be = be << 8 | ((n >> (8 * i)) & 0xff);
      double d = 0;
      std::memcpy(&d, &be, sizeof d);
      stack_.push_back(scalar(d));
      return Status::ok();
    }
    case 'X':     // BINUNICODE
    case 0x8c:    // SHORT_BINUNICODE
    case 0x8d: {  // BINUNICODE8
      const std::size_t width = op == 0x8c ? 1 : op == 'X' ? 4 : 8;
      if (!readUnsigned(width, &n) || !readBytes(n, &s)) return fail(op_at, "truncated string");
      stack_.push_back(scalar(std::move(s)));
      return Status::ok();
    }
    case 'N':
      stack_.push_back(scalar(nullptr));
      return Status::ok();
    case 0x88:  // NEWTRUE
    case 0x89:  // NEWFALSE
      stack_.push_back(scalar(op == 0x88));
      return Status::ok();
    case '(':  // MARK
      marks_.push_back(stack_.size());
      return Status::ok();
    default:
      return stepMemo(op, op_at);
  }
}

Status Unpickler::stepMemo(unsigned char op, std::size_t op_at) {
  std::uint64_t n = 0;
  switch (op) {
    case 'q':     // BINPUT
    case 'r':     // LONG_BINPUT
    case 0x94: {  // MEMOIZE
      if (op != 0x94 && !readUnsigned(op == 'q' ? 1 : 4, &n))
        return fail(op_at, "truncated memo id");
      if (op == 0x94) n = memo_.size();
      if (stack_.empty()) return fail(op_at, "a memo store with nothing on the stack");
      memo_[n] = stack_.back();
      return Status::ok();
    }
    case 'h':    // BINGET
    case 'j': {  // LONG_BINGET
      if (!readUnsigned(op == 'h' ? 1 : 4, &n)) return fail(op_at, "truncated memo id");
      const auto it = memo_.find(n);
      if (it == memo_.end()) return fail(op_at, "memo id " + std::to_string(n) + " never stored");
      stack_.push_back(it->second);
      return Status::ok();
    }
    default:
      return stepContainer(op, op_at);
  }
}

Status Unpickler::stepContainer(unsigned char op, std::size_t op_at) {
  switch (op) {
    case '}':  // EMPTY_DICT
      stack_.push_back(container(Node::Kind::kDict));
      return Status::ok();
    case ']':  // EMPTY_LIST
    case ')':  // EMPTY_TUPLE
      stack_.push_back(container(Node::Kind::kList));
      return Status::ok();
    case 't': {  // TUPLE
      auto items = popMark();
      if (!items) return fail(op_at, "TUPLE without a MARK");
      Ref t = container(Node::Kind::kList);
      t->items = std::move(*items);
      stack_.push_back(std::move(t));
      return Status::ok();
    }
    case 0x85:    // TUPLE1
    case 0x86:    // TUPLE2
    case 0x87: {  // TUPLE3
      const std::size_t k = op - 0x84u;
      if (!has(k)) return fail(op_at, "a short tuple with too few items");
      Ref t = container(Node::Kind::kList);
      t->items.assign(stack_.end() - static_cast<long>(k), stack_.end());
      stack_.resize(stack_.size() - k);
      stack_.push_back(std::move(t));
      return Status::ok();
    }
    default:
      return stepItems(op, op_at);
  }
}

Status Unpickler::stepItems(unsigned char op, std::size_t op_at) {
  std::vector<Ref> items;
  switch (op) {
    case 'e':  // APPENDS
    case 'u':  // SETITEMS
      if (auto marked = popMark()) {
        items = std::move(*marked);
        break;
      }
      return fail(op_at, "APPENDS or SETITEMS without a MARK");
    case 'a':  // APPEND
    case 's':  // SETITEM
      if (!has(op == 'a' ? 2 : 3)) return fail(op_at, "APPEND or SETITEM with too few items");
      items.assign(stack_.end() - (op == 'a' ? 1 : 2), stack_.end());
      stack_.resize(stack_.size() - items.size());
      break;
    default:
      return stepGlobal(op, op_at);
  }
  if (op == 'e' || op == 'a') {
    if (!topIs(Node::Kind::kList)) return fail(op_at, "an append to something not a list");
    for (Ref& v : items) stack_.back()->items.push_back(std::move(v));
    return Status::ok();
  }
  if (items.size() % 2 != 0 || !topIs(Node::Kind::kDict))
    return fail(op_at, "dict items that do not pair up, or not into a dict");
  for (std::size_t i = 0; i < items.size(); i += 2)
    stack_.back()->entries.emplace_back(keyOf(*items[i]), std::move(items[i + 1]));
  return Status::ok();
}

Status Unpickler::stepGlobal(unsigned char op, std::size_t op_at) {
  switch (op) {
    case 'c': {  // GLOBAL: "module\nname\n"
      std::string module, name;
      if (!readLine(&module) || !readLine(&name)) return fail(op_at, "truncated GLOBAL");
      Ref g = container(Node::Kind::kGlobal);
      g->scalar = module + "." + name;
      stack_.push_back(std::move(g));
      return Status::ok();
    }
    case 0x93: {  // STACK_GLOBAL
      const auto isName = [](const Ref& r) {
        return r->kind == Node::Kind::kScalar && r->scalar.is_string();
      };
      if (!has(2) || !isName(stack_.end()[-1]) || !isName(stack_.end()[-2]))
        return fail(op_at, "STACK_GLOBAL without two names");
      Ref g = container(Node::Kind::kGlobal);
      g->scalar = stack_.end()[-2]->scalar.get<std::string>() + "." +
                  stack_.end()[-1]->scalar.get<std::string>();
      stack_.resize(stack_.size() - 2);
      stack_.push_back(std::move(g));
      return Status::ok();
    }
    case 'R': {  // REDUCE: only the typed-list wrappers, which return their list
      if (!has(2) || stack_.end()[-2]->kind != Node::Kind::kGlobal || !topIs(Node::Kind::kList))
        return fail(op_at, "REDUCE on something not a global and its arguments");
      const std::string g = stack_.end()[-2]->scalar.get<std::string>();
      static const char* kWrappers[] = {
          "torch.jit._pickle.build_intlist", "torch.jit._pickle.build_doublelist",
          "torch.jit._pickle.build_boollist", "torch.jit._pickle.restore_type_tag"};
      bool known = false;
      for (const char* w : kWrappers) known = known || g == w;
      if (!known || stack_.back()->items.empty())
        return fail(op_at, "a call of " + g.substr(0, 80) + " (not a value a dump holds)");
      Ref value = stack_.back()->items[0];
      stack_.resize(stack_.size() - 2);
      stack_.push_back(std::move(value));
      return Status::ok();
    }
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      return fail(op_at, std::string("opcode ") + hex +
                             " (tensors, objects and byte strings are not read)");
    }
  }
}

}  // namespace

bool looksLikePickle(const std::string& head) {
  return head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 &&
         head[1] <= 5;
}

Expected<nlohmann::json> unpickle(const std::string& bytes, const std::string& label) {
  return Unpickler(bytes, label).run();
}

}  // namespace seam::recordings
