// Reading the Helmholtz table (see helm_table.hpp).
#include "physics/eos/helmholtz/helm_table.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/error.hpp"
#include "base/sha256.hpp"

namespace tessera::eos::helmholtz {

namespace {

/// A cursor over the table text that reads one line of numbers at a time.
class Reader {
 public:
  Reader(std::string_view text, const std::string& origin)
      : p_(text.data()), end_(text.data() + text.size()), origin_(origin) {}

  /// Reads exactly n numbers from the next line into out; throws on anything else.
  void line(int n, double* out) {
    ++line_no_;
    for (int k = 0; k < n; ++k) {
      skip_blanks();
      if (p_ == end_ || *p_ == '\n' || *p_ == '\r')
        fail("expected " + std::to_string(n) + " numbers, found " + std::to_string(k));
      out[k] = number();
    }
    skip_blanks();
    if (p_ != end_ && *p_ == '\r') ++p_;
    if (p_ != end_ && *p_ != '\n') fail("expected " + std::to_string(n) + " numbers, found more");
    if (p_ != end_) ++p_;
  }

  /// Throws unless only blank space is left.
  void expect_end() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    if (p_ != end_) {
      ++line_no_;
      fail("unexpected data after the last of the 4 blocks");
    }
  }

 private:
  void skip_blanks() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\t')) ++p_;
  }

  double number() {
    const char* start = p_;
    double v = 0.0;
    auto res = std::from_chars(p_, end_, v);
    if (res.ec != std::errc() && res.ec != std::errc::result_out_of_range)
      fail("not a number: '" + token() + "'");
    p_ = res.ptr;
    // Fortran writes a 'D' exponent ("1.5D+03"), or an exponent beyond 99 without the
    // letter ("1.234-105"): rewrite as "mantissa e exponent" and read again, correctly
    // rounded.
    const bool letter = p_ != end_ && (*p_ == 'D' || *p_ == 'd');
    const char* e = letter ? p_ + 1 : p_;
    const bool exponent = letter || (e != end_ && (*e == '+' || *e == '-') && e + 1 != end_ &&
                                     e[1] >= '0' && e[1] <= '9');
    if (exponent || res.ec == std::errc::result_out_of_range) {
      const char* q = e;
      if (exponent && q != end_ && (*q == '+' || *q == '-')) ++q;
      while (exponent && q != end_ && *q >= '0' && *q <= '9') ++q;
      std::string tok(start, static_cast<std::size_t>(res.ptr - start));
      if (exponent) tok += 'e' + std::string(e, static_cast<std::size_t>(q - e));
      // strtod also rounds what from_chars calls out of range (subnormals: to 0 or denormal).
      char* stop = nullptr;
      v = std::strtod(tok.c_str(), &stop);
      if (stop != tok.c_str() + tok.size()) fail("bad exponent in '" + token() + "'");
      p_ = q;
    }
    if (p_ != end_ && !(*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r'))
      fail("not a number: '" + token() + "'");
    if (!std::isfinite(v)) fail("not a finite number");
    return v;
  }

  std::string token() const {
    const char* q = p_;
    while (q != end_ && !(*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') && q - p_ < 40) ++q;
    return std::string(p_, static_cast<std::size_t>(q - p_));
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw Error("Helmholtz table '" + origin_ + "' is malformed: line " + std::to_string(line_no_) +
                ": " + why + " (a helm_table.dat has 4 blocks of " +
                std::to_string(HelmTable::imax * HelmTable::jmax) + " lines)");
  }

  const char* p_;
  const char* end_;
  const std::string& origin_;
  long line_no_ = 0;
};

}  // namespace

void HelmTable::build_grid() {
  const Grid& g = standard_grid;
  const double dstep = g.dens_log_step(), tstep = g.temp_log_step();
  dstpi_ = 1.0 / dstep;
  tstpi_ = 1.0 / tstep;
  d_.resize(imax);
  t_.resize(jmax);
  for (int i = 0; i < imax; ++i) d_[i] = g.dens_node(i);
  for (int j = 0; j < jmax; ++j) t_[j] = g.temp_node(j);
  auto spacings = [](const std::vector<double>& x, std::vector<double>& h, std::vector<double>& h2,
                     std::vector<double>& hi, std::vector<double>& h2i) {
    const std::size_t n = x.size();
    h.assign(n, 0.0);
    h2.assign(n, 0.0);
    hi.assign(n, 0.0);
    h2i.assign(n, 0.0);
    for (std::size_t k = 0; k + 1 < n; ++k) {
      h[k] = x[k + 1] - x[k];
      h2[k] = h[k] * h[k];
      hi[k] = 1.0 / h[k];
      h2i[k] = 1.0 / h2[k];
    }
  };
  spacings(d_, dd_, dd2_, ddi_, dd2i_);
  spacings(t_, dt_, dt2_, dti_, dt2i_);
}

std::shared_ptr<const HelmTable> HelmTable::parse(std::string_view text,
                                                  const std::string& origin) {
  std::shared_ptr<HelmTable> t(new HelmTable());
  t->path_ = origin;
  t->sha256_ = base::sha256_hex(text);
  const std::size_t nodes = static_cast<std::size_t>(imax) * jmax;
  t->f_.resize(nodes * nf);
  t->c_.resize(nodes * nc);
  Reader r(text, origin);
  for (std::size_t k = 0; k < nodes; ++k) r.line(nf, &t->f_[k * nf]);
  for (int block = 0; block < 3; ++block)
    for (std::size_t k = 0; k < nodes; ++k) r.line(4, &t->c_[k * nc + 4 * block]);
  r.expect_end();
  t->build_grid();
  return t;
}

std::string HelmTable::binary_cache_path(const std::string& path) {
  return path + ".bin";
}

namespace {

// The binary copy of a parsed table (HelmTable::load): this header, then the f and c
// arrays as the machine's doubles. `one` (1.0) and the sizes refuse a copy of another
// format or byte order; the text's size and modification time (ns) a stale one.
struct CacheHeader {
  char magic[16];
  std::uint64_t text_size;
  std::int64_t text_mtime_ns;
  std::int32_t imax, jmax, nf, nc;
  double one;
  char sha256[64];
};
constexpr char kCacheMagic[16] = {'t', 'e', 's', 's', 'e', 'r', 'a', ' ',
                                  'h', 'e', 'l', 'm', ' ', 'v', '1', '\n'};

std::int64_t mtime_ns(const struct stat& st) {
  return std::int64_t(st.st_mtim.tv_sec) * 1000000000 + std::int64_t(st.st_mtim.tv_nsec);
}

}  // namespace

std::shared_ptr<const HelmTable> HelmTable::load(const std::string& path_in) {
  const std::string path = path_in.empty() ? std::string(default_table_path) : path_in;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT)
    throw Error("Helmholtz table '" + path + "' not found: build it with `make helm-table`");
  const std::size_t nodes = static_cast<std::size_t>(imax) * jmax;
  const std::string cache = binary_cache_path(path);
  {
    std::ifstream in(cache, std::ios::binary);
    CacheHeader h{};
    if (in && in.read(reinterpret_cast<char*>(&h), sizeof h) &&
        std::memcmp(h.magic, kCacheMagic, sizeof h.magic) == 0 &&
        h.text_size == std::uint64_t(st.st_size) && h.text_mtime_ns == mtime_ns(st) &&
        h.imax == imax && h.jmax == jmax && h.nf == nf && h.nc == nc && h.one == 1.0) {
      std::shared_ptr<HelmTable> t(new HelmTable());
      t->path_ = path;
      t->sha256_.assign(h.sha256, sizeof h.sha256);
      t->f_.resize(nodes * nf);
      t->c_.resize(nodes * nc);
      in.read(reinterpret_cast<char*>(t->f_.data()),
              static_cast<std::streamsize>(t->f_.size() * sizeof(double)));
      in.read(reinterpret_cast<char*>(t->c_.data()),
              static_cast<std::streamsize>(t->c_.size() * sizeof(double)));
      if (in && in.peek() == std::char_traits<char>::eof()) {
        t->build_grid();
        return t;
      }
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read Helmholtz table '" + path + "': " + std::strerror(errno));
  std::string text;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size > 0) {
    text.resize(static_cast<std::size_t>(size));
    in.seekg(0);
    in.read(text.data(), size);
  }
  if (!in) throw Error("cannot read Helmholtz table '" + path + "': read failed");
  auto t = parse(text, path);
  // The binary copy, where the directory takes it (a read-only one keeps only the text).
  CacheHeader h{};
  std::memcpy(h.magic, kCacheMagic, sizeof h.magic);
  h.text_size = std::uint64_t(st.st_size);
  h.text_mtime_ns = mtime_ns(st);
  h.imax = imax, h.jmax = jmax, h.nf = nf, h.nc = nc;
  h.one = 1.0;
  if (t->sha256_.size() == sizeof h.sha256) {
    std::memcpy(h.sha256, t->sha256_.data(), sizeof h.sha256);
    static std::atomic<unsigned> writes{0};  // two threads of a process: two names
    const std::string tmp =
        cache + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
    bool ok = false;
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(&h), sizeof h);
      out.write(reinterpret_cast<const char*>(t->f_.data()),
                static_cast<std::streamsize>(t->f_.size() * sizeof(double)));
      out.write(reinterpret_cast<const char*>(t->c_.data()),
                static_cast<std::streamsize>(t->c_.size() * sizeof(double)));
      ok = bool(out.flush());
    }
    if (!ok || std::rename(tmp.c_str(), cache.c_str()) != 0) std::remove(tmp.c_str());
  }
  return t;
}

}  // namespace tessera::eos::helmholtz
