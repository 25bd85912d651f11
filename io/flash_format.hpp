#pragma once
// The byte layout of FLASH HDF5 file format version 9 (shared/reference/flash-hdf5-format.md;
// § below refers to that note), shared by the writer, the readers and the checker: string
// sizes, parameter-list records and their HDF5 types, the `sim info` members, the dataset
// names the writer owns, the width of `gid`. Reads and writes nothing itself. Internal to io/.
#include <hdf5.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "io/hdf5_util.hpp"

namespace tessera::io::detail {

inline constexpr int kFileFormatVersion = 9;
inline constexpr std::size_t kStringLen = 80;        // FLASH MAX_STRING_LENGTH (§3 S80)
inline constexpr std::size_t kLongStringLen = 400;   // sim info setup call / cflags / fflags (§2)
inline constexpr std::size_t kUnknownNameLen = 4;    // `unknown names` string size (§5)
inline constexpr std::size_t kParticleNameLen = 24;  // `particle names` string size (§6)

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
Handle list_type(const Context& c, ListKind kind, bool file);

/// Copy s (already checked to fit) into a fixed-length NUL-padded field.
void put_string(unsigned char* dst, std::size_t field, const std::string& s);

/// Read a fixed-length field: up to the first NUL, trailing blanks removed (FLASH pads
/// with spaces, yt strips them).
std::string get_string(const unsigned char* src, std::size_t field);

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

/// The dataset name of a parameter list: "integer scalars", "real runtime parameters", ...
const char* list_dataset_name(ListKind kind, bool runtime);

// sim_info_t (§2): member name, size in bytes (0 = the int32 version).
struct SimInfoMember {
  const char* name;
  std::size_t size;
};
inline constexpr std::array<SimInfoMember, 11> kSimInfo{{
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

/// Datasets the writer owns; a variable may not take one of these names.
const std::set<std::string>& reserved_names();

/// Where each block's particles start in `tracer particles`: N + 1 prefix sums of the
/// global `localnp` (the last one is the number of particles). Rows are grouped by block
/// in file order (§6).
std::vector<std::uint64_t> particle_offsets(const std::vector<int>& localnp);

/// Columns of `gid`: 2*ndim neighbours, the parent, 2^ndim children (§4).
inline int gid_columns(int ndim) {
  return 2 * ndim + 1 + (1 << ndim);
}

}  // namespace tessera::io::detail
