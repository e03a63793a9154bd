// graft's own linker of the CPU emitter's object code (src/codegen/
// object_linker.h), which runs kernels from GRAFT_CACHE_DIR without LLVM:
// kernels it links compute bit for bit what LLJIT's copy of the same object
// computes (random DAGs; libm calls), and malformed or unsupported objects are
// errors, never crashes.
#include "object_linker.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>

#include "codegen_test_util.h"
#include "graft/backend/buffer_pool.h"
#include "graft/codegen/compile_cache.h"
#include "graft/codegen/op_expressions.h"
#include "graft/core/error.h"
#include "jit_runner.h"
#include "llvm_jit.h"
#include "random_dag.h"

namespace graft::codegen {
namespace {

/// The lanes of the JIT's target ("...|lanes-16").
int64_t jit_lanes() {
  std::string target = llvm_target_id();
  return std::stoll(target.substr(target.rfind("lanes-") + 6));
}

/// A runner of `object` linked by graft's linker.
std::shared_ptr<const KernelRunner> linked_by_graft(const ir::KernelIR& ir, const std::string& object,
                                                    const std::string& prefix) {
  std::shared_ptr<const LinkedObject> linked = LinkedObject::link(object);
  const void* kernel = linked->symbol(prefix + "_kernel");
  const void* streaming = linked->symbol(prefix + "_streaming_lanes", sizeof(int64_t));
  EXPECT_NE(kernel, nullptr);
  EXPECT_NE(streaming, nullptr);
  int64_t streaming_lanes;
  std::memcpy(&streaming_lanes, streaming, sizeof streaming_lanes);
  return make_jit_runner(reinterpret_cast<CompiledKernelFunction>(const_cast<void*>(kernel)), jit_lanes(),
                         streaming_lanes, ir, linked);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

/// float64 sin, cos and erf call libm lane by lane: undefined symbols the
/// linker resolves in the process.
ir::KernelIR libm_kernel() {
  ir::KernelIR ir;
  ir.input_dtypes = {DType::float64};
  int32_t x = ir.add_input(0, DType::float64);
  int32_t s = ir.add_op(ir::ExprOp::sin, DType::float64, x);
  int32_t c = ir.add_op(ir::ExprOp::cos, DType::float64, x);
  int32_t e = ir.add_op(ir::ExprOp::erf, DType::float64, x);
  ir.outputs = {ir.add_op(ir::ExprOp::add, DType::float64, ir.add_op(ir::ExprOp::mul, DType::float64, s, c), e)};
  return canonicalize(ir);
}

class ObjectLinker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!object_linker_available()) GTEST_SKIP() << "graft links objects itself only on x86-64 Linux";
    if (!llvm_jit_available()) GTEST_SKIP() << "the LLVM JIT is not available";
  }
};

TEST_F(ObjectLinker, KernelsComputeBitForBitWhatLljitsCopyComputes) {
  backend::BufferPool pool;
  int linked = 0;
  auto check = [&](const ir::KernelIR& ir, const std::vector<Tensor>& inputs, const std::string& what) {
    std::string prefix = "graft_linker_test" + std::to_string(linked++);
    std::string object = compile_to_object(ir, prefix);
    auto by_lljit = load_object(ir, object, prefix);
    auto by_graft = linked_by_graft(ir, object, prefix);
    std::vector<Tensor> want = run_kernel(ir, *by_lljit, inputs, pool);
    std::vector<Tensor> got = run_kernel(ir, *by_graft, inputs, pool);
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(same_bits(got[k], want[k])) << what << ", output " << k;
  };
  for (uint64_t seed = 20000; seed < 20040; ++seed) {
    graft::testing::RandomDag dag = graft::testing::make_random_dag(seed, false);
    check(lower_body(*dag.graph).ir, dag.inputs, "random DAG " + std::to_string(seed));
  }
  // Long enough for full vectors, the streaming path's alignment and a tail.
  Tensor x = graft::testing::random_of(DType::float64, {4099}, 7, -6, 6);
  check(libm_kernel(), {x}, "sin * cos + erf in float64");
}

TEST_F(ObjectLinker, MalformedObjectsAreErrorsNeverCrashes) {
  std::string prefix = "graft_linker_malformed";
  std::string object = compile_to_object(libm_kernel(), prefix);
  ASSERT_NO_THROW(LinkedObject::link(object));
  auto links_or_throws = [](const std::string& bytes) {
    try {
      LinkedObject::link(bytes);  // linked, never run: its bytes may be nonsense
    } catch (const Error&) {
    }
  };
  // Every truncation, then every byte flipped (headers, symbols, relocations, code).
  for (size_t size = 0; size < object.size(); ++size) {
    std::string truncated = object.substr(0, size);
    EXPECT_THROW(LinkedObject::link(truncated), Error) << "truncated to " << size << " bytes";
  }
  for (size_t at = 0; at < object.size(); ++at) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string flipped = object;
      flipped[at] = static_cast<char>(flipped[at] ^ mask);
      links_or_throws(flipped);
    }
  }
  try {
    LinkedObject::link("not an object file");
    ADD_FAILURE() << "garbage linked";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_model);
  }
}

TEST_F(ObjectLinker, UnknownRelocationTypesAreRefusedByName) {
  std::string prefix = "graft_linker_relocation";
  std::string object = compile_to_object(libm_kernel(), prefix);
  // Rewrite the type of every relocation in .rela.text to 0x99.
  Elf64_Ehdr header;
  std::memcpy(&header, object.data(), sizeof header);
  int patched = 0;
  for (int i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    std::memcpy(&section, object.data() + header.e_shoff + i * sizeof section, sizeof section);
    if (section.sh_type != SHT_RELA) continue;
    for (uint64_t k = 0; k < section.sh_size / sizeof(Elf64_Rela); ++k) {
      Elf64_Rela rela;
      char* at = object.data() + section.sh_offset + k * sizeof rela;
      std::memcpy(&rela, at, sizeof rela);
      rela.r_info = ELF64_R_INFO(ELF64_R_SYM(rela.r_info), 0x99);
      std::memcpy(at, &rela, sizeof rela);
      ++patched;
    }
  }
  ASSERT_GT(patched, 0);
  try {
    LinkedObject::link(object);
    ADD_FAILURE() << "an unknown relocation type linked";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::unsupported);
    EXPECT_NE(std::string(e.what()).find("relocation type 153"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace graft::codegen
