#include "transport/ibverbs/transport.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "transport/ibverbs/domain.h"

namespace coral::transport::ibverbs {

namespace {

using Clock = std::chrono::steady_clock;

// Peers write into this block: an abort (text, then the flag: one queue pair keeps the order)
// and one goodbye flag per rank.
struct CtrlHead {
  uint64_t abort_flag;
  char abort_text[1024];
};

ibv_device* find_device(std::string* why) {
  int n = 0;
  errno = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) {  // ENOSYS on kernels without RDMA support
    *why = fmt::format("ibv_get_device_list: {}", std::strerror(errno ? errno : ENODEV));
    return nullptr;
  }
  ibv_device* pick = nullptr;
  std::string want = config::get_string("CORAL_IB_HCA");
  for (int i = 0; i < n && !pick; ++i)
    if (want.empty() || want == ibv_get_device_name(list[i])) pick = list[i];
  // The list owns the devices; keeping it open for the process's life keeps pick valid.
  if (!pick) {
    *why = n == 0 ? "no RDMA device" : "CORAL_IB_HCA='" + want + "' names no RDMA device";
    ibv_free_device_list(list);
  }
  return pick;
}

ibv_device* device(std::string* why_out = nullptr) {
  static std::once_flag once;
  static ibv_device* dev = nullptr;
  static std::string why;
  std::call_once(once, [] {
    dev = find_device(&why);
    if (!dev) log::info(log::Net, "ibverbs: skipped ({}); ranks on other hosts use the next transport", why);
  });
  if (why_out) *why_out = why;
  return dev;
}

}  // namespace

Registration PdRegistrar::reg(uintptr_t addr, size_t len) {
  ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(addr), len, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) fail_errno(fmt::format("ibverbs: registering {} bytes", len), errno);
  return {addr, len, mr->lkey, mr->rkey, mr};
}

void PdRegistrar::dereg(const Registration& r) { ibv_dereg_mr(static_cast<ibv_mr*>(r.handle)); }

IbvDomain::IbvDomain(const ConnectArgs& a, ibv_device* dev)
    : rank_(a.rank), nranks_(static_cast<int>(a.peers->size())) {
  const uint64_t slot = config::get_bytes("CORAL_IB_SLOT_BYTES");
  const int64_t nslots = config::get_int("CORAL_IB_NSLOTS");
  QpConfig cfg;
  cfg.port = static_cast<uint8_t>(config::get_int("CORAL_IB_PORT"));
  if (size_t colon = a.rdma.find(':'); colon != std::string::npos && !config::is_set("CORAL_IB_PORT") &&
                                       a.rdma.compare(0, colon, ibv_get_device_name(dev)) == 0)
    cfg.port = static_cast<uint8_t>(std::clamp(std::atoi(a.rdma.c_str() + colon + 1), 1, 255));
  cfg.gid_index = static_cast<uint8_t>(config::get_int("CORAL_IB_GID_INDEX"));
  ctx_ = ibv_open_device(dev);
  if (!ctx_) fail_errno(std::string("ibverbs: opening ") + ibv_get_device_name(dev), errno);
  ibv_port_attr port{};
  if (int e = ibv_query_port(ctx_, cfg.port, &port)) fail_errno("ibverbs: ibv_query_port", e);
  if (port.state != IBV_PORT_ACTIVE)
    fail(coralSystemError,
         fmt::format("ibverbs: port {} of {} is not active (CORAL_IB_PORT)", cfg.port, ibv_get_device_name(dev)));
  ibv_gid gid{};
  cfg.use_gid = port.link_layer == IBV_LINK_LAYER_ETHERNET || port.lid == 0;
  if (cfg.use_gid && ibv_query_gid(ctx_, cfg.port, cfg.gid_index, &gid))
    fail(coralSystemError, "ibverbs: no GID at CORAL_IB_GID_INDEX");
  pd_ = ibv_alloc_pd(ctx_);
  const int cqe =
      static_cast<int>(std::min<int64_t>(65536, (4 * nslots + 16) * std::max(1, static_cast<int>(a.targets.size()))));
  scq_ = ibv_create_cq(ctx_, cqe, nullptr, nullptr, 0);
  rcq_ = ibv_create_cq(ctx_, cqe, nullptr, nullptr, 0);
  if (!pd_ || !scq_ || !rcq_) fail_errno("ibverbs: protection domain or completion queues", errno);
  const size_t ctrl_bytes = sizeof(CtrlHead) + sizeof(uint64_t) * static_cast<size_t>(nranks_);
  ctrl_.mem.reset(new std::byte[ctrl_bytes]());
  ctrl_.mr = ibv_reg_mr(pd_, ctrl_.mem.get(), ctrl_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (!ctrl_.mr) fail_errno("ibverbs: registering the control block", errno);
  registrar_ = std::make_unique<PdRegistrar>(pd_);
  cache_ = std::make_unique<RegCache>(*registrar_, config::get_bytes("CORAL_IB_REG_CACHE_BYTES"));
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
  const uint8_t mtu = static_cast<uint8_t>(port.active_mtu);
  for (int q : a.targets) {
    auto l = std::make_unique<IbvLink>(this, a.rank, q, static_cast<uint32_t>(slot), static_cast<uint32_t>(nslots),
                                       config::get_bytes("CORAL_IB_DIRECT_BYTES"));
    QpInfo mine = l->local_info(pd_, scq_, rcq_, cfg, mtu, port.lid, gid, reinterpret_cast<uint64_t>(ctrl_.mem.get()),
                                ctrl_.mr->rkey);
    a.store->set(a.prefix + "/qp/" + std::to_string(a.rank) + "/" + std::to_string(q), encode(mine));
    by_qpn_[l->qp()->qp_num] = l.get();
    links_.emplace(q, std::move(l));
  }
  for (auto& [q, l] : links_)
    l->connect(cfg,
               decode(a.store->get(a.prefix + "/qp/" + std::to_string(q) + "/" + std::to_string(a.rank), timeout), q));
  log::info(log::Net, "ibverbs: rank {} connected {} queue pair(s) on {} port {}", a.rank, links_.size(),
            ibv_get_device_name(dev), cfg.port);
}

IbvDomain::~IbvDomain() {
  {
    std::lock_guard<std::recursive_mutex> lock(mu_);
    static const uint64_t one = 1;
    for (auto& [q, l] : links_)
      if (l->failure().empty())
        l->post_write(Wr::Control, &one, 0, sizeof one, l->remote().ctrl_addr + sizeof(CtrlHead) + 8 * rank_,
                      l->remote().ctrl_rkey, false, 0);
    auto until = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < until) progress();
  }
  links_.clear();
  cache_.reset();
  ctrl_.reset();
  if (scq_) ibv_destroy_cq(scq_);
  if (rcq_) ibv_destroy_cq(rcq_);
  if (pd_) ibv_dealloc_pd(pd_);
  if (ctx_) ibv_close_device(ctx_);
}

Link* IbvDomain::link(int peer) {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : it->second.get();
}

void IbvDomain::progress() {
  ibv_wc wc[32];
  for (ibv_cq* cq : {rcq_, scq_}) {
    int n;
    while ((n = ibv_poll_cq(cq, 32, wc)) > 0)
      for (int i = 0; i < n; ++i) {
        auto it = by_qpn_.find(wc[i].qp_num);
        if (it == by_qpn_.end()) continue;
        if (cq == rcq_)
          it->second->on_recv(wc[i]);
        else
          it->second->on_send(wc[i]);
      }
  }
}

std::string IbvDomain::peer_failure(int peer) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  const auto* bye = reinterpret_cast<const volatile uint64_t*>(ctrl_.mem.get() + sizeof(CtrlHead));
  return lost_peers(
      peer, links_, [&] { progress(); }, [&](int q, const IbvLink&) { return bye[q] != 0; },
      [&](const IbvLink& l) { return l.failure() + (bye[peer] ? "; it had closed its communicator" : ""); });
}

std::string IbvDomain::remote_abort() {
  const auto* head = reinterpret_cast<const volatile CtrlHead*>(ctrl_.mem.get());
  if (!head->abort_flag) return "";
  return std::string(const_cast<const char*>(head->abort_text),
                     strnlen(const_cast<const char*>(head->abort_text), sizeof head->abort_text));
}

bool IbvDomain::aborted() const { return reinterpret_cast<const volatile CtrlHead*>(ctrl_.mem.get())->abort_flag != 0; }

void IbvDomain::abort(const std::string& why) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  static thread_local std::string text;
  text = why.substr(0, sizeof(CtrlHead::abort_text) - 1);
  text.push_back('\0');
  static const uint64_t one = 1;
  ibv_mr* mr = ibv_reg_mr(pd_, text.data(), text.size(), IBV_ACCESS_LOCAL_WRITE);
  for (auto& [q, l] : links_) {
    if (!l->failure().empty() || !mr) continue;
    l->post_write(Wr::Control, text.data(), mr->lkey, text.size(),
                  l->remote().ctrl_addr + offsetof(CtrlHead, abort_text), l->remote().ctrl_rkey, false, 0);
    l->post_write(Wr::Control, &one, 0, sizeof one, l->remote().ctrl_addr, l->remote().ctrl_rkey, false, 0);
  }
  auto until = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < until) progress();
  if (mr) ibv_dereg_mr(mr);
}

bool IbvTransport::available() const { return device() != nullptr; }

// The device the topology chose for this rank ("mlx5_0" of "mlx5_0:1"), where this host has it.
ibv_device* named_device(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, ibv_device*> found;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = found.find(name); it != found.end()) return it->second;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);  // kept: the devices live as long as the list
  ibv_device* pick = nullptr;
  for (int i = 0; list && i < n && !pick; ++i)
    if (name == ibv_get_device_name(list[i])) pick = list[i];
  return found[name] = pick;
}

std::unique_ptr<Domain> IbvTransport::connect(const ConnectArgs& args) {
  std::string why;
  ibv_device* dev = nullptr;
  if (!args.rdma.empty() && !config::is_set("CORAL_IB_HCA"))
    if ((dev = named_device(args.rdma.substr(0, args.rdma.find(':')))))
      log::info(log::Topo, "ibverbs: {}, the topology's NIC for this rank", args.rdma);
  if (!dev) dev = device(&why);
  if (!dev) fail(coralSystemError, "ibverbs: " + why + " (CORAL_TRANSPORT asks for ibverbs)");
  return std::make_unique<IbvDomain>(args, dev);
}

}  // namespace coral::transport::ibverbs
