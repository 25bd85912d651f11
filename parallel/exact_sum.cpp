// Exact sums of doubles (exact_sum.hpp).
#include "parallel/exact_sum.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tessera::parallel {

namespace {
// GCC's and Clang's 128-bit integer (__extension__: not ISO C++, and -Wpedantic says so).
__extension__ typedef unsigned __int128 u128;
constexpr std::int64_t kMask = 0xffffffffLL;
// Additions a digit takes before its carries must be made: each adds less than 2^33 in
// magnitude (a digit of another normalised accumulator plus its carry), so 2^29 keep it
// far inside int64.
constexpr std::int64_t kPendingMax = std::int64_t(1) << 29;
}  // namespace

void ExactSum::add(double x) {
  if (!std::isfinite(x)) {
    special_ += x;
    return;
  }
  if (x == 0.0) return;
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const bool neg = (bits >> 63) != 0;
  const int biased = int((bits >> 52) & 0x7ff);
  std::uint64_t m = bits & ((std::uint64_t(1) << 52) - 1);
  int p = 0;  // x = m 2^(p - 1074), p >= 0
  if (biased == 0) {
    p = 0;  // subnormal: m 2^-1074
  } else {
    m |= std::uint64_t(1) << 52;
    p = biased - 1;
  }
  const int k = p / 32, s = p % 32;
  const u128 v = static_cast<u128>(m) << s;  // < 2^85
  const auto d0 = std::int64_t(std::uint64_t(v) & kMask);
  const auto d1 = std::int64_t(std::uint64_t(v >> 32) & kMask);
  const auto d2 = std::int64_t(std::uint64_t(v >> 64));
  if (neg) {
    d_[std::size_t(k)] -= d0, d_[std::size_t(k) + 1] -= d1, d_[std::size_t(k) + 2] -= d2;
  } else {
    d_[std::size_t(k)] += d0, d_[std::size_t(k) + 1] += d1, d_[std::size_t(k) + 2] += d2;
  }
  if (++pending_ >= kPendingMax) normalise();
}

void ExactSum::add(const ExactSum& o) {
  ExactSum b = o;
  b.normalise();
  normalise();
  for (int i = 0; i < kDigits; ++i) d_[std::size_t(i)] += b.d_[std::size_t(i)];
  special_ += o.special_;
  pending_ = 1;
}

void ExactSum::normalise() {
  for (int i = 0; i + 1 < kDigits; ++i) {
    const std::int64_t c = d_[std::size_t(i)] >> 32;  // floor division by 2^32
    d_[std::size_t(i)] -= c * (std::int64_t(1) << 32);
    d_[std::size_t(i) + 1] += c;
  }
  pending_ = 0;
}

double ExactSum::value() const {
  if (special_ != 0.0) return special_;  // NaN or an infinity (NaN != 0 too)
  ExactSum a = *this;
  a.normalise();
  const bool neg = a.d_[kDigits - 1] < 0;
  if (neg) {
    for (auto& x : a.d_) x = -x;
    a.normalise();
  }
  int h = kDigits - 1;
  while (h >= 0 && a.d_[std::size_t(h)] == 0) --h;
  if (h < 0) return 0.0;
  // The top 96 bits (three digits), and whether anything below them is not zero.
  u128 v = 0;
  for (int i = h; i >= h - 2; --i) v = (v << 32) | (i >= 0 ? unsigned(a.d_[std::size_t(i)]) : 0u);
  bool sticky = false;
  for (int i = h - 3; i >= 0 && !sticky; --i) sticky = a.d_[std::size_t(i)] != 0;
  const int low = 32 * (h - 2) - 1074;  // the weight of v's lowest bit
  int nb = 0;
  for (u128 t = v; t != 0; t >>= 1) ++nb;
  int shift = nb - 53;
  std::uint64_t mant = 0;
  if (shift <= 0) {
    mant = std::uint64_t(v);  // exact (nothing below: sticky is false when h < 2)
    shift = 0;
  } else {
    mant = std::uint64_t(v >> shift);
    const u128 rem = v & ((static_cast<u128>(1) << shift) - 1);
    const u128 half = static_cast<u128>(1) << (shift - 1);
    if (rem > half || (rem == half && (sticky || (mant & 1u) != 0))) ++mant;
  }
  const double r = std::ldexp(double(mant), low + shift);  // mant <= 2^53: exact
  return neg ? -r : r;
}

// The wire format of one quantity for the MPI operation: the digits (carries made first)
// and the special sum.
struct ExactSumWire {
  std::int64_t d[ExactSum::kDigits];
  double special;
  static ExactSumWire of(ExactSum a) {
    a.normalise();
    ExactSumWire w{};
    std::memcpy(w.d, a.d_.data(), sizeof(w.d));
    w.special = a.special_;
    return w;
  }
  ExactSum sum() const {
    ExactSum a;
    std::memcpy(a.d_.data(), d, sizeof(d));
    a.special_ = special;
    a.pending_ = 1;
    return a;
  }
};
static_assert(sizeof(ExactSumWire) == ExactSum::kBytes, "ExactSum::kBytes");

namespace {
void add_wires(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<ExactSumWire*>(in);
  auto* b = static_cast<ExactSumWire*>(inout);
  for (int q = 0; q < *len; ++q) {
    ExactSum s = b[q].sum();
    s.add(a[q].sum());
    b[q] = ExactSumWire::of(s);
  }
}
}  // namespace

namespace {
/// A contiguous type of `bytes` bytes and a commutative user operation on it.
struct UserSum {
  MPI_Datatype type;
  MPI_Op op;
  UserSum(int bytes, MPI_User_function* fn) {
    MPI_Type_contiguous(bytes, MPI_BYTE, &type);
    MPI_Type_commit(&type);
    MPI_Op_create(fn, /*commute=*/1, &op);
  }
};
}  // namespace

std::vector<double> exact_allreduce(MPI_Comm comm, const std::vector<ExactSum>& parts) {
  // The type and the operation, made once per process (MPI_Finalize frees them).
  static const UserSum sum(ExactSum::kBytes, &add_wires);
  const MPI_Datatype type = sum.type;
  const MPI_Op op = sum.op;
  std::vector<ExactSumWire> in(parts.size()), out(parts.size());
  for (std::size_t q = 0; q < parts.size(); ++q) in[q] = ExactSumWire::of(parts[q]);
  MPI_Allreduce(in.data(), out.data(), int(in.size()), type, op, comm);
  std::vector<double> r(parts.size());
  for (std::size_t q = 0; q < parts.size(); ++q) r[q] = out[q].sum().value();
  return r;
}

}  // namespace tessera::parallel

namespace tessera::parallel {

namespace {
__extension__ typedef __int128 i128;
i128 to_i128(const WindowedSums::Acc& a) {
  return static_cast<i128>((static_cast<u128>(a.hi) << 64) | a.lo);
}
void add_accs(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint64_t*>(in);
  auto* b = static_cast<std::uint64_t*>(inout);
  for (int q = 0; q < *len; ++q) {  // two's complement: unsigned addition with the carry
    const u128 s = ((static_cast<u128>(a[2 * q + 1]) << 64) | a[2 * q]) +
                   ((static_cast<u128>(b[2 * q + 1]) << 64) | b[2 * q]);
    b[2 * q] = std::uint64_t(s), b[2 * q + 1] = std::uint64_t(s >> 64);
  }
}
}  // namespace

std::vector<int> WindowedSums::exponents(MPI_Comm comm, std::vector<int> local) {
  std::vector<int> e(local.size());
  MPI_Allreduce(local.data(), e.data(), int(local.size()), MPI_INT, MPI_MAX, comm);
  return e;
}

std::vector<int> WindowedSums::shifts(const std::vector<int>& e, long max_terms) {
  if (max_terms < 1 || max_terms > (1L << 40))
    throw std::invalid_argument("WindowedSums: max_terms must be in [1, 2^40]");
  int bits = 0;  // 2^bits >= max_terms
  while ((1L << bits) < max_terms) ++bits;
  std::vector<int> s(e.size(), 0);
  for (std::size_t q = 0; q < e.size(); ++q)
    if (e[q] != kNone && e[q] != kNonFinite) s[q] = e[q] + bits - 126;  // |x| / 2^s < 2^(126-bits)
  return s;
}

void WindowedSums::add(Acc& a, double x, int s) {
  // x = mant 2^ex exactly; x / 2^s rounded to the nearest integer (ties to even) in
  // integer arithmetic. It is below 2^(126 - bits) in magnitude (|x| < 2^e), and 2^bits of
  // them fit in a signed 128-bit integer.
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int biased = int((bits >> 52) & 0x7ff);
  const std::uint64_t frac = bits & ((std::uint64_t(1) << 52) - 1);
  const std::uint64_t mant = biased == 0 ? frac : frac | (std::uint64_t(1) << 52);
  const int shift = (biased == 0 ? -1074 : biased - 1075) - s;
  u128 v = 0;
  if (shift >= 0) {
    v = static_cast<u128>(mant) << shift;
  } else if (shift > -64) {
    const int k = -shift;
    std::uint64_t r = mant >> k;
    const std::uint64_t rem = mant & ((std::uint64_t(1) << k) - 1), half = std::uint64_t(1)
                                                                           << (k - 1);
    if (rem > half || (rem == half && (r & 1))) ++r;
    v = r;
  }
  if (bits >> 63) v = ~v + 1;  // two's complement
  const u128 t = ((static_cast<u128>(a.hi) << 64) | a.lo) + v;
  a.lo = std::uint64_t(t), a.hi = std::uint64_t(t >> 64);
}

std::vector<double> WindowedSums::finish(MPI_Comm comm, const std::vector<int>& e,
                                         const std::vector<int>& s, std::vector<Acc>& acc) {
  static_assert(sizeof(Acc) == 16, "two 64-bit words");
  static const UserSum op(sizeof(Acc), &add_accs);  // once per process
  std::vector<Acc> sum(acc.size());
  MPI_Allreduce(acc.data(), sum.data(), int(acc.size()), op.type, op.op, comm);
  std::vector<double> r(acc.size(), 0.0);
  for (std::size_t q = 0; q < acc.size(); ++q) {
    if (e[q] == kNonFinite) {
      r[q] = std::numeric_limits<double>::quiet_NaN();
    } else if (e[q] != kNone) {
      // One rounding: the integer to the nearest double; the scaling by 2^s is exact unless
      // the sum is subnormal (then it rounds once more, below 2^-1022).
      r[q] = std::ldexp(static_cast<double>(to_i128(sum[q])), s[q]);
    }
  }
  return r;
}

}  // namespace tessera::parallel
