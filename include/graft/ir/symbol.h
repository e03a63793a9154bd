/// \file
/// Symbol: an interned name, for the symbolic dimensions of value types
/// ("batch", "seq"). Equal names share one stored string, so a Symbol is one
/// pointer: copying a type's dimensions is a plain memory copy and comparing
/// two symbols compares pointers.
#pragma once

#include <string>
#include <string_view>

namespace graft::ir {

class Symbol {
 public:
  /// The empty symbol (no name).
  Symbol() = default;
  /// Interns `name` (the empty name gives the empty symbol). Thread-safe.
  Symbol(std::string_view name);                                       // NOLINT: names convert implicitly
  Symbol(const std::string& name) : Symbol(std::string_view(name)) {}  // NOLINT
  Symbol(const char* name) : Symbol(std::string_view(name)) {}         // NOLINT

  bool empty() const { return name_ == nullptr; }
  /// The name; "" for the empty symbol.
  const std::string& str() const;
  operator const std::string&() const { return str(); }  // NOLINT: reads like the string it stands for

  bool operator==(const Symbol& other) const { return name_ == other.name_; }
  bool operator==(std::string_view other) const { return std::string_view(str()) == other; }
  bool operator==(const std::string& other) const { return str() == other; }
  bool operator==(const char* other) const { return str() == other; }

 private:
  const std::string* name_ = nullptr;  // owned by the process-wide table; never freed
};

}  // namespace graft::ir
