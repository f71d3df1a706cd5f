// Groups (coralGroupStart/End) and the non-blocking point-to-point calls. A group defers its
// calls to coralGroupEnd, then hands each communicator's host calls to its progress thread as
// one request, where the point-to-point ones progress together (core/p2p.h).
#include <fmt/format.h>

#include "base/error.h"
#include "core/api_checks.h"
#include "core/gpu_state.h"
#include "gpu/runtime.h"

namespace coral::capi {

namespace {

struct Member {
  coralComm* comm;
  Call call;
  void* stream;
  bool device;
  int gpu;  // the thread's GPU at the call (-1 for a host call): the member runs there
};

struct GroupState {
  int depth = 0;
  std::vector<Member> members;
  coralResult_t error = coralSuccess;  // the first member's failure, at its call
  std::string message;
};

thread_local GroupState t_group;

}  // namespace

int group_depth() { return t_group.depth; }

void group_add(coralComm* comm, Call call, void* stream, bool device) {
  // One thread may drive communicators of several GPUs in one group, switching devices between
  // the calls (as nccl-tests -g N does through NCCL's ABI): each runs where it was called.
  const int gpu = stream || device ? gpu::current_device() : -1;
  t_group.members.push_back({comm, std::move(call), stream, device, gpu});
}

void group_failed(coralResult_t rc, const std::string& msg) {
  if (t_group.depth == 0 || t_group.error != coralSuccess) return;
  t_group.error = rc;
  t_group.message = msg;
}

}  // namespace coral::capi

namespace {

using coral::fail;
using coral::collectives::Coll;
using namespace coral::capi;

using coral::is_p2p;

// The GPU a communicator's members were called on (-1 when all are host calls).
int gpu_of(const std::vector<Member>& members, const coralComm* comm) {
  for (const Member& m : members)
    if (m.comm == comm && m.gpu >= 0) return m.gpu;
  return -1;
}

// Runs the members: per communicator, stream-ordered ones in order, host ones as one request;
// every communicator's request is queued before any is waited for.
void run_members(std::vector<Member>& members) {
  std::vector<coralComm*> comms;
  for (const Member& m : members)
    if (std::find(comms.begin(), comms.end(), m.comm) == comms.end()) comms.push_back(m.comm);
  // A communicator's first device call makes its links with the other local ranks. One thread
  // driving several ranks here would have the first wait for ranks whose calls come after it.
  std::vector<std::pair<coral::Communicator*, int>> unlinked;
  for (coralComm* comm : comms)
    for (const Member& m : members)
      if (m.comm == comm && m.device && comm->impl && !comm->impl->device_prepared()) {
        unlinked.emplace_back(comm->impl.get(), m.gpu);
        break;
      }
  if (unlinked.size() > 1) coral::Communicator::prepare_devices(unlinked);
  coral::DeviceRestore restore;  // the caller's GPU, back after the members ran on theirs
  std::vector<std::pair<coralComm*, std::shared_ptr<coral::Request>>> pending;
  coralResult_t first = coralSuccess;
  std::string why;
  auto failed = [&](coralComm* comm, coralResult_t rc, const std::string& msg) {
    if (first != coralSuccess) return;
    first = rc;
    why = msg;
    if (comm && comm->impl) comm->impl->set_last_error("coralGroupEnd: " + msg);
  };
  for (coralComm* comm : comms) {
    try {
      coral::Communicator& c = need(comm);
      restore.switch_to(gpu_of(members, comm));
      // Stream-ordered point-to-point members take every point-to-point member along into one
      // stream-ordered request, so that the group's sends and receives still progress together.
      bool on_stream = false;
      void* p2p_stream = nullptr;
      for (const Member& m : members) {
        if (m.comm != comm || !is_p2p(m.call) || (!m.stream && !m.device)) continue;
        if (on_stream && m.stream != p2p_stream)
          fail(coralInvalidUsage, "a group's sends and receives on device buffers or streams must use one stream");
        on_stream = true;
        p2p_stream = m.stream;
      }
      std::vector<coral::Call> host, p2p;
      for (Member& m : members) {
        if (m.comm != comm) continue;
        m.call.device = m.device;
        if (on_stream && is_p2p(m.call))
          p2p.push_back(std::move(m.call));
        else if (!m.stream && !m.device)
          host.push_back(std::move(m.call));
        else if (auto req = c.run_on_stream(m.call, m.stream, m.device))  // the caller waits on the host
          pending.emplace_back(comm, std::move(req));
      }
      if (!host.empty()) pending.emplace_back(comm, c.submit_group(std::move(host)));
      if (!p2p.empty())
        if (auto req = c.run_group_on_stream(std::move(p2p), p2p_stream)) pending.emplace_back(comm, std::move(req));
    } catch (const coral::Error& e) {  // what was queued still runs: it is waited for below
      failed(comm, e.code(), e.what());
    }
  }
  for (auto& [comm, req] : pending) {
    req->wait_done();
    std::lock_guard<std::mutex> lock(req->mu);
    if (req->result != coralSuccess) failed(comm, req->result, req->error);
  }
  if (first != coralSuccess) fail(first, why);
}

}  // namespace

extern "C" {

coralResult_t coralGroupStart(void) {
  return guard(nullptr, "coralGroupStart", [] { ++t_group.depth; });
}

coralResult_t coralGroupEnd(void) {
  return guard(nullptr, "coralGroupEnd", [] {
    if (t_group.depth == 0) fail(coralInvalidUsage, "coralGroupEnd without a matching coralGroupStart");
    if (--t_group.depth > 0) return;
    GroupState g = std::move(t_group);
    t_group = GroupState{};
    // A member refused at its call leaves the group unrun: the peers' matching calls then fail
    // or time out, rather than half of it running.
    if (g.error != coralSuccess) fail(g.error, g.message);
    run_members(g.members);
  });
}

coralResult_t coralGroupDiscard(void) {
  return guard(nullptr, "coralGroupDiscard", [] {
    if (t_group.depth == 0) fail(coralInvalidUsage, "coralGroupDiscard without a matching coralGroupStart");
    if (--t_group.depth > 0) return;
    t_group = GroupState{};
  });
}

coralResult_t coralGroupEstimate(double* microseconds) {
  return guard(nullptr, "coralGroupEstimate", [&] {
    if (t_group.depth == 0) fail(coralInvalidUsage, "coralGroupEstimate without a matching coralGroupStart");
    if (!microseconds) fail(coralInvalidArgument, "microseconds is NULL");
    if (t_group.error != coralSuccess) fail(t_group.error, t_group.message);
    // A communicator runs its collectives one after another, then its sends and receives all
    // together: these cost the busier direction. Communicators run side by side.
    struct Cost {
      coralComm* comm;
      double colls = 0, sends = 0, recvs = 0;
    };
    std::vector<Cost> costs;
    for (const Member& m : t_group.members) {
      const double us = need(m.comm).estimate_us(m.call.args, m.device);
      auto it = std::find_if(costs.begin(), costs.end(), [&](const Cost& c) { return c.comm == m.comm; });
      if (it == costs.end()) it = costs.insert(costs.end(), Cost{m.comm});
      (m.call.args.coll == Coll::Send ? it->sends : m.call.args.coll == Coll::Recv ? it->recvs : it->colls) += us;
    }
    double longest = 0;
    for (const Cost& c : costs) longest = std::max(longest, c.colls + std::max(c.sends, c.recvs));
    *microseconds = longest;
  });
}

coralResult_t coralISend(const void* s, size_t n, coralDataType_t t, int peer, coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralISend", comm,
      [&](coral::Communicator&) { return validated(comm, Coll::Send, s, nullptr, n, t, coralSum, peer); }, q);
}

coralResult_t coralIRecv(void* r, size_t n, coralDataType_t t, int peer, coralComm_t comm, coralRequest_t* q) {
  return launch_nb(
      "coralIRecv", comm,
      [&](coral::Communicator&) { return validated(comm, Coll::Recv, nullptr, r, n, t, coralSum, peer); }, q);
}

}  // extern "C"
