// The distributed, verified read of a FLASH file (restart): read_flash_metadata gives every
// rank the small part of a file, checked against the checksum manifest on rank 0 (with
// io/flash_check.cpp and io/flash_reader.cpp); read_flash_rows then reads each rank's own
// rows of the variables with collective MPI-IO and verifies them against the manifest as
// they arrive; read_flash_particles does the same for its rows' particles. It writes nothing, and
// it never holds the whole file on one rank.
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "io/flash_file.hpp"
#include "io/flash_format.hpp"
#include "io/flash_internal.hpp"
#include "io/hdf5_util.hpp"
#include "io/manifest.hpp"
#include "parallel/comm.hpp"

namespace tessera::io {
namespace {

using namespace detail;  // NOLINT(google-build-using-namespace): io's own internals
using parallel::agree;

template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

/// Moves values to or from bytes; Self provides bytes(pointer, size). One `fields` list
/// serves both directions, so packing and unpacking cannot disagree.
template <class Self>
class Archive {
 public:
  template <class T>
  void operator()(T& x) {
    auto& self = static_cast<Self&>(*this);
    if constexpr (std::is_arithmetic_v<T>) {
      self.bytes(&x, sizeof x);
    } else if constexpr (std::is_same_v<T, std::string>) {
      std::uint64_t n = x.size();
      self.bytes(&n, sizeof n);
      x.resize(n);  // unchanged when packing
      self.bytes(x.data(), n);
    } else if constexpr (std::is_same_v<T, ManifestEntry>) {
      (*this)(x.name);
      (*this)(x.crc32);
      (*this)(x.bytes);
    } else if constexpr (IsPair<T>::value) {
      (*this)(x.first);
      (*this)(x.second);
    } else {  // std::vector
      std::uint64_t n = x.size();
      self.bytes(&n, sizeof n);
      x.resize(n);
      if constexpr (std::is_arithmetic_v<typename T::value_type>) {
        self.bytes(x.data(), n * sizeof(typename T::value_type));
      } else {
        for (auto& e : x) (*this)(e);
      }
    }
  }
};

class Packer : public Archive<Packer> {
 public:
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const char*>(p);
    out.append(b, n);
  }
  std::string out;  ///< bytes, for parallel::broadcast
};

class Unpacker : public Archive<Unpacker> {
 public:
  explicit Unpacker(const std::string& in) : in_(in) {}
  void bytes(void* p, std::size_t n) {
    if (n > in_.size() - at_) throw Error("FLASH file metadata: broadcast too short");
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  std::size_t at_ = 0;
};

template <class Ar>
void fields(Ar& ar, FlashFileMeta& m) {
  FlashFileSpec& s = m.spec;
  ar(s.path);
  ar(s.double_precision);
  ar(s.ndim);
  ar(s.nxb);
  ar(s.nyb);
  ar(s.nzb);
  ar(s.refine_level);
  ar(s.node_type);
  ar(s.gid);
  ar(s.bounding_box);
  ar(s.coordinates);
  ar(s.block_size);
  ar(s.processor_number);
  ar(s.int_scalars);
  ar(s.int_runtime);
  ar(s.real_scalars);
  ar(s.real_runtime);
  ar(s.str_scalars);
  ar(s.str_runtime);
  ar(s.log_scalars);
  ar(s.log_runtime);
  ar(s.var_names);
  ar(s.grid);
  ar(s.particle_names);
  ar(s.localnp);
  ar(m.variables);
  ar(m.particles);
}

/// The first problem, and how many more there are.
std::string first_problem(const std::vector<std::string>& problems) {
  if (problems.empty()) return {};
  std::string s = problems.front();
  if (problems.size() > 1) s += " (+" + std::to_string(problems.size() - 1) + " more)";
  return s;
}

/// A manifest entry that is not one of the writer's own datasets is a variable.
bool is_variable(const std::string& name) {
  return name != kManifestName && reserved_names().count(name) == 0;
}

constexpr const char* kTracer = "tracer particles";

/// What read_flash_metadata leaves to the distributed reads: the variables and the
/// particles (rank 0 checks only that they are there).
bool is_bulk(const std::string& name) {
  return is_variable(name) || name == kTracer;
}

/// read_flash_rows: one collective H5Dread per variable into a buffer of this rank's rows,
/// the CRC-32 of each row taken from that buffer, chained on rank 0.
class RowReader {
 public:
  RowReader(MPI_Comm comm, const FlashFileMeta& meta, const std::vector<int>& rows,
            const std::vector<std::pair<std::string, std::string>>& hints)
      : comm_(comm),
        meta_(meta),
        s_(meta.spec),
        rows_(rows),
        hints_(hints),
        c_("cannot read FLASH file '" + meta.spec.path + "': "),
        n_(meta.spec.refine_level.size()),
        cells_(static_cast<std::size_t>(meta.spec.nxb) * meta.spec.nyb * meta.spec.nzb) {
    MPI_Comm_rank(comm, &rank_);
  }

  void run(const std::vector<std::string>& names, const RowSink& sink) {
    agree(comm_, check_rows());
    gather_rows();
    open_file();
    dxpl_ = c_.check(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
    c_.check(H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    std::vector<std::string> problems;
    std::vector<double> buf(rows_.size() * cells_);  // one variable's rows
    for (std::size_t v = 0; v < names.size(); ++v) {
      std::string why = read_variable(names[v], v, buf, sink);
      if (!why.empty()) problems.push_back(std::move(why));
    }
    dxpl_.close();
    agree(comm_, file_.close() < 0 ? c_.message("H5Fclose failed") : std::string());
    // Replicated problems are on every rank, checksum mismatches on rank 0 only: rank 0
    // (the lowest) holds them all.
    agree(comm_, first_problem(problems));
  }

 private:
  /// This rank's rows: strictly ascending, inside the file.
  std::string check_rows() const {
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      if (rows_[r] < 0 || static_cast<std::size_t>(rows_[r]) >= n_) {
        return c_.message("row " + std::to_string(rows_[r]) + " is outside 0.." +
                          std::to_string(n_ - 1));
      }
      if (r > 0 && rows_[r] <= rows_[r - 1]) return c_.message("rows are not strictly ascending");
    }
    return {};
  }

  /// Collective: rank 0 learns every rank's rows (for the checksum chain) and checks that
  /// each row of the file is read by exactly one rank.
  void gather_rows() {
    const int nranks = parallel::size(comm_);
    const int mine = static_cast<int>(rows_.size());
    if (rank_ == 0) counts_.resize(static_cast<std::size_t>(nranks));
    MPI_Gather(&mine, 1, MPI_INT, counts_.data(), 1, MPI_INT, 0, comm_);
    std::string why;
    if (rank_ == 0) {
      displs_.assign(counts_.size(), 0);
      std::size_t total = 0;
      for (std::size_t r = 0; r < counts_.size(); ++r) {
        displs_[r] = static_cast<int>(total);
        total += static_cast<std::size_t>(counts_[r]);
      }
      all_rows_.resize(total);
    }
    MPI_Gatherv(rows_.data(), mine, MPI_INT, all_rows_.data(), counts_.data(), displs_.data(),
                MPI_INT, 0, comm_);
    if (rank_ == 0) {
      std::vector<int> readers(n_, 0);
      for (const int row : all_rows_) ++readers[static_cast<std::size_t>(row)];
      for (std::size_t row = 0; row < n_ && why.empty(); ++row) {
        if (readers[row] != 1) {
          why = c_.message("row " + std::to_string(row) + " is read by " +
                           std::to_string(readers[row]) + " ranks, expected 1");
        }
      }
    }
    agree(comm_, why);
  }

  void open_file() {
    std::string why;
    try {
      Handle fapl = c_.check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
      set_fapl_mpio(c_, fapl.get(), comm_, hints_);
      file_ = c_.check(H5Fopen(s_.path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose,
                       "H5Fopen (MPI-IO)");
    } catch (const Error& e) {
      why = e.what();
    }
    agree(comm_, why);
  }

  /// Collective: read and checksum one variable, hand its rows to sink. Returns the
  /// problem (the same on every rank, or on rank 0 for a checksum mismatch); throws on
  /// every rank if the read itself fails.
  std::string read_variable(const std::string& name, std::size_t v, std::vector<double>& buf,
                            const RowSink& sink) {
    const std::string dataset = "dataset '" + name + "'";
    const auto it = std::find(s_.var_names.begin(), s_.var_names.end(), name);
    if (it == s_.var_names.end()) return dataset + " is missing (not in 'unknown names')";
    const ManifestEntry& entry =
        meta_.variables[static_cast<std::size_t>(it - s_.var_names.begin())];
    const std::size_t row_bytes = cells_ * sizeof(double);

    // Type, shape and size as stored: little-endian f64 of (N, nzb, nyb, nxb). Every rank sees
    // the same file, so the outcome is the same everywhere; agreed all the same.
    Handle dset(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    Handle ftype(dset.get() >= 0 ? H5Dget_type(dset.get()) : H5I_INVALID_HID, H5Tclose);
    Handle fspace(dset.get() >= 0 ? H5Dget_space(dset.get()) : H5I_INVALID_HID, H5Sclose);
    std::string local;
    if (dset.get() < 0 || ftype.get() < 0 || fspace.get() < 0) {
      local = dataset + " cannot be opened";
    } else if (H5Tequal(ftype.get(), H5T_IEEE_F64LE) <= 0) {
      local = dataset + " is not stored as little-endian f64";
    } else {
      const std::array<hsize_t, 4> want{n_, static_cast<hsize_t>(s_.nzb),
                                        static_cast<hsize_t>(s_.nyb), static_cast<hsize_t>(s_.nxb)};
      std::array<hsize_t, 4> got{};
      if (H5Sget_simple_extent_ndims(fspace.get()) != 4 ||
          H5Sget_simple_extent_dims(fspace.get(), got.data(), nullptr) < 0 || got != want) {
        local = dataset + " is not of shape (" + std::to_string(n_) + "," + std::to_string(s_.nzb) +
                "," + std::to_string(s_.nyb) + "," + std::to_string(s_.nxb) + ")";
      } else if (entry.bytes != n_ * row_bytes) {
        local = dataset + " holds " + std::to_string(n_ * row_bytes) + " bytes, manifest says " +
                std::to_string(entry.bytes);
      }
    }
    if (auto [first, text] = parallel::first_message(comm_, local); first >= 0) return text;

    // Collective read of this rank's rows (an empty selection where it has none), with the
    // file's own type as memory type: the bytes as stored, which are native doubles here.
    std::string why;
    const std::size_t count = rows_.size() * cells_;
    try {
      select_rows(c_, fspace, rows_, {s_.nzb, s_.nyb, s_.nxb}, name);
      const hsize_t mdim = std::max<hsize_t>(count, 1);
      Handle mspace = c_.check(H5Screate_simple(1, &mdim, nullptr), H5Sclose,
                               "H5Screate_simple" + quoted(name));
      if (count == 0) c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
      double no_data = 0.0;  // collective reads want a valid pointer
      if (H5Dread(dset.get(), H5T_IEEE_F64LE, mspace.get(), fspace.get(), dxpl_.get(),
                  count == 0 ? &no_data : buf.data()) < 0) {
        why = dataset + ": HDF5 cannot read the rows of rank " + std::to_string(rank_) +
              " (damaged data or metadata)";
      }
    } catch (const Error& e) {
      why = dataset + ": " + e.what();
    }
    agree(comm_, why);

    std::vector<std::uint32_t> crc(rows_.size());
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      const double* row = buf.data() + r * cells_;
      crc[r] = crc_of_bytes(row, row_bytes);
      sink(v, r, row);
    }

    // The chain over all rows in file order is the CRC-32 of the whole dataset.
    std::vector<std::uint32_t> all(rank_ == 0 ? all_rows_.size() : 0);
    MPI_Gatherv(crc.data(), static_cast<int>(crc.size()), MPI_UINT32_T, all.data(), counts_.data(),
                displs_.data(), MPI_UINT32_T, 0, comm_);
    if (rank_ != 0) return {};
    std::vector<std::uint32_t> by_row(n_, 0);
    for (std::size_t i = 0; i < all.size(); ++i) {
      by_row[static_cast<std::size_t>(all_rows_[i])] = all[i];
    }
    const std::uint32_t computed = chain_row_crcs(by_row, row_bytes);
    if (computed == entry.crc32) return {};
    return checksum_mismatch(dataset, entry.crc32, computed);
  }

  MPI_Comm comm_;
  const FlashFileMeta& meta_;
  const FlashFileSpec& s_;
  const std::vector<int>& rows_;
  const std::vector<std::pair<std::string, std::string>>& hints_;
  Context c_;
  std::size_t n_, cells_;
  int rank_ = 0;
  std::vector<int> counts_, displs_, all_rows_;  ///< rank 0: every rank's rows, rank order
  Handle file_;                                  // declared before dxpl_ so it is closed after it
  Handle dxpl_;
};

/// read_flash_particles: one collective H5Dread of this rank's rows' particles, the
/// CRC-32 of each row's particles taken from the buffer, chained on rank 0.
class ParticleReader {
 public:
  ParticleReader(MPI_Comm comm, const FlashFileMeta& meta, const std::vector<int>& rows,
                 const std::vector<std::pair<std::string, std::string>>& hints)
      : comm_(comm),
        meta_(meta),
        s_(meta.spec),
        rows_(rows),
        hints_(hints),
        c_("cannot read FLASH file '" + meta.spec.path + "': "),
        n_(meta.spec.localnp.size()),
        nprop_(meta.spec.particle_names.size()),
        first_(particle_offsets(meta.spec.localnp)) {
    MPI_Comm_rank(comm, &rank_);
  }

  std::vector<double> run() {
    agree(comm_, check_rows());
    std::vector<double> buf(count_ * nprop_);
    open_file();
    dxpl_ = c_.check(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
    c_.check(H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    std::string problem = read(buf);
    dxpl_.close();
    agree(comm_, file_.close() < 0 ? c_.message("H5Fclose failed") : std::string());
    agree(comm_, problem);  // a checksum mismatch is known on rank 0, the lowest
    return buf;
  }

 private:
  /// Collective: this rank's rows ascending and inside the file; every row with particles
  /// read by exactly one rank (rows without any may be read by any number).
  std::string check_rows() {
    std::string why;
    for (std::size_t r = 0; r < rows_.size() && why.empty(); ++r) {
      if (rows_[r] < 0 || static_cast<std::size_t>(rows_[r]) >= n_) {
        why = c_.message("row " + std::to_string(rows_[r]) + " is outside 0.." +
                         std::to_string(n_ - 1));
      } else if (r > 0 && rows_[r] <= rows_[r - 1]) {
        why = c_.message("rows are not strictly ascending");
      }
    }
    agree(comm_, why);
    for (const int row : rows_) count_ += static_cast<std::size_t>(s_.localnp[row]);
    std::vector<int> readers(n_, 0);
    for (const int row : rows_) ++readers[static_cast<std::size_t>(row)];
    MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : readers.data(), readers.data(), static_cast<int>(n_),
               MPI_INT, MPI_SUM, 0, comm_);
    if (rank_ != 0) return {};
    for (std::size_t row = 0; row < n_; ++row) {
      if (s_.localnp[row] > 0 && readers[row] != 1) {
        return c_.message("row " + std::to_string(row) + " (" + std::to_string(s_.localnp[row]) +
                          " particles) is read by " + std::to_string(readers[row]) +
                          " ranks, expected 1");
      }
    }
    return {};
  }

  void open_file() {
    std::string why;
    try {
      Handle fapl = c_.check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
      set_fapl_mpio(c_, fapl.get(), comm_, hints_);
      file_ = c_.check(H5Fopen(s_.path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose,
                       "H5Fopen (MPI-IO)");
    } catch (const Error& e) {
      why = e.what();
    }
    agree(comm_, why);
  }

  /// Collective: read and checksum this rank's particles. Returns the problem (the same
  /// on every rank, or on rank 0 for a checksum mismatch); throws on every rank if the read
  /// itself fails.
  std::string read(std::vector<double>& buf) {
    const std::string dataset = std::string("dataset '") + kTracer + "'";
    const std::size_t row_bytes = nprop_ * sizeof(double);
    const hsize_t npart = first_[n_];

    // Type, shape and size as stored: little-endian f64 of (sum of localnp, nprop).
    Handle dset(H5Dopen2(file_.get(), kTracer, H5P_DEFAULT), H5Dclose);
    Handle ftype(dset.get() >= 0 ? H5Dget_type(dset.get()) : H5I_INVALID_HID, H5Tclose);
    Handle fspace(dset.get() >= 0 ? H5Dget_space(dset.get()) : H5I_INVALID_HID, H5Sclose);
    std::string local;
    std::array<hsize_t, 2> got{};
    if (dset.get() < 0 || ftype.get() < 0 || fspace.get() < 0) {
      local = dataset + " cannot be opened";
    } else if (H5Tequal(ftype.get(), H5T_IEEE_F64LE) <= 0) {
      local = dataset + " is not stored as little-endian f64";
    } else if (H5Sget_simple_extent_ndims(fspace.get()) != 2 ||
               H5Sget_simple_extent_dims(fspace.get(), got.data(), nullptr) < 0 ||
               got != std::array<hsize_t, 2>{npart, nprop_}) {
      local = dataset + " is not of shape (" + std::to_string(npart) + "," +
              std::to_string(nprop_) + ")";
    } else if (meta_.particles.bytes != npart * row_bytes) {
      local = dataset + " holds " + std::to_string(npart * row_bytes) + " bytes, manifest says " +
              std::to_string(meta_.particles.bytes);
    }
    if (auto [first, text] = parallel::first_message(comm_, local); first >= 0) return text;

    // Collective read of this rank's rows' particles (nothing where it has none; no read
    // at all when the file holds no particles), as stored: native doubles here.
    std::string why;
    if (npart > 0) {
      try {
        std::vector<std::pair<hsize_t, hsize_t>> ranges;
        for (const int row : rows_) {
          const auto b = static_cast<std::size_t>(row);
          ranges.emplace_back(first_[b], first_[b + 1] - first_[b]);
        }
        select_row_ranges(c_, fspace, ranges, nprop_, kTracer);
        const std::size_t count = buf.size();
        const hsize_t mdim = std::max<hsize_t>(count, 1);
        Handle mspace = c_.check(H5Screate_simple(1, &mdim, nullptr), H5Sclose,
                                 std::string("H5Screate_simple '") + kTracer + "'");
        if (count == 0) {
          c_.check(H5Sselect_none(mspace.get()), std::string("H5Sselect_none '") + kTracer + "'");
        }
        double no_data = 0.0;  // collective reads want a valid pointer
        if (H5Dread(dset.get(), H5T_IEEE_F64LE, mspace.get(), fspace.get(), dxpl_.get(),
                    count == 0 ? &no_data : buf.data()) < 0) {
          why = dataset + ": HDF5 cannot read the particles of rank " + std::to_string(rank_) +
                " (damaged data or metadata)";
        }
      } catch (const Error& e) {
        why = dataset + ": " + e.what();
      }
    }
    agree(comm_, why);

    // Each block's particles are one piece of the chain; a block without any is empty.
    std::vector<std::uint32_t> crc(n_, 0);
    std::size_t at = 0;
    for (const int row : rows_) {
      const auto b = static_cast<std::size_t>(row);
      const std::size_t bytes = (first_[b + 1] - first_[b]) * row_bytes;
      crc[b] = crc_of_bytes(buf.data() + at, bytes);
      at += bytes / sizeof(double);
    }
    MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : crc.data(), crc.data(), static_cast<int>(n_),
               MPI_UINT32_T, MPI_SUM, 0, comm_);
    if (rank_ != 0) return {};
    std::vector<std::uint64_t> bytes(n_);
    for (std::size_t b = 0; b < n_; ++b) bytes[b] = (first_[b + 1] - first_[b]) * row_bytes;
    const std::uint32_t computed = chain_crcs(crc, bytes);
    if (computed == meta_.particles.crc32) return {};
    return checksum_mismatch(dataset, meta_.particles.crc32, computed);
  }

  MPI_Comm comm_;
  const FlashFileMeta& meta_;
  const FlashFileSpec& s_;
  const std::vector<int>& rows_;
  const std::vector<std::pair<std::string, std::string>>& hints_;
  Context c_;
  std::size_t n_, nprop_;
  std::vector<std::uint64_t> first_;  ///< where each block's particles start (N + 1)
  std::size_t count_ = 0;             ///< this rank's particles
  int rank_ = 0;
  Handle file_;  // declared before dxpl_ so it is closed after it
  Handle dxpl_;
};

}  // namespace

FlashFileMeta read_flash_metadata(MPI_Comm comm, const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  FlashFileMeta meta;
  std::string why;
  std::string packed;
  if (parallel::rank(comm) == 0) {
    try {
      std::vector<ManifestEntry> entries;
      why = first_problem(detail::check_file(path, is_bulk, entries).problems);
      if (why.empty()) {
        meta.spec = detail::read_flash_file_without_data(path);
        const auto& names = meta.spec.var_names;
        for (const auto& name : names) {
          const auto e = std::find_if(entries.begin(), entries.end(),
                                      [&](const ManifestEntry& m) { return m.name == name; });
          if (e == entries.end()) {
            why = "dataset '" + name + "' is not in the checksum manifest";
            break;
          }
          meta.variables.push_back(*e);
        }
        if (why.empty() && !meta.spec.particle_names.empty()) {
          const auto e = std::find_if(entries.begin(), entries.end(),
                                      [](const ManifestEntry& m) { return m.name == kTracer; });
          if (e == entries.end()) {
            why = std::string("dataset '") + kTracer + "' is not in the checksum manifest";
          } else {
            meta.particles = *e;
          }
        }
        for (const auto& e : entries) {
          if (why.empty() && is_variable(e.name) &&
              std::find(names.begin(), names.end(), e.name) == names.end()) {
            why = "dataset '" + e.name + "' is in the checksum manifest but not a variable";
          }
        }
      }
    } catch (const Error& e) {
      why = e.what();
    }
    if (why.empty()) {
      Packer p;
      fields(p, meta);
      packed = std::move(p.out);
    }
  }
  agree(comm, why);
  packed = parallel::broadcast(comm, std::move(packed), 0);
  std::string bad;
  if (parallel::rank(comm) != 0) {
    try {
      Unpacker u(packed);
      fields(u, meta);
      if (!u.done()) bad = "FLASH file metadata: broadcast too long";
    } catch (const Error& e) {
      bad = e.what();
    }
  }
  agree(comm, bad);
  return meta;
}

void read_flash_rows(MPI_Comm comm, const FlashFileMeta& meta,
                     const std::vector<std::string>& names, const std::vector<int>& rows,
                     const RowSink& sink,
                     const std::vector<std::pair<std::string, std::string>>& hints) {
  // Rows are checksummed as stored (little-endian f64, the writer's convention) and used
  // as doubles without conversion.
  static_assert(std::endian::native == std::endian::little &&
                    std::numeric_limits<double>::is_iec559 && sizeof(double) == 8,
                "read_flash_rows reads little-endian f64 into doubles without conversion");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  RowReader(comm, meta, rows, hints).run(names, sink);
}

std::vector<double> read_flash_particles(
    MPI_Comm comm, const FlashFileMeta& meta, const std::vector<int>& rows,
    const std::vector<std::pair<std::string, std::string>>& hints) {
  if (meta.spec.particle_names.empty()) return {};  // every rank has the same meta
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return ParticleReader(comm, meta, rows, hints).run();
}

}  // namespace tessera::io
