#!/usr/bin/env python3
"""MPICH's own test suite (test/mpi of an MPICH source tree), built against Debian's Open MPI and
MPICH and run as its testlists say, once plainly and once under coral-mpi. A test coral-mpi fails
where plain MPI passes is a failure of ours; tests MPI itself fails are reported, not counted.

The source is not in Debian's binary packages and CI reaches no GitHub, so this runs where a
checkout is at hand: MPICH_SRC, or `.mpich` at the repository root (git-ignored; tag v4.0.2, the
version Debian 12 ships: `git clone --branch v4.0.2 https://github.com/pmodels/mpich .mpich`).
Without one it exits 77 (skipped). MPICH's configure is not run: the few facts its tests ask
for are written below (mpitestconf.h).

Usage: mpich_suite.py BUILD_DIR [--abi ompi,mpich] [--dirs coll,comm,...] [--only REGEX]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

CONF = """\
#define HAVE_UNISTD_H 1
#define HAVE_STRING_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_INT16_T 1
#define HAVE_INT32_T 1
#define HAVE_INT64_T 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDLIB_H 1
#define HAVE__BOOL 1
#define HAVE_MPI_IO 1
#define USE_STRICT_MPI 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define MPI_SIZEOF_AINT 8
#define MPI_SIZEOF_OFFSET 8
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
"""

# The directories whose calls coral-mpi takes or tracks: collectives, the communicators they run
# on (created, split, duplicated, freed; topologies; attributes, which hold ours), waits on
# requests (pt2pt's go through our MPI_Wait*), threads, and init/finalize.
DEFAULT_DIRS = "coll,comm,topo,attr,group,init,errhan,pt2pt,threads/coll,threads/comm"

ABIS = {
    "ompi": ("mpicc.openmpi", ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np"]),
    "mpich": ("mpicc.mpich", ["mpirun.mpich", "-np"]),
}


def makefile_vars(path):
    """name_SOURCES / name_CPPFLAGS of an automake Makefile.am, continuation lines joined."""
    out = {}
    if not path.exists():
        return out
    text = re.sub(r"\\\n", " ", path.read_text())
    for line in text.splitlines():
        m = re.match(r"^\s*([A-Za-z0-9_]+)_(SOURCES|CPPFLAGS)\s*=(.*)$", line)
        if m:
            out[(m.group(1), m.group(2))] = re.sub(r"\$\([A-Za-z_]+\)", "", m.group(3)).split()
    return out


def testlist(path):
    """(name, np, {key: [values]}) for each runnable line; @...@ lines are configure's choices."""
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "@" in line:
            continue
        words = line.split()
        if len(words) < 2 or not words[1].isdigit():
            continue  # a subdirectory entry
        keys = {}
        for w in words[2:]:
            k, _, v = w.partition("=")
            keys.setdefault(k, []).append(v)
        yield words[0], int(words[1]), keys


def run(cmd, cwd, timeout, env=None):
    """(exit status or 'timeout', output); the whole process group dies on a timeout."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "timeout", out.decode(errors="replace")


class Builder:
    def __init__(self, src, work, abi):
        self.src, self.cc = src, ABIS[abi][0]
        self.dir = work / abi
        self.dir.mkdir(parents=True, exist_ok=True)
        inc = work / "include"
        inc.mkdir(exist_ok=True)
        for name, text in (("mpitestconf.h", CONF), ("dtpoolsconf.h", CONF),
                           ("mtest_mpix.h", "/* no MPIX extensions */\n")):
            if not (inc / name).exists() or (inc / name).read_text() != text:
                (inc / name).write_text(text)
        self.flags = ["-O1", "-w", "-I", str(inc), "-I", str(src / "include"), "-I", str(src / "dtpools/include")]
        self.objs = self._util()

    def _util(self):
        objs = []
        for c in ["util/mtest.c", "util/mtest_common.c", "util/mtest_thread.c", *sorted(
                str(p.relative_to(self.src)) for p in (self.src / "dtpools/src").glob("*.c"))]:
            o = self.dir / (Path(c).stem + ".o")
            if not o.exists():
                rc, out = run([self.cc, *self.flags, "-c", str(self.src / c), "-o", str(o)], self.dir, 300)
                if rc != 0:  # dtpools_custom needs MPI-4 under Open MPI 4.1; the tests using it won't link
                    continue
            objs.append(str(o))
        return objs

    def binary(self, d, name, mk):
        """The test's program, built once; None if it does not build for this MPI."""
        exe = self.dir / d.replace("/", "_") / name
        bad = exe.with_suffix(".nobuild")
        if exe.exists() or bad.exists():
            return exe if exe.exists() else None
        exe.parent.mkdir(parents=True, exist_ok=True)
        key = re.sub(r"[^A-Za-z0-9]", "_", name)
        sources = [s for s in mk.get((key, "SOURCES"), [name + ".c"]) if s.endswith(".c")]
        cmd = [self.cc, *self.flags, *mk.get((key, "CPPFLAGS"), []), *[str(self.src / d / s) for s in sources],
               *self.objs, "-lm", "-lpthread", "-o", str(exe)]
        rc, out = run(cmd, self.src / d, 300)
        if rc != 0:
            bad.write_text(out)
            return None
        return exe


def verdict(rc, out, keys):
    """As MPICH's runtests judges: by default exit 0 and " No Errors"; TestStatus and
    TestErrFatal want the job to fail (exitst1, timeout); TestStatusNoErrors only the words."""
    if rc == "timeout":
        return "timeout"
    want = keys.get("resultTest", [""])[0]
    if want in ("TestStatus", "TestErrFatal"):
        return "pass" if rc != 0 else "fail"
    ok = re.search(r"No Errors", out) is not None
    return "pass" if ok and (rc == 0 or want == "TestStatusNoErrors") else "fail"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--abi", default="ompi,mpich")
    ap.add_argument("--dirs", default=DEFAULT_DIRS)
    ap.add_argument("--only", default="", help="regex on DIR/NAME")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per run unless its testlist says more")
    args = ap.parse_args()
    build = Path(args.build).resolve()
    repo = Path(__file__).resolve().parents[2]
    root = Path(os.environ.get("MPICH_SRC", repo / ".mpich"))
    src = root / "test/mpi"
    if not (src / "util/mtest.c").exists():
        print(f"MPICH test suite: not run (no MPICH source at {root}; see this script's header)")
        return 77
    wrap = build / "src/compat/mpi/coral-mpi"
    work = build / "mpich-suite"
    only = re.compile(args.only) if args.only else None
    coral_fails, runs = [], 0
    for abi in args.abi.split(","):
        cc, launch = ABIS[abi]
        if not (build / f"src/compat/mpi/libcoral_mpi_{abi}.so").exists() or not shutil.which(cc):
            print(f"{abi}: not built here, skipped")
            continue
        b = Builder(src, work, abi)
        tally = Counter()
        for d in args.dirs.split(","):
            lists = [p for p in (src / d / "testlist.in", src / d / "testlist") if p.exists()]
            if not lists:
                continue
            mk = makefile_vars(src / d / "Makefile.am")
            for name, np, keys in testlist(lists[0]):
                label = f"{d}/{name} np={np}" + "".join(" " + a for a in keys.get("arg", []))
                if only and not only.search(f"{d}/{name}"):
                    continue
                exe = b.binary(d, name, mk)
                if exe is None:
                    tally["not built"] += 1
                    continue
                env = dict(os.environ, CORAL_MPI_REPORT="1")
                for kv in keys.get("env", []):
                    k, _, v = kv.partition("=")
                    env[k] = v
                # mpiexec ends a job at MPIEXEC_TIMEOUT (init/timeout wants it to); ours is a backstop.
                limit = int(keys.get("timeLimit", ["0"])[0])
                if keys.get("resultTest", [""])[0] != "TestErrFatal":
                    limit = max(args.timeout, limit)
                env["MPIEXEC_TIMEOUT"] = str(limit)
                res = {}
                for mode in ("plain", "coral"):
                    cmd = [*launch, str(np), *([str(wrap)] if mode == "coral" else []), str(exe), *keys.get("arg", [])]
                    t0 = time.time()
                    rc, out = run(cmd, exe.parent, limit + 30, env)
                    res[mode] = (verdict(rc, out, keys), time.time() - t0, rc, out)
                runs += 1
                (p, pt, _, _), (c, ct, crc, cout) = res["plain"], res["coral"]
                rep = re.search(r"handled (\d+) collective calls", cout)
                kind = "both pass" if p == c == "pass" else "both fail" if p != "pass" and c != "pass" \
                    else "coral only fails" if p == "pass" else "plain only fails"
                tally[kind] += 1
                line = f"{abi} {label}: plain {p} ({pt:.0f} s), coral {c} ({ct:.0f} s)"
                print(line + (f", Coral took {rep.group(1)} calls" if rep else ""), flush=True)
                if kind == "coral only fails":
                    coral_fails.append(f"{abi} {label}")
                    print("\n".join("     " + s for s in [f"exit {crc}", *cout.strip().splitlines()[-8:]]))
        print(f"{abi}: " + ", ".join(f"{v} {k}" for k, v in sorted(tally.items())), flush=True)
    if runs == 0:
        print("MPICH test suite: nothing ran")
        return 1
    print(f"MPICH test suite: {runs} runs, {len(coral_fails)} failing only under coral-mpi")
    for f in coral_fails:
        print("  FAIL " + f)
    return 1 if coral_fails else 0


if __name__ == "__main__":
    sys.exit(main())
