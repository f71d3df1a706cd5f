// A small seeded generator whose sequence is the same on every platform and standard library
// (std::shuffle and std::*_distribution are not), so every rank derives the same permutation.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace trainer {

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint64_t below(uint64_t n) { return static_cast<uint64_t>(uniform() * static_cast<double>(n)); }

  template <class V>
  void shuffle(std::vector<V>& v) {
    for (size_t i = v.size(); i > 1; i--) std::swap(v[i - 1], v[below(i)]);
  }

 private:
  uint64_t s_;
};

}  // namespace trainer
