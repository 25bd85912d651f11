#include "base/params.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <ostream>
#include <stdexcept>
#include <string_view>
#include <type_traits>

#include "base/error.hpp"
#include "base/text.hpp"

namespace tessera::base {

namespace {

// ParamType doubles as the index into ParamValue, which keeps set() and the checks short.
template <ParamType T, class V>
constexpr bool alternative_is =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(T), ParamValue>, V>;
static_assert(alternative_is<ParamType::Int, std::int64_t> &&
              alternative_is<ParamType::Real, double> && alternative_is<ParamType::Bool, bool> &&
              alternative_is<ParamType::String, std::string> &&
              alternative_is<ParamType::StringList, std::vector<std::string>>);

constexpr const char* kCommandLine = "command line";

const char* type_phrase(ParamType t) {
  switch (t) {
    case ParamType::Int:
      return "an integer";
    case ParamType::Real:
      return "a real";
    case ParamType::Bool:
      return "a boolean";
    case ParamType::String:
      return "a string";
    case ParamType::StringList:
      return "a list of strings";
  }
  return "a value";
}

/// What parameter s expects ("a list of numbers" for a number list).
const char* type_phrase(const ParamSpec& s) {
  return s.type == ParamType::StringList && s.numbers ? "a list of numbers" : type_phrase(s.type);
}

/// A number list's item: a finite number (NaN and inf are refused: no per-species
/// coefficient or opacity means either).
Error not_finite(const std::string& where, const std::string& key, const std::string& item) {
  return Error(fmt::format("{}parameter '{}': {} is not a finite number",
                           where.empty() ? "" : where + ": ", key, item));
}

const char* type_name(ParamType t) {
  switch (t) {
    case ParamType::Int:
      return "int";
    case ParamType::Real:
      return "real";
    case ParamType::Bool:
      return "bool";
    case ParamType::String:
      return "string";
    case ParamType::StringList:
      return "list";
  }
  return "?";
}

const char* toml_phrase(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a real";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();
}

std::string format_value(const ParamValue& v) {
  struct {
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return fmt::format("{}", d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::string& s) const { return quoted(s); }
    std::string operator()(const std::vector<std::string>& list) const {
      std::vector<std::string> q;
      for (const auto& s : list) q.push_back(quoted(s));
      return "[" + join(q, ", ") + "]";
    }
  } visitor;
  return std::visit(visitor, v);
}

std::string format_bound(const ParamSpec& s, double b) {
  return s.type == ParamType::Int ? std::to_string(static_cast<std::int64_t>(b))
                                  : fmt::format("{}", b);
}

std::string range_text(const ParamSpec& s) {
  if (s.min && s.max)
    return fmt::format("[{}, {}]", format_bound(s, *s.min), format_bound(s, *s.max));
  if (!s.choices.empty()) return "{" + join(s.choices, ", ") + "}";
  return "";
}

// Why `v` is not allowed for `s` (range or choices); empty if it is. `v` has s's type.
std::string violation(const ParamSpec& s, const ParamValue& v) {
  if (s.min && s.max) {
    const double x = s.type == ParamType::Int ? static_cast<double>(std::get<std::int64_t>(v))
                                              : std::get<double>(v);
    if (!(x >= *s.min && x <= *s.max))  // written so that NaN is out of range too
      return fmt::format("parameter '{}' = {} is out of range {}", s.key, format_value(v),
                         range_text(s));
  }
  if (s.type == ParamType::String && !s.choices.empty()) {
    const auto& str = std::get<std::string>(v);
    if (std::find(s.choices.begin(), s.choices.end(), str) == s.choices.end())
      return fmt::format("parameter '{}' = {} is not one of {}", s.key, quoted(str),
                         join(s.choices, ", "));
  }
  return "";
}

void assign(ParamSpec& s, ParamValue v, const std::string& where) {
  if (const auto why = violation(s, v); !why.empty()) throw Error(where + ": " + why);
  s.value = std::move(v);
  s.source = where;
}

ParamSpec make_spec(const std::string& key, ParamType type, const ParamValue& def,
                    const std::string& doc) {
  ParamSpec s;
  s.key = key;
  s.type = type;
  s.default_value = def;
  s.value = def;
  s.doc = doc;
  return s;
}

// Checks a declaration; a bad one is a bug in the declaring module, not in the input.
void declare(std::map<std::string, ParamSpec>& specs, ParamSpec s) {
  // section.name, or section.group.name (a TOML sub-table [section.group]: memory.tier.*).
  std::vector<std::string> parts;
  for (std::size_t at = 0;;) {
    const auto dot = s.key.find('.', at);
    parts.push_back(s.key.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  const bool empty_part =
      std::any_of(parts.begin(), parts.end(), [](const std::string& x) { return x.empty(); });
  if (parts.size() < 2 || parts.size() > 3 || empty_part)
    throw std::logic_error("parameter key '" + s.key +
                           "' is not of the form section.name or section.group.name");
  if (s.min && s.max && *s.min > *s.max)
    throw std::logic_error("parameter '" + s.key + "' is declared with min > max");
  if (const auto why = violation(s, s.default_value); !why.empty())
    throw std::logic_error("default of " + why);
  const std::string key = s.key;
  if (!specs.emplace(key, std::move(s)).second)
    throw std::logic_error("parameter '" + key + "' is declared twice");
}

std::string where_in(const std::string& file, const toml::source_region& src) {
  return fmt::format("{}:{}", file, src.begin.line);
}

ParamValue from_toml(const ParamSpec& s, const toml::node& n, const std::string& file) {
  auto mismatch = [&](const toml::node& at, const std::string& got) {
    return Error(fmt::format("{}: parameter '{}' expects {}, got {}", where_in(file, at.source()),
                             s.key, type_phrase(s), got));
  };
  switch (s.type) {
    case ParamType::Int:
      if (const auto* i = n.as_integer()) return i->get();
      break;
    case ParamType::Real:
      if (const auto* d = n.as_floating_point()) return d->get();
      if (const auto* i = n.as_integer()) return static_cast<double>(i->get());
      break;
    case ParamType::Bool:
      if (const auto* b = n.as_boolean()) return b->get();
      break;
    case ParamType::String:
      if (const auto* str = n.as_string()) return str->get();
      break;
    case ParamType::StringList:
      if (const auto* arr = n.as_array()) {
        std::vector<std::string> list;
        for (const auto& item : *arr) {
          // A list of numbers (declare_number_list) keeps each as its text.
          if (s.numbers) {
            if (const auto* d = item.as_floating_point()) {
              if (!std::isfinite(d->get()))
                throw not_finite(where_in(file, item.source()), s.key, fmt::format("{}", d->get()));
              list.push_back(fmt::format("{}", d->get()));
              continue;
            }
            if (const auto* i = item.as_integer()) {
              list.push_back(fmt::format("{}", i->get()));
              continue;
            }
            throw mismatch(item, fmt::format("an array containing {}", toml_phrase(item)));
          }
          if (!item.is_string())
            throw mismatch(item, fmt::format("an array containing {}", toml_phrase(item)));
          list.push_back(item.as_string()->get());
        }
        return list;
      }
      break;
  }
  throw mismatch(n, toml_phrase(n));
}

std::string trim(std::string_view s, std::string_view chars = " \t") {
  const auto b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(chars) - b + 1));
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

template <class T>
bool parse_number(std::string_view text, T& out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);  // from_chars rejects '+'
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc{} && end == text.data() + text.size();
}

ParamValue from_text(const ParamSpec& s, const std::string& text) {
  switch (s.type) {
    case ParamType::Int:
      if (std::int64_t i{}; parse_number(text, i)) return i;
      break;
    case ParamType::Real:
      if (double d{}; parse_number(text, d)) return d;
      break;
    case ParamType::Bool: {
      std::string lower = text;
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower == "true" || lower == "1" || lower == "yes") return true;
      if (lower == "false" || lower == "0" || lower == "no") return false;
      break;
    }
    case ParamType::String:
      return unquote(text);
    case ParamType::StringList: {
      std::string body = text;
      if (body.size() >= 2 && body.front() == '[' && body.back() == ']')
        body = trim(body.substr(1, body.size() - 2));
      std::vector<std::string> list;
      for (std::size_t pos = 0; !body.empty() && pos <= body.size();) {
        const auto comma = std::min(body.find(',', pos), body.size());
        const std::string item = trim(std::string_view(body).substr(pos, comma - pos));
        if (s.numbers) {
          // As in a file: numbers, not quoted strings, and finite ones.
          double d{};
          if (!parse_number(item, d))
            throw Error(fmt::format("{}: parameter '{}' expects a list of numbers, got '{}'",
                                    kCommandLine, s.key, item));
          if (!std::isfinite(d)) throw not_finite(kCommandLine, s.key, item);
          list.push_back(item);
        } else {
          list.push_back(unquote(item));
        }
        pos = comma + 1;
      }
      return list;
    }
  }
  throw Error(fmt::format("{}: parameter '{}' expects {}, got '{}'", kCommandLine, s.key,
                          type_phrase(s), text));
}

std::string_view after_last_dot(std::string_view key) {
  const auto dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

Error unknown_key(const std::string& where, const std::string& key, const std::string& near) {
  return Error(fmt::format("{}: unknown parameter '{}'{}", where, key,
                           near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

std::string_view section_of(std::string_view key) {
  return key.substr(0, key.find('.'));
}

}  // namespace

void Params::declare_int(const std::string& key, std::int64_t def, std::int64_t min,
                         std::int64_t max, const std::string& doc) {
  ParamSpec s = make_spec(key, ParamType::Int, def, doc);
  s.min = static_cast<double>(min);
  s.max = static_cast<double>(max);
  declare(specs_, std::move(s));
}

void Params::declare_real(const std::string& key, double def, double min, double max,
                          const std::string& doc) {
  ParamSpec s = make_spec(key, ParamType::Real, def, doc);
  s.min = min;
  s.max = max;
  declare(specs_, std::move(s));
}

void Params::declare_bool(const std::string& key, bool def, const std::string& doc) {
  declare(specs_, make_spec(key, ParamType::Bool, def, doc));
}

void Params::declare_string(const std::string& key, const std::string& def,
                            const std::vector<std::string>& choices, const std::string& doc) {
  ParamSpec s = make_spec(key, ParamType::String, def, doc);
  s.choices = choices;
  declare(specs_, std::move(s));
}

void Params::declare_string_list(const std::string& key, const std::vector<std::string>& def,
                                 const std::string& doc) {
  declare(specs_, make_spec(key, ParamType::StringList, def, doc));
}

void Params::declare_number_list(const std::string& key, const std::vector<double>& def,
                                 const std::string& doc) {
  std::vector<std::string> text;
  for (double d : def) text.push_back(fmt::format("{}", d));
  ParamSpec sp = make_spec(key, ParamType::StringList, text, doc);
  sp.numbers = true;
  declare(specs_, sp);
}

std::vector<double> Params::get_number_list(const std::string& key) const {
  std::vector<double> out;
  for (const auto& t : get_string_list(key)) {
    double v = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc{} || end != t.data() + t.size())
      throw Error(fmt::format("parameter '{}': '{}' is not a number", key, t));
    if (!std::isfinite(v)) throw not_finite("", key, t);
    out.push_back(v);
  }
  return out;
}

void Params::load_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("cannot open parameter file '{}': {}", path, std::strerror(EISDIR)));
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(fmt::format("cannot open parameter file '{}': {}", path,
                            errno != 0 ? std::strerror(errno) : "cannot be read"));
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};

  toml::table doc;
  try {
    doc = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    std::string what(e.description());
    std::replace(what.begin(), what.end(), '\n', ' ');
    throw Error(fmt::format("{}: {}", where_in(path, e.source()), what));
  }

  // toml++ iterates keys in sorted order, so the first error reported is not
  // necessarily the first in the file; any one error stops the run anyway.
  for (const auto& [section, node] : doc) {
    const auto* table = node.as_table();
    if (table == nullptr) {  // a key outside any section, even a quoted "mesh.nxb"
      const std::string key(section.str());
      throw unknown_key(where_in(path, section.source()), key, closest_key(key));
    }
    const bool known = std::any_of(specs_.begin(), specs_.end(), [&](const auto& kv) {
      return section_of(kv.first) == section.str();
    });
    if (table->empty() && !known)
      throw Error(
          fmt::format("{}: unknown section [{}]", where_in(path, section.source()), section.str()));
    for (const auto& [name, value] : *table) {
      if (const auto* group = value.as_table()) {  // [section.group]: keys section.group.*
        for (const auto& [sub, v] : *group) {
          const std::string where = where_in(path, sub.source());
          ParamSpec& s =
              spec_or_throw(fmt::format("{}.{}.{}", section.str(), name.str(), sub.str()), where);
          assign(s, from_toml(s, v, path), where);
        }
        continue;
      }
      const std::string where = where_in(path, name.source());
      ParamSpec& s = spec_or_throw(fmt::format("{}.{}", section.str(), name.str()), where);
      assign(s, from_toml(s, value, path), where);
    }
  }
}

void Params::apply_override(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos)
    throw Error(fmt::format("{}: expected section.key=value, got '{}'", kCommandLine, assignment));
  ParamSpec& s = spec_or_throw(trim(assignment.substr(0, eq)), kCommandLine);
  assign(s, from_text(s, trim(assignment.substr(eq + 1))), kCommandLine);
}

bool Params::has(const std::string& key) const {
  return specs_.count(key) != 0;
}

std::int64_t Params::get_int(const std::string& key) const {
  return std::get<std::int64_t>(get_spec(key, ParamType::Int).value);
}
double Params::get_real(const std::string& key) const {
  return std::get<double>(get_spec(key, ParamType::Real).value);
}
bool Params::get_bool(const std::string& key) const {
  return std::get<bool>(get_spec(key, ParamType::Bool).value);
}
const std::string& Params::get_string(const std::string& key) const {
  return std::get<std::string>(get_spec(key, ParamType::String).value);
}
const std::vector<std::string>& Params::get_string_list(const std::string& key) const {
  return std::get<std::vector<std::string>>(get_spec(key, ParamType::StringList).value);
}

void Params::set(const std::string& key, const ParamValue& v, const std::string& source) {
  ParamSpec& s = spec_or_throw(key, source);
  ParamValue x = v;
  if (s.type == ParamType::Real && std::holds_alternative<std::int64_t>(x))
    x = static_cast<double>(std::get<std::int64_t>(x));
  if (x.index() != static_cast<std::size_t>(s.type))
    throw Error(fmt::format("{}: parameter '{}' expects {}, got {}", source, key,
                            type_phrase(s.type), type_phrase(static_cast<ParamType>(x.index()))));
  assign(s, std::move(x), source);
}

std::vector<const ParamSpec*> Params::all() const {
  std::vector<const ParamSpec*> out;
  for (const auto& [key, s] : specs_) out.push_back(&s);
  return out;
}

void Params::print_reference(std::ostream& os) const {
  struct Line {
    std::string section, name, type, def, range, doc;
  };
  std::vector<Line> lines;
  std::size_t w[4] = {4, 4, 7, 5};  // at least the width of the column titles
  for (const auto& [key, s] : specs_) {
    lines.push_back({std::string(section_of(key)), key.substr(section_of(key).size() + 1),
                     type_name(s.type), format_value(s.default_value), range_text(s), s.doc});
    const auto& l = lines.back();
    w[0] = std::max(w[0], l.name.size());
    w[1] = std::max(w[1], l.type.size());
    w[2] = std::max(w[2], l.def.size());
    w[3] = std::max(w[3], l.range.size());
  }
  os << fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", "name", w[0], "type", w[1], "default",
                    w[2], "range", w[3], "description");
  std::string section;
  for (const auto& l : lines) {
    if (l.section != section) {
      section = l.section;
      os << "[" << section << "]\n";
    }
    os << fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", l.name, w[0], l.type, w[1], l.def,
                      w[2], l.range, w[3], l.doc);
  }
}

nlohmann::json Params::reference_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, s] : specs_)
    out.push_back({{"key", key},
                   {"section", std::string(section_of(key))},
                   {"name", key.substr(section_of(key).size() + 1)},
                   {"type", type_name(s.type)},
                   {"default", format_value(s.default_value)},
                   {"range", range_text(s)},
                   {"choices", s.choices},
                   {"doc", s.doc}});
  return out;
}

std::size_t Params::print_in_effect(std::ostream& os,
                                    const std::function<bool(const ParamSpec&)>& keep) const {
  std::size_t wkey = 0, wval = 0, n = 0;
  for (const auto& [key, s] : specs_) {
    if (keep && !keep(s)) continue;
    wkey = std::max(wkey, key.size());
    wval = std::max(wval, format_value(s.value).size());
  }
  for (const auto& [key, s] : specs_) {
    if (keep && !keep(s)) continue;
    os << fmt::format("{:<{}} = {:<{}}   ({})\n", key, wkey, format_value(s.value), wval, s.source);
    ++n;
  }
  return n;
}

nlohmann::json Params::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, s] : specs_) std::visit([&](const auto& v) { j[key] = v; }, s.value);
  return j;
}

std::string Params::closest_key(const std::string& key) const {
  // Comparing the name alone as well catches a right name in the wrong section.
  const auto name = after_last_dot(key);
  const std::size_t full_limit = std::max<std::size_t>(2, key.size() / 3);
  const std::size_t name_limit = std::max<std::size_t>(2, name.size() / 3);
  std::string best;
  std::pair<std::size_t, std::size_t> best_rank{SIZE_MAX, SIZE_MAX};  // (closest, full)
  for (const auto& [candidate, s] : specs_) {
    const std::size_t full = edit_distance(key, candidate);
    const std::size_t part = edit_distance(name, after_last_dot(candidate));
    if (full > full_limit && part > name_limit) continue;
    const std::pair rank{std::min(full, part), full};
    if (rank < best_rank) {
      best_rank = rank;
      best = candidate;
    }
  }
  return best;
}

ParamSpec& Params::spec_or_throw(const std::string& key, const std::string& where) {
  if (const auto it = specs_.find(key); it != specs_.end()) return it->second;
  throw unknown_key(where, key, closest_key(key));
}

const ParamSpec& Params::get_spec(const std::string& key, ParamType t) const {
  const auto it = specs_.find(key);
  if (it == specs_.end()) throw std::logic_error("parameter '" + key + "' is not declared");
  if (it->second.type != t)
    throw std::logic_error(fmt::format("parameter '{}' is {}, not {}", key,
                                       type_phrase(it->second.type), type_phrase(t)));
  return it->second;
}

}  // namespace tessera::base
