// torch >= 2's coalesced tensor collectives (FSDP's): several all_gather_into_tensor or
// reduce_scatter_tensor calls as one Coral call over a flat buffer.
#include "compat/torch/process_group.h"

#if TORCH_VERSION_MAJOR >= 2
#include "compat/torch/convert.h"
#include "compat/torch/ops_util.h"

namespace coral::torch_backend {

using namespace ops_util;

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                                    const ::c10d::AllgatherOptions&) {
  const int64_t P = getSize();
  TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(),
              "coral: allgather_into_tensor_coalesced: ", inputs.size(), " inputs and ", outputs.size(), " outputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    same_kind(inputs[i], inputs[0], "allgather_into_tensor_coalesced");
    same_kind(outputs[i], inputs[0], "allgather_into_tensor_coalesced");
    TORCH_CHECK(outputs[i].numel() == P * inputs[i].numel(), "coral: allgather_into_tensor_coalesced: output ", i,
                " has ", outputs[i].numel(), " elements, not world size x input = ", P, " x ", inputs[i].numel());
  }
  // Rank j's block of the gathered buffer is its inputs back to back.
  at::Tensor in = flatten(inputs);
  at::Tensor flat = at::empty({P * in.numel()}, in.options());
  const Elements e = elements_of(in, "allgather_into_tensor_coalesced");
  const void* ip = in.data_ptr();
  void* fp = flat.data_ptr();
  coralComm_t c = comm_;
  Tensors outs = outputs;
  return run(::c10d::OpType::COALESCED, "allgather_into_tensor_coalesced", outs, in,
             both([=](void* s) { return coralAllGather(ip, fp, e.count, e.type, c, s); },
                  [=](coralRequest_t* q) { return coralIAllGather(ip, fp, e.count, e.type, c, q); }),
             [in, flat, outs, P] {
               at::Tensor blocks = flat.view({P, -1});
               int64_t off = 0;
               for (const auto& o : outs) {
                 const int64_t n = o.numel() / P;
                 const_cast<at::Tensor&>(o).copy_(blocks.narrow(1, off, n).reshape(o.sizes()));
                 off += n;
               }
             });
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupCoral::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const ::c10d::ReduceScatterOptions& opts) {
  const int64_t P = getSize();
  TORCH_CHECK(!inputs.empty() && outputs.size() == inputs.size(),
              "coral: reduce_scatter_tensor_coalesced: ", inputs.size(), " inputs and ", outputs.size(), " outputs");
  std::vector<at::Tensor> by_rank;
  for (size_t i = 0; i < inputs.size(); ++i) {
    same_kind(inputs[i], inputs[0], "reduce_scatter_tensor_coalesced");
    same_kind(outputs[i], inputs[0], "reduce_scatter_tensor_coalesced");
    TORCH_CHECK(inputs[i].numel() == P * outputs[i].numel(), "coral: reduce_scatter_tensor_coalesced: input ", i,
                " has ", inputs[i].numel(), " elements, not world size x output = ", P, " x ", outputs[i].numel());
    by_rank.push_back(inputs[i].reshape({P, -1}));
  }
  // Block j of the send buffer (rank j's share) is every input's j-th part, back to back.
  at::Tensor in = at::cat(by_rank, 1).reshape({-1});
  at::Tensor out = at::empty({in.numel() / P}, in.options());
  const Elements e = elements_of(out, "reduce_scatter_tensor_coalesced");
  RedOp op(opts.reduceOp, in, comm_, "reduce_scatter_tensor_coalesced");
  const void* ip = in.data_ptr();
  void* outp = out.data_ptr();
  coralComm_t c = comm_;
  coralRedOp_t o = op.get();
  Tensors outs = outputs;
  return run(::c10d::OpType::COALESCED, "reduce_scatter_tensor_coalesced", outs, in,
             both([=](void* s) { return coralReduceScatter(ip, outp, e.count, e.type, o, c, s); },
                  [=](coralRequest_t* q) { return coralIReduceScatter(ip, outp, e.count, e.type, o, c, q); }),
             op.holding([in, out, outs] { unflatten(out, 0, outs); }));
}

}  // namespace coral::torch_backend
#endif
