// Arena planning for a dnnl program: every root arena slot lives from the
// first to the last step that touches it (through itself or a view). Slots are
// placed largest first at the lowest 64-byte-aligned offset that overlaps no
// already placed slot with an intersecting lifetime (first fit; quadratic in
// the number of slots, a few hundred for the largest CNNs).
#include <algorithm>

#include "dnnl_program.h"

namespace graft::dnnl_backend {

void plan_arena(DnnlProgram& program) {
  constexpr size_t kAlignment = 64;
  struct Life {
    int slot;
    size_t bytes;
    size_t first, last;
  };
  const size_t none = SIZE_MAX;
  std::vector<size_t> first(program.slots.size(), none), last(program.slots.size(), 0);
  program.scratchpad_bytes = 0;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    program.scratchpad_bytes = std::max(program.scratchpad_bytes, program.steps[i].scratchpad.get_size());
    for (const auto& [arg, slot] : program.steps[i].args) {
      int root = program.slots[slot].root >= 0 ? program.slots[slot].root : slot;
      first[root] = std::min(first[root], i);
      last[root] = std::max(last[root], i);
    }
  }
  std::vector<Life> lives;
  for (size_t s = 0; s < program.slots.size(); ++s) {
    const Slot& slot = program.slots[s];
    if (slot.kind != SlotKind::arena || slot.root >= 0 || first[s] == none) continue;
    size_t bytes = (slot.desc.get_size() + kAlignment - 1) / kAlignment * kAlignment;
    lives.push_back({static_cast<int>(s), bytes, first[s], last[s]});
  }
  std::stable_sort(lives.begin(), lives.end(), [](const Life& a, const Life& b) { return a.bytes > b.bytes; });
  std::vector<std::pair<size_t, size_t>> taken;  // [offset, end) of overlapping placed slots
  std::vector<size_t> offsets(lives.size());
  size_t total = 0;
  for (size_t i = 0; i < lives.size(); ++i) {
    taken.clear();
    for (size_t j = 0; j < i; ++j)
      if (lives[j].first <= lives[i].last && lives[i].first <= lives[j].last)
        taken.push_back({offsets[j], offsets[j] + lives[j].bytes});
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (offset + lives[i].bytes <= begin) break;
      offset = std::max(offset, end);
    }
    offsets[i] = offset;
    program.slots[lives[i].slot].offset = offset;
    total = std::max(total, offset + lives[i].bytes);
  }
  program.arena_bytes = total;
}

}  // namespace graft::dnnl_backend
