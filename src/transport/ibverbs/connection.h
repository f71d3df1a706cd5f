// An RDMA link: one RC queue pair to a peer. A message is RDMA-written, header then payload,
// straight into the peer's receive slot, with the sequence number as immediate data so the
// peer learns of it from its receive completion queue. The receiver returns credits by writing
// its released count into a word the sender reads locally. Large messages whose source stays put
// go from the user's buffer (registration cache) instead of a staging copy.
// NOT YET RUN ON RDMA HARDWARE: the machines Coral is built on have no device.
#pragma once
#include <infiniband/verbs.h>

#include <memory>
#include <string>
#include <utility>

#include "transport/ibverbs/memory.h"
#include "transport/ibverbs/qp.h"
#include "transport/transport.h"

namespace coral::transport::ibverbs {

class IbvDomain;

struct MsgHeader {
  uint64_t tag;
  uint64_t bytes;
};

// Memory registered once for the link's lifetime.
struct Region {
  std::unique_ptr<std::byte[]> mem;
  ibv_mr* mr = nullptr;
  Region() = default;
  Region(Region&& o) noexcept : mem(std::move(o.mem)), mr(std::exchange(o.mr, nullptr)) {}
  Region& operator=(Region&& o) noexcept {
    if (this != &o) {
      reset();
      mem = std::move(o.mem);
      mr = std::exchange(o.mr, nullptr);
    }
    return *this;
  }
  ~Region() { reset(); }
  void reset() {
    if (mr) ibv_dereg_mr(mr);
    mr = nullptr;
  }
};

// Work request ids: kind in the top byte, the link's peer rank next, a counter below.
enum class Wr : uint64_t { Data = 1, Credit = 2, Control = 3, Direct = 4 };

class IbvLink : public Link {
 public:
  IbvLink(IbvDomain* dom, int me, int peer, uint32_t slot_bytes, uint32_t nslots, size_t direct_min);
  ~IbvLink() override;
  size_t max_message() const override { return slot_bytes_; }
  int max_in_flight() const override { return static_cast<int>(nslots_ - (nslots_ + 1) / 2 + 1); }
  std::byte* send_acquire(size_t bytes, WaitMonitor& mon) override;
  void send_commit(size_t bytes, uint64_t tag) override;
  bool direct_ok(const void*, size_t bytes) const override { return bytes >= direct_min_; }
  void send_direct(const void* src, size_t bytes, uint64_t tag, WaitMonitor& mon) override;
  void flush(WaitMonitor& mon) override;
  Message recv_peek(WaitMonitor& mon, bool want_local) override;
  void recv_read(const Message& m, void* dst) override;
  void recv_release() override;
  bool send_ready(size_t bytes) override;
  bool recv_ready() override;

  // Set-up: register memory and create the QP; then connect with the peer's record.
  QpInfo local_info(ibv_pd* pd, ibv_cq* scq, ibv_cq* rcq, const QpConfig& cfg, uint8_t mtu, uint16_t lid,
                    const ibv_gid& gid, uint64_t ctrl_addr, uint32_t ctrl_rkey);
  void connect(const QpConfig& cfg, const QpInfo& peer);
  void post_write(Wr kind, const void* local, uint32_t lkey, size_t len, uint64_t raddr, uint32_t rkey, bool with_imm,
                  uint32_t imm);

  // From the domain's completion polling.
  void on_recv(const ibv_wc& wc);
  void on_send(const ibv_wc& wc);
  void lose(const std::string& why) {
    if (failed_.empty()) failed_ = why;
  }
  const std::string& failure() const { return failed_; }
  ibv_qp* qp() const { return qp_; }
  int peer() const { return peer_; }
  const QpInfo& remote() const { return remote_; }

 private:
  void post_recv();
  void report_credits();
  // The test of send_acquire's wait.
  bool send_room() const;
  // A probe: ready(), a failure or an abort, after a pass over the completion queues if needed.
  template <class Ready>
  bool probe(Ready ready);

  IbvDomain* dom_;
  int me_, peer_;
  uint32_t slot_bytes_, nslots_;
  size_t stride_;
  size_t direct_min_;
  ibv_qp* qp_ = nullptr;
  QpMachine machine_;
  QpInfo mine_, remote_;
  Region in_, out_, credit_in_, credit_out_;
  uint64_t out_seq_ = 0, sends_done_ = 0;  // data writes posted / completed
  uint64_t direct_posted_ = 0, direct_done_ = 0;
  uint64_t in_seq_ = 0, arrived_ = 0, reported_ = 0;
  std::string failed_;
};

}  // namespace coral::transport::ibverbs
