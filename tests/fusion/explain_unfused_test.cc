// Why pointwise nodes stayed out of the fused nodes: each of the four
// reasons on a graph made to produce it, and the reasons in the partition
// report of a Session and of `graft partition`'s path (record_fusion_in_report).
#include "graft/fusion/explain_unfused.h"

#include <gtest/gtest.h>

#include "graft/fusion/fuse_pointwise.h"
#include "graft/passes/pass.h"
#include "graft/runtime/session.h"
#include "support/graph_runner.h"

using namespace graft;
using namespace graft::ir;
using graft::fusion::UnfusedNode;

namespace {

struct Builder {
  Graph g;
  Builder() { g.opset_imports[""] = 17; }
  Value input(const std::string& name, DType dtype = DType::float32) {
    return g.add_input(name, ValueType::of(dtype, {2, 8}))->output(0);
  }
  Value op(const std::string& type, std::vector<Value> inputs, const std::string& name, bool backward = false) {
    Node* n = g.add_node(type, inputs, 1, name);
    n->output_names[0] = name;
    n->is_backward = backward;
    return n->output(0);
  }
  /// Types inferred, then the fusion pass.
  std::unique_ptr<Graph> fused() {
    auto out = g.clone();
    passes::PassContext ctx;
    passes::run_pipeline(out, {"verify", "infer"}, ctx);
    fusion::fuse_pointwise(out);
    return out;
  }
};

/// The explanation of the node named `name`, or a failure.
UnfusedNode explanation(const std::vector<UnfusedNode>& all, const std::string& name) {
  for (const UnfusedNode& u : all)
    if (u.node->name == name) return u;
  ADD_FAILURE() << "no explanation for " << name;
  return {};
}

TEST(ExplainUnfused, EachReasonOnAGraphMadeForIt) {
  Builder b;
  Value x = b.input("x");
  // A bfloat16 pair: kernels take no bfloat16.
  Value h = b.op("Cast", {x}, "to_half");
  b.g.nodes().back()->attributes.set("to", int64_t{16});  // BFLOAT16
  Value h1 = b.op("Neg", {h}, "half_neg");
  Value h2 = b.op("Abs", {h1}, "half_abs");
  // A lone Relu between two Softmax nodes: nothing to join.
  Value s1 = b.op("Softmax", {x}, "s1");
  Value lone = b.op("Relu", {s1}, "lone");
  Value s2 = b.op("Softmax", {lone}, "s2");
  // A forward Exp whose only pointwise neighbour is a backward Tanh.
  Value s3 = b.op("Softmax", {x}, "s3");
  Value forward = b.op("Exp", {s3}, "forward");
  Value backward = b.op("Tanh", {forward}, "backward", true);
  Value s4 = b.op("Softmax", {backward}, "s4");
  // a -> Softmax -> c and a -> c: fusing a and c would close a cycle.
  Value a = b.op("Sigmoid", {x}, "a");
  Value s5 = b.op("Softmax", {a}, "s5");
  Value c = b.op("Add", {a, s5}, "c");
  for (Value v : {h2, s2, s4, c}) b.g.add_output(v);
  auto fused = b.fused();
  std::vector<UnfusedNode> all = fusion::explain_unfused(*fused);

  UnfusedNode half = explanation(all, "half_neg");
  EXPECT_EQ(half.reason, UnfusedNode::Reason::not_fusible);
  EXPECT_NE(half.detail.find("bfloat16"), std::string::npos) << half.detail;
  EXPECT_EQ(explanation(all, "half_abs").reason, UnfusedNode::Reason::not_fusible);
  EXPECT_EQ(explanation(all, "lone").reason, UnfusedNode::Reason::alone);
  UnfusedNode kind = explanation(all, "forward");
  EXPECT_EQ(kind.reason, UnfusedNode::Reason::kind_differs);
  EXPECT_NE(kind.detail.find("backward"), std::string::npos) << kind.detail;
  EXPECT_EQ(explanation(all, "backward").reason, UnfusedNode::Reason::kind_differs);
  EXPECT_EQ(explanation(all, "a").reason, UnfusedNode::Reason::cycle);
  EXPECT_EQ(explanation(all, "c").reason, UnfusedNode::Reason::cycle);
  // Only pointwise nodes are explained (not the Softmax nodes), each once.
  for (const UnfusedNode& u : all) EXPECT_NE(u.node->op_type(), "Softmax");
  // The Cast to bfloat16 is pointwise too, and its output no kernel computes.
  EXPECT_EQ(explanation(all, "to_half").reason, UnfusedNode::Reason::not_fusible);
  EXPECT_EQ(all.size(), 8u);
}

TEST(ExplainUnfused, FusedNodesAndTheirNeighboursNeedNoExplanation) {
  Builder b;
  Value x = b.input("x");
  Value a = b.op("Neg", {x}, "a");
  Value t = b.op("Tanh", {a}, "t");
  b.g.add_output(b.op("Softmax", {t}, "s"));
  auto fused = b.fused();
  EXPECT_TRUE(fusion::explain_unfused(*fused).empty());
}

TEST(ExplainUnfused, TheSessionReportSaysWhyUnderEachNodeLeftOnRef) {
  Builder b;
  Value x = b.input("x");
  Value s1 = b.op("Softmax", {x}, "s1");
  Value lone = b.op("Relu", {s1}, "lone");
  Value n = b.op("Neg", {lone}, "n");  // n and e fuse; lone joins them
  Value e = b.op("Exp", {n}, "e");
  Value s2 = b.op("Softmax", {e}, "s2");
  Value alone = b.op("Sqrt", {s2}, "alone");
  b.g.add_output(b.op("Softmax", {alone}, "s3"));
  runtime::SessionOptions options;
  options.backends = {"ref"};
  options.fusion = true;
  runtime::Session session(b.g.clone(), options);
  const partition::PartitionReport& report = session.partition_report();
  std::string text = report.to_text();
  EXPECT_NE(text.find("alone (Sqrt) -> ref\n      not fuse: below_min_size: no pointwise neighbour"), std::string::npos)
      << text;
  EXPECT_NE(text.find("lone (Relu) -> fuse"), std::string::npos) << text;
  EXPECT_NE(report.to_json().find("\"reason\": \"below_min_size\""), std::string::npos);
  // Fusion off: no reasons of `fuse` at all.
  options.fusion = false;
  runtime::Session plain(b.g.clone(), options);
  EXPECT_EQ(plain.partition_report().to_text().find("not fuse"), std::string::npos);
}

}  // namespace
