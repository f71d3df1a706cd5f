#include "transport/ucx/domain.h"

#include <cstdlib>
#include <filesystem>

#include "transport/ucx/transport.h"

#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/exchange.h"

namespace coral::transport::ucx {

namespace {

using Clock = std::chrono::steady_clock;

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fail(coralSystemError, fmt::format("ucx: {}: {}", what, ucs_status_string(s)));
}

void on_ep_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* l = static_cast<UcxLink*>(arg);
  l->lose(l->closed_cleanly() ? fmt::format("rank {} closed its communicator", l->peer())
                              : fmt::format("connection to rank {} failed: {}", l->peer(), ucs_status_string(status)));
}

}  // namespace

UcxDomain::UcxDomain(const ConnectArgs& a) : rank_(a.rank) {
  const uint64_t slot = config::get_bytes("CORAL_UCX_SLOT_BYTES");
  const int64_t nslots = config::get_int("CORAL_UCX_NSLOTS");
  try {
    ucp_config_t* cfg = nullptr;
    check(ucp_config_read(nullptr, nullptr, &cfg), "reading UCX configuration");
    // The topology's RDMA port for this rank, unless the user chose (and only if this host has it:
    // a topology file may describe another machine).
    const std::string dev = a.rdma.substr(0, a.rdma.find(':'));
    std::error_code ec;
    if (!a.rdma.empty() && !std::getenv("UCX_NET_DEVICES") &&
        std::filesystem::exists("/sys/class/infiniband/" + dev, ec) &&
        ucp_config_modify(cfg, "NET_DEVICES", a.rdma.c_str()) == UCS_OK)
      log::info(log::Topo, "ucx: NET_DEVICES={}, the topology's NIC for this rank", a.rdma);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    ucs_status_t st = ucp_init(&params, cfg, &context_);
    ucp_config_release(cfg);
    check(st, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the executor or the progress thread, under mu_
    check(ucp_worker_create(context_, &wp, &worker_), "ucp_worker_create");
    check(ucp_worker_get_efd(worker_, &efd_), "ucp_worker_get_efd");
    ucp_address_t* addr = nullptr;
    size_t len = 0;
    check(ucp_worker_get_address(worker_, &addr, &len), "ucp_worker_get_address");
    bootstrap::Record mine("ucx address record", a.rank);
    mine.add("worker", addr, len).add("slot_bytes", slot).add("nslots", nslots);
    ucp_worker_release_address(worker_, addr);
    const auto timeout = std::chrono::milliseconds(static_cast<long long>(a.timeout_s * 1000));
    bootstrap::Exchange exchange(*a.store, a.prefix, a.rank, timeout);
    const auto records = exchange.swap("addr", mine, a.targets,
                                       {{"slot_bytes", "CORAL_UCX_SLOT_BYTES"}, {"nslots", "CORAL_UCX_NSLOTS"}});
    for (int q : a.targets) {
      const std::string& theirs = records.at(q).text("worker");
      auto link = std::make_unique<UcxLink>(this, a.rank, q, nullptr, slot, static_cast<uint32_t>(nslots));
      ucp_ep_params_t ep{};
      ep.field_mask =
          UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
      ep.address = reinterpret_cast<const ucp_address_t*>(theirs.data());
      ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;  // a lost peer fails the endpoint, not the process
      ep.err_handler.cb = on_ep_error;
      ep.err_handler.arg = link.get();
      ucp_ep_h h = nullptr;
      check(ucp_ep_create(worker_, &ep, &h), "ucp_ep_create");
      link->set_ep(h);
      links_.emplace(q, std::move(link));
    }
    post_control();
    for (auto& [q, l] : links_) l->post_receives();
  } catch (...) {
    teardown();
    throw;
  }
  log::info(log::Net, "ucx: rank {} has endpoints to {} peer(s), {} slots of {} bytes", a.rank, links_.size(), nslots,
            slot);
}

UcxDomain::~UcxDomain() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  // Goodbyes first, so peers tell a closed communicator from a crash.
  std::vector<std::pair<UcxLink*, void*>> byes;
  for (auto& [q, l] : links_) {
    if (!l->failure().empty() || !l->ep()) continue;
    ucp_request_param_t p{};
    void* r = ucp_tag_send_nbx(l->ep(), nullptr, 0, ucp_tag(TagKind::Bye, rank_), &p);
    if (r && !UCS_PTR_IS_ERR(r)) byes.push_back({l.get(), r});
  }
  auto until = Clock::now() + std::chrono::seconds(2);
  auto busy = [&] {
    for (auto& [l, r] : byes)
      if (r && ucp_request_check_status(r) == UCS_INPROGRESS) return true;
    for (auto& [q, l] : links_)
      if (l->sends_pending()) return true;
    return false;
  };
  while (busy() && Clock::now() < until) ucp_worker_progress(worker_);
  // Peers closing about now send their goodbyes too: take them, so none is left unmatched.
  auto all_gone = [&] {
    for (auto& [q, l] : links_)
      if (l->failure().empty() && !l->closed_cleanly()) return false;
    return true;
  };
  until = Clock::now() + std::chrono::milliseconds(200);
  while (!all_gone() && Clock::now() < until) progress();
  for (auto& [l, r] : byes)
    if (r) ucp_request_free(r);
  teardown();
}

void UcxDomain::teardown() {
  if (!worker_) {
    if (context_) ucp_cleanup(context_);
    return;
  }
  for (Control* c : {&abort_in_, &bye_in_})
    if (c->slot.request && !c->slot.done) ucp_request_cancel(worker_, c->slot.request);
  for (auto& [q, l] : links_) l->cancel_receives();
  for (Control* c : {&abort_in_, &bye_in_}) {
    for (int i = 0; i < 1000 && c->slot.request && !c->slot.done; ++i) ucp_worker_progress(worker_);
    if (c->slot.request) ucp_request_free(c->slot.request);
    c->slot.request = nullptr;
  }
  // Flush-close every endpoint (what we sent reaches the peer), bounded in time.
  std::vector<void*> closing;
  for (auto& [q, l] : links_) {
    if (!l->ep()) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = l->failure().empty() ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* r = ucp_ep_close_nbx(l->ep(), &p);
    if (r && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
    l->forget_ep();
  }
  auto until = Clock::now() + std::chrono::seconds(2);
  auto open = [&] {
    for (void* r : closing)
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return true;
    return false;
  };
  while (open() && Clock::now() < until) ucp_worker_progress(worker_);
  for (void* r : closing)
    if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
  links_.clear();
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
  ucp_cleanup(context_);
  context_ = nullptr;
}

void UcxDomain::post_control() {
  for (auto [c, kind] : {std::pair{&abort_in_, TagKind::Abort}, std::pair{&bye_in_, TagKind::Bye}}) {
    void* r = post_tag_recv(worker_, c->slot, c->text, sizeof c->text, ucp_tag(kind, 0), kKindMask);
    if (UCS_PTR_IS_ERR(r)) fail(coralSystemError, "ucx: posting a control receive failed");
    c->slot.request = r;
  }
}

void UcxDomain::progress() {
  while (ucp_worker_progress(worker_) != 0) {}
  if (abort_in_.slot.done && abort_in_.slot.request) {
    if (abort_in_.slot.status == UCS_OK && abort_text_.empty())
      abort_text_.assign(abort_in_.text,
                         strnlen(abort_in_.text, std::min(sizeof abort_in_.text, abort_in_.slot.length)));
    ucp_request_free(abort_in_.slot.request);
    abort_in_.slot.request = nullptr;
  }
  if (bye_in_.slot.done && bye_in_.slot.request) {
    if (bye_in_.slot.status == UCS_OK) {
      auto it = links_.find(static_cast<int>(bye_in_.slot.sender_tag & 0xffffffffu));
      if (it != links_.end()) it->second->set_bye();
    }
    ucp_request_free(bye_in_.slot.request);
    bye_in_.slot.request = nullptr;
    // Listen for the next goodbye.
    void* r =
        post_tag_recv(worker_, bye_in_.slot, bye_in_.text, sizeof bye_in_.text, ucp_tag(TagKind::Bye, 0), kKindMask);
    bye_in_.slot.request = UCS_PTR_IS_ERR(r) ? nullptr : r;
  }
}

void UcxDomain::sleep_for_events(int ms) {
  if (ucp_worker_arm(worker_) != UCS_OK) return;  // events pending: poll again
  pollfd p{efd_, POLLIN, 0};
  poll(&p, 1, ms);
}

Link* UcxDomain::link(int peer) {
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : it->second.get();
}

void UcxDomain::drain(WaitMonitor& mon) {
  for (auto& [q, l] : links_) {
    UcxLink* link = l.get();
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (link->sends_pending()) wait(mon, q, [&] { return !link->sends_pending(); });
  }
}

std::string UcxDomain::peer_failure(int peer) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return lost_peers(
      peer, links_, [&] { progress(); }, [](int, const UcxLink& l) { return l.closed_cleanly(); },
      [](const UcxLink& l) { return l.failure(); });
}

std::string UcxDomain::remote_abort() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  progress();
  return abort_text_;
}

void UcxDomain::abort(const std::string& why) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  std::string text = why.substr(0, sizeof abort_in_.text - 1);
  std::vector<void*> reqs;
  for (auto& [q, l] : links_) {
    if (!l->failure().empty() || !l->ep()) continue;
    ucp_request_param_t p{};
    void* r = ucp_tag_send_nbx(l->ep(), text.c_str(), text.size() + 1, ucp_tag(TagKind::Abort, rank_), &p);
    if (r && !UCS_PTR_IS_ERR(r)) reqs.push_back(r);
  }
  auto until = Clock::now() + std::chrono::milliseconds(500);
  auto pending = [&] {
    for (void* r : reqs)
      if (ucp_request_check_status(r) == UCS_INPROGRESS) return true;
    return false;
  };
  while (pending() && Clock::now() < until) ucp_worker_progress(worker_);
  for (void* r : reqs)
    if (ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
}

bool rdma_present() {
  // Every RDMA device (InfiniBand, RoCE, iWARP) registers under this class.
  return access("/sys/class/infiniband", F_OK) == 0 && [] {
    bool any = false;
    if (DIR* d = opendir("/sys/class/infiniband")) {
      while (dirent* e = readdir(d))
        if (e->d_name[0] != '.') any = true;
      closedir(d);
    }
    return any;
  }();
}

}  // namespace coral::transport::ucx
