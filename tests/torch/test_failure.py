#!/usr/bin/env python3
"""Failures under the "coral" backend surface as errors naming the culprit, within the timeout.

Scenarios, each at P=3 with ranks started here (not by coral-run, which would stop the survivors
as soon as one rank dies, before they can report):
  kill    a rank SIGKILLs itself mid-way through DDP training; the survivors' backward must raise
          a RuntimeError naming it, well within init_process_group's timeout.
  absent  a rank never joins an all_reduce; the others must fail after about the timeout given to
          init_process_group (not torch's 30-minute default), naming it.
  absent-init  likewise for a rank that never calls new_group (given the timeout: torch 1.13's
          new_group does not inherit init_process_group's), which fails in Coral's rendezvous.
  set-timeout  (torch with dist.set_timeout, 2.14) as absent, but the group made with a long
          timeout that dist.set_timeout then shortens: the others must fail after the short one.
  abort   (torch whose _abort_process_group reaches any backend, 2.14) a rank never joins an
          all_reduce; a watchdog thread on rank 0 aborts the group a second in: both waiting ranks
          raise at once (not at the timeout), naming rank 0's abort.
  shrink  (torch with dist.shrink_group, 2.14) a rank SIGKILLs itself; the survivors' all_reduce
          raises naming it, they shrink the default group without it and all_reduce again.
In all, the survivors must then tear down and exit: nothing may hang. Last, the kill scenario under
coral-run: the launcher must stop the job and exit with the dead rank's status. Run as:
$TORCH_PYTHON test_failure.py (PYTHONPATH holding coral_torch, CORAL_RUN the launcher).
"""
import argparse
import datetime
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

WORLD = 3
KILLS = ("kill", "shrink")  # the scenarios where the victim dies
KILL_TIMEOUT_S = 20
ABSENT_TIMEOUT_S = 8
SET_TIMEOUT_FROM_S = 120  # set-timeout: the group's timeout before dist.set_timeout(ABSENT_TIMEOUT_S)
ABORT_TIMEOUT_S, ABORT_AFTER_S = 30, 1
KILL_AT_STEP = 5
# Start-up (three torch imports on two cores) and teardown allowances, on top of the timeouts.
START_SLACK_S = 90
DETECT_SLACK_S = 10
EXIT_SLACK_S = 20


def timeout_of(scenario):
    return KILL_TIMEOUT_S if scenario in KILLS else ABORT_TIMEOUT_S if scenario == "abort" else ABSENT_TIMEOUT_S


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def report(out, rank, **kw):
    with open(os.path.join(out, f"r{rank}.json"), "w") as f:
        json.dump(dict(rank=rank, **kw), f)


def worker(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    import coral_torch  # noqa: F401  (registers "coral")

    timeout = timeout_of(args.scenario)
    at_init = SET_TIMEOUT_FROM_S if args.scenario == "set-timeout" else timeout
    dist.init_process_group("coral", timeout=datetime.timedelta(seconds=at_init))
    rank = dist.get_rank()
    t = torch.ones(16)
    dist.all_reduce(t)  # everyone is up: what follows is the failure, not a slow start
    assert t[0].item() == WORLD
    if args.scenario == "kill":
        torch.manual_seed(0)
        ddp = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 1)))
        opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
        step = 0
        try:
            for step in range(1000):
                opt.zero_grad()
                loss = ddp(torch.randn(4, 8)).pow(2).mean()
                if rank == args.victim and step == KILL_AT_STEP:
                    # Between forward and backward: the others are left inside backward's allreduce.
                    report(args.out, rank, killed_at=time.time())
                    os.kill(os.getpid(), signal.SIGKILL)
                loss.backward()
                opt.step()
            report(args.out, rank, error=None, steps=step + 1)
        except RuntimeError as e:
            report(args.out, rank, error=str(e), failed_at=time.time(), step=step)
    elif args.scenario == "shrink":
        if rank == args.victim:
            report(args.out, rank, killed_at=time.time())
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(t)
            report(args.out, rank, error=None)
        except RuntimeError as e:
            failed_at = time.time()
            dist.shrink_group([args.victim])  # the default group becomes the survivors'
            x = torch.full((16,), float(rank + 1))
            dist.all_reduce(x)
            report(args.out, rank, error=str(e), failed_at=failed_at, after=[dist.get_rank(), dist.get_world_size()],
                   sum=x.tolist())
    else:
        if args.scenario == "set-timeout":
            dist.set_timeout(datetime.timedelta(seconds=timeout))
        if rank == args.victim:
            report(args.out, rank, absent_from=time.time())
            time.sleep(3600)  # the driver kills it once the others have reported
        t0 = time.time()
        try:
            if args.scenario == "abort":
                work = dist.all_reduce(t, async_op=True)
                if rank == 0:
                    def watchdog():
                        time.sleep(ABORT_AFTER_S)
                        dist.distributed_c10d._abort_process_group()
                    threading.Thread(target=watchdog, daemon=True).start()
                work.wait()
            elif args.scenario in ("absent", "set-timeout"):
                dist.all_reduce(t)
            else:
                dist.new_group(list(range(WORLD)), timeout=datetime.timedelta(seconds=timeout))
            report(args.out, rank, error=None)
        except RuntimeError as e:
            report(args.out, rank, error=str(e), entered=t0, failed_at=time.time())
    t0 = time.monotonic()
    if args.scenario != "abort":  # the abort took the groups away already
        dist.destroy_process_group()
    with open(os.path.join(args.out, f"r{rank}.json")) as f:
        r = json.load(f)
    report(args.out, rank, **{k: v for k, v in r.items() if k != "rank"}, teardown_s=time.monotonic() - t0)


def run(scenario, victim):
    timeout = timeout_of(scenario)
    failures = []
    with tempfile.TemporaryDirectory(prefix="coral-failure-") as out:
        env = dict(os.environ, WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
                   # a rank's log must be whole even when it is killed, for the report on failure
                   PYTHONUNBUFFERED="1")
        procs = []
        for r in range(WORLD):
            procs.append(subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--worker", "--scenario", scenario, "--victim",
                 str(victim), "--out", out],
                env=dict(env, RANK=str(r), LOCAL_RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, start_new_session=True))
        survivors = [r for r in range(WORLD) if r != victim]
        started = time.monotonic()
        deadline = started + START_SLACK_S + timeout + DETECT_SLACK_S + EXIT_SLACK_S
        while time.monotonic() < deadline and any(procs[r].poll() is None for r in survivors):
            time.sleep(0.2)
        hung = [r for r in survivors if procs[r].poll() is None]
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
        logs = [p.communicate()[0] for p in procs]
        if hung:
            failures.append(f"ranks {hung} still running {time.monotonic() - started:.0f} s after the start (hung)")
        reports = {}
        for r in range(WORLD):
            path = os.path.join(out, f"r{r}.json")
            if os.path.exists(path):
                with open(path) as f:
                    reports[r] = json.load(f)
        t_fail = reports.get(victim, {}).get("killed_at" if scenario in KILLS else "absent_from")
        if t_fail is None:
            failures.append(f"rank {victim} never reached the failure point")
        # A named rank, not the survivor's own "rank N of 3" in the message's prefix.
        names_victim = re.compile(rf"\brank {victim}\b(?! of {WORLD})")
        for r in survivors:
            rep = reports.get(r)
            if rep is None:
                failures.append(f"rank {r} reported nothing (exit {procs[r].returncode})")
                continue
            if rep.get("error") is None:
                failures.append(f"rank {r} finished without an error: {rep}")
                continue
            start = t_fail if scenario in KILLS else rep["entered"]
            took = rep["failed_at"] - start if start is not None else float("nan")
            print(f"  rank {r}: RuntimeError after {took:.2f} s (timeout {timeout} s), "
                  f"teardown {rep.get('teardown_s', float('nan')):.2f} s, exit {procs[r].returncode}:\n"
                  f"    {rep['error'].strip()}")
            if scenario == "abort":
                if "rank 0 revoked" not in rep["error"]:
                    failures.append(f"rank {r}: the error does not name rank 0's abort")
                if not took <= ABORT_AFTER_S + DETECT_SLACK_S:
                    failures.append(f"rank {r}: failed {took:.1f} s in, not at the abort after {ABORT_AFTER_S} s")
            elif not names_victim.search(rep["error"]):
                failures.append(f"rank {r}: the error does not name rank {victim}")
            if scenario in KILLS and not took <= timeout + DETECT_SLACK_S:
                failures.append(f"rank {r}: failed {took:.1f} s after the kill, beyond the {timeout} s timeout")
            waits_out = scenario in ("absent", "absent-init", "set-timeout")
            if waits_out and not timeout - 1 <= took <= timeout + DETECT_SLACK_S:
                failures.append(f"rank {r}: failed after {took:.1f} s, not about the {timeout} s timeout")
            if scenario == "shrink":
                want_sum = float(sum(q + 1 for q in survivors))
                want_after = [survivors.index(r), WORLD - 1]
                if rep.get("after") != want_after:
                    failures.append(f"rank {r}: after the shrink (rank, size) is {rep.get('after')}, not {want_after}")
                if rep.get("sum") != [want_sum] * 16:
                    failures.append(f"rank {r}: all_reduce after the shrink gave {rep.get('sum')}, not {want_sum}")
            if "teardown_s" not in rep:
                failures.append(f"rank {r}: destroy_process_group did not return")
            if procs[r].returncode != 0:
                failures.append(f"rank {r}: exited {procs[r].returncode} after reporting")
        if failures:
            for r, log in enumerate(logs):
                print(f"  --- rank {r} output ---\n" + "".join("    " + l + "\n" for l in log.splitlines()[-30:]))
    return failures


def under_coral_run():
    coral_run = os.environ.get("CORAL_RUN")
    if not coral_run:
        return ["CORAL_RUN (the coral-run launcher) is not set"]
    with tempfile.TemporaryDirectory(prefix="coral-failure-") as out:
        cmd = [coral_run, "-n", str(WORLD), "--timeout", str(START_SLACK_S + KILL_TIMEOUT_S), sys.executable,
               os.path.abspath(__file__), "--worker", "--scenario", "kill", "--victim", "1", "--out", out]
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=START_SLACK_S + KILL_TIMEOUT_S + EXIT_SLACK_S)
        except subprocess.TimeoutExpired:
            return ["coral-run did not exit"]
        took = time.monotonic() - t0
    last = p.stdout.strip().splitlines()[-1:] or [""]
    print(f"  coral-run exited {p.returncode} after {took:.1f} s: {last[0]}")
    failures = []
    if p.returncode != 128 + signal.SIGKILL:
        failures.append(f"coral-run exited {p.returncode}, not {128 + signal.SIGKILL} (rank 1's SIGKILL)")
    if not re.search(r"rank 1 \(pid \d+\) was killed by signal 9", p.stdout):
        failures.append("coral-run's report does not name rank 1 and its signal")
    if failures:
        print("".join("    " + l + "\n" for l in p.stdout.splitlines()[-30:]))
    return failures


def main():
    failures = []
    # Rank 0 also hosts torch's TCPStore: its death must be reported like any other's.
    scenarios = [("kill", 1), ("kill", 0), ("absent", 2), ("absent-init", 2)]
    # Shrink: rank 1, as rank 0 hosts torch's store, which the shrunk group meets through. Abort:
    # torch 2.6's _abort_process_group reaches ProcessGroupNCCL only; that of 2.14, the release
    # with shrink_group, any backend.
    import torch.distributed as dist
    if hasattr(dist, "shrink_group"):
        scenarios += [("shrink", 1), ("abort", 2)]
    if hasattr(dist, "set_timeout"):
        scenarios += [("set-timeout", 2)]
    for scenario, victim in scenarios:
        print(f"{scenario} rank {victim} of {WORLD}:")
        t0 = time.monotonic()
        f = run(scenario, victim)
        print(f"  {'FAIL' if f else 'ok'} ({time.monotonic() - t0:.1f} s)")
        failures += [f"{scenario} rank {victim}: {x}" for x in f]
    print(f"kill rank 1 of {WORLD} under coral-run:")
    f = under_coral_run()
    print(f"  {'FAIL' if f else 'ok'}")
    failures += [f"coral-run: {x}" for x in f]
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nOK: failures are reported, naming the rank, within the timeout")
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--scenario", choices=("kill", "absent", "absent-init", "set-timeout", "shrink", "abort"))
    ap.add_argument("--victim", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.worker:
        worker(a)
    else:
        sys.exit(main())
