// HDF5 plumbing shared by io/flash_*.cpp (see io/hdf5_util.hpp).
#include "io/hdf5_util.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace tessera::io::detail {

Handle string_type(const Context& c, std::size_t size) {
  Handle t = c.check(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  c.check(H5Tset_size(t.get(), size), "H5Tset_size");
  c.check(H5Tset_strpad(t.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  return t;
}

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

hsize_t select_row_ranges(const Context& c, const Handle& fspace,
                          const std::vector<std::pair<hsize_t, hsize_t>>& ranges, hsize_t ncols,
                          const std::string& name) {
  c.check(H5Sselect_none(fspace.get()), "H5Sselect_none" + quoted(name));
  hsize_t total = 0;
  H5S_seloper_t op = H5S_SELECT_SET;
  for (std::size_t begin = 0; begin < ranges.size();) {
    if (ranges[begin].second == 0) {
      ++begin;
      continue;
    }
    const hsize_t first = ranges[begin].first;
    hsize_t count = ranges[begin].second;
    std::size_t end = begin + 1;
    for (; end < ranges.size() && ranges[end].first == first + count; ++end) {
      count += ranges[end].second;
    }
    const std::array<hsize_t, 2> start{first, 0}, block{count, ncols};
    c.check(H5Sselect_hyperslab(fspace.get(), op, start.data(), nullptr, block.data(), nullptr),
            "H5Sselect_hyperslab" + quoted(name));
    op = H5S_SELECT_OR;
    total += count;
    begin = end;
  }
  return total;
}

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

namespace {
herr_t find_errno(unsigned, const H5E_error2_t* e, void* out) {
  // HDF5's POSIX drivers write "..., errno = 28, error message = 'No space left on device'".
  auto* text = static_cast<std::string*>(out);
  if (!text->empty() || e->desc == nullptr) return 0;
  const std::string d = e->desc;
  const auto at = d.find("errno = ");
  if (at == std::string::npos) return 0;
  const int code = std::atoi(d.c_str() + at + 8);
  if (code > 0) *text = std::string(std::strerror(code)) + " (errno " + std::to_string(code) + ")";
  return 0;
}
}  // namespace

std::string system_error_of_stack() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_errno, &text);
  return text;
}

}  // namespace tessera::io::detail
