// What every training mode shares: the data, the model's shape, and the test evaluation.
#pragma once
#include <coral/coral.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "data.h"
#include "mlp.h"
#include "trainer.h"

namespace trainer {

// Throws std::invalid_argument naming the option when cfg asks for something impossible.
void validate(const Config& cfg);
// Rank 0 writes these: a directory it cannot write in fails the run at its start, not its end.
void check_outputs(const Config& cfg);

Data load_data(const Config& cfg);
// Layer widths from input to output: --hidden, or the dataset's default model.
std::vector<int> model_dims(const Config& cfg, const Data& data);

// Collective: test loss and accuracy, each rank evaluating its slice of the test set.
template <class T>
void evaluate(Mlp<T>& model, const T* params, const Dataset& test, coral::communicator& comm, double* loss,
              double* acc);

uint64_t fnv1a(const void* p, size_t n);

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "784-256-256-10", for the start line.
std::string dims_text(const Layout& l);

// The rows idx of the training set, as a batch: x (rows x dim) and y.
template <class T>
void gather(const Dataset& d, const std::vector<uint32_t>& idx, std::vector<T>* x, std::vector<int32_t>* y);

// --dump-params: the parameters as raw float64.
template <class T>
void dump_params(const std::string& path, const std::vector<T>& params);

// --mode ps (ps.cc).
template <class T>
Result train_ps(const Config& cfg, coral::communicator& comm);

}  // namespace trainer
