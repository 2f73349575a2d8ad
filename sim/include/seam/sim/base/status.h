// Expected failures of seam (a bad pattern, a config that does not divide, an
// unreadable file) travel as values up to tools/, which prints one line and
// exits 2. Bugs are asserts; nothing here throws across a library API.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace seam {

/// The start of every refusal that is seam's gap, not the engine's.
inline constexpr std::string_view kNotModelledPrefix = "not modelled yet: ";
/// True for a refusal reason that Status::notModelled made.
inline bool isNotModelled(std::string_view reason) {
  return reason.substr(0, kNotModelledPrefix.size()) == kNotModelledPrefix;
}

/// Why an operation did not succeed. Maps one-to-one onto the exit codes of
/// DESIGN §9 (kInvalidInput and kRefused -> 2, kInternal -> 3). kRefused: a
/// combination the real engine refuses, with the engine's reason; sweeps count
/// it apart from checked cases.
enum class StatusCode { kOk, kInvalidInput, kRefused, kInternal };

/// Success, or a failure with a one-line message naming the bad value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  /// The user gave something wrong: a pattern, an option, a file.
  static Status invalid(std::string message) {
    return Status(StatusCode::kInvalidInput, std::move(message));
  }
  /// The modelled engine refuses this combination (e.g. attention CP for Nemotron-H).
  static Status refused(std::string message) {
    return Status(StatusCode::kRefused, std::move(message));
  }
  /// The engine runs this combination but seam does not model it yet: a
  /// refusal whose message starts with kNotModelledPrefix, so that sweeps and
  /// reports count seam's gaps apart from the engine's refusals.
  static Status notModelled(std::string what);
  /// Something seam or a foreign library failed at (device error, I/O).
  static Status internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }

  bool isOk() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status Status::notModelled(std::string what) {
  return Status(StatusCode::kRefused, std::string(kNotModelledPrefix) + std::move(what));
}

/// A value or the Status that explains why there is none (LLVM's Expected,
/// without the must-check machinery).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}        // NOLINT: implicit by design
  Expected(Status status) : state_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(state_).isOk() && "Expected built from an ok Status");
  }

  bool hasValue() const { return state_.index() == 0; }
  explicit operator bool() const { return hasValue(); }

  T& value() & {
    assert(hasValue() && "value() of an Expected holding an error");
    return std::get<T>(state_);
  }
  const T& value() const& {
    assert(hasValue() && "value() of an Expected holding an error");
    return std::get<T>(state_);
  }
  T&& value() && {
    assert(hasValue() && "value() of an Expected holding an error");
    return std::get<T>(std::move(state_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Status& status() const {
    assert(!hasValue() && "status() of an Expected holding a value");
    return std::get<Status>(state_);
  }

 private:
  std::variant<T, Status> state_;
};

}  // namespace seam
