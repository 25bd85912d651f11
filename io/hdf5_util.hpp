#pragma once
// HDF5 plumbing shared by the FLASH writer, readers and checker (io/flash_*.cpp): an owning
// handle, one-line errors naming the file and the failing call, MPI-IO file access with
// hints, and the selection of a variable's rows. Knows nothing of the FLASH layout
// (io/flash_format.hpp) or of the manifest (io/manifest.hpp). Internal to io/.
#include <hdf5.h>
#include <mpi.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "base/error.hpp"

namespace tessera::io::detail {

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

/// The operating system's error in this thread's HDF5 error stack ("No space left on
/// device (errno 28)"), or "" when the failure was not the system's.
std::string system_error_of_stack();

/// Turns failed HDF5 calls into one-line tessera::Error messages for one file.
class Context {
 public:
  explicit Context(std::string prefix) : prefix_(std::move(prefix)) {}

  /// The failure with what the operating system said, when HDF5's error stack holds it
  /// (a full disk: "... failed: No space left on device (errno 28)").
  [[noreturn]] void fail(const std::string& why) const { throw Error(message(why)); }
  std::string message(const std::string& why) const {
    const std::string os = system_error_of_stack();
    return prefix_ + why + (os.empty() ? std::string() : ": " + os);
  }

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

inline std::string quoted(const std::string& name) {
  return " '" + name + "'";
}

/// A fixed-length, NUL-padded string type of `size` bytes.
Handle string_type(const Context& c, std::size_t size);

/// File access through MPI-IO on comm with the given hints (io.mpi_hints etc.).
void set_fapl_mpio(const Context& c, hid_t fapl, MPI_Comm comm,
                   const std::vector<std::pair<std::string, std::string>>& hints);

/// Selects `rows` (ascending) of a variable's (N, nzb, nyb, nxb) file space as a union of
/// hyperslabs, one per run of consecutive rows; nothing if `rows` is empty.
void select_rows(const Context& c, const Handle& fspace, const std::vector<int>& rows,
                 const std::array<int, 3>& zyx, const std::string& name);

/// Selects, of a 2-D (rows, ncols) file space, rows [first, first + count) for each
/// {first, count} of `ranges` (ascending, not overlapping) as a union of hyperslabs:
/// ranges that touch are merged, empty ones skipped, nothing selected if all are empty.
/// Returns the number of rows selected. (The particles of a set of blocks.)
hsize_t select_row_ranges(const Context& c, const Handle& fspace,
                          const std::vector<std::pair<hsize_t, hsize_t>>& ranges, hsize_t ncols,
                          const std::string& name);

}  // namespace tessera::io::detail
