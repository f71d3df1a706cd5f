#include "collectives/folds.h"

#include <algorithm>

namespace coral::collectives {

namespace {

bool same(Ref a, Ref b) { return a.buf == b.buf && a.off == b.off; }

// Whether [a, a+n) and [b, b+n) may share memory: send and receive buffers may be one.
bool may_overlap(Ref a, Ref b, size_t n) {
  auto cls = [](Buf x) { return x == Buf::Recv ? Buf::Send : x; };
  if (a.buf == Buf::None || b.buf == Buf::None || cls(a.buf) != cls(b.buf)) return false;
  return a.off < b.off + n && b.off < a.off + n;
}

// Whether the n elements at scratch place t are overwritten before any step from `from` on
// reads them (or never read again).
bool dead_after(const Schedule& s, size_t from, Ref t, size_t n) {
  for (size_t k = from; k < s.steps.size(); ++k) {
    const Step& st = s.steps[k];
    const bool reads_src = st.kind == OpKind::Send || st.kind == OpKind::RecvReduce ||
                           st.kind == OpKind::RecvReduceSend || st.kind == OpKind::Copy || st.kind == OpKind::Reduce;
    if (reads_src && may_overlap(st.src, t, std::max(n, st.count))) return false;
    if (st.kind == OpKind::Reduce && may_overlap(st.src2, t, std::max(n, st.count))) return false;
    if (st.kind == OpKind::Scale && may_overlap(st.dst, t, std::max(n, st.count))) return false;
    const bool writes = st.kind != OpKind::Send && st.kind != OpKind::Scale && st.dst.buf != Buf::None;
    if (writes && st.dst.buf == t.buf && st.dst.off <= t.off && st.dst.off + st.count >= t.off + n) return true;
  }
  return true;
}

// The longest fold at step i (0 or 1: none).
size_t fold_at(const Schedule& s, size_t i, std::vector<int>& seen, int stamp) {
  const Step& first = s.steps[i];
  auto peer_ok = [&](int q) { return q >= 0 && static_cast<size_t>(q) < seen.size() && seen[q] != stamp; };
  if ((first.kind != OpKind::Recv && first.kind != OpKind::RecvReduce) || first.count == 0 || !peer_ok(first.peer) ||
      first.dst.buf == Buf::None)
    return 0;
  const size_t n = first.count;
  if (i + 1 >= s.steps.size()) return 0;
  const Step& second = s.steps[i + 1];  // most candidates end here: no allocation for them
  if (second.count != n || !same(second.src, first.dst) ||
      (second.kind != OpKind::RecvReduce && second.kind != OpKind::Reduce))
    return 0;
  Ref acc = first.dst;
  std::vector<Ref> written{acc}, abandoned;
  size_t valid = 1;  // the longest prefix that is a fold on its own
  seen[first.peer] = stamp;
  size_t j = i + 1;
  for (; j < s.steps.size(); ++j) {
    const Step& st = s.steps[j];
    if (st.count != n || !same(st.src, acc) || st.dst.buf == Buf::None) break;
    if (st.kind == OpKind::RecvReduce) {
      if (!peer_ok(st.peer)) break;
      seen[st.peer] = stamp;
    } else if (st.kind == OpKind::Reduce) {
      if (std::any_of(written.begin(), written.end(), [&](Ref w) { return may_overlap(st.src2, w, n); })) break;
    } else {
      break;
    }
    if (!same(st.dst, acc)) {
      abandoned.push_back(acc);
      written.push_back(st.dst);
      acc = st.dst;
    }
    if (abandoned.empty()) valid = j - i + 1;
  }
  const bool all_dead = std::all_of(abandoned.begin(), abandoned.end(),
                                    [&](Ref t) { return t.buf == Buf::Scratch && dead_after(s, j, t, n); });
  return all_dead ? j - i : valid;
}

}  // namespace

std::vector<uint32_t> fold_lengths(const Schedule& s) {
  std::vector<uint32_t> len(s.steps.size(), 0);
  std::vector<int> seen(static_cast<size_t>(std::max(s.nranks, 1)), 0);  // peer -> the fold that has it
  int stamp = 0;
  for (size_t i = 0; i < s.steps.size();) {
    const size_t l = fold_at(s, i, seen, ++stamp);
    if (l >= 2) len[i] = static_cast<uint32_t>(l);
    i += std::max<size_t>(l, 1);
  }
  return len;
}

std::vector<FoldInput> fold_inputs(const Schedule& s, size_t first, size_t len) {
  std::vector<FoldInput> in;
  for (size_t k = first; k < first + len; ++k) {
    const Step& st = s.steps[k];
    const FoldInput msg{static_cast<int64_t>(k), {}};
    if (k == first && st.kind == OpKind::RecvReduce) {  // the first pair in rank order
      const FoldInput local{-1, st.src};
      in.push_back(st.peer > s.rank ? local : msg);
      in.push_back(st.peer > s.rank ? msg : local);
    } else {
      in.push_back(st.kind == OpKind::Reduce ? FoldInput{-1, st.src2} : msg);
    }
  }
  return in;
}

}  // namespace coral::collectives
