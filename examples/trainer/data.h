// Datasets the trainer reads: the bundled digits CSV, Fashion-MNIST IDX files, or random data.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trainer {

struct Dataset {
  int dim = 0;  // features per sample
  int classes = 0;
  std::vector<float> x;    // size() x dim, scaled to [0, 1]
  std::vector<int32_t> y;  // labels in [0, classes)
  size_t size() const { return y.size(); }
};

struct Data {
  std::string name;
  Dataset train, test;
};

// Every loader throws std::runtime_error naming the file and what is wrong with it.
Data load_digits(const std::string& csv_gz);      // fixed split: row i % 5 == 4 -> test
Data load_fashion_mnist(const std::string& dir);  // the four *-ubyte.gz IDX files
Data make_synthetic(int dim, int classes, size_t train, size_t test, uint64_t seed);

// The bundled digits file: installed copy first, then the source tree's.
std::string default_digits_path();
inline constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist";

}  // namespace trainer
