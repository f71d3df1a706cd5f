// The Python module coral_torch._C: the process group type, made from the arguments torch's
// register_backend hands a creator.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "compat/torch/process_group.h"

namespace py = pybind11;
using coral::torch_backend::ProcessGroupCoral;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Coral collectives as a torch.distributed backend";
  py::class_<ProcessGroupCoral, c10::intrusive_ptr<ProcessGroupCoral>, CORAL_TORCH_BASE>(m, "ProcessGroupCoral")
      .def(py::init([](const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupCoral>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("coral_comm",
                             [](const ProcessGroupCoral& pg) { return reinterpret_cast<uintptr_t>(pg.comm()); })
#ifdef CORAL_TORCH_BACKEND_TIME_ESTIMATION
      // The names torch's _time_estimator calls on ProcessGroupNCCL's binding.
      .def("_start_time_estimate", &ProcessGroupCoral::start_time_estimate)
      .def("_end_time_estimate", &ProcessGroupCoral::end_time_estimate)
#endif
      ;
  m.attr("TORCH_VERSION_BUILT") = TORCH_VERSION;
#ifdef CORAL_TORCH_CUDA
  m.attr("CUDA") = true;
#else
  m.attr("CUDA") = false;
#endif
}
