#include "collectives/verify.h"

#include <fmt/format.h>

#include <span>
#include <stdexcept>
#include <unordered_map>

#include "collectives/folds.h"
#include "collectives/verify_post.h"

namespace coral::collectives {

namespace {

using verify_detail::Elem;

inline Elem combine(const Elem& a, const Elem& b, const char** err) {
  if (a.garbage || b.garbage) *err = "reduces an unwritten element";
  if (a.scaled || b.scaled) *err = "reduces an already-averaged element";
  return Elem{a.key + b.key, a.n + b.n, 0, false};
}

// Both buffers live in one array so that in-place calls alias exactly as user memory does.
struct RankState {
  Schedule sched;
  std::vector<Elem> mem;
  std::vector<Elem> scratch;
  std::vector<uint8_t> pinned;  // per mem element: source of a stable_src send, never written again
  // The pin flag of a send/recv element; scratch is never a stable source (nullptr).
  uint8_t* pin(const Elem& e) {
    size_t i = static_cast<size_t>(&e - mem.data());
    return i < mem.size() ? &pinned[i] : nullptr;
  }
  size_t send_at = 0, send_len = 0, recv_at = 0, recv_len = 0;
  size_t pc = 0;
  // The executor runs a fold (collectives/folds.h) holding each input's FIFO slot until its last
  // step: per step, the end of the fold it is in (0: none), and the channels held meanwhile.
  std::vector<uint32_t> fold_end;
  std::vector<uint64_t> held;
  Elem& at(Ref r, size_t i) {
    if (r.buf == Buf::Scratch) return scratch.at(r.off + i);
    size_t base = r.buf == Buf::Recv ? recv_at : send_at;
    size_t len = r.buf == Buf::Recv ? recv_len : send_len;
    if (r.buf == Buf::None || r.off + i >= len) throw std::out_of_range("ref");
    return mem.at(base + r.off + i);
  }
};

using Msg = std::vector<Elem>;

// A FIFO of at most kMinInFlight messages (a sender blocks at that depth), held inline: a
// std::deque took a 512-byte block per channel, and one-shot at P = 4096 fills P^2 channels.
struct Chan {
  Msg slot[kMinInFlight];
  uint8_t head = 0, n = 0;
  uint8_t held = 0;  // received into a fold still running: the slot is not free yet
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  Msg& front() { return slot[head]; }
  void pop_front() {
    slot[head] = Msg{};
    head = static_cast<uint8_t>((head + 1) % kMinInFlight);
    --n;
  }
  void push_back(Msg&& m) {
    slot[(head + n) % kMinInFlight] = std::move(m);
    ++n;
  }
};

struct Sim {
  explicit Sim(int nranks) : p(nranks), ranks(static_cast<size_t>(nranks)) {}
  int p;
  std::vector<RankState> ranks;
  // Keyed by (from * p + to) * 2 + posted: posts are a channel of their own. Created on first
  // use (P^2 empty channels cost too much at P = 4096).
  std::unordered_map<uint64_t, Chan> chan;
  std::string err;

  static uint64_t key(int p, int from, int to, bool posted) {
    return (static_cast<uint64_t>(from) * p + to) * 2 + (posted ? 1 : 0);
  }
  Chan& ch(int from, int to, bool posted) { return chan[key(p, from, to, posted)]; }
  size_t queued(int from, int to, bool posted) const {
    auto it = chan.find(key(p, from, to, posted));
    return it == chan.end() ? 0 : it->second.size();
  }
  // Slots in use: queued, or held by the receiver's fold.
  size_t used(int from, int to, bool posted) const {
    auto it = chan.find(key(p, from, to, posted));
    return it == chan.end() ? 0 : it->second.size() + it->second.held;
  }

  // Ranks a step may have unblocked: a message's receiver, and a sender whose channel drained.
  std::vector<int> woken;

  // Runs the next step of rank r if it can proceed; returns whether it did.
  bool step(int r) {
    RankState& rs = ranks[r];
    if (rs.pc >= rs.sched.steps.size()) return false;
    const Step& s = rs.sched.steps[rs.pc];
    auto where = [&] { return fmt::format("rank {} step {} ({})", r, rs.pc, op_kind_name(s.kind)); };
    bool needs_in = s.kind == OpKind::Recv || s.kind == OpKind::RecvReduce || s.kind == OpKind::RecvReduceSend ||
                    s.kind == OpKind::RecvCopySend;
    int out = s.kind == OpKind::Send                                                 ? s.peer
              : (s.kind == OpKind::RecvReduceSend || s.kind == OpKind::RecvCopySend) ? s.peer_out
                                                                                     : -1;
    for (int peer : {needs_in ? s.peer : -1, out}) {
      if (peer != -1 && (peer < 0 || peer >= p || peer == r)) {
        err = where() + fmt::format(": bad peer {}", peer);
        return false;
      }
    }
    if (s.posted && s.kind != OpKind::Send && s.kind != OpKind::Recv && s.kind != OpKind::RecvReduce) {
      err = where() + ": only send, recv and recv_reduce can be posted";
      return false;
    }
    if (needs_in && queued(s.peer, r, s.posted) == 0) return false;
    if (out >= 0 && used(r, out, s.posted) >= static_cast<size_t>(kMinInFlight)) return false;
    const uint32_t fold_end = rs.fold_end[rs.pc];
    Msg in;
    if (needs_in) {
      Chan& c = ch(s.peer, r, s.posted);
      in = std::move(c.front());
      c.pop_front();
      if (fold_end > rs.pc + 1) {
        c.held++;
        rs.held.push_back(key(p, s.peer, r, s.posted));
      } else {
        woken.push_back(s.peer);
      }
      if (in.size() != s.count) {
        err = where() + fmt::format(": message of {} elements, expected {}", in.size(), s.count);
        return false;
      }
    }
    Msg outmsg;
    if (out >= 0) outmsg.reserve(s.count);
    const char* e = nullptr;  // the step's error; a literal, so the per-element loop never allocates
    try {
      if (s.dst.buf != Buf::None)
        for (size_t i = 0; i < s.count; ++i)
          if (uint8_t* f = rs.pin(rs.at(s.dst, i)); f && *f)
            e = "overwrites the source of an earlier in-place (stable_src) send";
      if (s.kind == OpKind::Send && s.stable_src)
        for (size_t i = 0; i < s.count; ++i)
          if (uint8_t* f = rs.pin(rs.at(s.src, i))) *f = 1;
      for (size_t i = 0; i < s.count; ++i) {
        switch (s.kind) {
          case OpKind::Send:
            outmsg.push_back(rs.at(s.src, i));
            break;
          case OpKind::Recv:
            rs.at(s.dst, i) = in[i];
            break;
          case OpKind::RecvReduce:
            rs.at(s.dst, i) = combine(in[i], rs.at(s.src, i), &e);
            break;
          case OpKind::RecvReduceSend: {
            Elem v = combine(in[i], rs.at(s.src, i), &e);
            if (s.dst.buf != Buf::None) rs.at(s.dst, i) = v;
            outmsg.push_back(v);
            break;
          }
          case OpKind::RecvCopySend:
            if (s.dst.buf != Buf::None) rs.at(s.dst, i) = in[i];
            outmsg.push_back(in[i]);
            break;
          case OpKind::Copy:
            rs.at(s.dst, i) = rs.at(s.src, i);
            break;
          case OpKind::Reduce:
            rs.at(s.dst, i) = combine(rs.at(s.src, i), rs.at(s.src2, i), &e);
            break;
          case OpKind::Scale:
            rs.at(s.dst, i).scaled++;
            break;
        }
      }
      if (s.kind == OpKind::Send && s.src.buf == Buf::None) outmsg.clear();
    } catch (const std::out_of_range&) {
      e = "buffer reference out of range";
    }
    if (e) {
      err = where() + ": " + e;
      return false;
    }
    if (out >= 0) {
      ch(r, out, s.posted).push_back(std::move(outmsg));
      woken.push_back(out);
    }
    if (fold_end == rs.pc + 1) end_fold(rs);
    rs.pc++;
    return true;
  }

  // The last step of a fold ran: its slots come free, and its accumulator's earlier places,
  // never written when it runs fused, read as unwritten from now on.
  void end_fold(RankState& rs) {
    for (uint64_t k : rs.held) {
      chan[k].held--;
      woken.push_back(static_cast<int>(k / 2 / p));
    }
    rs.held.clear();
    const Ref dst = rs.sched.steps[rs.pc].dst;
    size_t first = rs.pc;
    while (first > 0 && rs.fold_end[first - 1] == rs.pc + 1) --first;
    for (size_t k = first; k < rs.pc; ++k) {
      const Step& st = rs.sched.steps[k];
      if (st.dst.buf == dst.buf && st.dst.off == dst.off) continue;
      for (size_t i = 0; i < st.count; ++i) rs.at(st.dst, i) = Elem{};
    }
  }
};

}  // namespace

VerifyResult verify(const CollArgs& args, Algo algo, bool in_place) {
  return verify_with(
      args, [algo](const CollArgs& a) { return build(a, algo); }, in_place);
}

VerifyResult verify_with(const CollArgs& args, const std::function<Schedule(const CollArgs&)>& builder, bool in_place) {
  return verify_ranks_with(
      [&](int rank) {
        CollArgs a = args;
        a.rank = rank;
        a.in_place = in_place;
        return a;
      },
      builder);
}

VerifyResult verify_ranks(const std::function<CollArgs(int rank)>& args_of, Algo algo) {
  return verify_ranks_with(args_of, [algo](const CollArgs& a) { return build(a, algo); });
}

VerifyResult verify_ranks_with(const std::function<CollArgs(int rank)>& args_of,
                               const std::function<Schedule(const CollArgs&)>& builder) {
  std::vector<CollArgs> args{args_of(0)};
  const int p = args[0].nranks;
  for (int r = 1; r < p; ++r) args.push_back(args_of(r));
  for (int r = 0; r < p; ++r) {
    args[r].rank = r;
    if (args[r].coll != args[0].coll || args[r].nranks != p)
      return {false, fmt::format("rank {} names another collective or rank count than rank 0", r)};
  }
  Sim sim(p);
  for (int r = 0; r < p; ++r) {
    RankState& rs = sim.ranks[r];
    rs.sched = builder(args[r]);
    if (std::string e = verify_detail::check_elems(args[r], rs.sched); !e.empty()) return {false, e};
    rs.send_len = rs.sched.send_elems;
    rs.recv_len = rs.sched.recv_elems;
    rs.scratch.assign(rs.sched.scratch_elems, Elem{});
    const verify_detail::Placement pl = verify_detail::place(args[r], rs.send_len, rs.recv_len);
    rs.mem.assign(pl.size, Elem{});
    rs.send_at = pl.send_at;
    rs.recv_at = pl.recv_at;
    for (size_t i = 0; i < rs.send_len; ++i) rs.mem[rs.send_at + i] = verify_detail::input(r, i);
    rs.pinned.assign(rs.mem.size(), 0);
    rs.fold_end.assign(rs.sched.steps.size(), 0);
    const std::vector<uint32_t> folds = fold_lengths(rs.sched);
    for (size_t i = 0; i < folds.size(); ++i)
      for (size_t k = i; k < i + folds[i]; ++k) rs.fold_end[k] = static_cast<uint32_t>(i + folds[i]);
  }
  // Runs ranks until nobody can move. A rank is looked at again only when a step may have
  // unblocked it (a round-robin over all P ranks cost O(P) per step of a pipeline). Each step
  // blocks on one channel's content or room, so the outcome does not depend on the order.
  std::vector<int> work(p);
  std::vector<char> listed(p, 1);
  for (int r = 0; r < p; ++r) work[r] = p - 1 - r;  // popped from the back: rank 0 first
  while (!work.empty() && sim.err.empty()) {
    const int r = work.back();
    work.pop_back();
    listed[r] = 0;
    while (sim.step(r)) {
      for (int q : sim.woken)
        if (!listed[q]) {
          listed[q] = 1;
          work.push_back(q);
        }
      sim.woken.clear();
    }
  }
  if (!sim.err.empty()) return {false, sim.err};
  for (int r = 0; r < p; ++r) {
    const RankState& rs = sim.ranks[r];
    if (rs.pc < rs.sched.steps.size())
      return {false, fmt::format("deadlock: rank {} blocked at step {} ({} peer {})", r, rs.pc,
                                 op_kind_name(rs.sched.steps[rs.pc].kind), rs.sched.steps[rs.pc].peer)};
  }
  for (const auto& [key, c] : sim.chan)
    if (!c.empty()) return {false, "a message was sent that nobody received"};
  std::vector<std::span<const Elem>> recv;
  for (const RankState& rs : sim.ranks) recv.emplace_back(rs.mem.data() + rs.recv_at, rs.recv_len);
  if (std::string e = verify_detail::check_post(args, recv); !e.empty()) return {false, e};
  return {};
}

}  // namespace coral::collectives
