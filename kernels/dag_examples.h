// Branching operator graphs the DAG executor runs (`stratasim runtime --dag NAME`) and `validate
// --hardware --runtime` predicts through the generic scenario path: relative work per node, in
// units of `flop` (each node a burn_flops busy loop).
#pragma once

#include <string>
#include <vector>

#include "kernels/dag_executor.h"

namespace stratasim::kernels {

// "resnet": a bottleneck block, main branch and projection shortcut, then add+relu.
// "lstm": one cell step, the four gates in parallel, then the cell update.
// "lstm_sequence": `steps` such cells, each step's matmul waiting for the previous h'.
// "attention": QKV projection, 8 heads in parallel, concat, output projection.
// InputError for another name.
DagGraph dag_example(const std::string& name, double flop, int steps = 4);
std::vector<std::string> dag_example_names();

}  // namespace stratasim::kernels
