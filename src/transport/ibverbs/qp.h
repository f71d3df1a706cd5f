// The RC queue pair's life as a state machine: RESET -> INIT -> RTR -> RTS, any -> ERROR. Each
// step says which attributes ibv_modify_qp needs and fills them from the peer's record; an
// out-of-order step is refused before it reaches the driver (whose error would be a bare EINVAL).
#pragma once
#include <infiniband/verbs.h>

#include <string>

#include "transport/ibverbs/wire.h"

namespace coral::transport::ibverbs {

enum class QpState { Reset, Init, Rtr, Rts, Error };
const char* state_name(QpState s);

struct Step {
  ibv_qp_attr attr{};
  int mask = 0;
};

struct QpConfig {
  uint8_t port = 1;
  uint8_t gid_index = 0;
  bool use_gid = false;  // RoCE (and routed InfiniBand) address by GID
  uint8_t timeout = 14;  // 4.096 us * 2^14 = 67 ms per retry
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;  // 7 = retry forever: the receiver re-posts promptly
};

class QpMachine {
 public:
  QpState state() const { return state_; }
  // The attributes moving the queue pair to `to`; throws coralInternalError on an illegal step.
  // RTR needs the peer's record; `mine` supplies the local PSN for RTS.
  Step step(QpState to, const QpConfig& cfg, const QpInfo& mine, const QpInfo& peer) const;
  void advance(QpState to);  // after ibv_modify_qp succeeded

 private:
  QpState state_ = QpState::Reset;
};

}  // namespace coral::transport::ibverbs
