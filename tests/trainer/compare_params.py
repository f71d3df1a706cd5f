#!/usr/bin/env python3
"""compare_params.py A B TOL: exit 0 when max|a-b| <= TOL * max|a| over two raw float64 dumps
(coral-train --dump-params). TOL 0 means bitwise equal."""
import array
import sys

def load(path):
    a = array.array('d')
    with open(path, 'rb') as f:
        a.frombytes(f.read())
    return a

a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
if len(a) != len(b) or not a:
    sys.exit(f"{sys.argv[1]} has {len(a)} parameters, {sys.argv[2]} has {len(b)}")
if tol == 0:
    same = a.tobytes() == b.tobytes()
    print(f"bitwise {'equal' if same else 'DIFFERENT'}: {sys.argv[1]} {sys.argv[2]}")
    sys.exit(0 if same else 1)
scale = max(abs(x) for x in a)
diff = max(abs(x - y) for x, y in zip(a, b))
rel = diff / scale
print(f"max relative difference {rel:.3e} (tolerance {tol:g}): {sys.argv[1]} {sys.argv[2]}")
sys.exit(0 if rel <= tol else 1)
