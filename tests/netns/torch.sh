#!/bin/bash
# torchrun across two emulated hosts, two ranks on each, the "coral" backend: torch's own
# rendezvous (c10d store at host 0) and Coral between the hosts over TCP, within each over
# shared memory. Every rank must check an all-reduce, DDP replicas that agree after training,
# and the hosts' ranks must have reached each other through the network transport.
# Environment as meson sets it: TORCH_PYTHON, PYTHONPATH (holding coral_torch).
set -u
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
netns_skip_unless_root
PY=${TORCH_PYTHON:-/usr/bin/python3}
TORCHRUN=${TORCHRUN:-$(dirname "$PY")/torchrun}
[ -x "$TORCHRUN" ] || { echo "SKIP: no torchrun beside $PY"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; netns_down' EXIT
netns_up 2 none || { echo "FAIL: could not create 2 hosts"; exit 1; }

cat >"$tmp/check.py" <<'EOF'
import datetime, os
import torch
import torch.distributed as dist
import torch.nn as nn
import coral_torch  # noqa: F401  (registers "coral")

dist.init_process_group("coral", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
n = 1 << 18  # 1 MiB of float32: the pipelined path, not only the small-message one
t = torch.arange(n, dtype=torch.float32) + rank
dist.all_reduce(t)
ok_sum = torch.equal(t, world * torch.arange(n, dtype=torch.float32) + world * (world - 1) / 2)
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(1 + rank)  # each rank its own data
for _ in range(5):
    opt.zero_grad()
    model(torch.randn(8, 16, generator=g)).pow(2).mean().backward()
    opt.step()
flat = torch.cat([p.detach().flatten() for p in model.parameters()])
every = [torch.zeros_like(flat) for _ in range(world)]
dist.all_gather(every, flat)
ok_ddp = all(torch.equal(e, every[0]) for e in every)
print(f"check: rank {rank} of {world} (node {os.environ['GROUP_RANK']}, local {os.environ['LOCAL_RANK']}): "
      f"all-reduce {'ok' if ok_sum else 'WRONG'}, DDP replicas {'agree' if ok_ddp else 'DIFFER'}", flush=True)
dist.destroy_process_group()
EOF

source "$here/../torch/torchrun_args.sh"
for h in 0 1; do
  on_host $h env CORAL_DEBUG=INFO USE_LIBUV=0 timeout -k 5 150 "$TORCHRUN" --nnodes 2 --node_rank $h \
    --nproc_per_node 2 --master_addr "$(host_addr 0)" --master_port 29533 "${tr_args[@]}" "$tmp/check.py" \
    >"$tmp/h$h.log" 2>&1 &
done
rc=0
for j in $(jobs -p); do wait "$j" || rc=$?; done
fails=0
grep -h "check: " "$tmp"/h*.log | sed 's/^\[[^]]*\]://'
good=$(grep -h "check: " "$tmp"/h*.log | grep -c "all-reduce ok, DDP replicas agree")
[ "$good" -eq 4 ] || { echo "FAIL: $good of 4 ranks checked out"; fails=1; }
# Each rank reached the other host's two ranks through TCP (Coral's [NET] lines, INFO level).
net=$(grep -h "tcp: rank [0-3] connected to 2 peer" "$tmp"/h*.log | wc -l)
[ "$net" -eq 4 ] || { echo "FAIL: $net of 4 ranks say they connected to the other host's 2 ranks over TCP"; fails=1; }
if [ $rc -ne 0 ] || [ $fails -ne 0 ]; then
  echo "FAIL: torchrun exit status $rc; the hosts' logs:"
  grep -v "^\s*$" "$tmp"/h*.log | grep -v "coral INFO" | tail -30
  exit 1
fi
echo "torchrun on 2 hosts x 2 ranks over coral: 4 ranks checked out, the hosts joined over TCP"
