// Linking the CPU emitter's object code without LLVM (see object_linker.h).
//
// The emitter's objects are small: one function in .text, its constant pool
// (.rodata.cst*), the constant `<prefix>_streaming_lanes` in .rodata, perhaps
// .eh_frame, and relocations against those sections, the GOT and libm. The
// linker is what a static linker does for one object, in memory:
//   1. read and bounds-check the ELF header, section headers, symbol table
//      and relocation sections (every offset, size, index and name);
//   2. give one GOT slot to each symbol a GOT-entry relocation names;
//   3. lay the allocated sections out in one mapping, in three page-aligned
//      groups: executable, read-only (the GOT first), writable;
//   4. copy the sections' bytes (zeros for .bss), resolve every symbol (a
//      section's address, the GOT, or dlsym in the process for undefined
//      ones), fill the GOT, apply the relocations with overflow checks;
//   5. make the executable group read + execute and the read-only group
//      read-only (code is never writable and executable at once).
// What it does not know (REL sections, TLS, constructors, COMMON symbols, a
// relocation type outside the list in apply_relocation) is refused with
// Error(unsupported), and the compile cache links through LLJIT instead.
#include "object_linker.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <limits>
#include <map>
#include <vector>

#include "graft/core/error.h"

#if defined(__linux__) && defined(__x86_64__)
#include <elf.h>
#define GRAFT_OBJECT_LINKER 1
#endif

namespace graft::codegen {

#if GRAFT_OBJECT_LINKER

namespace {

/// Mapped bytes of one linked object at most (the emitter's are a few KiB).
constexpr uint64_t kMaxImageBytes = uint64_t(64) << 20;
constexpr uint64_t kPage = 4096;

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

/// The object's bytes, read only through bounds-checked accessors.
class ObjectBytes {
 public:
  explicit ObjectBytes(std::string_view bytes) : bytes_(bytes) {}
  bool contains(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  template <typename T>
  T read(uint64_t offset, const char* what) const {
    if (!contains(offset, sizeof(T))) fail(ErrorKind::invalid_model, "kernel object: ", what, " lies outside the file");
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  const char* at(uint64_t offset) const { return bytes_.data() + offset; }
  uint64_t size() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

bool is_got_entry_relocation(uint32_t type) {
  return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX ||
         type == R_X86_64_GOT64 || type == R_X86_64_GOTPCREL64 || type == R_X86_64_GOT32;
}

void write_int32(char* at, int64_t value, uint32_t type) {
  if (value < std::numeric_limits<int32_t>::min() || value > std::numeric_limits<int32_t>::max())
    fail(ErrorKind::unsupported, "kernel object: relocation type ", type, " does not fit in 32 bits here");
  auto v = static_cast<int32_t>(value);
  std::memcpy(at, &v, 4);
}

void write_uint32(char* at, uint64_t value, uint32_t type) {
  if (value > std::numeric_limits<uint32_t>::max())
    fail(ErrorKind::unsupported, "kernel object: relocation type ", type, " does not fit in 32 bits here");
  auto v = static_cast<uint32_t>(value);
  std::memcpy(at, &v, 4);
}

void write_64(char* at, uint64_t value) { std::memcpy(at, &value, 8); }

/// Applies one relocation at `at` (address `place`): S symbol, A addend,
/// GOT the table's address, G the symbol's slot offset in it (the x86-64
/// psABI's names).
void apply_relocation(uint32_t type, char* at, uint64_t place, uint64_t S, int64_t A, uint64_t GOT, uint64_t G) {
  switch (type) {
    case R_X86_64_NONE:
      return;
    case R_X86_64_64:
      return write_64(at, S + A);
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
      return write_int32(at, static_cast<int64_t>(S + A - place), type);
    case R_X86_64_32:
      return write_uint32(at, S + A, type);
    case R_X86_64_32S:
      return write_int32(at, static_cast<int64_t>(S + A), type);
    case R_X86_64_PC64:
      return write_64(at, S + A - place);
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
      return write_int32(at, static_cast<int64_t>(GOT + G + A - place), type);
    case R_X86_64_GOT32:
      return write_int32(at, static_cast<int64_t>(G + A), type);
    case R_X86_64_GOT64:
      return write_64(at, G + A);
    case R_X86_64_GOTPCREL64:
      return write_64(at, GOT + G + A - place);
    case R_X86_64_GOTOFF64:
      return write_64(at, S + A - GOT);
    case R_X86_64_GOTPC32:
      return write_int32(at, static_cast<int64_t>(GOT + A - place), type);
    case R_X86_64_GOTPC64:
      return write_64(at, GOT + A - place);
    case R_X86_64_PLTOFF64:
      return write_64(at, S + A - GOT);  // the symbol itself serves as its PLT entry
    default:
      fail(ErrorKind::unsupported, "kernel object: relocation type ", type);
  }
}

/// Bytes a relocation type writes.
uint64_t relocation_width(uint32_t type) {
  switch (type) {
    case R_X86_64_NONE:
      return 0;
    case R_X86_64_PC32:
    case R_X86_64_PLT32:
    case R_X86_64_32:
    case R_X86_64_32S:
    case R_X86_64_GOTPCREL:
    case R_X86_64_GOTPCRELX:
    case R_X86_64_REX_GOTPCRELX:
    case R_X86_64_GOT32:
    case R_X86_64_GOTPC32:
      return 4;
    default:
      return 8;
  }
}

struct Section {
  Elf64_Shdr header;
  bool loaded = false;
  uint64_t offset = 0;  // in the image
};

}  // namespace

std::shared_ptr<const LinkedObject> LinkedObject::link(std::string_view object) {
  ObjectBytes file(object);
  auto header = file.read<Elf64_Ehdr>(0, "the ELF header");
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) fail(ErrorKind::invalid_model, "kernel object: not ELF");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB ||
      header.e_machine != EM_X86_64 || header.e_type != ET_REL)
    fail(ErrorKind::unsupported, "kernel object: not a relocatable x86-64 ELF64 object");
  if (header.e_shentsize != sizeof(Elf64_Shdr) || header.e_shnum == 0 ||
      !file.contains(header.e_shoff, uint64_t(header.e_shnum) * sizeof(Elf64_Shdr)))
    fail(ErrorKind::invalid_model, "kernel object: section headers out of bounds");

  std::vector<Section> sections(header.e_shnum);
  const Elf64_Shdr* symtab = nullptr;
  for (size_t i = 0; i < sections.size(); ++i) {
    Elf64_Shdr& s = sections[i].header;
    s = file.read<Elf64_Shdr>(header.e_shoff + i * sizeof(Elf64_Shdr), "a section header");
    if (s.sh_type != SHT_NOBITS && s.sh_type != SHT_NULL && !file.contains(s.sh_offset, s.sh_size))
      fail(ErrorKind::invalid_model, "kernel object: section ", i, " lies outside the file");
    if (s.sh_type == SHT_REL) fail(ErrorKind::unsupported, "kernel object: REL relocations");
    if (s.sh_type == SHT_SYMTAB) {
      if (symtab) fail(ErrorKind::unsupported, "kernel object: two symbol tables");
      symtab = &s;
    }
    if (!(s.sh_flags & SHF_ALLOC) || s.sh_size == 0) continue;
    if (s.sh_flags & SHF_TLS) fail(ErrorKind::unsupported, "kernel object: thread-local data");
    if (s.sh_type == SHT_INIT_ARRAY || s.sh_type == SHT_FINI_ARRAY || s.sh_type == SHT_PREINIT_ARRAY)
      fail(ErrorKind::unsupported, "kernel object: constructors or destructors");
    if (s.sh_type != SHT_PROGBITS && s.sh_type != SHT_NOBITS && s.sh_type != SHT_X86_64_UNWIND)
      fail(ErrorKind::unsupported, "kernel object: allocated section of type ", s.sh_type);
    if (s.sh_size > kMaxImageBytes) fail(ErrorKind::invalid_model, "kernel object: section ", i, " too large");
    if (s.sh_addralign > kPage || (s.sh_addralign & (s.sh_addralign - 1)) != 0)
      fail(ErrorKind::unsupported, "kernel object: section alignment ", s.sh_addralign);
    sections[i].loaded = true;
  }
  if (!symtab) fail(ErrorKind::invalid_model, "kernel object: no symbol table");
  if (symtab->sh_entsize != sizeof(Elf64_Sym) || symtab->sh_link >= sections.size() ||
      sections[symtab->sh_link].header.sh_type != SHT_STRTAB)
    fail(ErrorKind::invalid_model, "kernel object: malformed symbol table");
  const Elf64_Shdr& strtab = sections[symtab->sh_link].header;
  uint64_t num_symbols = symtab->sh_size / sizeof(Elf64_Sym);
  auto symbol_at = [&](uint64_t index) {
    if (index >= num_symbols) fail(ErrorKind::invalid_model, "kernel object: symbol index ", index, " out of range");
    return file.read<Elf64_Sym>(symtab->sh_offset + index * sizeof(Elf64_Sym), "a symbol");
  };
  auto name_of = [&](const Elf64_Sym& symbol) {
    if (symbol.st_name >= strtab.sh_size) fail(ErrorKind::invalid_model, "kernel object: symbol name out of bounds");
    const char* begin = file.at(strtab.sh_offset + symbol.st_name);
    const void* end = std::memchr(begin, '\0', strtab.sh_size - symbol.st_name);
    if (!end) fail(ErrorKind::invalid_model, "kernel object: unterminated symbol name");
    return std::string(begin, static_cast<const char*>(end));
  };

  // Relocation sections that apply to loaded sections, and the GOT slots they need.
  std::vector<const Elf64_Shdr*> relocations;
  std::map<uint64_t, uint64_t> got_slot;  // symbol index -> byte offset in the GOT
  for (const Section& section : sections) {
    const Elf64_Shdr& s = section.header;
    if (s.sh_type != SHT_RELA) continue;
    if (s.sh_info >= sections.size()) fail(ErrorKind::invalid_model, "kernel object: relocations of a missing section");
    if (!sections[s.sh_info].loaded) continue;  // debug information and the like
    if (s.sh_entsize != sizeof(Elf64_Rela) || s.sh_link >= sections.size() || &sections[s.sh_link].header != symtab)
      fail(ErrorKind::invalid_model, "kernel object: malformed relocation section");
    relocations.push_back(&s);
    for (uint64_t k = 0; k < s.sh_size / sizeof(Elf64_Rela); ++k) {
      auto rela = file.read<Elf64_Rela>(s.sh_offset + k * sizeof(Elf64_Rela), "a relocation");
      if (is_got_entry_relocation(ELF64_R_TYPE(rela.r_info)) && !got_slot.count(ELF64_R_SYM(rela.r_info))) {
        uint64_t slot = got_slot.size() * 8;
        got_slot.emplace(ELF64_R_SYM(rela.r_info), slot);
      }
    }
  }

  // Layout: executable, then read-only (GOT first), then writable; each group on its own pages.
  uint64_t size = 0, got_offset = 0, read_only_begin = 0, writable_begin = 0;
  for (int group = 0; group < 3; ++group) {
    size = align_up(size, kPage);
    if (group == 1) {
      read_only_begin = size;
      got_offset = size;
      size += got_slot.size() * 8;
    }
    if (group == 2) writable_begin = size;
    for (Section& section : sections) {
      if (!section.loaded) continue;
      const Elf64_Shdr& s = section.header;
      int of = (s.sh_flags & SHF_EXECINSTR) ? 0 : (s.sh_flags & SHF_WRITE) ? 2 : 1;
      if (of != group) continue;
      size = align_up(size, std::max<uint64_t>(s.sh_addralign, 1));
      section.offset = size;
      size += s.sh_size;
      if (size > kMaxImageBytes) fail(ErrorKind::invalid_model, "kernel object: sections too large");
    }
  }
  size = align_up(std::max<uint64_t>(size, 1), kPage);

  void* pages = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) fail(ErrorKind::internal, "kernel object: cannot map ", size, " bytes");
  std::shared_ptr<LinkedObject> linked(new LinkedObject);
  linked->pages_ = pages;
  linked->size_ = size;
  char* image = static_cast<char*>(pages);
  const uint64_t base = reinterpret_cast<uint64_t>(image);
  const uint64_t got = base + got_offset;
  for (const Section& section : sections)
    if (section.loaded && section.header.sh_type != SHT_NOBITS)
      std::memcpy(image + section.offset, file.at(section.header.sh_offset), section.header.sh_size);

  auto address_of = [&](uint64_t index) -> uint64_t {
    Elf64_Sym symbol = symbol_at(index);
    if (symbol.st_shndx == SHN_UNDEF) {
      if (index == 0) return 0;
      std::string name = name_of(symbol);
      if (name == "_GLOBAL_OFFSET_TABLE_") return got;
      if (void* found = ::dlsym(RTLD_DEFAULT, name.c_str())) return reinterpret_cast<uint64_t>(found);
      if (ELF64_ST_BIND(symbol.st_info) == STB_WEAK) return 0;
      fail(ErrorKind::unsupported, "kernel object: undefined symbol ", name);
    }
    if (symbol.st_shndx == SHN_ABS) return symbol.st_value;
    if (symbol.st_shndx >= sections.size() || !sections[symbol.st_shndx].loaded)
      fail(ErrorKind::unsupported, "kernel object: symbol in section ", symbol.st_shndx, " that is not loaded");
    const Section& section = sections[symbol.st_shndx];
    if (symbol.st_value > section.header.sh_size || symbol.st_size > section.header.sh_size - symbol.st_value)
      fail(ErrorKind::invalid_model, "kernel object: symbol outside its section");
    return base + section.offset + symbol.st_value;
  };

  for (const auto& [index, slot] : got_slot) write_64(image + got_offset + slot, address_of(index));
  for (const Elf64_Shdr* s : relocations) {
    const Section& target = sections[s->sh_info];
    for (uint64_t k = 0; k < s->sh_size / sizeof(Elf64_Rela); ++k) {
      auto rela = file.read<Elf64_Rela>(s->sh_offset + k * sizeof(Elf64_Rela), "a relocation");
      uint32_t type = ELF64_R_TYPE(rela.r_info);
      uint64_t width = relocation_width(type);
      if (rela.r_offset > target.header.sh_size || width > target.header.sh_size - rela.r_offset)
        fail(ErrorKind::invalid_model, "kernel object: relocation outside its section");
      if (target.header.sh_type == SHT_NOBITS) fail(ErrorKind::invalid_model, "kernel object: relocation in .bss");
      uint64_t symbol = ELF64_R_SYM(rela.r_info);
      auto slot = got_slot.find(symbol);
      char* at = image + target.offset + rela.r_offset;
      apply_relocation(type, at, base + target.offset + rela.r_offset, address_of(symbol), rela.r_addend, got,
                       slot == got_slot.end() ? 0 : slot->second);
    }
  }

  for (uint64_t index = 1; index < num_symbols; ++index) {
    Elf64_Sym symbol = symbol_at(index);
    int binding = ELF64_ST_BIND(symbol.st_info);
    if (symbol.st_shndx == SHN_COMMON) fail(ErrorKind::unsupported, "kernel object: COMMON symbol");
    if (symbol.st_shndx == SHN_UNDEF || (binding != STB_GLOBAL && binding != STB_WEAK)) continue;
    linked->symbols_[name_of(symbol)] = {reinterpret_cast<const void*>(address_of(index)), symbol.st_size};
  }

  if ((read_only_begin > 0 && ::mprotect(image, read_only_begin, PROT_READ | PROT_EXEC) != 0) ||
      (writable_begin > read_only_begin &&
       ::mprotect(image + read_only_begin, writable_begin - read_only_begin, PROT_READ) != 0))
    fail(ErrorKind::internal, "kernel object: cannot protect its pages");
  return linked;
}

LinkedObject::~LinkedObject() {
  if (pages_) ::munmap(pages_, size_);
}

const void* LinkedObject::symbol(const std::string& name, uint64_t bytes) const {
  auto it = symbols_.find(name);
  return it == symbols_.end() || it->second.size < bytes ? nullptr : it->second.address;
}

bool object_linker_available() { return true; }

#else  // not x86-64 Linux: the compile cache links through LLJIT

std::shared_ptr<const LinkedObject> LinkedObject::link(std::string_view) {
  fail(ErrorKind::unsupported, "graft links kernel objects itself only on x86-64 Linux");
}
LinkedObject::~LinkedObject() = default;
const void* LinkedObject::symbol(const std::string&, uint64_t) const { return nullptr; }
bool object_linker_available() { return false; }

#endif

}  // namespace graft::codegen
