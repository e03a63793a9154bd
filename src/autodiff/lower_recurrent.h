// Recurrent nodes written out step by step, for autodiff.
#pragma once

#include "graft/ir/graph.h"

namespace graft::autodiff {

/// Replaces each RNN, LSTM and GRU node of `graph` whose shapes are known and
/// whose form is the common one (layout 0, default activations, no clip, no
/// sequence_lens, no peepholes) by the same computation unrolled over time in
/// standard ops (Gather, MatMul, Add, Split, Sigmoid, Tanh, Mul, Concat), so
/// that the builders of those ops differentiate it. Other recurrent nodes are
/// left as they are. Types are inferred as nodes are added.
void lower_recurrent_nodes(ir::Graph& graph);

}  // namespace graft::autodiff
