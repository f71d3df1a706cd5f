#!/usr/bin/python3
"""Compiles coral_torch's sources with its CUDA path on (CORAL_TORCH_CUDA) against a CPU torch.

    cuda_compile_check.py BUILD_DIR [CUDA_INCLUDE]

A CPU torch (Debian's) ships the c10/cuda headers but not the one its CUDA build generates
(c10/cuda/impl/cuda_cmake_macros.h), so a stand-in for it is written to a temporary folder. Each
source's own compile command (BUILD_DIR/compile_commands.json) is rerun with the CUDA path on,
the CUDA toolkit's headers (default /usr/local/cuda/include) and that folder. Compiles only:
linking and running need a CUDA torch and a GPU (tests/gpu/run-all.sh). Exit status: the number
of sources that failed.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile


def main():
    build = sys.argv[1]
    cuda = sys.argv[2] if len(sys.argv) > 2 else "/usr/local/cuda/include"
    if not os.path.exists(os.path.join(cuda, "cuda_runtime_api.h")):
        print(f"cuda_compile_check: no CUDA toolkit headers in {cuda}")
        return 1
    with tempfile.TemporaryDirectory() as stub:
        os.makedirs(os.path.join(stub, "c10/cuda/impl"))
        with open(os.path.join(stub, "c10/cuda/impl/cuda_cmake_macros.h"), "w") as f:
            f.write("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        failed = 0
        sources = [e for e in json.load(open(os.path.join(build, "compile_commands.json")))
                   if "compat/torch/" in e["file"]]
        if not sources:
            print(f"cuda_compile_check: {build} does not build coral_torch")
            return 1
        for e in sources:
            args, skip = [], False
            for a in shlex.split(e["command"]):
                if skip:
                    skip = False
                elif a in ("-MQ", "-MF"):
                    skip = True
                elif a != "-MD":
                    args.append(a)
            args[args.index("-o") + 1] = os.path.join(stub, "check.o")
            args += ["-DCORAL_TORCH_CUDA=1", "-isystem", cuda, "-isystem", stub]
            r = subprocess.run(args, cwd=e["directory"], capture_output=True, text=True)
            name = os.path.basename(e["file"])
            if r.returncode == 0:
                print(f"ok   {name} (CUDA path)")
            else:
                failed += 1
                print(f"FAIL {name} (CUDA path):\n{r.stderr[-4000:]}")
        return failed


if __name__ == "__main__":
    sys.exit(main())
