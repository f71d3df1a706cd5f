#!/usr/bin/env python3
"""The layering of src/ (docs/design.md): each folder may include only the folders below it.

Fails naming every include that points up, and every source file over 500 lines, so the picture
stays true as code is added."""
import pathlib
import re
import sys

# folder -> folders its files may include (besides itself and the public include/coral/).
ALLOWED = {
    "base": set(),
    "bootstrap": {"base"},
    "kernels": {"base"},
    "gpu": {"base", "kernels"},
    "topology": {"base"},
    "collectives": {"base", "kernels", "topology"},
    "transport": {"base", "bootstrap", "kernels", "gpu", "topology"},
    "core": {"base", "bootstrap", "kernels", "gpu", "topology", "collectives", "transport"},
    # The drop-in layers use the public C API alone.
    "compat": set(),
}
MAX_LINES = 500
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def main(src):
    errors = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in {".h", ".hpp", ".cc", ".cpp", ".c", ".cu", ".cuh"}:
            continue
        rel = path.relative_to(src)
        layer = rel.parts[0]
        if layer not in ALLOWED:
            errors.append(f"{rel}: folder src/{layer} has no place in the layering table")
            continue
        lines = path.read_text(errors="replace").splitlines()
        if len(lines) > MAX_LINES:
            errors.append(f"{rel}: {len(lines)} lines (at most {MAX_LINES})")
        for n, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1).split("/")[0]
            if "/" not in m.group(1) or target == layer or target == "coral":
                continue  # same folder, or the public header
            if target in ALLOWED and target not in ALLOWED[layer]:
                errors.append(f"{rel}:{n}: src/{layer} includes {m.group(1)} (src/{target} is above it)")
    for e in errors:
        print(e)
    print(f"layering: {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
