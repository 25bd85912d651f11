// `tessera check`: check_flash_file (io/flash_file.hpp) recomputes the CRC-32 of every
// dataset a file's checksum manifest lists and compares, and reports datasets missing from
// the file or from the manifest (particle files and particle datasets alike); for a
// plotfile it also compares the time of its particle file, which yt pairs with it by name.
// Serial, read-only, and it never throws for a bad file.
// It does not interpret the FLASH layout (io/flash_reader.cpp does) and writes nothing.
#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/flash_file.hpp"
#include "io/flash_internal.hpp"
#include "io/hdf5_util.hpp"
#include "io/manifest.hpp"

namespace tessera::io {
namespace {

using detail::Handle;

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

/// NaN and inf among the floating-point elements of a dataset (native doubles or floats),
/// counted as its slabs are read: a file that holds one is not a valid result (issue 48).
struct NonFinite {
  std::uint64_t count = 0, first = 0;  ///< how many; the element index of the first
};

/// CRC-32 of a dataset's elements as stored, read in slabs of whole rows, and its
/// non-finite values. Returns false (and sets why) if HDF5 cannot read it.
bool dataset_crc(hid_t dset, std::uint32_t& crc_out, std::uint64_t& bytes_out, std::string& why,
                 NonFinite& bad) {
  Handle ftype(H5Dget_type(dset), H5Tclose);
  Handle space(H5Dget_space(dset), H5Sclose);
  if (ftype.get() < 0 || space.get() < 0) {
    why = "cannot read its type or shape";
    return false;
  }
  const std::size_t elem = H5Tget_size(ftype.get());
  const bool f64 = H5Tequal(ftype.get(), H5T_NATIVE_DOUBLE) > 0;
  const bool f32 = H5Tequal(ftype.get(), H5T_NATIVE_FLOAT) > 0;
  const int nd = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(nd, 0)));
  if (nd > 0) H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  hsize_t row_elems = 1;
  for (int d = 1; d < nd; ++d) row_elems *= dims[static_cast<std::size_t>(d)];
  const hsize_t nrows = nd > 0 ? dims[0] : 1;
  bytes_out = static_cast<std::uint64_t>(nrows * row_elems * elem);
  uLong crc = crc32_z(0L, Z_NULL, 0);
  const hsize_t slab =
      std::max<hsize_t>(1, (hsize_t(64) << 20) / std::max<hsize_t>(1, row_elems * elem));
  std::vector<unsigned char> buf;
  for (hsize_t r0 = 0; r0 < nrows; r0 += slab) {
    const hsize_t rows = std::min(slab, nrows - r0);
    const hsize_t count = rows * row_elems;
    buf.resize(static_cast<std::size_t>(count * elem));
    herr_t rc;
    if (nd == 0) {
      rc = H5Dread(dset, ftype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data());
    } else {
      std::vector<hsize_t> start(dims.size(), 0), block(dims);
      start[0] = r0;
      block[0] = rows;
      Handle fs(H5Scopy(space.get()), H5Sclose);
      H5Sselect_hyperslab(fs.get(), H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr);
      Handle ms(H5Screate_simple(1, &count, nullptr), H5Sclose);
      rc = H5Dread(dset, ftype.get(), ms.get(), fs.get(), H5P_DEFAULT, buf.data());
    }
    if (rc < 0) {
      why = "HDF5 cannot read rows " + std::to_string(r0) + ".." + std::to_string(r0 + rows - 1) +
            " (damaged data or metadata)";
      return false;
    }
    crc = crc32_z(crc, buf.data(), buf.size());
    auto scan = [&](auto zero) {
      using T = decltype(zero);
      for (std::size_t e = 0; e < std::size_t(count); ++e) {
        T x;
        std::memcpy(&x, buf.data() + e * sizeof(T), sizeof(T));
        if (!std::isfinite(x) && bad.count++ == 0) bad.first = r0 * row_elems + e;
      }
    };
    if (f64) scan(0.0);
    if (f32) scan(0.0f);
  }
  crc_out = static_cast<std::uint32_t>(crc);
  return true;
}

/// The value of the first row of `real scalars` (the time; yt pairs a plotfile with its
/// particle file by it). Returns false (and sets why) if it cannot be read.
bool first_real_scalar(const std::string& path, double& value, std::string& why) {
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file.get() < 0) {
    why = "HDF5 cannot open it";
    return false;
  }
  if (H5Lexists(file.get(), "real scalars", H5P_DEFAULT) <= 0) {
    why = "it has no 'real scalars'";
    return false;
  }
  Handle dset(H5Dopen2(file.get(), "real scalars", H5P_DEFAULT), H5Dclose);
  Handle space(dset.get() >= 0 ? H5Dget_space(dset.get()) : -1, H5Sclose);
  Handle mem(H5Tcreate(H5T_COMPOUND, sizeof(double)), H5Tclose);
  const hsize_t one = 1, first = 0;
  Handle mspace(H5Screate_simple(1, &one, nullptr), H5Sclose);
  if (space.get() < 0 || mem.get() < 0 || mspace.get() < 0 ||
      H5Sget_simple_extent_npoints(space.get()) < 1 ||
      H5Tinsert(mem.get(), "value", 0, H5T_NATIVE_DOUBLE) < 0 ||
      H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &first, nullptr, &one, nullptr) < 0 ||
      H5Dread(dset.get(), mem.get(), mspace.get(), space.get(), H5P_DEFAULT, &value) < 0) {
    why = "its first 'real scalars' row cannot be read";
    return false;
  }
  return true;
}

/// Shortest text that reads back as x.
std::string number(double x) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), x);
  return std::string(buf.data(), r.ptr);
}

/// A plotfile's particle file (yt's name: "plt_cnt" -> "part" in the same directory) must
/// have the plotfile's time, or yt ignores it without an error (reference §1).
void check_particle_file_time(const std::string& path, std::vector<std::string>& problems) {
  if (H5Fis_hdf5(path.c_str()) <= 0) return;  // check_file said why
  const std::filesystem::path p(path);
  std::string name = p.filename().string();
  if (name.find("hdf5_plt_cnt") == std::string::npos) return;
  for (std::size_t at = name.find("plt_cnt"); at != std::string::npos;
       at = name.find("plt_cnt", at + 4)) {
    name.replace(at, 7, "part");
  }
  const std::string part = (p.parent_path() / name).string();
  std::error_code ec;
  if (!std::filesystem::exists(part, ec)) return;
  double t_plot = 0.0, t_part = 0.0;
  std::string why;
  if (!first_real_scalar(part, t_part, why)) {
    problems.push_back("particle file '" + name + "': " + why);
  } else if (!first_real_scalar(path, t_plot, why)) {
    problems.push_back("cannot compare the time with particle file '" + name + "': " + why);
  } else if (!(std::abs(t_part - t_plot) <= 1e-8 + 1e-5 * std::abs(t_plot))) {
    // numpy.isclose(part, plot) with its default tolerances, as yt compares them.
    problems.push_back("particle file '" + name + "' has time " + number(t_part) +
                       ", its plotfile " + number(t_plot));
  }
}

}  // namespace

FileCheck detail::check_file(const std::string& path,
                             const std::function<bool(const std::string&)>& deferred,
                             std::vector<ManifestEntry>& entries) {
  FileCheck out;
  auto problem = [&](std::string s) { out.problems.push_back(std::move(s)); };
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    problem("no such file");
    return out;
  }
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) {
    problem(is_hdf5 == 0 ? "not an HDF5 file (truncated or overwritten?)"
                         : "cannot read the file signature");
    return out;
  }
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (file.get() < 0) {
    problem("HDF5 cannot open the file (damaged metadata)");
    return out;
  }
  if (H5Lexists(file.get(), kManifestName, H5P_DEFAULT) <= 0) {
    problem(std::string("no checksum manifest ('") + kManifestName +
            "' is missing): not written by tessera, or the write did not finish");
    return out;
  }
  std::vector<ManifestEntry> listed_entries;
  {
    Handle dset(H5Dopen2(file.get(), kManifestName, H5P_DEFAULT), H5Dclose);
    Handle type(dset.get() >= 0 ? H5Dget_type(dset.get()) : -1, H5Tclose);
    std::string text;
    if (type.get() >= 0) text.resize(H5Tget_size(type.get()));
    if (dset.get() < 0 || type.get() < 0 ||
        H5Dread(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()) < 0) {
      problem("the checksum manifest cannot be read");
      return out;
    }
    text.resize(strnlen(text.data(), text.size()));
    std::string why;
    auto parsed = parse_manifest(text, &why);
    if (!parsed) {
      problem("the checksum manifest " + why);
      return out;
    }
    listed_entries = std::move(*parsed);
  }
  std::set<std::string> listed{kManifestName};
  for (const auto& e : listed_entries) {
    const std::string& name = e.name;
    listed.insert(name);
    const auto want_bytes = e.bytes;
    const auto want_crc = e.crc32;
    entries.push_back(e);
    if (H5Lexists(file.get(), name.c_str(), H5P_DEFAULT) <= 0) {
      problem("dataset '" + name + "' is missing");
      continue;
    }
    if (deferred(name)) continue;
    Handle dset(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    std::uint32_t crc = 0;
    std::uint64_t bytes = 0;
    std::string why;
    if (dset.get() < 0) {
      problem("dataset '" + name + "' cannot be opened");
      continue;
    }
    NonFinite nonfinite;
    if (!dataset_crc(dset.get(), crc, bytes, why, nonfinite)) {
      problem("dataset '" + name + "': " + why);
      continue;
    }
    if (nonfinite.count > 0)
      problem("dataset '" + name + "' holds " + std::to_string(nonfinite.count) +
              " NaN or inf value" + (nonfinite.count > 1 ? "s" : "") + " (the first at element " +
              std::to_string(nonfinite.first) + ")");
    ++out.datasets_checked;
    out.bytes_checked += bytes;
    if (bytes != want_bytes) {
      problem("dataset '" + name + "' holds " + std::to_string(bytes) + " bytes, manifest says " +
              std::to_string(want_bytes));
    } else if (crc != want_crc) {
      problem(checksum_mismatch("dataset '" + name + "'", want_crc, crc));
    }
  }
  std::vector<std::string> names;
  H5Literate(file.get(), H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_name, &names);
  for (const auto& n : names)
    if (listed.count(n) == 0) problem("dataset '" + n + "' is not in the checksum manifest");
  out.ok = out.problems.empty();
  return out;
}

FileCheck check_flash_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::vector<ManifestEntry> entries;
  FileCheck out = detail::check_file(
      path, [](const std::string&) { return false; }, entries);
  check_particle_file_time(path, out.problems);
  out.ok = out.problems.empty();
  return out;
}

}  // namespace tessera::io
