#pragma once
// Errors that stop a run. The message is one line: the app prints it on stderr as
// "tessera: error: <message>" and exits non-zero.
#include <stdexcept>
#include <string>

namespace tessera {

/// A user-facing error (bad input, resource exhausted, unphysical state). One line.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace tessera
