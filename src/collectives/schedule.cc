#include "collectives/schedule.h"

#include <fmt/format.h>

#include "collectives/folds.h"

namespace coral::collectives {

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::AllReduce:
      return "allreduce";
    case Coll::ReduceScatter:
      return "reducescatter";
    case Coll::AllGather:
      return "allgather";
    case Coll::Broadcast:
      return "broadcast";
    case Coll::Reduce:
      return "reduce";
    case Coll::Barrier:
      return "barrier";
    case Coll::Send:
      return "send";
    case Coll::Recv:
      return "recv";
    case Coll::AllToAll:
      return "alltoall";
    case Coll::AllToAllv:
      return "alltoallv";
    case Coll::Gather:
      return "gather";
    case Coll::Scatter:
      return "scatter";
    case Coll::AllGatherv:
      return "allgatherv";
    case Coll::ReduceScatterv:
      return "reducescatterv";
  }
  return "?";
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Send:
      return "send";
    case OpKind::Recv:
      return "recv";
    case OpKind::RecvReduce:
      return "recv_reduce";
    case OpKind::RecvReduceSend:
      return "recv_reduce_send";
    case OpKind::RecvCopySend:
      return "recv_copy_send";
    case OpKind::Copy:
      return "copy";
    case OpKind::Reduce:
      return "reduce";
    case OpKind::Scale:
      return "scale";
  }
  return "?";
}

static std::string ref_str(const Ref& r) {
  if (r.buf == Buf::None) return "-";
  const char* name = r.buf == Buf::Send ? "send" : r.buf == Buf::Recv ? "recv" : "scratch";
  return fmt::format("{}[{}]", name, r.off);
}

std::string dump(const Schedule& s) {
  std::string out = fmt::format("# {} rank {}/{}: {} steps\n", s.algo, s.rank, s.nranks, s.steps.size());
  const std::vector<uint32_t> folds = fold_lengths(s);  // shown: they run as one reduction
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    if (folds[i])
      out += fmt::format("      fold of {} steps, {} inputs:\n", folds[i], fold_inputs(s, i, folds[i]).size());
    bool send = st.kind == OpKind::Send;
    bool in = !send && st.peer >= 0;
    int to = send ? st.peer : st.peer_out;
    out += fmt::format("{:5} {:<17} from={:<4} to={:<4} src={:<14} dst={:<14} n={}{}\n", i, op_kind_name(st.kind),
                       in ? std::to_string(st.peer) : "-", to >= 0 ? std::to_string(to) : "-", ref_str(st.src),
                       ref_str(st.dst), st.count, st.posted ? " posted" : "");
  }
  return out;
}

}  // namespace coral::collectives
