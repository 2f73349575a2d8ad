// Private to sim/: the exact domain's value (ledger_domains.h), a list of
// (term key, coefficient) pairs sorted by key, stored so that the rows of a
// large replay share what they hold alike.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

namespace seam::ledger_detail {

/// An exact value: its (term key, coefficient) pairs sorted by key.
///
/// Copies share one list until one of them changes (copy on write): a
/// collective hands the same rows to every member of its group. A sum whose
/// added terms all sort after the value's (a later stage's partials onto a
/// residual) is kept as the two values it joins, sharing their lists, when
/// either is long: every rank's residual row held its own copy of every
/// earlier stage's partial sums, and of its padding rows' junk. Each list
/// carries an id, new whenever its terms change (never reused on a thread),
/// so that equal ids mean equal terms (ExactDomain::add remembers sums by them).
class TermList {
 public:
  using Term = std::pair<std::uint64_t, std::int64_t>;
  using List = std::vector<Term>;

  TermList() = default;
  TermList(std::initializer_list<Term> terms) : node_(std::make_shared<Node>(List(terms))) {}
  explicit TermList(List&& terms)
      : node_(terms.empty() ? nullptr : std::make_shared<Node>(std::move(terms))) {}

  bool empty() const { return !node_ || node_->count() == 0; }
  size_t size() const { return node_ ? node_->count() : 0; }
  const Term& front() const { return node_->head(); }
  const Term& back() const { return node_->tail(); }
  /// The id of this value's terms (0: none).
  std::uint64_t id() const { return node_ ? node_->id : 0; }
  /// Calls f(term) for every term in key order until it returns false;
  /// whether it visited them all.
  template <class F>
  bool each(F&& f) const {
    return !node_ || visit(node_.get(), f);
  }
  /// The terms as one list (copied out of a joined value).
  List flat() const {
    List out;
    out.reserve(size());
    each([&out](const Term& t) {
      out.push_back(t);
      return true;
    });
    return out;
  }
  /// The terms of a value held as one list; nullptr for a joined one.
  const List* leaf() const {
    static const List kEmpty;
    return !node_ ? &kEmpty : node_->leaf() ? &node_->terms : nullptr;
  }
  bool operator==(const TermList& o) const;

  /// This value's own list, to change in place (a shared or joined one is
  /// copied first, with room for `extra` more terms); its id is new.
  List& own(size_t extra = 0) {
    if (!node_) {
      node_ = std::make_shared<Node>(List{});
    } else if (node_.use_count() > 1 || !node_->leaf()) {
      List copy;
      copy.reserve(size() + extra);
      each([&copy](const Term& t) {
        copy.push_back(t);
        return true;
      });
      node_ = std::make_shared<Node>(std::move(copy));
    } else {
      node_->id = nextId();
    }
    return node_->terms;
  }
  /// this := this followed by b, every key of b above this one's last (the
  /// caller's promise): b's list is shared when the sum is long, appended
  /// in place when this list is its own and b short, else copied.
  void append(const TermList& b);
  /// The value becomes the one term `key` (coefficient 1), in its own list
  /// when that list is short and not shared; a long sum's is freed, as a new
  /// value would.
  void setOne(std::uint64_t key) {
    if (!node_ || node_.use_count() > 1 || !node_->leaf() || node_->terms.capacity() > kShortList) {
      node_ = std::make_shared<Node>(List(1, Term{key, 1}));
      return;
    }
    node_->terms.assign(1, Term{key, 1});
    node_->id = nextId();
  }

 private:
  friend class ExactDomain;  // shares equal sums (ExactDomain::add)
  /// A list of its own (a leaf), or two joined values: left's terms, then right's.
  struct Node {
    explicit Node(List&& t) : terms(std::move(t)), id(nextId()) {}
    Node(std::shared_ptr<Node> l, std::shared_ptr<Node> r)
        : left(std::move(l)),
          right(std::move(r)),
          size(left->count() + right->count()),
          first(left->head()),
          last(right->tail()),
          depth(1 + std::max(left->depth, right->depth)),
          id(nextId()) {}
    bool leaf() const { return !left; }
    size_t count() const { return leaf() ? terms.size() : size; }
    const Term& head() const { return leaf() ? terms.front() : first; }
    const Term& tail() const { return leaf() ? terms.back() : last; }
    List terms;
    // A joined value's parts never change: a part is held by its join (and
    // maybe by rows, which copy it before changing it).
    std::shared_ptr<Node> left, right;
    size_t size = 0;
    Term first{}, last{};
    std::uint32_t depth = 0;  // of joins below (visit recurses this deep)
    std::uint64_t id;
  };
  template <class F>
  static bool visit(const Node* n, F& f) {
    for (; !n->leaf(); n = n->right.get()) {
      if (!visit(n->left.get(), f)) return false;
    }
    for (const Term& t : n->terms) {
      if (!f(t)) return false;
    }
    return true;
  }
  static std::uint64_t nextId() {
    thread_local std::uint64_t last = 0;
    return ++last;
  }
  static constexpr size_t kShortList = 8;
  /// A sum at least this long shares its parts' lists instead of copying them.
  static constexpr size_t kJoinFrom = 64;
  /// Joins deeper than this are copied into one list instead.
  static constexpr std::uint32_t kMaxDepth = 1024;
  std::shared_ptr<Node> node_;
};

}  // namespace seam::ledger_detail
