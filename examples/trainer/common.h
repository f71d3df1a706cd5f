// What every training mode shares: the data, the model's shape, and the test evaluation.
#pragma once
#include <coral/coral.hpp>

#include <cstdint>
#include <vector>

#include "data.h"
#include "mlp.h"
#include "trainer.h"

namespace trainer {

// Throws std::invalid_argument naming the option when cfg asks for something impossible.
void validate(const Config& cfg);

Data load_data(const Config& cfg);
// Layer widths from input to output: --hidden, or the dataset's default model.
std::vector<int> model_dims(const Config& cfg, const Data& data);

// Collective: test loss and accuracy, each rank evaluating its slice of the test set.
template <class T>
void evaluate(Mlp<T>& model, const T* params, const Dataset& test, coral::communicator& comm, double* loss,
              double* acc);

uint64_t fnv1a(const void* p, size_t n);

// --mode ps (ps.cc).
template <class T>
Result train_ps(const Config& cfg, coral::communicator& comm);

}  // namespace trainer
