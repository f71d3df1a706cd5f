#include "core/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/copy.h"

namespace coral {

uint64_t make_tag(sched::Coll coll, coralDataType_t dtype, coralRedOp_t op, uint64_t salt) {
  salt ^= salt >> 31;
  salt *= 0x9e3779b97f4a7c15ull;
  return (static_cast<uint64_t>(coll) << 56) | (static_cast<uint64_t>(dtype) << 48) |
         (static_cast<uint64_t>(op) << 40) | (salt & 0xffffffffffull);
}

std::string describe_tag(uint64_t tag) {
  auto coll = static_cast<sched::Coll>(tag >> 56);
  auto dt = static_cast<coralDataType_t>((tag >> 48) & 0xff);
  auto op = static_cast<coralRedOp_t>((tag >> 40) & 0xff);
  return fmt::format("{} {} {}", sched::coll_name(coll), kernels::dtype_name(dt), kernels::op_name(op));
}

namespace {

struct Runner {
  const ExecArgs& x;
  const size_t es;
  const kernels::ReduceFn reduce;

  std::byte* ptr(sched::Ref r) const {
    auto* base = r.buf == sched::Buf::Send   ? static_cast<std::byte*>(const_cast<void*>(x.send))
                 : r.buf == sched::Buf::Recv ? static_cast<std::byte*>(x.recv)
                                             : static_cast<std::byte*>(x.scratch);
    return base + r.off * es;
  }
  transport::Link& link(int peer) const { return *(*x.links)[peer]; }

  transport::Message receive(int peer, size_t bytes, bool want_local = true) const {
    transport::Message m = link(peer).recv_peek(*x.monitor, want_local);
    if (m.tag != x.tag || m.bytes != bytes) {
      std::string theirs = describe_tag(m.tag), ours = describe_tag(x.tag);
      fail(coralInvalidUsage,
           theirs != ours
               ? fmt::format("rank {} sent data for '{}' while this rank runs '{}': ranks called "
                             "different collectives", peer, theirs, ours)
               : fmt::format("rank {} sent {} bytes where {} were expected: ranks passed different "
                             "counts or roots to '{}'", peer, m.bytes, bytes, ours));
    }
    return m;
  }

  std::byte* reserve(int peer, size_t bytes) const {
    transport::Link& l = link(peer);
    if (bytes > l.max_message()) fail(coralInternalError, "schedule message exceeds the link's slot");
    return l.send_acquire(bytes, *x.monitor);
  }

  // Links with by-reference sends outstanding: the operation ends only once peers read them.
  std::vector<transport::Link*> flush;

  void run(const sched::Step& st) {
    using sched::OpKind;
    const size_t bytes = st.count * es;
    switch (st.kind) {
      case OpKind::Send: {
        transport::Link& l = link(st.peer);
        if (st.stable_src && bytes >= l.direct_min_bytes()) {
          l.send_direct(ptr(st.src), bytes, x.tag, *x.monitor);
          if (std::find(flush.begin(), flush.end(), &l) == flush.end()) flush.push_back(&l);
          break;
        }
        std::byte* out = reserve(st.peer, bytes);
        kernels::copy_streaming(out, ptr(st.src), bytes);
        l.send_commit(bytes, x.tag);
        break;
      }
      case OpKind::Recv: {
        transport::Message m = receive(st.peer, bytes, false);
        link(st.peer).recv_read(m, ptr(st.dst));
        link(st.peer).recv_release();
        break;
      }
      case OpKind::RecvReduce: {
        transport::Message m = receive(st.peer, bytes);
        reduce(ptr(st.dst), m.data, ptr(st.src), st.count);
        link(st.peer).recv_release();
        break;
      }
      case OpKind::RecvReduceSend: {
        transport::Message m = receive(st.peer, bytes);
        std::byte* out = reserve(st.peer_out, bytes);
        reduce(out, m.data, ptr(st.src), st.count);
        if (st.dst.buf != sched::Buf::None && bytes) std::memcpy(ptr(st.dst), out, bytes);
        link(st.peer_out).send_commit(bytes, x.tag);
        link(st.peer).recv_release();
        break;
      }
      case OpKind::RecvCopySend: {
        transport::Message m = receive(st.peer, bytes);
        std::byte* out = reserve(st.peer_out, bytes);
        if (bytes) std::memcpy(out, m.data, bytes);
        link(st.peer_out).send_commit(bytes, x.tag);
        if (st.dst.buf != sched::Buf::None && bytes) std::memcpy(ptr(st.dst), m.data, bytes);
        link(st.peer).recv_release();
        break;
      }
      case OpKind::Copy:
        if (ptr(st.dst) != ptr(st.src)) std::memmove(ptr(st.dst), ptr(st.src), bytes);
        break;
      case OpKind::Reduce:
        reduce(ptr(st.dst), ptr(st.src), ptr(st.src2), st.count);
        break;
      case OpKind::Scale:
        kernels::active().scale[x.dtype](ptr(st.dst), ptr(st.dst), st.count, x.nranks);
        break;
    }
  }
};

}  // namespace

void execute(const sched::Schedule& s, const ExecArgs& x) {
  Runner r{x, kernels::dtype_size(x.dtype), kernels::active().reduce[x.dtype][x.op]};
  for (const sched::Step& st : s.steps) r.run(st);
  for (transport::Link* l : r.flush) l->flush(*x.monitor);
}

}  // namespace coral
