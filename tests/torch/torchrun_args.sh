# Sourced with PY set to the torch's python: sets tr_args, what its torchrun needs to start ranks.
# torch 1.13's torchrun under Python 3.11 maps its default "--redirects 0 --tee 0" to None (3.11's
# Flag iteration skips the zero member) and dies before starting any rank; asking it to
# redirect stdout to a log and tee it back to the console takes the working path.
tr_args=()
if ! "$PY" -c 'from torch.distributed.elastic.multiprocessing.api import Std
raise SystemExit(Std.from_str("0") is None)'; then
  tr_args=(--redirects 1 --tee 1)
fi
