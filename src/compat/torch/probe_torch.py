# Prints what meson needs to build against the torch this python imports, one value a line in this order.
import torch
from torch.utils import cpp_extension

print(torch.__version__.split("+")[0])
print((torch.version.cuda or ""))
print(";".join(cpp_extension.include_paths()))
print(";".join(cpp_extension.library_paths()))
print(str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
