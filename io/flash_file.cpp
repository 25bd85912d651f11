// FLASH HDF5 file format version 9: the layout is shared/reference/flash-hdf5-format.md
// (yt frontends/flash, VisIt avtFLASHFileFormat.C, Flash-X IO/IOMain/hdf5). Section
// numbers (§) below refer to that note.
//
// Parallel pattern (HDF5 1.10 rules): every rank creates every dataset and attribute
// (metadata operations are collective); replicated metadata is written by rank 0 inside
// a collective H5Dwrite in which the other ranks select nothing; each rank writes its own
// rows of the variables in one collective H5Dwrite per variable.
#include "io/flash_file.hpp"

#include <hdf5.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "parallel/comm.hpp"

namespace tessera::io {
namespace {

constexpr int kFileFormatVersion = 9;
constexpr std::size_t kStringLen = 80;       // FLASH MAX_STRING_LENGTH (§3 S80)
constexpr std::size_t kLongStringLen = 400;  // sim info setup call / cflags / fflags (§2)
constexpr std::size_t kUnknownNameLen = 4;   // `unknown names` string size (§5)

/// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept
      : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Handle& operator=(Handle&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  /// Close now; returns the closer's status (errors in the destructor are ignored).
  herr_t close() {
    const herr_t rc = (id_ >= 0 && close_ != nullptr) ? close_(id_) : 0;
    id_ = H5I_INVALID_HID;
    return rc;
  }

 private:
  void reset() { static_cast<void>(close()); }

  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

/// Turns failed HDF5 calls into one-line tessera::Error messages for one file.
class Context {
 public:
  explicit Context(std::string prefix) : prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& why) const { throw Error(prefix_ + why); }
  std::string message(const std::string& why) const { return prefix_ + why; }

  Handle check(hid_t id, Handle::Closer close, const std::string& call) const {
    if (id < 0) fail(call + " failed");
    return Handle(id, close);
  }
  void check(herr_t rc, const std::string& call) const {
    if (rc < 0) fail(call + " failed");
  }

 private:
  std::string prefix_;
};

std::string quoted(const std::string& name) {
  return " '" + name + "'";
}

// ---------------------------------------------------------------------------------------
// Types

Handle string_type(const Context& c, std::size_t size) {
  Handle t = c.check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  c.check(H5Tset_size(t.get(), size), "H5Tset_size");
  c.check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return t;
}

enum class ListKind { Integer, Real, String, Logical };

/// Byte layout of one parameter-list record: FLASH's C structs (§3).
struct ListLayout {
  std::size_t size, name_offset, value_offset;
};

constexpr ListLayout layout_of(ListKind kind) {
  switch (kind) {
    case ListKind::Integer:
      return {84, 0, 80};
    case ListKind::Real:
      return {88, 0, 80};
    case ListKind::String:
      return {2 * kStringLen, kStringLen, 0};
    case ListKind::Logical:
      return {84, 4, 0};
  }
  return {0, 0, 0};
}

/// Compound type for a parameter list; `file` picks little-endian file types for the
/// values, otherwise native memory types (identical bytes on x86-64).
Handle list_type(const Context& c, ListKind kind, bool file) {
  const ListLayout l = layout_of(kind);
  Handle t = c.check(H5Tcreate(H5T_COMPOUND, l.size), H5Tclose, "H5Tcreate");
  Handle name = string_type(c, kStringLen);
  Handle str_value = string_type(c, kStringLen);
  hid_t value = H5I_INVALID_HID;
  switch (kind) {
    case ListKind::Integer:
    case ListKind::Logical:
      value = file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
      break;
    case ListKind::Real:
      value = file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
      break;
    case ListKind::String:
      value = str_value.get();
      break;
  }
  // FLASH declares `value` first for string and logical records; member order only
  // matters to tools that list members, but match it anyway.
  if (l.value_offset < l.name_offset) {
    c.check(H5Tinsert(t.get(), "value", l.value_offset, value), "H5Tinsert 'value'");
    c.check(H5Tinsert(t.get(), "name", l.name_offset, name.get()), "H5Tinsert 'name'");
  } else {
    c.check(H5Tinsert(t.get(), "name", l.name_offset, name.get()), "H5Tinsert 'name'");
    c.check(H5Tinsert(t.get(), "value", l.value_offset, value), "H5Tinsert 'value'");
  }
  return t;
}

/// Copy s (already checked to fit) into a fixed-length NUL-padded field.
void put_string(unsigned char* dst, std::size_t field, const std::string& s) {
  std::memset(dst, 0, field);
  std::memcpy(dst, s.data(), std::min(s.size(), field));
}

/// Read a fixed-length field: up to the first NUL, trailing blanks removed (FLASH pads
/// with spaces, yt strips them).
std::string get_string(const unsigned char* src, std::size_t field) {
  const char* p = reinterpret_cast<const char*>(src);
  std::string s(p, strnlen(p, field));
  const auto end = s.find_last_not_of(' ');
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

template <class T>
constexpr ListKind kind_of() {
  if constexpr (std::is_same_v<T, int>) return ListKind::Integer;
  if constexpr (std::is_same_v<T, double>) return ListKind::Real;
  if constexpr (std::is_same_v<T, std::string>) return ListKind::String;
  return ListKind::Logical;
}

template <class T>
std::vector<unsigned char> pack_list(const std::vector<std::pair<std::string, T>>& list) {
  const ListLayout l = layout_of(kind_of<T>());
  std::vector<unsigned char> buf(list.size() * l.size, 0);
  for (std::size_t n = 0; n < list.size(); ++n) {
    unsigned char* rec = buf.data() + n * l.size;
    put_string(rec + l.name_offset, kStringLen, list[n].first);
    const T& v = list[n].second;
    if constexpr (std::is_same_v<T, int> || std::is_same_v<T, bool>) {
      const std::int32_t i = static_cast<std::int32_t>(v);
      std::memcpy(rec + l.value_offset, &i, sizeof i);
    } else if constexpr (std::is_same_v<T, double>) {
      std::memcpy(rec + l.value_offset, &v, sizeof v);
    } else {
      put_string(rec + l.value_offset, kStringLen, v);
    }
  }
  return buf;
}

template <class T>
std::vector<std::pair<std::string, T>> unpack_list(const std::vector<unsigned char>& buf) {
  const ListLayout l = layout_of(kind_of<T>());
  std::vector<std::pair<std::string, T>> list(buf.size() / l.size);
  for (std::size_t n = 0; n < list.size(); ++n) {
    const unsigned char* rec = buf.data() + n * l.size;
    list[n].first = get_string(rec + l.name_offset, kStringLen);
    if constexpr (std::is_same_v<T, int> || std::is_same_v<T, bool>) {
      std::int32_t i = 0;
      std::memcpy(&i, rec + l.value_offset, sizeof i);
      if constexpr (std::is_same_v<T, bool>) {
        list[n].second = i != 0;
      } else {
        list[n].second = i;
      }
    } else if constexpr (std::is_same_v<T, double>) {
      std::memcpy(&list[n].second, rec + l.value_offset, sizeof(double));
    } else {
      list[n].second = get_string(rec + l.value_offset, kStringLen);
    }
  }
  return list;
}

const char* list_dataset_name(ListKind kind, bool runtime) {
  static constexpr std::array<std::array<const char*, 2>, 4> kNames{{
      {"integer scalars", "integer runtime parameters"},
      {"real scalars", "real runtime parameters"},
      {"string scalars", "string runtime parameters"},
      {"logical scalars", "logical runtime parameters"},
  }};
  return kNames[static_cast<std::size_t>(kind)][runtime ? 1 : 0];
}

// sim_info_t (§2): member name, size in bytes (0 = the int32 version).
struct SimInfoMember {
  const char* name;
  std::size_t size;
};
constexpr std::array<SimInfoMember, 11> kSimInfo{{
    {"file format version", 0},
    {"setup call", kLongStringLen},
    {"file creation time", kStringLen},
    {"flash version", kStringLen},
    {"build date", kStringLen},
    {"build dir", kStringLen},
    {"build machine", kStringLen},
    {"cflags", kLongStringLen},
    {"fflags", kLongStringLen},
    {"setup time stamp", kStringLen},
    {"build time stamp", kStringLen},
}};

// Datasets the writer owns; a variable may not take one of these names.
const std::set<std::string>& reserved_names() {
  static const std::set<std::string> kNames{"bounding box",
                                            "refine level",
                                            "gid",
                                            "node type",
                                            "coordinates",
                                            "block size",
                                            "processor number",
                                            "sim info",
                                            "unknown names",
                                            "file format version",
                                            "integer scalars",
                                            "integer runtime parameters",
                                            "real scalars",
                                            "real runtime parameters",
                                            "string scalars",
                                            "string runtime parameters",
                                            "logical scalars",
                                            "logical runtime parameters",
                                            "which child",
                                            "bflags",
                                            "gsurr_blks",
                                            "particle names",
                                            "tracer particles",
                                            "localnp"};
  return kNames;
}

// ---------------------------------------------------------------------------------------
// Writer

int gid_columns(int ndim) {
  return 2 * ndim + 1 + (1 << ndim);
}

/// Checks that are the same on every rank (the tree and the lists are replicated).
std::string check_global(const FlashFileSpec& s) {
  if (s.ndim < 1 || s.ndim > 3) return "ndim " + std::to_string(s.ndim) + " is not 1, 2 or 3";
  if (s.nxb < 1 || s.nyb < 1 || s.nzb < 1) return "nxb, nyb and nzb must be >= 1";
  if ((s.ndim < 3 && s.nzb != 1) || (s.ndim < 2 && s.nyb != 1)) {
    return "nyb/nzb must be 1 for unused dimensions";
  }
  const std::size_t n = s.refine_level.size();
  if (n == 0) return "no blocks";
  const auto bad_size = [&](const char* what, std::size_t got, std::size_t want) {
    return std::string(what) + " has " + std::to_string(got) + " entries, expected " +
           std::to_string(want);
  };
  if (s.node_type.size() != n) return bad_size("node type", s.node_type.size(), n);
  if (s.processor_number.size() != n) {
    return bad_size("processor number", s.processor_number.size(), n);
  }
  const std::size_t ncol = static_cast<std::size_t>(gid_columns(s.ndim));
  if (s.gid.size() != n * ncol) return bad_size("gid", s.gid.size(), n * ncol);
  if (s.bounding_box.size() != n * 6) {
    return bad_size("bounding box", s.bounding_box.size(), n * 6);
  }
  if (s.coordinates.size() != n * 3) return bad_size("coordinates", s.coordinates.size(), n * 3);
  if (s.block_size.size() != n * 3) return bad_size("block size", s.block_size.size(), n * 3);
  if (s.real_scalars.empty() || s.real_scalars.front().first != "time") {
    return "real scalars must start with 'time'";
  }
  std::string why;
  const auto check_names = [&](const auto& list, bool check_values) {
    if (!why.empty()) return;
    for (const auto& [name, value] : list) {
      if (name.size() >= kStringLen) {
        why = "parameter name '" + name + "' is longer than 79 characters";
        return;
      }
      if constexpr (std::is_same_v<std::decay_t<decltype(value)>, std::string>) {
        if (check_values && value.size() >= kStringLen) {
          why = "value of string parameter '" + name + "' is longer than 79 characters";
          return;
        }
      }
    }
  };
  for (const auto* l : {&s.int_scalars, &s.int_runtime}) check_names(*l, false);
  for (const auto* l : {&s.real_scalars, &s.real_runtime}) check_names(*l, false);
  for (const auto* l : {&s.str_scalars, &s.str_runtime}) check_names(*l, true);
  for (const auto* l : {&s.log_scalars, &s.log_runtime}) check_names(*l, false);
  if (!why.empty()) return why;
  std::set<std::string> seen;
  for (const auto& v : s.var_names) {
    if (v.empty() || v.size() > kUnknownNameLen || v.find('/') != std::string::npos) {
      return "variable name '" + v + "' must have 1 to 4 characters and no '/'";
    }
    if (reserved_names().count(v) != 0) return "variable name '" + v + "' is a FLASH dataset";
    if (!seen.insert(v).second) return "variable name '" + v + "' appears twice";
  }
  return {};
}

/// Checks of this rank's rows and data.
std::string check_local(const FlashFileSpec& s) {
  const std::size_t n = s.refine_level.size();
  for (std::size_t r = 0; r < s.local_rows.size(); ++r) {
    const int row = s.local_rows[r];
    if (row < 0 || static_cast<std::size_t>(row) >= n) {
      return "local row " + std::to_string(row) + " is outside 0.." + std::to_string(n - 1);
    }
    if (r > 0 && row <= s.local_rows[r - 1]) return "local rows are not strictly ascending";
  }
  const std::size_t cells = static_cast<std::size_t>(s.nxb) * s.nyb * s.nzb;
  const std::size_t want = s.var_names.size() * s.local_rows.size() * cells;
  if (s.data.size() != want) {
    return "data has " + std::to_string(s.data.size()) + " values, expected " +
           std::to_string(want);
  }
  return {};
}

using parallel::agree;

/// Selects `rows` (ascending) of a variable's (N, nzb, nyb, nxb) file space as a union of
/// hyperslabs, one per run of consecutive rows; nothing if `rows` is empty.
void select_rows(const Context& c, const Handle& fspace, const std::vector<int>& rows,
                 const std::array<int, 3>& zyx, const std::string& name) {
  if (rows.empty()) {
    c.check(H5Sselect_none(fspace.get()), "H5Sselect_none" + quoted(name));
    return;
  }
  H5S_seloper_t op = H5S_SELECT_SET;
  for (std::size_t begin = 0; begin < rows.size();) {
    std::size_t end = begin + 1;
    while (end < rows.size() && rows[end] == rows[end - 1] + 1) ++end;
    const std::array<hsize_t, 4> start{static_cast<hsize_t>(rows[begin]), 0, 0, 0};
    const std::array<hsize_t, 4> block{end - begin, static_cast<hsize_t>(zyx[0]),
                                       static_cast<hsize_t>(zyx[1]), static_cast<hsize_t>(zyx[2])};
    c.check(H5Sselect_hyperslab(fspace.get(), op, start.data(), nullptr, block.data(), nullptr),
            "H5Sselect_hyperslab" + quoted(name));
    op = H5S_SELECT_OR;
    begin = end;
  }
}

/// CRC-32 (zlib) of a byte buffer.
std::uint32_t crc_of_bytes(const void* buf, std::size_t bytes) {
  const uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<std::uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(buf), static_cast<z_size_t>(bytes)));
}

/// The CRC-32 of a dataset of rows of row_bytes each, from its rows' CRCs in file order
/// (how the manifest checksums distributed variables, independent of the rank count).
std::uint32_t chain_row_crcs(const std::vector<std::uint32_t>& by_row, std::size_t row_bytes) {
  uLong chained = crc32_z(0L, Z_NULL, 0);
  for (const std::uint32_t rc : by_row)
    chained = crc32_combine(chained, rc, static_cast<z_off_t>(row_bytes));
  return static_cast<std::uint32_t>(chained);
}

/// File access through MPI-IO on comm with the given hints (io.mpi_hints etc.).
void set_fapl_mpio(const Context& c, hid_t fapl, MPI_Comm comm,
                   const std::vector<std::pair<std::string, std::string>>& hints) {
  MPI_Info info = MPI_INFO_NULL;
  if (!hints.empty()) {
    MPI_Info_create(&info);
    for (const auto& [key, value] : hints) MPI_Info_set(info, key.c_str(), value.c_str());
  }
  const herr_t rc = H5Pset_fapl_mpio(fapl, comm, info);
  if (info != MPI_INFO_NULL) MPI_Info_free(&info);
  c.check(rc, "H5Pset_fapl_mpio");
}

class Writer {
 public:
  Writer(MPI_Comm comm, const FlashFileSpec& spec)
      : comm_(comm), s_(spec), c_("cannot write FLASH file '" + spec.path + "': ") {
    MPI_Comm_rank(comm, &rank_);
  }

  /// A collective write's status, agreed: if it failed on any rank (a full disk may fail
  /// one rank's part only), every rank throws, so no rank waits in the next collective.
  void agreed(herr_t rc, const std::string& call) const {
    agree(comm_, rc < 0 ? c_.message(call + " failed") : std::string());
  }

  void run() {
    agree(comm_, validate());
    agree(comm_, check_rows());
    create_file();
    dxpl_ = c_.check(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
    c_.check(H5Pset_dxpl_mpio(dxpl_.get(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
    write_tree();
    write_lists();
    write_sim_info();
    write_unknown_names();
    for (std::size_t v = 0; v < s_.var_names.size(); ++v) write_variable(v);
    write_manifest();
    dxpl_.close();
    agreed(file_.close(), "H5Fclose");
  }

 private:
  std::string validate() const {
    std::string why = check_global(s_);
    if (why.empty()) why = check_local(s_);
    return why.empty() ? why : c_.message(why);
  }

  /// Collective; after validate(). Every row must come from exactly one rank.
  std::string check_rows() const {
    std::vector<int> count(s_.refine_level.size(), 0);
    for (const int row : s_.local_rows) ++count[static_cast<std::size_t>(row)];
    MPI_Allreduce(MPI_IN_PLACE, count.data(), static_cast<int>(count.size()), MPI_INT, MPI_SUM,
                  comm_);
    for (std::size_t row = 0; row < count.size(); ++row) {
      if (count[row] != 1) {
        return c_.message("row " + std::to_string(row) + " is provided by " +
                          std::to_string(count[row]) + " ranks, expected 1");
      }
    }
    return {};
  }

  void create_file() {
    std::string why;
    try {
      Handle fapl = c_.check(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
      set_fapl_mpio(c_, fapl.get(), comm_, s_.hints);
      file_ = c_.check(H5Fcreate(s_.path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose,
                       "H5Fcreate");
    } catch (const Error& e) {
      why = e.what();
    }
    agree(comm_, why);
  }

  Handle create_dataset(const std::string& name, hid_t file_type, const std::vector<hsize_t>& dims,
                        int deflate = 0) const {
    Handle space = c_.check(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                            H5Sclose, "H5Screate_simple" + quoted(name));
    Handle dcpl = c_.check(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
    // Every element is written below, so skip the fill pass.
    c_.check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
    if (deflate > 0) {
      // One block per chunk: each rank compresses its own rows (parallel HDF5 >= 1.10.2
      // supports filters with collective writes).
      std::vector<hsize_t> chunk(dims);
      chunk[0] = 1;
      c_.check(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
               "H5Pset_chunk" + quoted(name));
      c_.check(H5Pset_deflate(dcpl.get(), static_cast<unsigned>(deflate)),
               "H5Pset_deflate" + quoted(name));
    }
    return c_.check(H5Dcreate2(file_.get(), name.c_str(), file_type, space.get(), H5P_DEFAULT,
                               dcpl.get(), H5P_DEFAULT),
                    H5Dclose, "H5Dcreate2" + quoted(name));
  }

  /// Collective write of a replicated dataset: rank 0 writes it all, the rest nothing.
  void write_from_root(const Handle& dset, const std::string& name, hid_t mem_type,
                       const void* buf) const {
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    Handle mspace = c_.check(H5Scopy(fspace.get()), H5Sclose, "H5Scopy" + quoted(name));
    if (rank_ != 0) {
      c_.check(H5Sselect_none(fspace.get()), "H5Sselect_none" + quoted(name));
      c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
    }
    agreed(H5Dwrite(dset.get(), mem_type, mspace.get(), fspace.get(), dxpl_.get(), buf),
           "H5Dwrite" + quoted(name));
    if (rank_ == 0) {
      // Memory and file types have the same bytes here (little-endian, packed records).
      const hssize_t n = H5Sget_simple_extent_npoints(fspace.get());
      const std::size_t bytes = static_cast<std::size_t>(n) * H5Tget_size(mem_type);
      manifest_.push_back({name, crc_of_bytes(buf, bytes), bytes});
    }
  }

  /// Collective: the manifest (a JSON string) as the last dataset, written by rank 0.
  void write_manifest() const {
    std::string text;
    if (rank_ == 0) {
      nlohmann::json j;
      j["format"] = "tessera-manifest-1";
      j["algorithm"] = "crc32";
      j["datasets"] = nlohmann::json::array();
      for (const auto& e : manifest_)
        j["datasets"].push_back({{"name", e.name}, {"crc32", e.crc32}, {"bytes", e.bytes}});
      text = j.dump();
    }
    unsigned long len = text.size();
    MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG, 0, comm_);
    text.resize(len);
    MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, 0, comm_);
    Handle type = string_type(c_, std::max<std::size_t>(len, 1));
    Handle space = c_.check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate" + quoted(kManifestName));
    Handle dset = c_.check(H5Dcreate2(file_.get(), kManifestName, type.get(), space.get(),
                                      H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                           H5Dclose, std::string("H5Dcreate2") + quoted(kManifestName));
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space");
    Handle mspace = c_.check(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
    if (rank_ != 0) {
      c_.check(H5Sselect_none(fspace.get()), "H5Sselect_none");
      c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none");
    }
    agreed(H5Dwrite(dset.get(), type.get(), mspace.get(), fspace.get(), dxpl_.get(), text.data()),
           std::string("H5Dwrite") + quoted(kManifestName));
  }

  void write_ints(const std::string& name, const std::vector<int>& values,
                  const std::vector<hsize_t>& dims) const {
    static_assert(sizeof(int) == 4);
    Handle dset = create_dataset(name, H5T_STD_I32LE, dims);
    write_from_root(dset, name, H5T_NATIVE_INT, values.data());
  }

  /// FLASH writes tree reals in the file's precision: f64 checkpoints, f32 plotfiles.
  void write_reals(const std::string& name, const std::vector<double>& values,
                   const std::vector<hsize_t>& dims) const {
    if (s_.double_precision) {
      Handle dset = create_dataset(name, H5T_IEEE_F64LE, dims);
      write_from_root(dset, name, H5T_NATIVE_DOUBLE, values.data());
    } else {
      const std::vector<float> single(values.begin(), values.end());
      Handle dset = create_dataset(name, H5T_IEEE_F32LE, dims);
      write_from_root(dset, name, H5T_NATIVE_FLOAT, single.data());
    }
  }

  void write_tree() const {
    const hsize_t n = s_.refine_level.size();
    write_ints("refine level", s_.refine_level, {n});
    write_ints("node type", s_.node_type, {n});
    write_ints("gid", s_.gid, {n, static_cast<hsize_t>(gid_columns(s_.ndim))});
    write_ints("processor number", s_.processor_number, {n});
    write_reals("bounding box", s_.bounding_box, {n, 3, 2});
    write_reals("coordinates", s_.coordinates, {n, 3});
    write_reals("block size", s_.block_size, {n, 3});
  }

  template <class T>
  void write_list(const std::vector<std::pair<std::string, T>>& list, bool runtime) const {
    if (list.empty()) return;  // §3: omit empty lists
    const ListKind kind = kind_of<T>();
    const std::string name = list_dataset_name(kind, runtime);
    Handle file_type = list_type(c_, kind, true);
    Handle mem_type = list_type(c_, kind, false);
    const std::vector<unsigned char> buf = pack_list(list);
    Handle dset = create_dataset(name, file_type.get(), {list.size()});
    write_from_root(dset, name, mem_type.get(), buf.data());
  }

  void write_lists() const {
    write_list(s_.int_scalars, false);
    write_list(s_.real_scalars, false);
    write_list(s_.str_scalars, false);
    write_list(s_.log_scalars, false);
    write_list(s_.int_runtime, true);
    write_list(s_.real_runtime, true);
    write_list(s_.str_runtime, true);
    write_list(s_.log_runtime, true);
  }

  void write_sim_info() const {
    std::size_t total = 0;
    for (const auto& m : kSimInfo) total += m.size == 0 ? sizeof(std::int32_t) : m.size;
    Handle file_type = c_.check(H5Tcreate(H5T_COMPOUND, total), H5Tclose, "H5Tcreate");
    Handle mem_type = c_.check(H5Tcreate(H5T_COMPOUND, total), H5Tclose, "H5Tcreate");
    std::vector<unsigned char> buf(total, 0);

    std::array<char, kStringLen> now{};
    const std::time_t t = std::time(nullptr);
    std::tm utc{};
    gmtime_r(&t, &utc);
    std::strftime(now.data(), now.size(), "%Y-%m-%d %H:%M:%S UTC", &utc);
    const auto text_of = [&](const std::string& member) -> std::string {
      if (member == "setup call" || member == "flash version") return "tessera";
      if (member == "file creation time") return now.data();
      return {};
    };

    std::size_t offset = 0;
    for (const auto& m : kSimInfo) {
      if (m.size == 0) {
        c_.check(H5Tinsert(file_type.get(), m.name, offset, H5T_STD_I32LE), "H5Tinsert");
        c_.check(H5Tinsert(mem_type.get(), m.name, offset, H5T_NATIVE_INT32), "H5Tinsert");
        const std::int32_t version = kFileFormatVersion;
        std::memcpy(buf.data() + offset, &version, sizeof version);
        offset += sizeof version;
      } else {
        Handle str = string_type(c_, m.size);
        c_.check(H5Tinsert(file_type.get(), m.name, offset, str.get()), "H5Tinsert");
        c_.check(H5Tinsert(mem_type.get(), m.name, offset, str.get()), "H5Tinsert");
        put_string(buf.data() + offset, m.size, text_of(m.name));
        offset += m.size;
      }
    }
    Handle dset = create_dataset("sim info", file_type.get(), {1});
    write_from_root(dset, "sim info", mem_type.get(), buf.data());
  }

  void write_unknown_names() const {
    if (s_.var_names.empty()) return;
    Handle type = string_type(c_, kUnknownNameLen);
    std::vector<unsigned char> buf(s_.var_names.size() * kUnknownNameLen, 0);
    for (std::size_t v = 0; v < s_.var_names.size(); ++v) {
      put_string(buf.data() + v * kUnknownNameLen, kUnknownNameLen, s_.var_names[v]);
    }
    Handle dset = create_dataset("unknown names", type.get(), {s_.var_names.size(), 1});
    write_from_root(dset, "unknown names", type.get(), buf.data());
  }

  void write_variable(std::size_t v) const {
    const std::string& name = s_.var_names[v];
    const hsize_t n = s_.refine_level.size();
    const std::array<hsize_t, 4> dims{n, static_cast<hsize_t>(s_.nzb), static_cast<hsize_t>(s_.nyb),
                                      static_cast<hsize_t>(s_.nxb)};
    const std::size_t cells = static_cast<std::size_t>(s_.nxb) * s_.nyb * s_.nzb;
    const std::size_t count = s_.local_rows.size() * cells;
    const double* values = s_.data.data() + v * count;

    // The bytes to write (converted to f32 for a plotfile) and their extrema as stored.
    std::vector<float> single;
    if (!s_.double_precision) single.assign(values, values + count);
    std::array<double, 2> extrema{std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::infinity()};  // {min, -max}
    for (std::size_t i = 0; i < count; ++i) {
      const double x = s_.double_precision ? values[i] : static_cast<double>(single[i]);
      extrema[0] = std::min(extrema[0], x);
      extrema[1] = std::min(extrema[1], -x);
    }
    MPI_Allreduce(MPI_IN_PLACE, extrema.data(), 2, MPI_DOUBLE, MPI_MIN, comm_);

    Handle dset = create_dataset(name, s_.double_precision ? H5T_IEEE_F64LE : H5T_IEEE_F32LE,
                                 std::vector<hsize_t>(dims.begin(), dims.end()), s_.deflate);
    Handle fspace = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    select_rows(fspace, name);
    const hsize_t mdim = std::max<hsize_t>(count, 1);
    Handle mspace =
        c_.check(H5Screate_simple(1, &mdim, nullptr), H5Sclose, "H5Screate_simple" + quoted(name));
    if (count == 0) c_.check(H5Sselect_none(mspace.get()), "H5Sselect_none" + quoted(name));
    static const double kNoData = 0.0;  // collective writes want a valid pointer
    const void* buf = count == 0            ? static_cast<const void*>(&kNoData)
                      : s_.double_precision ? static_cast<const void*>(values)
                                            : static_cast<const void*>(single.data());
    agreed(H5Dwrite(dset.get(), s_.double_precision ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT,
                    mspace.get(), fspace.get(), dxpl_.get(), buf),
           "H5Dwrite" + quoted(name));

    write_attribute(dset, name, "minimum", extrema[0]);
    write_attribute(dset, name, "maximum", -extrema[1]);

    // Checksum of the whole dataset in file order: each rank checksums its rows, the
    // row checksums are summed onto rank 0 (one contributor per row) and chained there,
    // so the result does not depend on how rows are spread over ranks.
    const std::size_t elem = s_.double_precision ? sizeof(double) : sizeof(float);
    const std::size_t row_bytes = cells * elem;
    std::vector<std::uint32_t> row_crc(n, 0);
    for (std::size_t r = 0; r < s_.local_rows.size(); ++r) {
      const void* p = s_.double_precision ? static_cast<const void*>(values + r * cells)
                                          : static_cast<const void*>(single.data() + r * cells);
      row_crc[static_cast<std::size_t>(s_.local_rows[r])] = crc_of_bytes(p, row_bytes);
    }
    MPI_Reduce(rank_ == 0 ? MPI_IN_PLACE : row_crc.data(), row_crc.data(), static_cast<int>(n),
               MPI_UINT32_T, MPI_SUM, 0, comm_);
    if (rank_ == 0) manifest_.push_back({name, chain_row_crcs(row_crc, row_bytes), row_bytes * n});
  }

  void select_rows(const Handle& fspace, const std::string& name) const {
    io::select_rows(c_, fspace, s_.local_rows, {s_.nzb, s_.nyb, s_.nxb}, name);
  }

  /// Attributes are written collectively with the same value on every rank.
  void write_attribute(const Handle& dset, const std::string& var, const char* attr,
                       double value) const {
    const hsize_t one = 1;
    const std::string what = quoted(var + "/" + attr);
    Handle space = c_.check(H5Screate_simple(1, &one, nullptr), H5Sclose, "H5Screate_simple");
    Handle a = c_.check(
        H5Acreate2(dset.get(), attr, H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
        H5Aclose, "H5Acreate2" + what);
    c_.check(H5Awrite(a.get(), H5T_NATIVE_DOUBLE, &value), "H5Awrite" + what);
  }

  MPI_Comm comm_;
  const FlashFileSpec& s_;
  Context c_;
  int rank_ = 0;
  Handle file_;  // declared before dxpl_ so it is closed after it
  Handle dxpl_;
  mutable std::vector<ManifestEntry> manifest_;  ///< rank 0 only
};

// ---------------------------------------------------------------------------------------
// Reader

class Reader {
 public:
  /// with_data false: everything but the variables' values (var_names are read).
  explicit Reader(const std::string& path, bool with_data = true)
      : path_(path), with_data_(with_data), c_("cannot read FLASH file '" + path + "': ") {}

  FlashFileSpec run() {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) c_.fail("no such file");
    const htri_t is_hdf5 = H5Fis_hdf5(path_.c_str());
    if (is_hdf5 < 0) c_.fail("H5Fis_hdf5 failed (unreadable file?)");
    if (is_hdf5 == 0) c_.fail("not an HDF5 file");
    file_ = c_.check(H5Fopen(path_.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose, "H5Fopen");

    FlashFileSpec s;
    s.path = path_;
    read_version();
    read_tree(s);
    read_lists(s);
    read_variables(s);
    c_.check(file_.close(), "H5Fclose");
    return s;
  }

 private:
  bool exists(const std::string& name) const {
    return H5Lexists(file_.get(), name.c_str(), H5P_DEFAULT) > 0;
  }

  Handle open(const std::string& name) const {
    if (!exists(name)) c_.fail("dataset '" + name + "' is missing");
    return c_.check(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT), H5Dclose,
                    "H5Dopen2" + quoted(name));
  }

  std::vector<hsize_t> dims_of(const Handle& dset, const std::string& name) const {
    Handle space = c_.check(H5Dget_space(dset.get()), H5Sclose, "H5Dget_space" + quoted(name));
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank < 0) c_.fail("H5Sget_simple_extent_ndims" + quoted(name) + " failed");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    c_.check(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr),
             "H5Sget_simple_extent_dims" + quoted(name));
    return dims;
  }

  void expect_dims(const std::vector<hsize_t>& got, const std::vector<hsize_t>& want,
                   const std::string& name) const {
    if (got == want) return;
    const auto text = [](const std::vector<hsize_t>& d) {
      std::string t = "(";
      for (std::size_t i = 0; i < d.size(); ++i) {
        if (i) t += ',';
        t += std::to_string(d[i]);
      }
      return t + ")";
    };
    c_.fail("dataset '" + name + "' has shape " + text(got) + ", expected " + text(want));
  }

  template <class T>
  std::vector<T> read_all(const std::string& name, hid_t mem_type,
                          const std::vector<hsize_t>& want) const {
    Handle dset = open(name);
    expect_dims(dims_of(dset, name), want, name);
    std::size_t count = 1;
    for (const hsize_t d : want) count *= d;
    std::vector<T> out(count);
    if (count > 0) {
      c_.check(H5Dread(dset.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()),
               "H5Dread" + quoted(name));
    }
    return out;
  }

  void read_version() const {
    std::int32_t version = 0;
    if (exists("sim info")) {
      // Read the one member by name; the other members are informational.
      Handle dset = open("sim info");
      Handle mem = c_.check(H5Tcreate(H5T_COMPOUND, sizeof version), H5Tclose, "H5Tcreate");
      c_.check(H5Tinsert(mem.get(), "file format version", 0, H5T_NATIVE_INT32), "H5Tinsert");
      const std::vector<hsize_t> dims = dims_of(dset, "sim info");
      if (dims != std::vector<hsize_t>{1}) c_.fail("dataset 'sim info' is not of shape (1,)");
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &version),
               "H5Dread 'sim info'");
    } else if (exists("file format version")) {
      version = read_all<std::int32_t>("file format version", H5T_NATIVE_INT32, {1})[0];
    } else {
      c_.fail("dataset 'sim info' is missing");
    }
    if (version != kFileFormatVersion) {
      c_.fail("file format version " + std::to_string(version) + " is not supported (need 9)");
    }
  }

  void read_tree(FlashFileSpec& s) const {
    const Handle gid = open("gid");
    const std::vector<hsize_t> gdims = dims_of(gid, "gid");
    if (gdims.size() != 2) c_.fail("dataset 'gid' is not 2-D");
    const hsize_t n = gdims[0];
    s.ndim = 0;
    for (int d = 1; d <= 3; ++d) {
      if (static_cast<hsize_t>(gid_columns(d)) == gdims[1]) s.ndim = d;
    }
    if (s.ndim == 0) c_.fail("dataset 'gid' has " + std::to_string(gdims[1]) + " columns");
    s.gid = read_all<int>("gid", H5T_NATIVE_INT, gdims);
    s.refine_level = read_all<int>("refine level", H5T_NATIVE_INT, {n});
    s.node_type = read_all<int>("node type", H5T_NATIVE_INT, {n});
    s.processor_number = read_all<int>("processor number", H5T_NATIVE_INT, {n});
    s.bounding_box = read_all<double>("bounding box", H5T_NATIVE_DOUBLE, {n, 3, 2});
    s.coordinates = read_all<double>("coordinates", H5T_NATIVE_DOUBLE, {n, 3});
    s.block_size = read_all<double>("block size", H5T_NATIVE_DOUBLE, {n, 3});
  }

  template <class T>
  void read_list(std::vector<std::pair<std::string, T>>& list, bool runtime) const {
    const ListKind kind = kind_of<T>();
    const std::string name = list_dataset_name(kind, runtime);
    list.clear();
    if (!exists(name)) return;  // empty lists are omitted (§3)
    Handle dset = open(name);
    const std::vector<hsize_t> dims = dims_of(dset, name);
    if (dims.size() != 1) c_.fail("dataset '" + name + "' is not 1-D");
    Handle mem = list_type(c_, kind, false);
    std::vector<unsigned char> buf(dims[0] * layout_of(kind).size);
    if (!buf.empty()) {
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
               "H5Dread" + quoted(name));
    }
    list = unpack_list<T>(buf);
  }

  void read_lists(FlashFileSpec& s) const {
    read_list(s.int_scalars, false);
    read_list(s.real_scalars, false);
    read_list(s.str_scalars, false);
    read_list(s.log_scalars, false);
    read_list(s.int_runtime, true);
    read_list(s.real_runtime, true);
    read_list(s.str_runtime, true);
    read_list(s.log_runtime, true);
  }

  void read_unknown_names(FlashFileSpec& s) const {
    const std::string name = "unknown names";
    s.var_names.clear();
    if (!exists(name)) return;  // the writer omits it when there are no variables
    Handle dset = open(name);
    const std::vector<hsize_t> dims = dims_of(dset, name);
    if (dims.empty() || dims.size() > 2 || (dims.size() == 2 && dims[1] != 1)) {
      c_.fail("dataset 'unknown names' is not of shape (nvar,1)");
    }
    Handle ftype = c_.check(H5Dget_type(dset.get()), H5Tclose, "H5Dget_type" + quoted(name));
    if (H5Tget_class(ftype.get()) != H5T_STRING || H5Tis_variable_str(ftype.get()) != 0) {
      c_.fail("dataset 'unknown names' does not hold fixed-length strings");
    }
    const std::size_t size = H5Tget_size(ftype.get());
    if (size == 0) c_.fail("H5Tget_size 'unknown names' failed");
    Handle mem = string_type(c_, size);
    std::vector<unsigned char> buf(dims[0] * size);
    if (!buf.empty()) {
      c_.check(H5Dread(dset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()),
               "H5Dread" + quoted(name));
    }
    s.var_names.resize(dims[0]);
    for (std::size_t v = 0; v < dims[0]; ++v) {
      s.var_names[v] = get_string(buf.data() + v * size, size);
    }
  }

  void read_variables(FlashFileSpec& s) const {
    const hsize_t n = s.refine_level.size();
    read_unknown_names(s);
    // Zones per block from `integer scalars`, as VisIt and yt do.
    const auto scalar = [&](const char* key) {
      for (const auto& [k, v] : s.int_scalars) {
        if (k == key) return v;
      }
      c_.fail(std::string("integer scalar '") + key + "' is missing");
    };
    s.nxb = scalar("nxb");
    s.nyb = scalar("nyb");
    s.nzb = scalar("nzb");
    if (s.nxb < 1 || s.nyb < 1 || s.nzb < 1) c_.fail("nxb, nyb or nzb is below 1");

    s.double_precision = real_size("bounding box") == 8;
    if (!with_data_) {
      if (!s.var_names.empty()) s.double_precision = real_size(s.var_names.front()) == 8;
      return;
    }
    s.local_rows.resize(n);
    for (hsize_t r = 0; r < n; ++r) s.local_rows[r] = static_cast<int>(r);
    const std::vector<hsize_t> dims{n, static_cast<hsize_t>(s.nzb), static_cast<hsize_t>(s.nyb),
                                    static_cast<hsize_t>(s.nxb)};
    const std::size_t count = n * static_cast<std::size_t>(s.nxb) * s.nyb * s.nzb;
    s.data.resize(count * s.var_names.size());
    for (std::size_t v = 0; v < s.var_names.size(); ++v) {
      const std::vector<double> values = read_all<double>(s.var_names[v], H5T_NATIVE_DOUBLE, dims);
      std::copy(values.begin(), values.end(),
                s.data.begin() + static_cast<std::ptrdiff_t>(v * count));
      if (v == 0) s.double_precision = real_size(s.var_names[v]) == 8;
    }
  }

  /// Bytes per element of a floating-point dataset.
  std::size_t real_size(const std::string& name) const {
    Handle dset = open(name);
    Handle type = c_.check(H5Dget_type(dset.get()), H5Tclose, "H5Dget_type" + quoted(name));
    if (H5Tget_class(type.get()) != H5T_FLOAT) c_.fail("dataset '" + name + "' is not real");
    return H5Tget_size(type.get());
  }

  std::string path_;
  bool with_data_ = true;
  Context c_;
  Handle file_;
};

}  // namespace

void write_flash_file(MPI_Comm comm, const FlashFileSpec& spec) {
  // Errors become one-line exceptions; HDF5's own stack dump would only add noise.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Writer(comm, spec).run();
}

FlashFileSpec read_flash_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  return Reader(path).run();
}

namespace {

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  static_cast<std::vector<std::string>*>(out)->push_back(name);
  return 0;
}

/// CRC-32 of a dataset's elements as stored, read in slabs of whole rows.
/// Returns false (and sets why) if HDF5 cannot read it.
bool dataset_crc(hid_t dset, std::uint32_t& crc_out, std::uint64_t& bytes_out, std::string& why) {
  Handle ftype(H5Dget_type(dset), H5Tclose);
  Handle space(H5Dget_space(dset), H5Sclose);
  if (ftype.get() < 0 || space.get() < 0) {
    why = "cannot read its type or shape";
    return false;
  }
  const std::size_t elem = H5Tget_size(ftype.get());
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
  }
  crc_out = static_cast<std::uint32_t>(crc);
  return true;
}

/// check_flash_file, except that the checksums of the datasets `deferred` selects are left
/// to the caller (their presence is still checked); `entries` receives the manifest.
FileCheck check_file(const std::string& path,
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
  nlohmann::json manifest;
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
    manifest = nlohmann::json::parse(text, nullptr, false);
    if (manifest.is_discarded() || !manifest.contains("datasets")) {
      problem("the checksum manifest is not valid JSON");
      return out;
    }
  }
  std::set<std::string> listed{kManifestName};
  for (const auto& e : manifest["datasets"]) {
    const std::string name = e.value("name", "");
    listed.insert(name);
    const auto want_bytes = e.value("bytes", std::uint64_t{0});
    const auto want_crc = e.value("crc32", std::uint32_t{0});
    entries.push_back({name, want_crc, want_bytes});
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
    if (!dataset_crc(dset.get(), crc, bytes, why)) {
      problem("dataset '" + name + "': " + why);
      continue;
    }
    ++out.datasets_checked;
    out.bytes_checked += bytes;
    char hex[64];
    if (bytes != want_bytes) {
      problem("dataset '" + name + "' holds " + std::to_string(bytes) + " bytes, manifest says " +
              std::to_string(want_bytes));
    } else if (crc != want_crc) {
      std::snprintf(hex, sizeof hex, "stored %08x, computed %08x", want_crc, crc);
      problem("dataset '" + name + "': checksum mismatch (" + hex + ")");
    }
  }
  std::vector<std::string> names;
  H5Literate(file.get(), H5_INDEX_NAME, H5_ITER_NATIVE, nullptr, collect_name, &names);
  for (const auto& n : names)
    if (listed.count(n) == 0) problem("dataset '" + n + "' is not in the checksum manifest");
  out.ok = out.problems.empty();
  return out;
}

}  // namespace

FileCheck check_flash_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  std::vector<ManifestEntry> entries;
  return check_file(
      path, [](const std::string&) { return false; }, entries);
}

// ---------------------------------------------------------------------------------------
// Distributed, verified read (restart)

namespace {

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
    out.insert(out.end(), b, b + n);
  }
  std::vector<char> out;
};

class Unpacker : public Archive<Unpacker> {
 public:
  explicit Unpacker(const std::vector<char>& in) : in_(in) {}
  void bytes(void* p, std::size_t n) {
    if (n > in_.size() - at_) throw Error("FLASH file metadata: broadcast too short");
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::vector<char>& in_;
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
  ar(m.variables);
}

/// MPI_Bcast of a byte buffer of any size (MPI counts are int); sizes it on the receivers.
void bcast_bytes(MPI_Comm comm, std::vector<char>& buf, int root) {
  std::uint64_t n = buf.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, root, comm);
  buf.resize(static_cast<std::size_t>(n));
  constexpr std::uint64_t kChunk = std::uint64_t{1} << 30;
  for (std::uint64_t at = 0; at < n; at += kChunk) {
    MPI_Bcast(buf.data() + at, static_cast<int>(std::min(kChunk, n - at)), MPI_BYTE, root, comm);
  }
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
    char hex[64];
    std::snprintf(hex, sizeof hex, "stored %08x, computed %08x", entry.crc32, computed);
    return dataset + ": checksum mismatch (" + hex + ")";
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

}  // namespace

FlashFileMeta read_flash_metadata(MPI_Comm comm, const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  FlashFileMeta meta;
  std::string why;
  std::vector<char> packed;
  if (parallel::rank(comm) == 0) {
    try {
      std::vector<ManifestEntry> entries;
      why = first_problem(check_file(path, is_variable, entries).problems);
      if (why.empty()) {
        meta.spec = Reader(path, /*with_data=*/false).run();
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
  bcast_bytes(comm, packed, 0);
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

}  // namespace tessera::io
