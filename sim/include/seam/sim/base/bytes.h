// A flat byte encoding for handing records from one process to another (the
// ranks of `mpirun -np N seam ...` and `seam-gpu`, which move the bytes over
// MPI in tools/): integers and doubles as 8 little-endian bytes, strings and
// float arrays as their length then their bytes. Both ends are one build of
// seam, so there is no versioning; a reader never reads past the end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace seam {

class ByteWriter {
 public:
  void put(std::int64_t v) {
    for (int i = 0; i < 8; ++i)
      out_ += static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
  }
  void put(double v) {
    std::int64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put(bits);
  }
  void put(const std::string& s) {
    put(static_cast<std::int64_t>(s.size()));
    out_ += s;
  }
  void put(const std::vector<float>& v) {
    put(static_cast<std::int64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(const std::string& in) : in_(in) {}
  /// False once a read ran past the end or read a bad length.
  bool ok() const { return ok_; }
  bool atEnd() const { return pos_ == in_.size(); }
  std::int64_t int64() {
    if (in_.size() - pos_ < 8) return fail();
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= std::uint64_t{static_cast<unsigned char>(in_[pos_ + i])} << (8 * i);
    pos_ += 8;
    return static_cast<std::int64_t>(v);
  }
  double real() {
    const std::int64_t bits = int64();
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::string text() {
    const std::int64_t n = count(1);
    std::string s = ok_ ? in_.substr(pos_, static_cast<std::size_t>(n)) : std::string();
    pos_ += static_cast<std::size_t>(n);
    return s;
  }
  std::vector<float> floats() {
    const std::int64_t n = count(sizeof(float));
    std::vector<float> v(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(v.data(), in_.data() + pos_, v.size() * sizeof(float));
    pos_ += v.size() * sizeof(float);
    return v;
  }
  /// A count of items that each take at least `min_bytes`: bounded by what
  /// is left, 0 (and not ok) when it is not.
  std::int64_t count(std::size_t min_bytes) {
    const std::int64_t n = int64();
    if (!ok_ || n < 0 || static_cast<std::uint64_t>(n) > (in_.size() - pos_) / min_bytes)
      return fail();
    return n;
  }

 private:
  std::int64_t fail() {
    ok_ = false;
    return 0;
  }
  const std::string& in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace seam
