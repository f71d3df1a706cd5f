#include "core/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "kernels/copy.h"

namespace coral {

uint64_t make_tag(collectives::Coll coll, coralDataType_t dtype, coralRedOp_t op, uint64_t salt) {
  salt ^= salt >> 31;
  salt *= 0x9e3779b97f4a7c15ull;
  return (static_cast<uint64_t>(coll) << 56) | (static_cast<uint64_t>(dtype) << 48) |
         (static_cast<uint64_t>(kernels::op_slot(op)) << 40) | (salt & 0xffffffffffull);
}

namespace {
constexpr uint64_t kRootCheckSlot = 0xff;
}

uint64_t root_check_tag(collectives::Coll coll, uint64_t tag) {
  return (tag & ~(0xffffull << 40)) | static_cast<uint64_t>(coll) << 48 | kRootCheckSlot << 40;
}

std::string describe_tag(uint64_t tag) {
  if (((tag >> 40) & 0xff) == kRootCheckSlot)
    return fmt::format("{} (its root check)",
                       collectives::coll_name(static_cast<collectives::Coll>((tag >> 48) & 0xff)));
  auto coll = static_cast<collectives::Coll>(tag >> 56);
  auto dt = static_cast<coralDataType_t>((tag >> 48) & 0xff);
  const int slot = static_cast<int>((tag >> 40) & 0xff);
  // The tag holds the op's table slot (bitwise ops' values do not fit its 8 bits).
  auto op = static_cast<coralRedOp_t>(slot < coralNumOps ? slot : coralBand + (slot - coralNumOps));
  return fmt::format("{} {} {}", collectives::coll_name(coll), kernels::dtype_name(dt), kernels::op_name(op));
}

namespace {

// Host memory: the CPU kernels. Stores into transport slots stream past this core's caches.
struct HostMem {
  coralDataType_t dtype;
  kernels::ReduceFn fn;
  kernels::ReduceManyFn many;
  void to_slot(void* dst, const void* src, size_t bytes) {
    if (bytes) kernels::copy_streaming(dst, src, bytes);  // empty messages may come from NULL buffers
  }
  void from_slot(void* dst, const void* src, size_t bytes) {
    if (bytes) kernels::copy_streaming(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) {
    if (dst != src && bytes) std::memmove(dst, src, bytes);
  }
  void reduce(void* dst, void* dst2, const void* a, const void* b, size_t n, size_t es) {
    fn(dst, a, b, n);
    if (dst2 && n) std::memcpy(dst2, dst, n * es);
  }
  void reduce_many(void* dst, const void* const* srcs, int k, size_t n) { many(dst, srcs, k, n); }
  void scale(void* dst, size_t n, int div) { kernels::active().scale[dtype](dst, dst, n, div); }
  void fence() {}
};

// Device memory: whatever MemOps the caller gave (asynchronous, fenced before peers look).
struct DeviceMem {
  kernels::MemOps& m;
  void to_slot(void* dst, const void* src, size_t bytes) { m.copy(dst, src, bytes); }
  void from_slot(void* dst, const void* src, size_t bytes) { m.copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) {
    if (dst != src && bytes) m.copy(dst, src, bytes);
  }
  void reduce(void* dst, void* dst2, const void* a, const void* b, size_t n, size_t) { m.reduce(dst, dst2, a, b, n); }
  // The device kernel takes at most kMaxSources: more go on in passes that start from dst.
  void reduce_many(void* dst, const void* const* srcs, int k, size_t n) {
    int done = std::min(k, kernels::MemOps::kMaxSources);
    m.reduce_many(dst, srcs, done, n);
    while (done < k) {
      const void* more[kernels::MemOps::kMaxSources] = {dst};
      const int take = std::min(k - done, kernels::MemOps::kMaxSources - 1);
      std::copy(srcs + done, srcs + done + take, more + 1);
      m.reduce_many(dst, more, take + 1, n);
      done += take;
    }
  }
  void scale(void* dst, size_t n, int div) { m.scale(dst, n, div); }
  void fence() { m.fence(); }
};

// Out of line: the message receive() got is not the one the schedule expects.
[[noreturn, gnu::cold, gnu::noinline]] void mismatch(int peer, const transport::Message& m, size_t bytes,
                                                     uint64_t tag) {
  std::string theirs = describe_tag(m.tag), ours = describe_tag(tag);
  if (theirs != ours)
    fail(coralInvalidUsage, fmt::format("rank {} sent data for '{}' while this rank runs '{}': ranks called "
                                        "different collectives",
                                        peer, theirs, ours));
  if (m.bytes != bytes)
    fail(coralInvalidUsage, fmt::format("rank {} sent {} bytes where {} were expected: ranks passed different "
                                        "counts to '{}'",
                                        peer, m.bytes, bytes, ours));
  // Same collective and size: the signature (count, root, a v-collective's recvcounts, the
  // call's number) differs.
  fail(coralInvalidUsage, fmt::format("rank {} sent data for another '{}' call: ranks passed different counts (the "
                                      "recvcounts of a v-collective), or one rank skipped or added a call",
                                      peer, ours));
}

// The run of posted sends of one buffer (the one-shot all-reduce's) that begins at step i: its
// length, 0 when none begins there.
size_t post_run(const std::vector<collectives::Step>& steps, size_t i) {
  const collectives::Step& first = steps[i];
  if (first.kind != collectives::OpKind::Send || !first.posted) return 0;
  size_t j = i + 1;
  while (j < steps.size() && steps[j].kind == collectives::OpKind::Send && steps[j].posted &&
         steps[j].count == first.count && steps[j].src.buf == first.src.buf && steps[j].src.off == first.src.off)
    ++j;
  return j - i;
}

template <class Mem>
struct Runner {
  const ExecArgs& x;
  const size_t es;
  Mem mem;
  const std::vector<collectives::Step>& steps;
  const Plan& plan;  // each step's links and decisions

  // By collectives::Buf: a table, not a chain of branches (two lookups per step of a tiny call).
  std::byte* const base[4] = {nullptr, static_cast<std::byte*>(const_cast<void*>(x.send)),
                              static_cast<std::byte*>(x.recv), static_cast<std::byte*>(x.scratch)};
  static_assert(static_cast<int>(collectives::Buf::Send) == 1 && static_cast<int>(collectives::Buf::Recv) == 2 &&
                static_cast<int>(collectives::Buf::Scratch) == 3);

  std::byte* ptr(collectives::Ref r) const { return base[static_cast<int>(r.buf)] + r.off * es; }
  transport::Link& peer_link(size_t i) const { return *plan.ops[i].link; }
  transport::Link& out_link(size_t i) const { return *plan.ops[i].out; }
  bool as_post(size_t i) const { return plan.ops[i].post; }

  transport::Message receive(size_t i, size_t bytes, bool want_local = true, bool post = false) const {
    const int peer = steps[i].peer;
    transport::Link& l = peer_link(i);
    transport::Message m = post ? l.post_peek(*x.monitor) : l.recv_peek(*x.monitor, want_local);
    if (m.tag != x.tag || m.bytes != bytes) mismatch(peer, m, bytes, x.tag);
    return m;
  }

  void release(size_t i, bool post) const {
    if (post)
      peer_link(i).post_release();
    else
      peer_link(i).recv_release();
  }

  std::byte* reserve(transport::Link& l, size_t bytes) const {
    if (bytes > l.max_message()) fail(coralInternalError, "schedule message exceeds the link's slot");
    return l.send_acquire(bytes, *x.monitor);
  }

  // Links with by-reference sends outstanding: the operation ends only once peers read them.
  std::vector<transport::Link*> flush = {};

  void run(size_t i) {
    using collectives::OpKind;
    const collectives::Step& st = steps[i];
    const size_t bytes = st.count * es;
    void* dst = st.dst.buf != collectives::Buf::None ? ptr(st.dst) : nullptr;
    switch (st.kind) {
      case OpKind::Send: {
        transport::Link& l = peer_link(i);
        if (st.stable_src && l.direct_ok(ptr(st.src), bytes)) {
          l.send_direct(ptr(st.src), bytes, x.tag, *x.monitor);
          if (std::find(flush.begin(), flush.end(), &l) == flush.end()) flush.push_back(&l);
          break;
        }
        std::byte* out = reserve(l, bytes);
        mem.to_slot(out, ptr(st.src), bytes);
        mem.fence();
        l.send_commit(bytes, x.tag);
        break;
      }
      case OpKind::Recv: {
        const bool post = as_post(i);
        transport::Message m = receive(i, bytes, false, post);
        if (m.data)
          mem.from_slot(dst, m.data, bytes);
        else
          peer_link(i).recv_read(m, dst);
        mem.fence();
        release(i, post);
        break;
      }
      case OpKind::RecvReduce: {
        const bool post = as_post(i);
        transport::Message m = receive(i, bytes, true, post);
        mem.reduce(dst, nullptr, m.data, ptr(st.src), st.count, es);
        mem.fence();
        release(i, post);
        break;
      }
      case OpKind::RecvReduceSend: {
        transport::Message m = receive(i, bytes);
        transport::Link& o = out_link(i);
        std::byte* out = reserve(o, bytes);
        mem.reduce(out, bytes ? dst : nullptr, m.data, ptr(st.src), st.count, es);
        mem.fence();
        o.send_commit(bytes, x.tag);
        peer_link(i).recv_release();
        break;
      }
      case OpKind::RecvCopySend: {
        transport::Message m = receive(i, bytes);
        transport::Link& o = out_link(i);
        std::byte* out = reserve(o, bytes);
        if (bytes) mem.copy(out, m.data, bytes);
        if (dst && bytes) mem.copy(dst, m.data, bytes);
        mem.fence();
        o.send_commit(bytes, x.tag);
        peer_link(i).recv_release();
        break;
      }
      case OpKind::Copy:
        mem.copy(dst, ptr(st.src), bytes);
        break;
      case OpKind::Reduce:
        mem.reduce(dst, nullptr, ptr(st.src), ptr(st.src2), st.count, es);
        break;
      case OpKind::Scale:
        mem.scale(dst, st.count, x.nranks);
        break;
    }
  }

  // A fold (collectives/folds.h): every input message at once, one from each of its peers, then
  // one multi-source reduction and one fence, instead of a pass over the destination, a fence
  // and, on a GPU, a launch per input. Holding them together is safe: verify() proves the
  // schedules with each fold's FIFO slots held until its last input is in.
  size_t fold(size_t i) {
    const Plan::Op& op = plan.ops[i];
    if (op.fold == 0) return 0;
    const Plan::Fold& f = plan.folds[op.fold_at];
    const size_t n = steps[i].count, bytes = n * es;
    const void* few[16];
    std::vector<const void*> many;
    const void** srcs = f.ninputs <= std::size(few) ? few : (many.resize(f.ninputs), many.data());
    const Plan::Input* in = plan.inputs.data() + f.inputs_at;
    for (uint32_t k = 0; k < f.ninputs; ++k) {
      transport::Link* l = in[k].link;
      if (!l) {
        srcs[k] = ptr(in[k].local);
        continue;
      }
      const transport::Message m = in[k].post ? l->post_peek(*x.monitor) : l->recv_peek(*x.monitor, true);
      if (m.tag != x.tag || m.bytes != bytes) mismatch(in[k].peer, m, bytes, x.tag);
      srcs[k] = m.data;
    }
    mem.reduce_many(ptr(f.dst), srcs, static_cast<int>(f.ninputs), n);
    mem.fence();
    for (uint32_t k = 0; k < f.ninputs; ++k)
      if (transport::Link* l = in[k].link) in[k].post ? l->post_release() : l->recv_release();
    return op.fold;
  }

  // A run of posted sends of one buffer (the one-shot all-reduce): published once for every
  // peer whose link has the poster; any others get ordinary sends. Returns the steps consumed.
  size_t post(size_t i) {
    const Plan::Op& first = plan.ops[i];
    if (first.run == 0) return 0;
    if (first.npeers < first.run)
      for (size_t k = i; k < i + first.run; ++k)
        if (!plan.ops[k].post) run(k);  // an ordinary send; the order across peers does not matter
    if (transport::Poster* poster = first.poster) {
      const size_t bytes = steps[i].count * es;
      std::byte* buf = poster->acquire(bytes, *x.monitor);
      mem.to_slot(buf, ptr(steps[i].src), bytes);
      mem.fence();
      poster->commit(bytes, x.tag, first.readers);
    }
    return first.run;
  }

  void run_all() {
    for (size_t i = 0; i < steps.size();) {
      if (x.monitor->step_word) x.monitor->step_word->store(static_cast<uint32_t>(i), std::memory_order_relaxed);
      if (size_t n = post(i)) {
        i += n;
        continue;
      }
      if (size_t n = fold(i)) {
        i += n;
        continue;
      }
      run(i++);
    }
    mem.fence();
    for (transport::Link* l : flush) l->flush(*x.monitor);
  }
};

}  // namespace

Plan compile(const collectives::Schedule& s, const std::vector<transport::Link*>& links, size_t es) {
  Plan p;
  p.links = &links;
  p.es = es;
  p.ops.resize(s.steps.size());
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const collectives::Step& st = s.steps[i];
    Plan::Op& op = p.ops[i];
    if (st.peer >= 0) op.link = links[st.peer];
    if (st.peer_out >= 0) op.out = links[st.peer_out];
    // A posted message travels as a post where the link's domain has a poster and the size
    // fits; sender and receiver decide alike from the step, the link and the size.
    if (op.link && st.posted) {
      transport::Poster* q = op.link->poster();
      op.post = q && st.count * es <= q->max_bytes();
    }
  }
  const std::vector<uint32_t> folds = collectives::fold_lengths(s);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    if (folds[i] == 0) continue;
    std::vector<collectives::FoldInput> in = collectives::fold_inputs(s, i, folds[i]);
    p.ops[i].fold = folds[i];
    p.ops[i].fold_at = static_cast<uint32_t>(p.folds.size());
    p.folds.push_back(
        {static_cast<uint32_t>(p.inputs.size()), static_cast<uint32_t>(in.size()), s.steps[i + folds[i] - 1].dst});
    for (const collectives::FoldInput& f : in) {
      if (f.step < 0) {
        p.inputs.push_back({nullptr, false, -1, f.local});
        continue;
      }
      const Plan::Op& at = p.ops[static_cast<size_t>(f.step)];
      p.inputs.push_back({at.link, at.post, s.steps[static_cast<size_t>(f.step)].peer, {}});
    }
  }
  for (size_t i = 0; i < s.steps.size();) {
    const size_t len = post_run(s.steps, i);
    if (len == 0) {
      ++i;
      continue;
    }
    Plan::Op& op = p.ops[i];
    op.run = static_cast<uint32_t>(len);
    std::vector<int> peers;
    transport::Poster* poster = nullptr;
    for (size_t k = i; k < i + len; ++k) {
      if (!p.ops[k].post) continue;
      transport::Poster* q = p.ops[k].link->poster();
      if (poster && q != poster) fail(coralInternalError, "posted sends span two posters");
      poster = q;
      peers.push_back(s.steps[k].peer);
    }
    op.npeers = static_cast<uint32_t>(peers.size());
    op.poster = poster;
    if (poster) op.readers = poster->readers(peers.data(), peers.size());
    i += len;
  }
  return p;
}

void execute(const collectives::Schedule& s, const ExecArgs& x) {
  const size_t es = kernels::dtype_size(x.dtype);
  const bool planned = x.plan && x.plan->links == x.links && x.plan->es == es && x.plan->ops.size() == s.steps.size();
  std::optional<Plan> local;  // not even an empty one on the cached path
  if (!planned) local = compile(s, *x.links, es);
  const Plan& plan = planned ? *x.plan : *local;
  if (x.mem) {
    Runner<DeviceMem>{x, es, DeviceMem{*x.mem}, s.steps, plan}.run_all();
    return;
  }
  const kernels::Table& k = kernels::active();
  Runner<HostMem>{
      x, es,
      HostMem{x.dtype, k.reduce[x.dtype][kernels::op_slot(x.op)], k.reduce_many[x.dtype][kernels::op_slot(x.op)]},
      s.steps, plan}
      .run_all();
}

}  // namespace coral
