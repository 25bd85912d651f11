#pragma once
// Runtime parameters: every key is declared once, by the module that owns it, with a
// type, a default, an allowed range (or set of choices) and a one-line doc. A run's
// values come from one TOML file (sections = the part of the key before the last dot,
// e.g. [mesh] nxb = 16 is key "mesh.nxb") and from command-line overrides
// "section.key=value". Anything undeclared, mistyped or out of range is an Error whose
// one-line message names the key, the file and line (or "command line"), and the
// closest declared key.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace tessera::base {

enum class ParamType { Int, Real, Bool, String, StringList };

using ParamValue = std::variant<std::int64_t, double, bool, std::string, std::vector<std::string>>;

/// One declared parameter and its value in effect.
struct ParamSpec {
  std::string key;  ///< "section.name"
  ParamType type{};
  ParamValue default_value;
  ParamValue value;                  ///< value in effect (default until set)
  std::optional<double> min, max;    ///< inclusive bounds for Int and Real
  std::vector<std::string> choices;  ///< allowed values for String (empty = any)
  std::string doc;                   ///< one line
  std::string source = "default";    ///< "default", "FILE:LINE" or "command line"
  bool numbers = false;              ///< a StringList of numbers (declare_number_list)
};

/// The registry. Not thread-safe; build it before the run starts.
class Params {
 public:
  /// Declare a parameter. Declaring the same key twice is a programming error (throws).
  void declare_int(const std::string& key, std::int64_t def, std::int64_t min, std::int64_t max,
                   const std::string& doc);
  void declare_real(const std::string& key, double def, double min, double max,
                    const std::string& doc);
  void declare_bool(const std::string& key, bool def, const std::string& doc);
  void declare_string(const std::string& key, const std::string& def,
                      const std::vector<std::string>& choices, const std::string& doc);
  void declare_string_list(const std::string& key, const std::vector<std::string>& def,
                           const std::string& doc);
  /// A list of numbers (a TOML array of numbers, or a,b on the command line), kept as a
  /// string list of their text (in checkpoints too); get_number_list parses it.
  void declare_number_list(const std::string& key, const std::vector<double>& def,
                           const std::string& doc);

  /// Read a TOML file. Throws Error naming file:line for: unreadable/missing file, TOML
  /// syntax error, unknown key (with "did you mean 'x.y'?"), wrong type, out of range.
  /// An Int given where a Real is expected is accepted; a Real where an Int is not.
  void load_file(const std::string& path);
  /// Apply "section.key=value"; value parsed per the declared type (lists as a,b,c or
  /// [a,b,c]; bools true/false/1/0). Throws Error as load_file, naming "command line".
  void apply_override(const std::string& assignment);

  bool has(const std::string& key) const;
  std::int64_t get_int(const std::string& key) const;  ///< throws if undeclared/wrong type
  double get_real(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::vector<std::string>& get_string_list(const std::string& key) const;
  /// A declare_number_list parameter's numbers (one-line Error for a non-number).
  std::vector<double> get_number_list(const std::string& key) const;

  /// Set a value from code (e.g. restart); validated like an override.
  void set(const std::string& key, const ParamValue& v, const std::string& source);

  /// All parameters in key order.
  std::vector<const ParamSpec*> all() const;
  /// Human-readable reference (`tessera params`): key, type, default, range, doc.
  void print_reference(std::ostream& os) const;
  /// The same as JSON: [{key, section, name, type, default, range, choices, doc}], in key
  /// order (`tessera params --json`; the documentation's parameter reference is made from
  /// it).
  nlohmann::json reference_json() const;
  /// Values in effect with their source, for the log; with `keep`, only the keys it
  /// accepts. Returns the number of lines printed.
  std::size_t print_in_effect(std::ostream& os,
                              const std::function<bool(const ParamSpec&)>& keep = {}) const;
  /// {"section.key": value, ...}
  nlohmann::json to_json() const;

  /// The declared key closest to `key` (Levenshtein on the full key and on the part after
  /// the dot); empty if none is reasonably close.
  std::string closest_key(const std::string& key) const;

 private:
  std::map<std::string, ParamSpec> specs_;
  ParamSpec& spec_or_throw(const std::string& key, const std::string& where);
  const ParamSpec& get_spec(const std::string& key, ParamType t) const;
};

}  // namespace tessera::base
