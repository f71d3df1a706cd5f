#include "transport/ibverbs/qp.h"

#include <fmt/format.h>

#include <cstring>

#include "base/error.h"

namespace coral::transport::ibverbs {

const char* state_name(QpState s) {
  switch (s) {
    case QpState::Reset:
      return "RESET";
    case QpState::Init:
      return "INIT";
    case QpState::Rtr:
      return "RTR";
    case QpState::Rts:
      return "RTS";
    case QpState::Error:
      return "ERROR";
  }
  return "?";
}

Step QpMachine::step(QpState to, const QpConfig& cfg, const QpInfo& mine, const QpInfo& peer) const {
  const bool legal = to == QpState::Error || (state_ == QpState::Reset && to == QpState::Init) ||
                     (state_ == QpState::Init && to == QpState::Rtr) ||
                     (state_ == QpState::Rtr && to == QpState::Rts) ||
                     (state_ == QpState::Error && to == QpState::Reset);
  if (!legal)
    fail(coralInternalError,
         fmt::format("ibverbs: queue pair cannot go from {} to {}", state_name(state_), state_name(to)));
  Step s;
  switch (to) {
    case QpState::Reset:
      s.attr.qp_state = IBV_QPS_RESET;
      s.mask = IBV_QP_STATE;
      break;
    case QpState::Init:
      s.attr.qp_state = IBV_QPS_INIT;
      s.attr.pkey_index = 0;
      s.attr.port_num = cfg.port;
      s.attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
      s.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
      break;
    case QpState::Rtr:
      s.attr.qp_state = IBV_QPS_RTR;
      s.attr.path_mtu = static_cast<ibv_mtu>(std::min(mine.mtu, peer.mtu));
      s.attr.dest_qp_num = peer.qpn;
      s.attr.rq_psn = peer.psn;
      s.attr.max_dest_rd_atomic = 1;
      s.attr.min_rnr_timer = 12;  // 0.64 ms
      s.attr.ah_attr.port_num = cfg.port;
      s.attr.ah_attr.dlid = peer.lid;
      if (cfg.use_gid) {
        s.attr.ah_attr.is_global = 1;
        std::memcpy(s.attr.ah_attr.grh.dgid.raw, peer.gid, 16);
        s.attr.ah_attr.grh.sgid_index = cfg.gid_index;
        s.attr.ah_attr.grh.hop_limit = 64;
      }
      s.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      break;
    case QpState::Rts:
      s.attr.qp_state = IBV_QPS_RTS;
      s.attr.sq_psn = mine.psn;
      s.attr.timeout = cfg.timeout;
      s.attr.retry_cnt = cfg.retry_cnt;
      s.attr.rnr_retry = cfg.rnr_retry;
      s.attr.max_rd_atomic = 1;
      s.mask =
          IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      break;
    case QpState::Error:
      s.attr.qp_state = IBV_QPS_ERR;
      s.mask = IBV_QP_STATE;
      break;
  }
  return s;
}

void QpMachine::advance(QpState to) { state_ = to; }

}  // namespace coral::transport::ibverbs
