#!/usr/bin/python3
"""PyTorch's own distributed test suite (torch/testing/_internal/distributed/distributed_test.py)
run for BACKEND=gloo and BACKEND=coral, side by side.

    /usr/bin/python3 tests/torch/dist_suite.py --tier quick|full [--world-size 2] [--report out.md]

PYTHONPATH must hold coral_torch. Each backend runs in its own worker process (this file with
CORAL_SUITE_WORKER=1), which builds the suite's runner class T at import: ranks started with
--start spawn re-import this file as __mp_main__ and must rebuild the same T. Exits 1 when a test
passes for gloo but not for coral, unless EXCEPTIONS names it.
"""
import argparse
import contextlib
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STUB = os.path.join(HERE, "stub")  # expecttest stand-in: torch's common_utils imports it

QUICK = [
    # all_reduce, each op, sync/async, complex, subgroups
    "test_all_reduce_sum", "test_all_reduce_product", "test_all_reduce_min", "test_all_reduce_max",
    "test_all_reduce_sum_async", "test_all_reduce_sum_complex", "test_all_reduce_complex_unsupported_ops",
    "test_all_reduce_group_sum", "test_all_reduce_full_group_max",
    # coalesced
    "test_all_reduce_coalesced_sum", "test_all_reduce_coalesced_min", "test_all_reduce_coalesced_max_complex_unsupported",
    "test_all_gather_coalesced_simple", "test_all_gather_coalesced_with_empty",
    "test_broadcast", "test_broadcast_full_group", "test_broadcast_object_list",
    "test_reduce_sum", "test_reduce_product", "test_reduce_max", "test_reduce_sum_twice",
    "test_all_gather", "test_all_gather_complex", "test_all_gather_object_default_pg", "test_all_gather_object_subgroup",
    "test_gather", "test_gather_checks", "test_gather_object",
    "test_scatter", "test_scatter_complex", "test_scatter_checks", "test_scatter_object_list",
    "test_all_to_all", "test_all_to_all_single_equal_split", "test_all_to_all_single_unequal_split_complex",
    # the 1.13 suite has CUDA-only reduce_scatter tests: they skip on a CPU torch
    "test_reduce_scatter_tensor_cuda", "test_reduce_scatter_v_cuda",
    "test_send_recv", "test_send_recv_with_tag", "test_send_recv_autograd_profiler", "test_send_recv_any_source",
    "test_isend", "test_irecv", "test_isend_autograd_profiler",
    "test_batch_isend_irecv_gloo", "test_batch_isend_irecv_gloo_tags", "test_batch_isend_irecv_op_list_err",
    "test_barrier", "test_barrier_full_group", "test_barrier_timeout_full_group",
    "test_get_backend", "test_backend_full_group", "test_get_rank_size_group", "test_destroy_group",
    "test_new_subgroups_group_size_exceeds_world_size",
    # DDP
    "test_DistributedDataParallelCPU", "test_DistributedDataParallelCPU_grad_is_view",
    "test_DistributedDataParallel_requires_grad", "test_ddp_logging_data_cpu", "test_ddp_create_graph",
    "test_static_graph_api_cpu", "test_get_future", "test_accumulate_gradients_no_sync",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
]

# Tests that may pass for gloo and not for coral: only what no NCCL-class backend offers.
_GLOO_ONLY_MONITORED = ("torch.distributed.monitored_barrier is gloo-only in torch itself up to 2.6 at least "
                        "(distributed_c10d raises 'only implemented for GLOO backend' for any other backend, "
                        "NCCL included); newer torch (2.14) serves it for any CPU backend, and coral passes there")
_ANY_SOURCE = ("recv from any source (src=None): Coral matches point-to-point calls by peer, as NCCL; the "
               "suite skips these for nccl through skip_collective['sendrecv anysource'], and so for coral")
EXCEPTIONS = {
    "test_send_recv_any_source": _ANY_SOURCE,
    "test_send_recv_any_source_autograd_profiler": _ANY_SOURCE,
    "test_send_recv_any_source_torch_profiler": _ANY_SOURCE,
    "test_monitored_barrier_gloo": _GLOO_ONLY_MONITORED,
    "test_monitored_barrier_gloo_subgroup": _GLOO_ONLY_MONITORED,
    "test_monitored_barrier_gloo_rank_0_timeout": _GLOO_ONLY_MONITORED,
    "test_monitored_barrier_failure_order": _GLOO_ONLY_MONITORED,
    "test_monitored_barrier_wait_all_ranks": _GLOO_ONLY_MONITORED,
    "test_ddp_logging_data_cpu": ("torch 2's ProcessGroup reports every plugin backend's name as 'custom' "
                                  "(ProcessGroup::getBackendName, BackendType::CUSTOM) and DDP logs that name; "
                                  "a backend cannot change it. Passes on torch 1.13"),
    "test_sparse_all_reduce_sum": "sparse tensors: only gloo reduces them; NCCL-class backends take dense tensors",
}

# Gates that skip on the backend's name where a NCCL-class backend (or MPI, for CPU all_to_all) is let
# in: coral joins them. Key: the gate's reason text (sets sorted); value: (None for every gated test,
# or a regex the test name must match; whether the test assumes CUDA, as the suite's _run ensures for
# nccl only). Not here: sparse all_reduce, multi-GPU-per-process lists (Coral takes one tensor per
# process), NCCL's high-priority-stream option, NCCL's "Tensors must be CUDA" error, gloo+nccl mixed
# groups, monitored_barrier (gloo-only in torch itself).
ELIGIBLE = {
    "Test requires backend to be one of {'gloo', 'nccl'}": (None, False),
    "Test requires backend to be one of {'nccl'}": (None, True),
    "Test requires backend to be one of {'gloo'}": (
        r"all_reduce_coalesced|scatter_object_list|grads_same_across_ranks_with_no_sync|monitored_barrier", False),
    "Only gloo backend supports timeouts": (None, False),
    "GLOO Batch Send Recv CPU": (None, False),
    "NCCL Batch Send Recv Only": (r"^(?!.*(tensor_err|mixed_backend_err))", True),
    "NCCL Send Recv Only": (None, True),
    "Only MPI supports CPU all_to_all_single": (None, False),
    "Only MPI supports all_to_all": (None, False),
    "get_future is only supported on mpi, nccl and gloo": (None, False),
    "Only Nccl & Gloo backend support DistributedDataParallel": (None, False),
    "Only Gloo and Nccl backend supports CUDA allReduce": (None, True),
    "Only Gloo and NCCL backends will have CUDA allReduce tested": (None, True),
    "Only Nccl supports CUDA reduce": (None, True),
    "Only Nccl supports reduce_scatter_v": (None, True),
    "Only Nccl supports CUDA reduce_scatter_tensor": (None, True),
    "Only Nccl supports CUDA gather": (None, True),
    "Only Nccl supports CUDA all gather": (None, True),
    "Only Nccl supports all_gather_v": (None, True),
    "Only Nccl supports CUDA all_gather_into_tensor": (None, True),
    "Only Nccl supports CUDA all_to_all_single": (None, True),
    "Only NCCL supports CUDA all_to_all": (None, True),
}
# DistTestCases feature sets coral joins: DDP (CPU; "cuda": comm hooks on GPUs), subgroups, "gpu"
# (GPU tests that also need gloo and nccl built), "plugin" (require_backends_available accepts it).
FEATURES = ("ddp", "subgroup", "cuda", "gpu", "plugin")
GENERIC_SKIP = "Test skipped at subprocess level"


def _norm(reason):
    # A gate's text may hold a set's repr, whose order changes with the hash seed; torch 2 also
    # names the backend in it ("Test requires backend coral to be one of ...").
    reason = re.sub(r"^Test requires backend \S+ to be one of", "Test requires backend to be one of", reason)
    return re.sub(r"\{([^{}]*)\}", lambda m: "{" + ", ".join(sorted(x.strip() for x in m.group(1).split(","))) + "}",
                  reason)


def _eligible(reason, name):
    """(whether coral joins the gated test, whether that test assumes CUDA)"""
    pattern, cuda = ELIGIBLE.get(_norm(reason), (False, False))
    return pattern is None or (pattern is not False and re.search(pattern, name) is not None), cuda


LIFTED = []  # (test, gate reason) coral was let into

if os.environ.get("CORAL_SUITE_WORKER") == "1":
    sys.path.insert(0, STUB)
    BACKEND = os.environ["BACKEND"]
    import unittest

    import torch
    import torch.testing._internal.common_utils as _cu
    from torch.testing._internal.common_distributed import TEST_SKIPS, DistTestCases

    try:
        import torch.distributed._shard  # noqa: F401
    except ValueError:
        # torch 1.13's _shard does not import on Python 3.11 (a mutable dataclass default); DDP
        # imports it only for the ReplicatedTensor interop that the suite's _run switches on, so
        # that switch is left off, or every CPU DDP test errors the same way for every backend.
        import torch.nn.parallel._replicated_tensor_ddp_utils as _rtu

        _rtu._set_ddp_with_replicated_tensor = lambda enabled: None

    if BACKEND == "coral":
        import coral_torch  # noqa: F401  (registers the backend, here and in every spawned rank)

        for feature in FEATURES:
            DistTestCases.backend_feature[feature].add("coral")
        DistTestCases.skip_collective["sendrecv anysource"].add("coral")
        # The skip decorators' names: torch 2's, else 1.13's.
        _IF, _ALWAYS = (("skip_but_pass_in_sandcastle_if", "skip_but_pass_in_sandcastle")
                        if hasattr(_cu, "skip_but_pass_in_sandcastle_if") else ("sandcastle_skip_if", "sandcastle_skip"))
        _skip_if, _skip = getattr(_cu, _IF), getattr(_cu, _ALWAYS)

        def _needs_cuda(fn):
            # What the suite's _run checks for nccl alone, and these nccl-only tests rely on.
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                world = int(os.environ["WORLD_SIZE"])
                if not torch.cuda.is_available():
                    sys.exit(TEST_SKIPS["no_cuda"].exit_code)
                if torch.cuda.device_count() < world:
                    sys.exit(TEST_SKIPS[f"multi-gpu-{world}"].exit_code)
                return fn(*args, **kwargs)
            return wrapper

        def _lift(condition, reason, fn, skip):
            ok, cuda = _eligible(reason, fn.__name__)
            if not (condition and ok):
                return skip(fn)
            LIFTED.append((fn.__name__, reason))
            return _needs_cuda(fn) if cuda else fn

        def _coral_skip_if(condition, reason):
            return lambda fn: _lift(condition, reason, fn, _skip_if(condition, reason))

        def _coral_skip(reason):
            return lambda fn: _lift(True, reason, fn, _skip(reason))

        # distributed_test binds these names when it is imported, and evaluates its gates then.
        setattr(_cu, _IF, _coral_skip_if)
        setattr(_cu, _ALWAYS, _coral_skip)
        try:
            import torch.testing._internal.distributed.distributed_test as dt
        finally:
            setattr(_cu, _IF, _skip_if)
            setattr(_cu, _ALWAYS, _skip)
    else:
        import torch.testing._internal.distributed.distributed_test as dt

    if BACKEND == "coral" and os.environ.get("CORAL_SUITE_PROFILING") != "0":
        # The bodies check profiler events ("nccl:all_reduce", ...) only for these backends.
        for allow in (dt.PROFILING_SUPPORTED_BACKENDS, dt.CUDA_PROFILING_SUPPORTED_BACKENDS,
                      dt.SEND_RECV_PROFILING_SUPPORTED_BACKENDS):
            allow.append("coral")

    @contextlib.contextmanager
    def _backend_name_as(name):
        # For test bodies that pick their devices by backend name (gloo: CPU, nccl: CUDA).
        saved, dt.BACKEND = dt.BACKEND, name
        try:
            yield
        finally:
            dt.BACKEND = saved

    class T(dt.TestDistBackend, dt.DistributedTest._DistTestBase):
        def setUp(self):
            super().setUp()
            skipdir = os.environ["CORAL_SUITE_SKIPDIR"]
            for f in os.listdir(skipdir):
                os.unlink(os.path.join(skipdir, f))
            if os.environ.get("CORAL_SUITE_START") == "fork":
                # The ranks inherit the imported suite instead of importing it again (seconds a test).
                self._start_processes(torch.multiprocessing.get_context("fork").Process)
            else:
                self._spawn_processes()

        def run_test(self, test_name, parent_pipe):
            # A rank's SkipTest reaches the parent only as a generic exit code: keep its text.
            fn = getattr(self, test_name)

            def noting_skips():
                try:
                    return fn()
                except unittest.SkipTest as e:
                    with open(os.path.join(os.environ["CORAL_SUITE_SKIPDIR"], f"rank{self.rank}"), "w") as f:
                        f.write(str(e))
                    raise

            setattr(self, test_name, noting_skips)
            super().run_test(test_name, parent_pipe)

        if BACKEND == "coral":
            def _test_accumulate_gradients_no_sync(self, *args, **kwargs):
                # Its model setup exists only under the names mpi/gloo (CPU) and nccl (CUDA).
                with _backend_name_as("nccl" if torch.cuda.is_available() else "gloo"):
                    return super()._test_accumulate_gradients_no_sync(*args, **kwargs)


def _summary(text):
    # The failing rank's last exception line (not the parent's "Process 0 exited ..." wrapper) and
    # the test line that raised it: a bare "Scalars are not equal!" says little on its own.
    lines = [ln.strip() for ln in text.splitlines()]
    hits = [i for i, ln in enumerate(lines) if re.match(r"^[\w.]*(Error|Exception|Exit|Timeout)\b", ln)
            and not re.match(r"^RuntimeError: Process \d+ exited with error code", ln)]
    if not hits:
        return next((ln for ln in reversed(lines) if ln), "")[:300]
    i = hits[-1]
    where = [j for j in range(i) if lines[j].startswith('File "') and "distributed_test.py" in lines[j]]
    at = ""
    if where:
        fn = lines[where[-1]].rsplit(" in ", 1)[-1]
        at = f" [{fn}: {lines[where[-1] + 1][:100]}]"
    return (lines[i][:240] + at)[:360]


def worker(tests_file, out_file):
    import unittest

    names = json.load(open(tests_file))
    out = open(out_file, "a", buffering=1)

    def emit(**rec):
        out.write(json.dumps(rec) + "\n")

    class Result(unittest.TestResult):
        def startTest(self, test):
            super().startTest(test)
            self.t0 = time.time()
            emit(name=_name(test), start=True)

        def _rec(self, test, outcome, message=""):
            emit(name=_name(test), outcome=outcome, message=message[-6000:], summary=_summary(message),
                 seconds=round(time.time() - getattr(self, "t0", time.time()), 1))

        def addSuccess(self, test):
            self._rec(test, "pass")

        def addFailure(self, test, err):
            self._rec(test, "fail", self._exc_info_to_string(err, test))

        def addError(self, test, err):
            text = self._exc_info_to_string(err, test)
            self._rec(test, "fail" if "AssertionError" in text else "error", text)

        def addSkip(self, test, reason):
            if reason.startswith(GENERIC_SKIP):
                d = os.environ["CORAL_SUITE_SKIPDIR"]
                texts = sorted({open(os.path.join(d, f)).read() for f in os.listdir(d)})
                reason = "; ".join(texts) or reason
            self._rec(test, "skip", reason)

        def addExpectedFailure(self, test, err):
            self._rec(test, "fail", "expected failure: " + self._exc_info_to_string(err, test))

        def addUnexpectedSuccess(self, test):
            self._rec(test, "pass")

    def _name(test):
        return getattr(test, "_testMethodName", None) or str(test)

    for name, reason in LIFTED:
        emit(name=name, lifted=reason)
    suite = unittest.TestSuite()
    for n in names:
        if hasattr(T, n):
            suite.addTest(T(n))
        else:
            emit(name=n, outcome="error", message="no such test in this torch's distributed_test.py",
                 summary="no such test", seconds=0)
    suite.run(Result())
    return 0


def run_backend(backend, names, args, workdir):
    """Runs names in worker processes until each has an outcome; a worker that dies charges the
    test it was in and a fresh one takes the rest."""
    tests_file, out_file = (os.path.join(workdir, f"{backend}.{x}") for x in ("tests.json", "jsonl"))
    log_path = os.path.join(workdir, f"{backend}.log")
    skipdir = tempfile.mkdtemp(prefix=f"skips-{backend}-", dir=workdir)
    env = dict(os.environ, CORAL_SUITE_WORKER="1", BACKEND=backend, WORLD_SIZE=str(args.world_size),
               CORAL_SUITE_SKIPDIR=skipdir, CORAL_SUITE_START=args.start,
               CORAL_SUITE_PROFILING="0" if args.no_profiling else "1",
               DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=str(args.test_timeout),
               # lets test_barrier_timeout_global's file:// gate pass; setUp points it at each test's file
               INIT_METHOD="file://" + os.path.join(workdir, "unused_init_file"),
               PYTHONPATH=os.pathsep.join(p for p in (STUB, os.environ.get("PYTHONPATH")) if p))
    for var in ("SANDCASTLE", "TW_JOB_USER", "PYTORCH_RETRY_TEST_CASES", "TORCH_DISTRIBUTED_DEBUG"):
        env.pop(var, None)  # sandcastle turns skips into passes; DETAIL changes barrier errors
    results, lifted = {}, {}
    remaining = list(names)
    while remaining:
        with open(tests_file, "w") as f:
            json.dump(remaining, f)
        open(out_file, "w").close()
        with open(log_path, "a") as log:
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", tests_file, out_file],
                                 env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = p.wait(timeout=(args.test_timeout + 120) * len(remaining))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                rc = p.wait()
        started = None
        for line in open(out_file):
            rec = json.loads(line)
            if "lifted" in rec:
                lifted[rec["name"]] = rec["lifted"]
            elif rec.get("start"):
                started = rec["name"]
            else:
                results[rec["name"]] = rec
        remaining = [n for n in names if n not in results]
        if remaining:
            victim = started if started in remaining else remaining[0]
            results[victim] = dict(name=victim, outcome="error", seconds=0,
                                   summary=f"the {backend} worker exited (status {rc}) during this test; see {log_path}",
                                   message="")
            remaining.remove(victim)
    return results, lifted


def compare(names, res):
    rows, regressions, excepted = [], [], []
    for n in names:
        g, c = res["gloo"].get(n, {}), res["coral"].get(n, {})
        go, co = g.get("outcome", "-"), c.get("outcome", "-")
        note = ""
        if co != "pass":
            note = c.get("message", "") if co == "skip" else c.get("summary", "")
        if go == "pass" and co != "pass":
            if n in EXCEPTIONS:
                excepted.append(n)
                note = "EXCEPTION: " + EXCEPTIONS[n]
            else:
                regressions.append(n)
                note = "REGRESSION: " + note
        rows.append((n, go, co, note))
    return rows, regressions, excepted


def counts(results):
    c = {k: 0 for k in ("pass", "fail", "error", "skip")}
    for r in results.values():
        c[r["outcome"]] = c.get(r["outcome"], 0) + 1
    return c


def write_report(path, meta, names, res, lifted, rows, regressions, excepted):
    if path.endswith(".json"):
        with open(path, "w") as f:
            json.dump(dict(meta=meta, counts={b: counts(r) for b, r in res.items()}, regressions=regressions,
                           excepted={n: EXCEPTIONS[n] for n in excepted},
                           lifted_gates={n: g for n, g in lifted.items() if n in names}, results=res),
                      f, indent=1)
        return
    md = [f"# PyTorch distributed suite: gloo vs coral ({meta['tier']} tier)", "",
          f"torch {meta['torch']}, WORLD_SIZE={meta['world_size']}, ranks by {meta['start']}, coral profiler checks {'on' if meta['profiling'] else 'off'}, {len(names)} tests, {meta['seconds']} s; "
          f"`{meta['command']}`", "", "| backend | pass | fail | error | skip |", "|---|---|---|---|---|"]
    for b, r in res.items():
        c = counts(r)
        md.append(f"| {b} | {c['pass']} | {c['fail']} | {c['error']} | {c['skip']} |")
    md += ["", f"Regressions (pass for gloo, not for coral, not excepted): {len(regressions)}"]
    md += [f"- `{n}`" for n in regressions]
    md += ["", f"Excepted: {len(excepted)}"] + [f"- `{n}`: {EXCEPTIONS[n]}" for n in excepted]
    by_gate = {}
    for n in names:
        if n in lifted:
            by_gate.setdefault(lifted[n], []).append(n)
    md += ["", "Gates on the backend's name that coral was let into (see ELIGIBLE):"]
    md += [f"- {gate}: " + ", ".join(f"`{n}`" for n in ns) for gate, ns in sorted(by_gate.items())] or ["- none"]
    md += ["", "| test | gloo | coral | note |", "|---|---|---|---|"]
    md += [f"| {n} | {g} | {c} | {note.replace('|', '/')[:300]} |" for n, g, c, note in rows]
    md += ["", "## coral failures and errors", ""]
    for n in names:
        r = res["coral"].get(n, {})
        if r.get("outcome") in ("fail", "error"):
            md += [f"### {n} ({r['outcome']}, gloo: {res['gloo'].get(n, {}).get('outcome', '-')})", "", "```",
                   "\n".join(r.get("message", "").splitlines()[-60:]) or r.get("summary", ""), "```", ""]
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")


def all_tests(args, workdir):
    # The test names as this torch's suite defines them (imports it in a throwaway worker).
    env = dict(os.environ, CORAL_SUITE_WORKER="1", BACKEND="gloo", WORLD_SIZE=str(args.world_size),
               PYTHONPATH=os.pathsep.join(p for p in (STUB, os.environ.get("PYTHONPATH")) if p))
    code = ("import runpy, json; g = runpy.run_path(%r); "
            "print(json.dumps(sorted(n for n in dir(g['dt'].DistributedTest._DistTestBase) if n.startswith('test'))))"
            % os.path.abspath(__file__))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=workdir)
    if out.returncode != 0:
        sys.exit("cannot import torch's distributed_test.py:\n" + out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tier", choices=("quick", "full"), default="quick")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--report", help="write outcomes here: .json for JSON, anything else markdown")
    ap.add_argument("--tests", help="comma-separated test names instead of the tier's")
    ap.add_argument("-k", dest="pattern", help="only tests matching this regex")
    ap.add_argument("--test-timeout", type=int, default=180, help="seconds before a test's ranks are killed")
    ap.add_argument("--start", choices=("fork", "spawn"), default="fork",
                    help="how ranks start: fork (they inherit the imported suite; ~0.5 s a test here) or "
                         "spawn (fresh processes as torchrun starts, each importing torch: ~8 s a test)")
    ap.add_argument("--no-profiling", action="store_true",
                    help="don't hold coral to the profiler-event checks the suite makes for gloo and nccl")
    ap.add_argument("--jobs", type=int, default=1, help="2: run both backends at once (timing-sensitive tests suffer)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (logs, raw outcomes)")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(*args.worker)
    import inspect

    import torch
    import torch.distributed as dist

    # An exception holds only where its cause does, so a coral defect cannot hide behind it elsewhere.
    if "only implemented for GLOO" not in inspect.getsource(inspect.unwrap(dist.monitored_barrier)):
        for n in [n for n, why in EXCEPTIONS.items() if why is _GLOO_ONLY_MONITORED]:
            del EXCEPTIONS[n]
    if int(torch.__version__.split(".")[0]) < 2:
        del EXCEPTIONS["test_ddp_logging_data_cpu"]

    t0 = time.time()
    workdir = tempfile.mkdtemp(prefix="dist_suite-")
    names = args.tests.split(",") if args.tests else QUICK if args.tier == "quick" else all_tests(args, workdir)
    if args.pattern:
        names = [n for n in names if re.search(args.pattern, n)]
    print(f"dist_suite: {len(names)} tests x gloo, coral at WORLD_SIZE={args.world_size}, ranks by {args.start}; "
          f"work folder {workdir}",
          flush=True)
    res, lifted = {}, {}
    if args.jobs > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            futs = {b: pool.submit(run_backend, b, names, args, workdir) for b in ("gloo", "coral")}
            for b, fut in futs.items():
                res[b], lift = fut.result()
                lifted.update(lift)
    else:
        for b in ("gloo", "coral"):
            tb = time.time()
            res[b], lift = run_backend(b, names, args, workdir)
            lifted.update(lift)
            print(f"dist_suite: {b}: {counts(res[b])} in {time.time() - tb:.0f} s", flush=True)
    rows, regressions, excepted = compare(names, res)
    width = max(len(n) for n in names)
    print(f"\n{'test':<{width}}  {'gloo':<5}  {'coral':<5}  note")
    for n, g, c, note in rows:
        print(f"{n:<{width}}  {g:<5}  {c:<5}  {note[:160]}")
    seconds = round(time.time() - t0)
    for b in res:
        c = counts(res[b])
        print(f"{b}: {c['pass']} pass, {c['fail']} fail, {c['error']} error, {c['skip']} skip")
    print(f"{len(regressions)} regressions (pass for gloo, not for coral), {len(excepted)} excepted; {seconds} s")
    for n in regressions:
        print(f"REGRESSION {n}: {res['coral'][n].get('summary') or res['coral'][n].get('message', '')[:200]}")
    if args.report:
        meta = dict(tier=args.tier if not args.tests else "custom", world_size=args.world_size, seconds=seconds,
                    start=args.start, profiling=not args.no_profiling,
                    torch=torch.__version__, command=" ".join([os.path.basename(sys.executable)] + sys.argv))
        write_report(args.report, meta, names, res, lifted, rows, regressions, excepted)
        print(f"report: {args.report}")
    if not args.keep:
        import shutil

        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if regressions else 0


if __name__ == "__main__":
    sys.exit(main())
