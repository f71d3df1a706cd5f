# Prints what meson needs to build against the torch this python imports, one value a line in this order.
import os

import torch

try:
    from torch.utils import cpp_extension

    includes, libdirs = cpp_extension.include_paths(), cpp_extension.library_paths()
except ImportError:
    # cpp_extension needs setuptools, which a fresh venv (Python 3.12+) lacks; these are the
    # paths it would give for a CPU build.
    base = os.path.dirname(torch.__file__)
    includes = [os.path.join(base, "include"), os.path.join(base, "include", "torch", "csrc", "api", "include")]
    libdirs = [os.path.join(base, "lib")]

print(torch.__version__.split("+")[0])
print((torch.version.cuda or ""))
print(";".join(includes))
print(";".join(libdirs))
print(str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
# What c10d::Backend lets a backend say it does, space-separated: "coalescing" (supportsCoalescing,
# torch >= 2.7 or so; 2.6 lacks it), "shrinking" (supportsShrinking, with Backend::shrink), "abort"
# (a virtual Backend::abort, which torch's _abort_process_group calls for any backend), "timeout"
# (a virtual Backend::setTimeout, which dist.set_timeout calls), "time_estimation"
# (supportsTimeEstimation, which torch's _time_estimator asks).
backend_hpp = "".join(open(h).read() for h in (os.path.join(d, "torch", "csrc", "distributed", "c10d", "Backend.hpp")
                                                for d in includes) if os.path.exists(h))
print(" ".join(f for f, method in (("coalescing", "supportsCoalescing"), ("shrinking", "supportsShrinking"),
                                               ("abort", "virtual void abort()"),
                                               ("timeout", "virtual void setTimeout("),
                                               ("time_estimation", "supportsTimeEstimation"))
               if method in backend_hpp))
# The pybind11 ABI tags torch was built with, as torch's cpp_extension passes them: without them
# a compiler or pybind11 other than torch's keys its types apart, and c10d::Backend is unknown.
print(" ".join(f'-DPYBIND11_{k}="{getattr(torch._C, "_PYBIND11_" + k)}"'
               for k in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI") if getattr(torch._C, "_PYBIND11_" + k, None)))
