// The collectives and point-to-point calls of the process group. Each gathers the caller's
// tensors into contiguous buffers Coral can use in place, issues one Coral operation, and copies
// the result back where the caller's layout differs (lists, coalesced tensors, strided views).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <numeric>

#include "compat/torch/convert.h"
#include "compat/torch/ops_util.h"
#include "compat/torch/process_group.h"

namespace coral::torch_backend {

using namespace ops_util;
using ::c10d::OpType;

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::allreduce(Tensors& tensors, const ::c10d::AllreduceOptions& opts) {
  const at::Tensor& t = one(tensors, "allreduce");
  at::Tensor buf = t.contiguous();
  const Elements e = elements_of(buf, "allreduce");
  RedOp op(opts.reduceOp, buf, comm_, "allreduce");
  void* p = buf.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  return run(OpType::ALLREDUCE, "allreduce", tensors, buf,
             both([=](void* s) { return coralAllReduce(p, p, e.count, e.type, o, c, s); },
                  [=](coralRequest_t* q) { return coralIAllReduce(p, p, e.count, e.type, o, c, q); }),
             op.holding(copy_back(t, buf)));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::allreduce_coalesced(Tensors& tensors,
                                                                        const ::c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "coral: allreduce_coalesced: no tensors");
  for (const auto& t : tensors) same_kind(tensors[0], t, "allreduce_coalesced");
  at::Tensor flat = flatten(tensors);
  const Elements e = elements_of(flat, "allreduce_coalesced");
  RedOp op(opts.reduceOp, flat, comm_, "allreduce_coalesced");
  void* p = flat.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  Tensors outs = tensors;
  return run(OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors, flat,
             both([=](void* s) { return coralAllReduce(p, p, e.count, e.type, o, c, s); },
                  [=](coralRequest_t* q) { return coralIAllReduce(p, p, e.count, e.type, o, c, q); }),
             op.holding([flat, outs] { unflatten(flat, 0, outs); }), tensors);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::broadcast(Tensors& tensors, const ::c10d::BroadcastOptions& opts) {
  const at::Tensor& t = one(tensors, "broadcast");
  at::Tensor buf = t.contiguous();
  const Elements e = elements_of(buf, "broadcast");
  void* p = buf.data_ptr();
  coralComm_t c = comm_;
  const int root = static_cast<int>(opts.rootRank);
  return run(OpType::BROADCAST, "broadcast", tensors, buf,
             both([=](void* s) { return coralBroadcast(p, p, e.count, e.type, root, c, s); },
                  [=](coralRequest_t* q) { return coralIBroadcast(p, p, e.count, e.type, root, c, q); }),
             copy_back(t, buf));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::reduce(Tensors& tensors, const ::c10d::ReduceOptions& opts) {
  const at::Tensor& t = one(tensors, "reduce");
  at::Tensor buf = t.contiguous();
  const Elements e = elements_of(buf, "reduce");
  RedOp op(opts.reduceOp, buf, comm_, "reduce");
  void* p = buf.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  const int root = static_cast<int>(opts.rootRank);
  return run(OpType::REDUCE, "reduce", tensors, buf,
             both([=](void* s) { return coralReduce(p, p, e.count, e.type, o, root, c, s); },
                  [=](coralRequest_t* q) { return coralIReduce(p, p, e.count, e.type, o, root, c, q); }),
             op.holding(copy_back(t, buf)));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                    const ::c10d::AllgatherOptions&) {
  same_kind(output, input, "all_gather_into_tensor");
  TORCH_CHECK(output.numel() == input.numel() * getSize(), "coral: all_gather_into_tensor: the output has ",
              output.numel(), " elements, not world size x input = ", getSize(), " x ", input.numel());
  at::Tensor in = input.contiguous(), out = output.contiguous();
  const Elements e = elements_of(in, "all_gather_into_tensor");
  const void* ip = in.data_ptr();
  void* op = out.data_ptr();
  coralComm_t c = comm_;
  Finish back = copy_back(output, out);
  return run(OpType::_ALLGATHER_BASE, "all_gather_into_tensor", {output}, in,
             both([=](void* s) { return coralAllGather(ip, op, e.count, e.type, c, s); },
                  [=](coralRequest_t* q) { return coralIAllGather(ip, op, e.count, e.type, c, q); }),
             [in, back] { back(); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                              const ::c10d::AllgatherOptions&) {
  const at::Tensor& input = one(inputs, "all_gather");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
              "coral: all_gather wants one list of world size (", getSize(), ") output tensors");
  for (const auto& o : outputs[0]) {
    same_kind(o, input, "all_gather");
    TORCH_CHECK(o.numel() == input.numel(), "coral: all_gather: an output tensor has ", o.numel(),
                " elements, the input ", input.numel(), " (use all_gather_object for uneven sizes)");
  }
  at::Tensor in = input.contiguous();
  at::Tensor flat = at::empty({getSize() * input.numel()}, input.options());
  const Elements e = elements_of(in, "all_gather");
  const void* ip = in.data_ptr();
  void* fp = flat.data_ptr();
  coralComm_t c = comm_;
  Tensors outs = outputs[0];
  return run(OpType::ALLGATHER, "all_gather", outs, in,
             both([=](void* s) { return coralAllGather(ip, fp, e.count, e.type, c, s); },
                  [=](coralRequest_t* q) { return coralIAllGather(ip, fp, e.count, e.type, c, q); }),
             [in, flat, outs] { unflatten(flat, 0, outs); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                                        const ::c10d::AllgatherOptions&) {
  // outputs[i][j] is rank i's inputs[j]: every rank's inputs, flattened, gathered in one call.
  TORCH_CHECK(!inputs.empty(), "coral: all_gather_coalesced: no input tensors");
  TORCH_CHECK(static_cast<int>(outputs.size()) == getSize(), "coral: all_gather_coalesced wants world size (",
              getSize(), ") output lists, got ", outputs.size());
  for (const auto& t : inputs) same_kind(inputs[0], t, "all_gather_coalesced");
  for (const auto& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(), "coral: all_gather_coalesced: an output list has ", list.size(),
                " tensors, the input list ", inputs.size());
    for (size_t j = 0; j < list.size(); ++j) {
      same_kind(list[j], inputs[0], "all_gather_coalesced");
      TORCH_CHECK(list[j].numel() == inputs[j].numel(), "coral: all_gather_coalesced: output ", j, " has ",
                  list[j].numel(), " elements, input ", j, " has ", inputs[j].numel());
    }
  }
  at::Tensor in = flatten(inputs);
  at::Tensor flat = at::empty({getSize() * in.numel()}, in.options());
  const Elements e = elements_of(in, "all_gather_coalesced");
  const void* ip = in.data_ptr();
  void* fp = flat.data_ptr();
  coralComm_t c = comm_;
  std::vector<Tensors> outs = outputs;
  Tensors all;
  for (const auto& l : outs) all.insert(all.end(), l.begin(), l.end());
  return run(
      OpType::ALLGATHER_COALESCED, "all_gather_coalesced", all, in,
      both([=](void* s) { return coralAllGather(ip, fp, e.count, e.type, c, s); },
           [=](coralRequest_t* q) { return coralIAllGather(ip, fp, e.count, e.type, c, q); }),
      [in, flat, all] { unflatten(flat, 0, all); }, inputs);
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                           const ::c10d::GatherOptions& opts) {
  const at::Tensor& input = one(inputs, "gather");
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == getRank();
  Tensors outs;
  if (is_root) {
    TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
                "coral: gather wants one list of world size (", getSize(), ") tensors on the root");
    for (const auto& o : outputs[0]) {
      same_kind(o, input, "gather");
      TORCH_CHECK(o.numel() == input.numel(), "coral: gather: an output tensor has ", o.numel(),
                  " elements, the input ", input.numel());
    }
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()), "coral: gather: only the root (rank ",
                root, ") passes output tensors");
  }
  at::Tensor in = input.contiguous();
  at::Tensor flat = is_root ? at::empty({getSize() * input.numel()}, input.options()) : in;
  const Elements e = elements_of(in, "gather");
  const void* ip = in.data_ptr();
  void* fp = is_root ? flat.data_ptr() : nullptr;
  coralComm_t c = comm_;
  return run(OpType::GATHER, "gather", outs, in,
             both([=](void* s) { return coralGather(ip, fp, e.count, e.type, root, c, s); },
                  [=](coralRequest_t* q) { return coralIGather(ip, fp, e.count, e.type, root, c, q); }),
             [in, flat, outs, is_root] {
               if (is_root) unflatten(flat, 0, outs);
             });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                            const ::c10d::ScatterOptions& opts) {
  const at::Tensor& output = one(outputs, "scatter");
  const int root = static_cast<int>(opts.rootRank);
  const bool is_root = root == getRank();
  at::Tensor flat;
  if (is_root) {
    TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
                "coral: scatter wants one list of world size (", getSize(), ") tensors on the root");
    for (const auto& i : inputs[0]) {
      same_kind(i, output, "scatter");
      TORCH_CHECK(i.numel() == output.numel(), "coral: scatter: an input tensor has ", i.numel(),
                  " elements, the output ", output.numel());
    }
    flat = flatten(inputs[0]);
  } else {
    TORCH_CHECK(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()), "coral: scatter: only the root (rank ",
                root, ") passes input tensors");
  }
  at::Tensor out = output.contiguous();
  const Elements e = elements_of(out, "scatter");
  const void* fp = is_root ? flat.data_ptr() : nullptr;
  void* op = out.data_ptr();
  coralComm_t c = comm_;
  Finish back = copy_back(output, out);
  return run(OpType::SCATTER, "scatter", outputs, out,
             both([=](void* s) { return coralScatter(fp, op, e.count, e.type, root, c, s); },
                  [=](coralRequest_t* q) { return coralIScatter(fp, op, e.count, e.type, root, c, q); }),
             [flat, back] { back(); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                         const ::c10d::ReduceScatterOptions& opts) {
  same_kind(output, input, "reduce_scatter_tensor");
  TORCH_CHECK(input.numel() == output.numel() * getSize(), "coral: reduce_scatter_tensor: the input has ",
              input.numel(), " elements, not world size x output = ", getSize(), " x ", output.numel());
  at::Tensor in = input.contiguous(), out = output.contiguous();
  const Elements e = elements_of(out, "reduce_scatter_tensor");
  RedOp op(opts.reduceOp, in, comm_, "reduce_scatter_tensor");
  const void* ip = in.data_ptr();
  void* outp = out.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  Finish back = copy_back(output, out);
  return run(OpType::_REDUCE_SCATTER_BASE, "reduce_scatter_tensor", {output}, in,
             both([=](void* s) { return coralReduceScatter(ip, outp, e.count, e.type, o, c, s); },
                  [=](coralRequest_t* q) { return coralIReduceScatter(ip, outp, e.count, e.type, o, c, q); }),
             op.holding([in, back] { back(); }));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                                   const ::c10d::ReduceScatterOptions& opts) {
  const at::Tensor& output = one(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
              "coral: reduce_scatter wants one list of world size (", getSize(), ") input tensors");
  std::vector<size_t> counts;
  for (const auto& i : inputs[0]) {
    same_kind(i, output, "reduce_scatter");
    counts.push_back(static_cast<size_t>(i.numel()) * per_element(i));
  }
  TORCH_CHECK(inputs[0][getRank()].numel() == output.numel(), "coral: reduce_scatter: the output has ", output.numel(),
              " elements, this rank's input block ", inputs[0][getRank()].numel());
  at::Tensor in = flatten(inputs[0]);
  at::Tensor out = output.contiguous();
  const coralDataType_t type = coral_type(out, "reduce_scatter");
  RedOp op(opts.reduceOp, in, comm_, "reduce_scatter");
  const void* ip = in.data_ptr();
  void* outp = out.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  Finish back = copy_back(output, out);
  return run(OpType::REDUCE_SCATTER, "reduce_scatter", outputs, in,
             both([=](void* s) { return coralReduceScatterv(ip, outp, counts.data(), type, o, c, s); },
                  [=](coralRequest_t* q) { return coralIReduceScatterv(ip, outp, counts.data(), type, o, c, q); }),
             op.holding([in, back] { back(); }));
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                  std::vector<int64_t>& outputSplits,
                                                                  std::vector<int64_t>& inputSplits,
                                                                  const ::c10d::AllToAllOptions&) {
  same_kind(output, input, "all_to_all_single");
  const int64_t P = getSize();
  // Splits count rows of dim 0; no splits means equal blocks.
  auto blocks = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* side) {
    std::vector<size_t> counts(P);
    const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
    const int64_t row = rows == 0 ? 0 : t.numel() / rows;
    if (splits.empty()) {
      TORCH_CHECK(rows % P == 0, "coral: all_to_all_single: the ", side, " has ", rows,
                  " rows in dim 0, not a multiple of the world size ", P, " (give split sizes)");
      for (auto& n : counts) n = static_cast<size_t>(rows / P * row) * per_element(t);
    } else {
      TORCH_CHECK(static_cast<int64_t>(splits.size()) == P, "coral: all_to_all_single: ", side, "_split_sizes has ",
                  splits.size(), " entries, not the world size ", P);
      const int64_t sum = std::accumulate(splits.begin(), splits.end(), int64_t{0});
      TORCH_CHECK(sum == rows, "coral: all_to_all_single: ", side, "_split_sizes sum to ", sum, ", the ", side, " has ",
                  rows, " rows");
      for (int64_t j = 0; j < P; ++j) {
        TORCH_CHECK(splits[j] >= 0, "coral: all_to_all_single: ", side, "_split_sizes[", j, "] is negative");
        counts[j] = static_cast<size_t>(splits[j] * row) * per_element(t);
      }
    }
    return counts;
  };
  std::vector<size_t> sc = blocks(input, inputSplits, "input"), rc = blocks(output, outputSplits, "output");
  std::vector<size_t> sd(P, 0), rd(P, 0);
  for (int64_t j = 1; j < P; ++j) {
    sd[j] = sd[j - 1] + sc[j - 1];
    rd[j] = rd[j - 1] + rc[j - 1];
  }
  at::Tensor in = input.contiguous(), out = output.contiguous();
  const coralDataType_t type = coral_type(in, "all_to_all_single");
  const void* ip = in.data_ptr();
  void* outp = out.data_ptr();
  coralComm_t c = comm_;
  Finish back = copy_back(output, out);
  return run(
      OpType::ALLTOALL_BASE, "all_to_all_single", {output}, in,
      both([=](void* s) { return coralAllToAllv(ip, sc.data(), sd.data(), outp, rc.data(), rd.data(), type, c, s); },
           [=](coralRequest_t* q) {
             return coralIAllToAllv(ip, sc.data(), sd.data(), outp, rc.data(), rd.data(), type, c, q);
           }),
      [in, back] { back(); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::alltoall(Tensors& outputs, Tensors& inputs,
                                                             const ::c10d::AllToAllOptions&) {
  const int64_t P = getSize();
  TORCH_CHECK(static_cast<int64_t>(outputs.size()) == P && static_cast<int64_t>(inputs.size()) == P,
              "coral: all_to_all wants world size (", P, ") input and output tensors, got ", inputs.size(), " and ",
              outputs.size());
  std::vector<size_t> sc(P), rc(P), sd(P, 0), rd(P, 0);
  for (int64_t j = 0; j < P; ++j) {
    same_kind(inputs[j], inputs[0], "all_to_all");
    same_kind(outputs[j], inputs[0], "all_to_all");
    sc[j] = static_cast<size_t>(inputs[j].numel()) * per_element(inputs[j]);
    rc[j] = static_cast<size_t>(outputs[j].numel()) * per_element(outputs[j]);
    if (j > 0) {
      sd[j] = sd[j - 1] + sc[j - 1];
      rd[j] = rd[j - 1] + rc[j - 1];
    }
  }
  at::Tensor in = flatten(inputs), out = flatten(outputs);
  const coralDataType_t type = coral_type(in, "all_to_all");
  const void* ip = in.data_ptr();
  void* outp = out.data_ptr();
  coralComm_t c = comm_;
  Tensors outs = outputs;
  return run(
      OpType::ALLTOALL, "all_to_all", outs, in,
      both([=](void* s) { return coralAllToAllv(ip, sc.data(), sd.data(), outp, rc.data(), rd.data(), type, c, s); },
           [=](coralRequest_t* q) {
             return coralIAllToAllv(ip, sc.data(), sd.data(), outp, rc.data(), rd.data(), type, c, q);
           }),
      [in, out, outs] { unflatten(out, 0, outs); });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::send(Tensors& tensors, int dst, int /*tag*/) {
  // Tags are not matched: sends and receives between two ranks pair in the order they are posted.
  const at::Tensor& t = one(tensors, "send");
  at::Tensor buf = t.contiguous();
  const Elements e = elements_of(buf, "send");
  const void* p = buf.data_ptr();
  coralComm_t c = comm_;
  return run(OpType::SEND, "send", tensors, buf,
             both([=](void* s) { return coralSend(p, e.count, e.type, dst, c, s); },
                  [=](coralRequest_t* q) { return coralISend(p, e.count, e.type, dst, c, q); }),
             [buf] {});
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::recv(Tensors& tensors, int src, int /*tag*/) {
  const at::Tensor& t = one(tensors, "recv");
  at::Tensor buf = t.contiguous();
  const Elements e = elements_of(buf, "recv");
  void* p = buf.data_ptr();
  coralComm_t c = comm_;
  auto work = run(OpType::RECV, "recv", tensors, buf,
                  both([=](void* s) { return coralRecv(p, e.count, e.type, src, c, s); },
                       [=](coralRequest_t* q) { return coralIRecv(p, e.count, e.type, src, c, q); }),
                  copy_back(t, buf));
  if (auto* w = dynamic_cast<WorkCoral*>(work.get())) w->set_source(src);
  return work;
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::recvAnysource(Tensors&, int) {
  TORCH_CHECK(false,
              "coral: recv from any source (src=None) is not supported: Coral matches point-to-point "
              "calls by peer; pass src");
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::barrier(const ::c10d::BarrierOptions&) {
  coralComm_t c = comm_;
  return run(OpType::BARRIER, "barrier", {}, at::Tensor(),
             both([=](void*) { return coralBarrier(c); }, [=](coralRequest_t* q) { return coralIBarrier(c, q); }));
}

}  // namespace coral::torch_backend
