// The byte layout of FLASH file format 9 (see io/flash_format.hpp).
#include "io/flash_format.hpp"

#include <algorithm>
#include <cstring>

namespace tessera::io::detail {

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

void put_string(unsigned char* dst, std::size_t field, const std::string& s) {
  std::memset(dst, 0, field);
  std::memcpy(dst, s.data(), std::min(s.size(), field));
}

std::string get_string(const unsigned char* src, std::size_t field) {
  const char* p = reinterpret_cast<const char*>(src);
  std::string s(p, strnlen(p, field));
  const auto end = s.find_last_not_of(' ');
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
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

std::vector<std::uint64_t> particle_offsets(const std::vector<int>& localnp) {
  std::vector<std::uint64_t> at(localnp.size() + 1, 0);
  for (std::size_t b = 0; b < localnp.size(); ++b) {
    at[b + 1] = at[b] + static_cast<std::uint64_t>(std::max(localnp[b], 0));
  }
  return at;
}

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

}  // namespace tessera::io::detail
